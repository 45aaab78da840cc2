"""Batching rules: how each primitive runs over a leading batch axis.

A batching rule takes one primitive application whose arguments are each *batched*
(a leading axis of length `size` holds one value per example) or not, and returns the
expression that computes all examples at once, plus whether that result is batched.
Registry keys are the Python object called (`np.sin`, `math.exp`, `min`), gast operator
classes (`gast.Add`, `gast.USub`, `gast.Lt`, `gast.MatMult`) and "getitem"/"setitem".
A rule returns `None` when it cannot handle a particular call (e.g. a batched `axis`);
the vmap pass then falls back to its loop strategy and says why.

Family helpers register whole families in one line each: `elementwise` (n-ary,
broadcasting), `reduction`, `preserving` (shape-preserving functions such as `np.copy`),
and the dot/matmul/outer products.

Generated code never knows ranks (the source is written before any argument is seen), so
rank-dependent steps go through the runtime helpers of `transformer.runtime.batching` and
`transformer.runtime.examples` (the vmap pass reads some of them here as `rules.<name>`).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import MutableMapping
from typing import Any, Callable

import gast
import numpy as np

from transformer import runtime, tape
from transformer.runtime import batching as helpers
from transformer.runtime import examples
from transformer.runtime.batching import (
    align, align_batched, all_examples, any_examples, argmax_examples, argmin_examples,
    as_float, as_int, batch_axis, batch_empty, batch_result, batch_size_of, broadcast_batch,
    check_examples, check_size, dot_both, dot_left, dot_right, from_front, index_examples,
    max_examples, mean_examples, min_examples, outer_both, outer_left, outer_right,
    prod_examples, ravel_examples, reshape_examples, sum_examples, take_batched, to_front,
    transpose_examples)
# read by the vmap pass as `rules.<name>` (transformer/batching.py)
from transformer.runtime.batching import identity_batch, identity_batch_last  # noqa: F401
from transformer.runtime.batching import take_example  # noqa: F401
from transformer.runtime.examples import (
    _grad_left, _grad_left_fixed, _grad_right, gather_batch, max_batch, mean_batch, min_batch,
    over_examples, sum_batch, times_size, unbroadcast_examples, unbroadcast_to_shared,
    unchanged, update_examples_in_place)

from transformer.primitives import registry
from transformer.nodes import copy_tree
from transformer.syntax import call, const, subscript
# ====================================================================== registry


@dataclasses.dataclass
class Site:
    """One primitive application being batched.

    `args` are atoms (gast Names/Constants) and `batched` says which carry a batch axis;
    `keywords`/`kw_batched` likewise. `ref(obj)` returns an expression naming `obj` in the
    generated module (binding it in the environment when needed); `size` names the
    batch size variable. `items` says how each positional argument splits into examples
    (None: as `batched` says): a bool, a tuple of such flags for a tuple of values some of
    which are batched (the operands of `concatenate_part`), or None for a container whose
    examples cannot be taken item by item.
    """

    key: Any
    args: list
    batched: list
    keywords: dict
    kw_batched: dict
    ref: Callable[[Any], gast.expr]
    size: gast.expr
    statement: bool = False       # called for its effect (`scatter_add(bx, i, g)`)
    items: list | None = None

    @property
    def any_batched(self) -> bool:
        return any(self.batched) or any(self.kw_batched.values())

    def helper(self, fn, *args, **keywords) -> gast.Call:
        return call(self.ref(fn), *args, **keywords)

    def keyword(self, key: str, position: int | None = None):
        """The atom passed for parameter `key` (by keyword or at `position`), or None."""
        if key in self.keywords:
            return self.keywords[key], self.kw_batched[key]
        if position is not None and position < len(self.args):
            return self.args[position], self.batched[position]
        return None, False


class Refused(Exception):
    """Raised by a rule for a call vmap must refuse rather than loop over (an ordered
    `io_callback`); the vmap pass locates it at the call and shows `hint`."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


