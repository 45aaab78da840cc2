"""Derivative rules of the helpers that batched code calls, so that a vmap (or a jacfwd,
which pushes its basis through vmap) inside a differentiated function differentiates:
`hessian(f)` where `f` calls `vmap(g)(xs)` inline, `grad(f)` where `f` calls `jacfwd(g)(x)`
or `vmap(grad(g))(xs)`.

Two kinds of helper:

- the adjoints of the batched reductions (`spread_examples` spreads each example's scalar
  over the example, `spread_mean`, `spread_batch_mean`, the per-example scatters): each is
  linear in its first argument, so its tangent is itself applied to the tangent and its
  adjoint is the reduction or gather it transposes;
- `over_examples(h, flags)` (named `h_each`), vmap's rule of last resort for a runtime
  helper `h`: made on demand, so its rules are made then too (`examples.ON_MADE`), from the
  linear form of `h` (`linear_form`, recorded by `transformer.helper_rules.linear`):
  the tangent of `h_each(g, ...)` is `h_each(d[g], ...)` (the other arguments give shapes
  only), its adjoint the transpose of `h` applied example by example (summed over the
  batch where `g` itself is not batched).
  A helper without a recorded linear form takes rules derived from `h`'s own rule
  templates instead (`each_rules`: vmap's `dot_left` of each example of an outer vmap);
  one whose rule has no per-example form gets none: differentiating it is the located
  "no adjoint rule" error.

`basis_ones` (the identity basis jacfwd pushes) reads only the shape of its argument.
"""
from __future__ import annotations

import ast
import dataclasses
import re

from transformer import basis, runtime
from transformer.rules import batching as batching_rules
from transformer.runtime import examples
from transformer.runtime.batching import (identity_batch, identity_batch_last, index_examples,
                                          max_examples, mean_examples, min_examples,
                                          prod_examples, sum_examples, take_batched)
from transformer.templates import (ADJOINTS, TANGENTS, is_nondifferentiable, nondifferentiable,
                                  rule_from_source)

from . import each_rules
from .each_rules import scope_name
from .families import RULE_GLOBALS

_SCOPE = dict(RULE_GLOBALS, sum_examples=sum_examples, mean_examples=mean_examples,
              index_examples=index_examples, take_batched=take_batched,
              mean_batch=examples.mean_batch, sum_batch=examples.sum_batch,
              **{n: getattr(examples, n) for n in (
                  "spread_examples", "spread_mean", "spread_batch_mean",
                  "index_examples_grad", "take_batched_grad", "unbroadcast_examples",
                  "unbroadcast_to_shared")})

# (helper, its parameters, its adjoint): linear in the first parameter; `G` is `d[z]`
_SPREADS = [
    (examples.spread_examples, "g, x", "sum_examples(G)"),
    (examples.spread_mean, "g, x", "mean_examples(G)"),
    (examples.spread_batch_mean, "g, x", "mean_batch(G)"),
    (examples.index_examples_grad, "g, x, index", "index_examples(G, index)"),
    (examples.take_batched_grad, "g, x, index", "take_batched(G, index)"),
]


def _register_linear(key, params: str, transpose: str | None, scope: dict) -> None:
    """Rules of `key`, linear in its first parameter, with adjoint `transpose` (of `G`;
    None: a tangent only)."""
    names = [p.split("=")[0].strip() for p in params.split(",")]
    first, rest = names[0], ", ".join(names[1:])
    TANGENTS[key] = rule_from_source(
        f"def rule(z, {params}):\n    d[z] = {scope_name(key, scope)}(d[{first}], {rest})\n",
        scope)
    if transpose is not None:
        back = re.sub(r"\bG\b", "d[z]", transpose)
        ADJOINTS[key] = rule_from_source(f"def rule(z, {params}):\n    d[{first}] += {back}\n",
                                         scope)


