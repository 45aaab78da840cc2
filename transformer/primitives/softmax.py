"""`scipy.special.logsumexp`, `softmax` and `log_softmax`: reductions along an axis whose
derivatives are written with the result `z` (the max shift cancels in them).

- grad/jvp: `d logsumexp = sum(exp(a - z) da)`, `d softmax = z (dx - sum(z dx))`,
  `d log_softmax = dx - sum(exp(z) dx)`; written with primitives that have rules, so
  `hessian` works. `b=` and `return_sign=` are refused with a hint (a located error).
- vmap: an int axis shifts by one; `axis=None` becomes the per-example form
  (`transformer.runtime.softmax`), which has derivative rules of its own (grad of a
  vmap); anything else runs a loop over the examples.
- jit: the runtime forms (Numba cannot call SciPy). CUDA: refused (a reduction).
"""
from __future__ import annotations

import gast

from transformer.rules import batching as batching_rules
from transformer.runtime import examples
from transformer.runtime import softmax as forms
from transformer.runtime.batching import sum_examples
from transformer.templates import ADJOINTS, CALL_CHECKS, TANGENTS, MissingRule, rule_from_source

from . import registry
from .families import RULE_GLOBALS, lowered

_KEPT = "broadcast_reduced(reduce_sum({}, axis, None, None, True), x, axis, True)"

# name -> (parameters, adjoint of the argument, tangent of the result, per-example form)
_RULES = {
    "logsumexp": (
        "a, axis=None, b=None, keepdims=False, return_sign=False",
        "d[a] += broadcast_reduced(d[z], a, axis, keepdims) "
        "* np.exp(a - broadcast_reduced(z, a, axis, keepdims))",
        "d[z] = reduce_sum(d[a] * np.exp(a - broadcast_reduced(z, a, axis, keepdims)), "
        "axis, None, None, keepdims)",
        forms.logsumexp_examples),
    "softmax": (
        "x, axis=None",
        f"d[x] += z * (d[z] - {_KEPT.format('z * d[z]')})",
        f"d[z] = z * (d[x] - {_KEPT.format('z * d[x]')})",
        forms.softmax_examples),
    "log_softmax": (
        "x, axis=None",
        f"d[x] += d[z] - np.exp(z) * {_KEPT.format('d[z]')}",
        f"d[z] = d[x] - {_KEPT.format('np.exp(z) * d[x]')}",
        forms.log_softmax_examples),
}

# the per-example forms vmap gives `axis=None` (each example reduced over all its axes):
# the same derivatives, with `spread_examples` (an example's scalar over the example) and
# `sum_examples` in place of the axis' broadcast and sum, so grad of a vmap works
_PER_EXAMPLE = {
    forms.logsumexp_examples: (
        "a",
        "d[a] += spread_examples(d[z], a) * np.exp(a - spread_examples(z, a))",
        "d[z] = sum_examples(d[a] * np.exp(a - spread_examples(z, a)))"),
    forms.softmax_examples: (
        "x",
        "d[x] += z * (d[z] - spread_examples(sum_examples(z * d[z]), x))",
        "d[z] = z * (d[x] - spread_examples(sum_examples(z * d[x]), x))"),
    forms.log_softmax_examples: (
        "x",
        "d[x] += d[z] - np.exp(z) * spread_examples(sum_examples(d[z]), x)",
        "d[z] = d[x] - spread_examples(sum_examples(np.exp(z) * d[x]), x)"),
}
_PER_EXAMPLE_SCOPE = dict(RULE_GLOBALS, spread_examples=examples.spread_examples,
                          sum_examples=sum_examples)

_CUDA = ("a reduction along an axis has no form in CUDA kernels; write the loop (m = the "
         "maximum, then s += math.exp(x[i] - m))")


def _check_logsumexp(args, keywords) -> None:
    """Refuse the arguments the derivative rules do not cover, while transforming."""
    b = keywords.get("b", args[2] if len(args) > 2 else None)
    sign = keywords.get("return_sign", args[4] if len(args) > 4 else None)
    if b is not None and not _is_constant(b, None):
        raise MissingRule("logsumexp(..., b=...) has no derivative rule; for positive "
                          "weights write logsumexp(a + np.log(b))")
    if sign is not None and not _is_constant(sign, False):
        raise MissingRule("logsumexp(..., return_sign=True) has no derivative rule; write "
                          "logsumexp(a) of the terms whose sum is positive")


def _is_constant(node, value) -> bool:
    return isinstance(node, gast.Constant) and node.value is value


def describe(special) -> None:
    """Rules of the three reductions of `scipy.special` (called once it is imported)."""
    for name, (params, adjoint, tangent, per_example) in _RULES.items():
        key = getattr(special, name)
        ADJOINTS[key] = rule_from_source(f"def rule(z, {params}):\n    {adjoint}\n",
                                         RULE_GLOBALS)
        TANGENTS[key] = rule_from_source(f"def rule(z, {params}):\n    {tangent}\n",
                                         RULE_GLOBALS)
        batching_rules.reduction(key, per_example)
        lowered(key, getattr(forms, name))
        r = registry.record(key)
        r.kind, r.float_result = "reduction", True
        registry.named(key, f"scipy.special.{name}")
        registry.unsupported(key, "cuda", _CUDA)
    for key, (param, adjoint, tangent) in _PER_EXAMPLE.items():
        ADJOINTS[key] = rule_from_source(f"def rule(z, {param}):\n    {adjoint}\n",
                                         _PER_EXAMPLE_SCOPE)
        TANGENTS[key] = rule_from_source(f"def rule(z, {param}):\n    {tangent}\n",
                                         _PER_EXAMPLE_SCOPE)
    CALL_CHECKS[special.logsumexp] = _check_logsumexp
    # the calls tests/primitives/test_registry_structural.py generates its tests from
    registry.add_sample(special.logsumexp, "scipy.special.logsumexp(x, axis=0)", x=(3, 4))
    registry.add_sample(special.softmax, "scipy.special.softmax(x, axis=1)", x=(3, 4))
    registry.add_sample(special.log_softmax, "scipy.special.log_softmax(x)", x=(5,))


registry.defer("scipy.special", describe)