Rule = Callable[[Site], "tuple[gast.expr, bool] | None"]
# keys whose rule may raise `Refused`: the loop strategy asks it too, so that a refusal
# does not depend on whether an earlier statement made the whole batch a loop
ASKED_IN_LOOPS = registry.Members(lambda r: r.kind == "callback")
# Views of the primitive registry (`transformer.primitives.registry`): key -> batching rule
BATCHERS: MutableMapping[Any, Rule] = registry.Field("batcher")
# helpers that write into an argument: key -> position of the argument written
MUTATES: MutableMapping[Any, int] = registry.Field("mutates")
# keys whose result is not batched just because an argument is: flags of the positional
# arguments -> whether the result is batched (`len(x)` is the same for every example)
RESULT_FLAGS: MutableMapping[Any, Callable[[list], bool]] = registry.Field("result_flags")
for _key in (len, np.shape, np.ndim):
    RESULT_FLAGS[_key] = lambda flags: False
# keys that keep identity-batched values identity-batched (see `identity_batch`), by how:
# "product": one identity-batched argument, the others unbatched (e_k * d * u);
# "first": the first argument identity-batched, the others unbatched (e_k * d / u);
# "all": every argument identity-batched (e_k * d1 + e_k * d2 = e_k * (d1 + d2))
LINEAR: MutableMapping[Any, str] = registry.Field("linear")
LINEAR.update({
    gast.Mult: "product", np.multiply: "product",
    gast.Div: "first", np.divide: "first",
    gast.Add: "all", gast.Sub: "all", np.add: "all", np.subtract: "all",
    gast.USub: "all", gast.UAdd: "all", np.negative: "all", np.positive: "all",
})


def batcher(*keys):
    """Register a batching rule for each key: `@batcher(np.linalg.det) def rule(site): ...`."""
    def register(rule: Rule) -> Rule:
        for key in keys:
            BATCHERS[key] = rule
        return rule
    return register


def has_batcher(key) -> bool:
    return key in BATCHERS


def describe(key) -> str:
    """A readable name for a registry key (`np.linalg.qr`, `operator +`), with the
    registry's reason when it states why vmap has no rule for it."""
    why = registry.reason(key, "vmap")
    return f"{_label(key)} ({why})" if why else _label(key)


def _label(key) -> str:
    if isinstance(key, type) and issubclass(key, gast.AST):
        return f"the operator {key.__name__}"
    if isinstance(key, str):
        return key
    if registry.is_user_facing(key) and registry.user_name(key).startswith("scipy."):
        return registry.user_name(key)
    module = getattr(key, "__module__", None) or ""
    label = getattr(key, "__name__", repr(key))
    if module.startswith("numpy") or isinstance(key, np.ufunc):
        path = {"numpy.linalg": "np.linalg", "numpy.fft": "np.fft",
                "numpy.random": "np.random"}.get(module.replace("._linalg", ".linalg"), "np")
        return f"{path}.{label}"
    if module == "math":
        return f"math.{label}"
    return label


# ====================================================================== families


def _operator_node(key, args):
    if issubclass(key, gast.operator):
        return gast.BinOp(left=args[0], op=key(), right=args[1])
    if issubclass(key, gast.unaryop):
        return gast.UnaryOp(op=key(), operand=args[0])
    return gast.Compare(left=args[0], ops=[key()], comparators=[args[1]])


def aligned(site: Site) -> list:
    """Each batched argument padded so that examples broadcast against every other one."""
    out = []
    for i, (arg, batched) in enumerate(zip(site.args, site.batched)):
        if batched:
            for j, (other, other_batched) in enumerate(zip(site.args, site.batched)):
                same = isinstance(other, gast.Name) and isinstance(arg, gast.Name) and \
                    other.id == arg.id
                if j != i and not same and not isinstance(other, gast.Constant):
                    arg = site.helper(align_batched if other_batched else align, arg, other)
        out.append(arg)
    return out


def elementwise_rule(target=None) -> Rule:
    """The rule of functions and operators applied elementwise with broadcasting (any
    arity). `target` replaces the callee when the original does not take arrays
    (`math.exp` -> `np.exp`, builtin `min` -> `np.minimum`)."""
    def rule(site: Site):
        if any(site.kw_batched.values()) or (site.keywords and target is not None):
            return None
        args = aligned(site)
        if isinstance(site.key, type) and issubclass(site.key, gast.AST):
            if site.key is gast.Not:
                return site.helper(np.logical_not, *args), True
            return _operator_node(site.key, args), True
        callee = site.ref(target if target is not None else site.key)
        keywords = [gast.keyword(arg=k, value=v) for k, v in site.keywords.items()]
        return gast.Call(func=callee, args=args, keywords=keywords), True
    return rule