# the identity basis jacfwd pushes through vmap (`e_k * v` for every k), and the per-example
# unbroadcasts of batched adjoints (`v`: template parameters cannot be named `d`)
_BATCHED = [
    (identity_batch, "v, basis", "identity_batch_grad(G, v, basis)"),
    (identity_batch_last, "v, basis", "identity_batch_grad(moveaxis(G, -1, 0), v, basis)"),
    (examples.unbroadcast_examples, "g, x", "broadcast_like_each(G, g)"),
    (examples.unbroadcast_to_shared, "g, x", "broadcast_like_each(G, g)"),
    (examples.identity_batch_grad, "g, v, basis", "identity_batch_spread(G, g, basis)"),
    (examples.identity_batch_spread, "t, g, basis", "identity_batch_grad(G, t, basis)"),
]


# np.max/np.min/np.prod of each example: the rules of np.max/np.prod with the whole example
# as the axis (ties share the derivative, as for np.max)
_EXTREMA_ADJOINT = """def rule(z, x):
    hit = cast_like(x == spread_examples(z, x), x)
    share = d[z] / sum_examples(hit)
    d[x] += hit * spread_examples(share, x)
"""
_EXTREMA_TANGENT = """def rule(z, x):
    hit = cast_like(x == spread_examples(z, x), x)
    d[z] = sum_examples(d[x] * hit) / sum_examples(hit)
"""
# matmul_grad_right(g[k], a, b[k]) = a.T @ g[k] for every k (`a` shared): bilinear in (g, a)
_GRAD_RIGHT_ADJOINT = """def rule(z, g, a, b):
    d[g] += matmul_each(a, d[z])
    d[a] += sum_batch(grad_left_each(g, a, d[z]))
"""
_GRAD_RIGHT_TANGENT = """def rule(z, g, a, b):
    d[z] = GRAD_RIGHT(d[g], a, b)
    d[z] = GRAD_RIGHT(g, d[a], b)
"""


def _register_reductions() -> None:
    for key in (max_examples, min_examples):
        ADJOINTS[key] = rule_from_source(_EXTREMA_ADJOINT, _SCOPE)
        TANGENTS[key] = rule_from_source(_EXTREMA_TANGENT, _SCOPE)
    ADJOINTS[prod_examples] = rule_from_source(
        "def rule(z, x):\n    d[x] += spread_examples(d[z] * z, x) / x\n", _SCOPE)
    TANGENTS[prod_examples] = rule_from_source(
        "def rule(z, x):\n    d[z] = sum_examples(d[x] * spread_examples(z, x) / x)\n",
        _SCOPE)
    register_grad_right(examples._grad_right)


def register_grad_right(key) -> None:
    """Rules of `key(g, a, b)`: `matmul_grad_right(g[k], a, b[k] or b)` for every k, `b`
    read for its shape only (vmap's `_grad_right`, jacfwd's `grad_right_of_batch`)."""
    scope = dict(_SCOPE, GRAD_RIGHT=key, matmul_each=each_helper(runtime.matmul, (False, True)),
                 grad_left_each=each_helper(runtime.matmul_grad_left, (True, False, True)))
    ADJOINTS[key] = rule_from_source(_GRAD_RIGHT_ADJOINT, scope)
    TANGENTS[key] = rule_from_source(_GRAD_RIGHT_TANGENT, scope)


def _register_batched() -> None:
    _SCOPE.update(identity_batch=identity_batch, identity_batch_last=identity_batch_last,
                  identity_batch_grad=examples.identity_batch_grad,
                  identity_batch_spread=examples.identity_batch_spread,
                  broadcast_like_each=each_helper(runtime.broadcast_like, (True, True)))
    for key, params, transpose in _SPREADS + _BATCHED:
        _register_linear(key, params, transpose, _SCOPE)

nondifferentiable(basis.basis_ones)
batching_rules.preserving(basis.basis_ones)


# ---------------------------------------------------------------- helpers made by vmap


@dataclasses.dataclass(frozen=True)
class LinearForm:
    """`key(g, *rest)`, linear in `g`: its parameters (name, default text or None) and its
    transpose, a call of one helper whose arguments are `G`, parameters and literals."""

    params: tuple
    transpose: str | None


