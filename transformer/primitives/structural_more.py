"""np.diff, np.sort, np.diag, np.tril, np.triu, np.kron, np.cross, np.convolve, np.interp
and np.trapezoid (np.trapz where NumPy has it): their kind, batching rule, Numba lowering,
the transformations they lack and why, and the sample calls the registry's generated tests
run. Their derivative templates are in ``transformer.rules.arrays``.
"""
from __future__ import annotations

import inspect

import numpy as np

from transformer.rules import arrays  # noqa: F401  (registers the derivative templates)
from transformer.rules import batching as batching_rules
from transformer.runtime import examples, sampled, structure
from transformer.syntax import const
from transformer.templates import CALL_CHECKS, MissingRule

from . import registry
from .families import lowered

_NO_KERNEL = "CUDA kernels are scalar code; {} of an array has no scalar form there"


def per_example(key, equivalent) -> None:
    """vmap's rule for `key`: its runtime form `equivalent` (same parameters, every one
    positional) applied example by example in one compiled loop (`over_examples`);
    keywords are placed by name and absent parameters take their defaults."""
    params = list(inspect.signature(equivalent).parameters.values())

    def rule(site: batching_rules.Site):
        if len(site.args) > len(params) or set(site.keywords) - {p.name for p in params}:
            return None
        args, flags = list(site.args), list(site.batched)
        for p in params[len(args):]:
            if p.name in site.keywords:
                args.append(site.keywords[p.name])
                flags.append(site.kw_batched[p.name])
            elif p.default is inspect.Parameter.empty:
                return None
            else:
                args.append(const(p.default))
                flags.append(False)
        if not any(flags):
            return None
        helper = examples.over_examples(equivalent, tuple(flags))
        return site.helper(helper, *args), True

    registry.record(key).batcher = rule


def refuse_keywords(key, **hints: str) -> None:
    """grad, jvp and jit refuse calls of `key` passing one of `hints`' keywords, with the
    located error saying what to write instead (vmap runs such a call example by example)."""
    r = registry.record(key)
    r.refused_keywords.update(hints)

    def check(args, keywords):
        for keyword in keywords:
            if keyword in r.refused_keywords:
                raise MissingRule(f"{r.name}(..., {keyword}=...) has no derivative rule",
                                  r.refused_keywords[keyword])
    CALL_CHECKS[key] = check


TRAPEZOID = tuple(getattr(np, n) for n in ("trapezoid", "trapz") if hasattr(np, n))
_EQUIVALENTS = [(np.diff, structure.diff), (np.sort, structure.sort),
                (np.convolve, sampled.convolve), (np.interp, sampled.interp),
                *((key, sampled.trapezoid) for key in TRAPEZOID)]

for _key, _equivalent in _EQUIVALENTS:
    # Numba's own forms take only the first arguments (np.sort no axis at all)
    lowered(_key, _equivalent, plain_form_ok=_key is not np.interp)
    per_example(_key, _equivalent)
    per_example(_equivalent, _equivalent)
for _key in (np.diag, np.tril, np.triu, np.kron):
    per_example(_key, _key)
registry.record(np.cross).batcher = batching_rules.elementwise_rule()   # along the last axis
for _key in (structure.diff_adjoint, structure.sort_adjoint, structure.sort_tangent,
             structure.diag_adjoint, structure.kron_grad_left, structure.kron_grad_right,
             sampled.convolve_grad, sampled.trapezoid_grad_y, sampled.trapezoid_grad_x,
             sampled.trapezoid_grad_dx, sampled.interp_grad_x, sampled.interp_grad_xp,
             sampled.interp_grad_fp, sampled.interp_outside, sampled.interp_tangent_x,
             sampled.interp_tangent_xp, sampled.interp_tangent_fp,
             sampled.interp_tangent_outside):
    per_example(_key, _key)         # vmap of a derivative: its helpers example by example

for _key in (np.diff, np.sort, np.diag, np.tril, np.triu, np.kron, np.cross, np.convolve,
             np.interp, *TRAPEZOID):
    registry.record(_key).kind = "structural"
    registry.unsupported(_key, "cuda", _NO_KERNEL.format(registry.user_name(_key)))

_LAST_AXIS = "move the vector axis last with np.moveaxis and call np.cross(a, b)"
refuse_keywords(np.cross, axisa=_LAST_AXIS, axisb=_LAST_AXIS, axisc=_LAST_AXIS, axis=_LAST_AXIS)
refuse_keywords(np.interp, period="map x into one period first: "
                "xp[0] + np.mod(x - xp[0], period), with xp and fp covering that period")
refuse_keywords(np.sort, order="sort a plain array (structured arrays are not supported)")
_JOIN = "join the values first: np.diff(np.concatenate((before, x)))"
refuse_keywords(np.diff, prepend=_JOIN, append=_JOIN)

# ---------------------------------------------------------------- samples for the tests

_add = registry.add_sample
_add(np.diff, "np.diff(x)", x=(5,))
_add(np.diff, "np.diff(x, n=2, axis=0)", x=(4, 3))
_add(np.sort, "np.sort(x)", x=(5,))
_add(np.sort, "np.sort(x, axis=0)", x=(4, 3))
_add(np.sort, "np.sort(x, axis=None)", x=(2, 3))
_add(np.diag, "np.diag(v, 1)", v=(3,))
_add(np.diag, "np.diag(m, k=-1)", m=(3, 4))
_add(np.tril, "np.tril(m, -1)", m=(3, 3))
_add(np.triu, "np.triu(m, k=1)", m=(3, 4))
_add(np.kron, "np.kron(a, b)", a=(2,), b=(3,))
_add(np.kron, "np.kron(a, b)", a=(2, 2), b=(2, 3))
_add(np.cross, "np.cross(a, b)", a=(3,), b=(3,))
_add(np.cross, "np.cross(a, b)", a=(2, 3), b=(3,))
_add(np.convolve, "np.convolve(a, v)", a=(5,), v=(3,))
_add(np.convolve, "np.convolve(a, v, mode='same')", a=(5,), v=(3,))
_add(np.convolve, "np.convolve(a, v, 'valid')", a=(3,), v=(5,))
_add(np.interp, "np.interp(x, np.cumsum(s * s + 0.2) - 1.0, fp)", x=(6,), s=(4,), fp=(4,))
_add(np.interp, "np.interp(2.0 * x, np.array([-1.0, -0.2, 0.5, 1.0]), fp, left=lo, "
     "right=hi)", x=(8,), fp=(4,), lo=(), hi=())
_add(np.interp, "np.interp(x, np.array([-1.0, 0.0, 1.0]), fp)", x=(), fp=(3,))
for _key in TRAPEZOID:
    _name = f"np.{_key.__name__}"
    _add(_key, f"{_name}(y)", y=(5,))
    _add(_key, f"{_name}(y, x=np.cumsum(s * s + 0.1))", y=(5,), s=(5,))
    _add(_key, f"{_name}(y, dx=h)", y=(4,), h=())
    _add(_key, f"{_name}(y, axis=0)", y=(4, 3))
    _add(_key, f"{_name}(y, x=np.cumsum(s * s + 0.1, axis=0), axis=0)", y=(4, 3), s=(4, 3))