def elementwise(*keys, target=None):
    """Register `elementwise_rule(target)` for each key."""
    rule = elementwise_rule(target)
    for key in keys:
        BATCHERS[key] = rule


def preserving(*keys):
    """Functions whose single (first) argument's leading axis passes straight through."""
    def rule(site: Site):
        if any(site.batched[1:]) or any(site.kw_batched.values()):
            return None
        keywords = [gast.keyword(arg=k, value=v) for k, v in site.keywords.items()]
        return gast.Call(func=site.ref(site.key), args=list(site.args), keywords=keywords), True
    for key in keys:
        BATCHERS[key] = rule


def reduction(key, whole_example):
    """`np.sum(x, axis=None)`-like: no axis reduces every example; an axis shifts by one."""
    def rule(site: Site):
        axis, axis_batched = site.keyword("axis", 1)
        others = {k: v for k, v in site.kw_batched.items() if k != "axis"}
        if axis_batched or any(others.values()) or any(site.batched[2:]):
            return None
        defaults = all(isinstance(v, gast.Constant) and v.value in (None, False)
                       for v in site.args[2:] + list(others and site.keywords.values()))
        if axis is None or (isinstance(axis, gast.Constant) and axis.value is None):
            if not defaults:
                return None
            return site.helper(whole_example, site.args[0]), True
        if isinstance(axis, gast.Constant) and isinstance(axis.value, int):
            shifted = const(axis.value + 1 if axis.value >= 0 else axis.value)
        else:
            shifted = site.helper(batch_axis, axis)
        keywords = {k: v for k, v in site.keywords.items() if k != "axis"}
        if "axis" in site.keywords:
            return call(site.ref(key), *site.args, axis=shifted, **keywords), True
        # a positional axis (`reduce_sum(g, axis, None, None, keepdims)`) keeps its place
        return call(site.ref(key), site.args[0], shifted, *site.args[2:], **keywords), True
    BATCHERS[key] = rule


def _product(left, right, both):
    def rule(site: Site):
        if len(site.args) != 2 or site.keywords:
            return None
        a, b = site.batched
        helper = both if a and b else (left if a else right)
        return site.helper(helper, *site.args), True
    return rule


# ---------------------------------------------------------------- registrations

_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow,
               gast.BitAnd, gast.BitOr, gast.BitXor, gast.LShift, gast.RShift,
               gast.USub, gast.UAdd, gast.Invert, gast.Not,
               gast.Eq, gast.NotEq, gast.Lt, gast.LtE, gast.Gt, gast.GtE)
elementwise(*_ARITHMETIC)
# (the elementwise families of `transformer.primitives` register their own)
elementwise(
    np.true_divide, np.floor_divide, np.where, np.clip, np.heaviside, np.copysign,
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not, np.negative, np.positive,
    np.sign, np.floor, np.ceil, np.trunc, np.fix, np.rint, np.round, np.around, np.isnan,
    np.isinf, np.isfinite, np.conj, np.real, np.imag,
)
for _math, _np in [(math.floor, np.floor), (math.ceil, np.ceil), (math.trunc, np.trunc),
                   (math.isnan, np.isnan),
                   (math.isinf, np.isinf), (math.isfinite, np.isfinite)]:
    elementwise(_math, target=_np)
elementwise(min, target=np.minimum)
elementwise(max, target=np.maximum)
elementwise(float, target=as_float)
elementwise(int, target=as_int)

preserving(tape.own_value, np.copy, np.ascontiguousarray, np.asarray, np.array, np.zeros_like,
           np.ones_like, np.empty_like, np.full_like)

for _key, _whole in [(np.sum, sum_examples), (np.mean, mean_examples),
                     (np.prod, prod_examples), (np.max, max_examples), (np.amax, max_examples),
                     (np.min, min_examples), (np.amin, min_examples), (np.any, any_examples),
                     (np.all, all_examples), (np.argmax, argmax_examples),
                     (np.argmin, argmin_examples)]:
    reduction(_key, _whole)

BATCHERS[np.dot] = BATCHERS[gast.MatMult] = BATCHERS[np.matmul] = \
    _product(dot_left, dot_right, dot_both)
BATCHERS[np.outer] = _product(outer_left, outer_right, outer_both)


@batcher(np.transpose)
def _transpose(site: Site):
    if len(site.args) != 1 or site.keywords:
        return None                      # explicit axes: rare, left to the loop strategy
    return site.helper(transpose_examples, site.args[0]), True