_LINEAR: dict = {}
_MADE: dict = {}      # (helper, flags) -> its per-example form


def linear_form(key, params: str, transpose: str | None) -> None:
    """Record that the runtime helper `key` is linear in its first parameter."""
    parsed = []
    for p in params.split(","):
        name, _, default = p.partition("=")
        parsed.append((name.strip(), default.strip() or None))
    _LINEAR[key] = LinearForm(tuple(parsed), transpose)
    for (made, flags), helper in list(_MADE.items()):
        if made is key:
            _derive(key, flags, helper)


def each_helper(key, flags: tuple):
    """`over_examples(key, flags)` (its rules are registered as it is made)."""
    return examples.over_examples(key, flags)


def _on_made(key, flags: tuple, helper) -> None:
    """Register the rules of `helper`, `key` of each example (`flags`: batched arguments)."""
    _MADE[(key, flags)] = helper
    if is_nondifferentiable(key):              # shapes and counts: per example too
        nondifferentiable(helper)
    elif key in _LINEAR:
        _derive(key, flags, helper)
    elif each_rules.derive(key, flags, helper):
        derive_made(helper)


def derive_made(base=None) -> None:
    """Derive the rules of the per-example helpers made before their base helper had rules
    (of `base` only, when given): rules are registered as modules import."""
    for (key, flags), helper in list(_MADE.items()):
        if (base is None or key is base) and key not in _LINEAR and \
                not is_nondifferentiable(key) and each_rules.derive(key, flags, helper):
            derive_made(helper)


def _derive(key, flags: tuple, helper) -> None:
    form = _LINEAR[key]
    if len(flags) > len(form.params):
        return
    transpose = _transpose_call(form, flags)
    scope = dict(_SCOPE)
    params = ", ".join(f"a{i}" for i in range(len(flags)))
    rest = "".join(f", a{i}" for i in range(1, len(flags)))
    name = scope_name(helper, scope)
    TANGENTS[helper] = rule_from_source(
        f"def rule(z, {params}):\n    d[z] = {name}(d[a0]{rest})\n", scope)
    if transpose is None:
        return
    callee, args, arg_flags = transpose
    back = f"{scope_name(each_helper(callee, arg_flags), scope)}({', '.join(args)})"
    if not flags[0]:                 # `g` shared by every example: its adjoint sums them
        back = f"sum_batch({back})"
    ADJOINTS[helper] = rule_from_source(f"def rule(z, {params}):\n    d[a0] += {back}\n",
                                        scope)


def _transpose_call(form: LinearForm, flags: tuple):
    """(callee, argument texts, their batch flags) of the transpose of `h_each` (the
    parameters named as `a<i>`, those not passed replaced by their defaults), or None."""
    if form.transpose is None:
        return None
    tree = ast.parse(form.transpose, mode="eval").body
    if not isinstance(tree, ast.Call) or tree.keywords or \
            not isinstance(tree.func, ast.Name) or tree.func.id not in RULE_GLOBALS:
        return None
    index = {name: i for i, (name, _) in enumerate(form.params)}
    args, arg_flags = [], []
    for arg in tree.args:
        if isinstance(arg, ast.Name) and arg.id == "G":
            args.append("d[z]")
            arg_flags.append(True)
        elif isinstance(arg, ast.Name) and arg.id in index:
            i = index[arg.id]
            passed = i < len(flags)
            args.append(f"a{i}" if passed else form.params[i][1] or "None")
            arg_flags.append(flags[i] if passed else False)     # a tuple's items' flags
        elif isinstance(arg, ast.Constant):
            args.append(repr(arg.value))
            arg_flags.append(False)
        else:
            return None
    return RULE_GLOBALS[tree.func.id], args, tuple(arg_flags)


for (_key, _flags, _in_place), _helper in list(examples._OVER_EXAMPLES.items()):
    if not _in_place:
        _on_made(_key, _flags, _helper)
examples.ON_MADE.append(_on_made)
_register_batched()
_register_reductions()