@batcher(np.reshape)
def _reshape(site: Site):
    if len(site.args) != 2 or site.batched[1] or site.keywords:
        return None
    return site.helper(reshape_examples, *site.args), True


@batcher(np.ravel)
def _ravel(site: Site):
    if len(site.args) != 1 or site.keywords:
        return None
    return site.helper(ravel_examples, site.args[0]), True


@batcher(len)
def _len(site: Site):
    if site.items and not isinstance(site.items[0], bool):
        # a list or tuple holding batched values (a tuple of flags, or None where its
        # items do not split into examples): its length is its item count
        return gast.Call(func=site.ref(len), args=[site.args[0]], keywords=[]), False
    return subscript(gast.Attribute(value=site.args[0], attr="shape", ctx=gast.Load()),
                     const(1)), False


@batcher(np.shape)
def _shape(site: Site):
    shape = gast.Attribute(value=site.args[0], attr="shape", ctx=gast.Load())
    return subscript(shape, gast.Slice(lower=const(1), upper=None, step=None)), False


@batcher(np.concatenate, np.stack)
def _join(site: Site):
    """`np.concatenate(xs, axis)`/`np.stack(xs, axis)` of a tuple whose items are each
    batched or not: the unbatched items broadcast, the axis shifted past the batch."""
    axis, axis_batched = site.keyword("axis", 1)
    items = site.items[0] if site.items else None
    if axis_batched or len(site.args) > 2 or set(site.keywords) - {"axis"} or \
            not isinstance(items, tuple) or not all(isinstance(f, bool) for f in items):
        return None                 # an array of examples, a nested tuple: the loop
    if axis is None:
        shifted = const(1)
    elif isinstance(axis, gast.Constant) and isinstance(axis.value, int):
        shifted = const(axis.value + 1 if axis.value >= 0 else axis.value)
    elif isinstance(axis, gast.Name):
        shifted = site.helper(batch_axis, axis)
    else:
        return None                 # axis=None flattens each example: the loop
    parts = []
    for i, batched in enumerate(items):
        part = subscript(copy_tree(site.args[0]), const(i))
        parts.append(part if batched else site.helper(broadcast_batch, part, site.size))
    return call(site.ref(site.key), gast.Tuple(elts=parts, ctx=gast.Load()),
                axis=shifted), True


# ---------------------------------------------------------------- attributes of a batched value

def batched_attribute(value: gast.expr, attr: str):
    """(expression, batched) for `value.attr` where `value` is batched, or None."""
    def attribute(node, field):
        return gast.Attribute(value=node, attr=field, ctx=gast.Load())

    shape = attribute(value, "shape")
    if attr == "shape":
        return subscript(shape, gast.Slice(lower=const(1), upper=None, step=None)), False
    if attr == "ndim":
        return gast.BinOp(left=attribute(value, "ndim"), op=gast.Sub(), right=const(1)), False
    if attr == "size":
        return gast.BinOp(left=attribute(value, "size"), op=gast.FloorDiv(),
                          right=subscript(shape, const(0))), False
    if attr in ("dtype",):
        return attribute(value, attr), False
    if attr in ("real", "imag"):
        return attribute(value, attr), True
    return None


# kind -> (rule for a batched operand, rule for an unbatched operand (x, size))
COLLECTIVE_RULES = {
    "psum": (sum_batch, times_size),
    "pmean": (mean_batch, unchanged),
    "pmax": (max_batch, unchanged),
    "pmin": (min_batch, unchanged),
    "all_gather": (gather_batch, broadcast_batch),
}
# collective function (transformer.psum, ...) -> kind; filled by transformer.api_batching
COLLECTIVES: dict = {}
# The helpers batched again by an outer vmap (vmap of vmap): example by example.
for _helper in (sum_batch, mean_batch, max_batch, min_batch, gather_batch, times_size,
                unchanged, align, align_batched, broadcast_batch, dot_left, dot_right,
                dot_both, outer_left, outer_right, outer_both, take_batched, index_examples,
                transpose_examples, reshape_examples, ravel_examples, sum_examples,
                mean_examples, prod_examples, max_examples, min_examples, any_examples,
                all_examples, argmax_examples, argmin_examples, as_float, as_int,
                to_front, from_front):
    BATCHERS[_helper] = lambda site: _each_rule(site)


def _each_rule(site: Site):
    flags = tuple(site.batched if site.items is None else site.items)
    if site.keywords or None in flags:
        return None
    helper = over_examples(site.key, flags, in_place=site.statement)
    return site.helper(helper, *site.args), not site.statement


def _einsum_derivative_rule(site: Site):
    # the operands come as one tuple (or two: einsum_grad_tangent's tangents): one holding
    # batched arrays has no batch axis of its own to index, so the loop strategy runs it
    if any(site.batched[3:]):
        return None
    return _each_rule(site)


def _cast_like_rule(site: Site):
    if site.keywords or len(site.args) != 2:
        return None
    return call(site.ref(site.key), *site.args), site.batched[0]


def _register_runtime_rules():
    for helper_name in runtime.__all__:
        BATCHERS.setdefault(getattr(runtime, helper_name), _each_rule)
    for key in (runtime.cast_like, runtime.keep_float_type):     # read only x's dtype
        BATCHERS[key] = _cast_like_rule
        RESULT_FLAGS[key] = lambda flags: flags[0]
    for key in (runtime.einsum_grad, runtime.einsum_tangent, runtime.einsum_grad_tangent):
        BATCHERS[key] = _einsum_derivative_rule
    preserving(runtime.zeros_like)
    for key, whole in [(runtime.reduce_sum, sum_examples), (runtime.reduce_mean, mean_examples),
                       (runtime.reduce_max, max_examples), (runtime.reduce_min, min_examples),
                       (runtime.reduce_prod, prod_examples)]:
        reduction(key, whole)


def _unbroadcast_rule(site: Site):
    if site.keywords or len(site.args) != 2 or site.batched[1] and not site.batched[0]:
        return _each_rule(site)
    helper = unbroadcast_examples if site.batched[1] else unbroadcast_to_shared
    return site.helper(helper, *site.args), True


def _matmul_grad_rule(special: dict):
    def rule(site: Site):
        helper = special.get(tuple(site.batched))
        if helper is None or site.keywords:
            return _each_rule(site)
        return site.helper(helper, *site.args), True
    return rule


def _update_in_place_rule(site: Site):
    """`z += v` with `z` batched: each example updated as NumPy would; an unbatched array
    cannot take batched values in place."""
    target, value = site.args
    if not site.batched[0]:
        return None
    if not site.batched[1]:
        value = site.helper(broadcast_batch, value, site.size)
    return site.helper(update_examples_in_place, target, value), True


def _register_reverse_rules():
    MUTATES[runtime.scatter_add] = 0
    BATCHERS[runtime.update_in_place] = _update_in_place_rule
    BATCHERS[runtime.unbroadcast] = _unbroadcast_rule
    BATCHERS[runtime.matmul_grad_left] = _matmul_grad_rule(
        {(True, False, True): _grad_left, (True, False, False): _grad_left_fixed})
    BATCHERS[runtime.matmul_grad_right] = _matmul_grad_rule(
        {(True, False, True): _grad_right})


_register_runtime_rules()
_register_reverse_rules()


_ADJOINT_RULES = {
    (batch_result,): "def rule(z, x):\n    d[x] += d[z]",
    (align, align_batched): "def rule(z, x, ref):\n    d[x] += reshape_like(d[z], x)",
    (sum_examples,): "def rule(z, x):\n    d[x] += spread_examples(d[z], x)",
    (mean_examples,): "def rule(z, x):\n    d[x] += spread_mean(d[z], x)",
    (dot_right,): "def rule(z, a, b):\n    d[a] += sum_batch(left_of_right(d[z], a, b))\n"
                  "    d[b] += _grad_right(d[z], a, b)",
    (dot_left,): "def rule(z, a, b):\n    d[a] += left_of_left(d[z], a, b)\n"
                 "    d[b] += sum_batch(right_of_left(d[z], a, b))",
    (dot_both,): "def rule(z, a, b):\n    d[a] += left_of_both(d[z], a, b)\n"
                 "    d[b] += right_of_both(d[z], a, b)",
    (broadcast_batch,): "def rule(z, v, size):\n    d[v] += sum_batch(d[z])",
    (to_front,): "def rule(z, x, axis):\n    d[x] += from_front(d[z], axis)",
    (from_front,): "def rule(z, x, axis):\n    d[x] += to_front(d[z], axis)",
    (index_examples,): "def rule(z, x, index):\n"
                       "    d[x] += index_examples_grad(d[z], x, index)",
    (take_batched,): "def rule(z, x, index):\n    d[x] += take_batched_grad(d[z], x, index)",
    (transpose_examples,): "def rule(z, x):\n    d[x] += transpose_examples(d[z])",
    (reshape_examples,): "def rule(z, x, shape):\n    d[x] += reshape_like(d[z], x)",
    (ravel_examples,): "def rule(z, x):\n    d[x] += reshape_like(d[z], x)",
    (as_float, gather_batch): "def rule(z, x):\n    d[x] += d[z]",
    (sum_batch,): "def rule(z, x):\n    d[x] += broadcast_batch(d[z], x.shape[0])",
    (mean_batch,): "def rule(z, x):\n    d[x] += spread_batch_mean(d[z], x)",
    (times_size,): "def rule(z, x, size):\n    d[x] += times_size(d[z], size)",
    (unchanged,): "def rule(z, x, size):\n    d[x] += d[z]",
}
_TANGENT_RULES = {
    (align,): "def rule(z, x, ref):\n    d[z] = align(d[x], ref)",
    (align_batched,): "def rule(z, x, ref):\n    d[z] = align_batched(d[x], ref)",
    (dot_right,): "def rule(z, a, b):\n    d[z] = dot_right(d[a], b)\n"
                  "    d[z] = dot_right(a, d[b])",
    (dot_left,): "def rule(z, a, b):\n    d[z] = dot_left(d[a], b)\n"
                 "    d[z] = dot_left(a, d[b])",
    (dot_both,): "def rule(z, a, b):\n    d[z] = dot_both(d[a], b)\n"
                 "    d[z] = dot_both(a, d[b])",
    (outer_left,): "def rule(z, a, b):\n    d[z] = outer_left(d[a], b)\n"
                   "    d[z] = outer_left(a, d[b])",
    (outer_right,): "def rule(z, a, b):\n    d[z] = outer_right(d[a], b)\n"
                    "    d[z] = outer_right(a, d[b])",
    (outer_both,): "def rule(z, a, b):\n    d[z] = outer_both(d[a], b)\n"
                   "    d[z] = outer_both(a, d[b])",
    (broadcast_batch,): "def rule(z, v, size):\n    d[z] = broadcast_batch(d[v], size)",
    (times_size,): "def rule(z, x, size):\n    d[z] = times_size(d[x], size)",
    (unchanged,): "def rule(z, x, size):\n    d[z] = d[x]",
    (to_front,): "def rule(z, x, axis):\n    d[z] = to_front(d[x], axis)",
    (from_front,): "def rule(z, x, axis):\n    d[z] = from_front(d[x], axis)",
    (index_examples,): "def rule(z, x, index):\n    d[z] = index_examples(d[x], index)",
    (take_batched,): "def rule(z, x, index):\n    d[z] = take_batched(d[x], index)",
    (reshape_examples,): "def rule(z, x, shape):\n    d[z] = reshape_examples(d[x], shape)",
}


def _register_derivatives():
    from transformer import templates
    each = {name_: over_examples(getattr(runtime, f), flags) for name_, f, flags in [
        ("left_of_left", "matmul_grad_left", (True, True, False)),
        ("right_of_left", "matmul_grad_right", (True, True, False)),
        ("left_of_right", "matmul_grad_left", (True, False, True)),
        ("left_of_both", "matmul_grad_left", (True, True, True)),
        ("right_of_both", "matmul_grad_right", (True, True, True))]}
    scope = {**vars(helpers), **vars(examples), "reshape_like": runtime.reshape_like, **each}
    for helper in (sum_examples, mean_examples, transpose_examples, ravel_examples, as_float,
                   sum_batch, mean_batch, gather_batch, batch_result):
        _TANGENT_RULES[(helper,)] = f"def rule(z, x):\n    d[z] = {helper.__name__}(d[x])"
    for keys, source in _ADJOINT_RULES.items():
        rule = templates.rule_from_source(source, scope)
        for key in keys:
            templates.ADJOINTS[key] = rule
    for keys, source in _TANGENT_RULES.items():
        rule = templates.rule_from_source(source, scope)
        for key in keys:
            templates.TANGENTS[key] = rule
    templates.nondifferentiable(check_size, check_examples, batch_size_of, batch_empty,
                                argmax_examples, argmin_examples, any_examples, all_examples,
                                as_int)


_register_derivatives()
