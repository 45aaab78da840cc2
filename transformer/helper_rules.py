"""Derivative rules for the runtime helpers that generated derivative code calls.

A derivative is itself a program secant must differentiate again for second order
(`grad(grad(f))`, `jvp(grad(f))`, `hessian`): adjoint code calls `unbroadcast`,
`broadcast_reduced`, `matmul_grad_left`, ...; tangent code calls `broadcast_like`,
`reduce_sum`, `matmul`, .... Almost all are linear in their first argument (or bilinear),
so each rule below is the helper applied to the derivative, or its transpose.
"""
# ruff: noqa: F821  (``d`` is template syntax, never evaluated)
from __future__ import annotations

import numpy as np
from numba import types
from transformer.runtime.numba_api import overload

from . import basis, reverse, tape
from .primitives.families import RULE_GLOBALS
from .primitives.each_rules import per_example_rule
from .primitives.per_example import derive_made, linear_form, register_grad_right
from .syntax import const
from .runtime.batching import align, align_batched, outer_both, outer_left, outer_right
from .runtime.examples import unbroadcast_examples
from .runtime import shapes
from .runtime import (at_lower, at_upper, axis_count, axis_mask, broadcast_like,
                      broadcast_reduced, cast_like, cumsum, cumsum_adjoint, flip, inside,
                      keep_float_type, kept_writes, matmul, matmul_grad_left,
                      matmul_grad_right, moveaxis, outer_or_matmul, pad, placed_writes,
                      real_only, reduce_mean, reduce_sum, reshape, reshape_like, roll,
                      squeeze, take, take_adjoint, transpose, unbroadcast, unpad, unroll,
                      untranspose, update_in_place, zeros_like)
from .tape_items import (accumulated, accumulated_of_batch, items_end, items_placed,
                         items_popped, items_pushed, items_rest, items_slice, items_start)
from .templates import ADJOINTS, TANGENTS, adjoint, nondifferentiable, rule_from_source, tangent

nondifferentiable(zeros_like, axis_count, axis_mask, inside, at_lower, at_upper)


def linear(key, params: str, forward: str, transpose: str | None, glb=RULE_GLOBALS) -> None:
    """A helper linear in its first parameter `g`: tangent `forward` (with `g` the
    tangent), adjoint `transpose` (with `g` the adjoint of the result)."""
    linear_form(key, params, transpose)        # the rules of its per-example form, later
    first = params.split(",")[0].strip()
    fwd = forward.replace("G", f"d[{first}]")
    TANGENTS[key] = rule_from_source(f"def rule(z, {params}):\n    d[z] = {fwd}\n", glb)
    if transpose is not None:
        back = transpose.replace("G", "d[z]")
        ADJOINTS[key] = rule_from_source(f"def rule(z, {params}):\n    d[{first}] += {back}\n",
                                         glb)


linear(real_only, "g", "real_only(G)", "real_only(G)")
linear(kept_writes, "g, index", "kept_writes(G, index)", "placed_writes(G, g, index)")
linear(placed_writes, "values, cotangent, index", "placed_writes(G, cotangent, index)",
       "kept_writes(G, index)")
linear(unbroadcast, "g, x", "unbroadcast(G, x)", "broadcast_like(G, g)")
linear(broadcast_like, "t, shape_of", "broadcast_like(G, shape_of)", "unbroadcast(G, t)")
linear(broadcast_reduced, "g, x, axis=None, keepdims=False",
       "broadcast_reduced(G, x, axis, keepdims)", "reduce_sum(G, axis, None, None, keepdims)")
linear(cast_like, "value, x", "cast_like(G, x)", "G")
linear(keep_float_type, "value, x", "keep_float_type(G, x)", "G")
linear(reshape_like, "g, x", "reshape_like(G, x)", "reshape_like(G, g)")
linear(reshape, "a, shape", "reshape(G, shape)", "reshape_like(G, a)")
linear(reduce_sum, "a, axis=None, dtype=None, out=None, keepdims=False",
       "reduce_sum(G, axis, None, None, keepdims)", "broadcast_reduced(G, a, axis, keepdims)")
linear(reduce_mean, "a, axis=None, dtype=None, out=None, keepdims=False",
       "reduce_mean(G, axis, None, None, keepdims)",
       "broadcast_reduced(G, a, axis, keepdims) / cast_like(axis_count(a, axis), a)")
linear(transpose, "a, axes=None", "transpose(G, axes)", "untranspose(G, axes)")
linear(untranspose, "g, axes=None", "untranspose(G, axes)", "transpose(G, axes)")
linear(squeeze, "a, axis=None", "squeeze(G, axis)", "reshape_like(G, a)")
linear(flip, "a, axis=None", "flip(G, axis)", "flip(G, axis)")
linear(moveaxis, "a, source, destination", "moveaxis(G, source, destination)",
       "moveaxis(G, destination, source)")
# the adjoints of np.concatenate & co. pick one input's part (`concatenate_part`), whose
# transpose puts it back in zeros (`concatenate_unpart`): both linear, each the other's
# adjoint, so derivatives of every order go through
for _part, _unpart, _rest in [
        (shapes.concatenate_part, shapes.concatenate_unpart, "xs, k, axis=0"),
        (shapes.stack_part, shapes.stack_unpart, "k, axis=0"),
        (shapes.hstack_part, shapes.hstack_unpart, "xs, k"),
        (shapes.vstack_part, shapes.vstack_unpart, "xs, k")]:
    _args = ", ".join(p.split("=")[0] for p in _rest.split(", "))
    linear(_part, f"g, {_rest}", f"{_part.__name__}(G, {_args})",
           f"{_unpart.__name__}(G, g, {_args})")
    linear(_unpart, f"t, g, {_rest}", f"{_unpart.__name__}(G, g, {_args})",
           f"{_part.__name__}(G, {_args})")
linear(cumsum, "a, axis=None", "cumsum(G, axis)", "cumsum_adjoint(G, a, axis)")
linear(roll, "a, shift, axis=None", "roll(G, shift, axis)", "unroll(G, shift, axis)")
linear(unroll, "g, shift, axis=None", "unroll(G, shift, axis)", "roll(G, shift, axis)")
linear(take, "a, indices, axis=None", "take(G, indices, axis)",
       "take_adjoint(G, a, indices, axis)")
linear(take_adjoint, "g, x, indices, axis=None", "take_adjoint(G, x, indices, axis)",
       "take(G, indices, axis)")
linear(pad, "a, pad_width, mode='constant', constant_values=0", "pad(G, pad_width)",
       "unpad(G, a, pad_width)")
linear(unpad, "g, x, pad_width", "unpad(G, x, pad_width)", "pad(G, pad_width)")
linear(cumsum_adjoint, "g, x, axis=None", "cumsum_adjoint(G, x, axis)", "cumsum(G, axis)")

# vmap's operand alignment, linear in `x` (its own rules: rules/batching.py), recorded so
# that its per-example form, `align_each` of a vmap inside a vmap, has rules too
for _align in (align, align_batched):
    linear_form(_align, "x, ref", "reshape_like(G, x)")


# `z += v` on a name that may share its array: forward mode carries the tangent of the
# new value (reverse mode rewrites the update itself, see reverse/prepare.py)
TANGENTS[update_in_place] = rule_from_source(
    "def rule(z, target, value):\n    d[z] = d[value]\n", RULE_GLOBALS)


# ---------------------------------------------------------------- tapes of reverse mode
# grad(grad(f)) differentiates a gradient, which records values on tapes: a push writes
# one row, a read is a getitem, a fresh tape holds no values yet

nondifferentiable(tape.float_tape, tape.exact_tape, tape.items_buffer, tape.trip_count,
                  tape.range_last, tape.shape_of, reverse.unit_cotangent, reverse.float_zeros)


def tape_rest(g, t, n):
    """The adjoint of the tape `t` in `push(t, n, v)`: `g` without row `n`, cut to `t`'s
    rows (a push that grows the tape returns a longer one)."""
    rest = np.array(g[:np.shape(t)[0]], copy=True)
    rest[n] = 0
    return rest


@overload(tape_rest)
def _tape_rest_nb(g, t, n):
    def impl(g, t, n):
        rest = g[:t.shape[0]].copy()
        rest[n] = 0
        return rest
    return impl


def tape_head(g, t):
    """The adjoint of `t` in `reserve(t, n)`: the rows of `g` that were `t`'s."""
    return np.array(g[:np.shape(t)[0]], copy=True)


@overload(tape_head)
def _tape_head_nb(g, t):
    return lambda g, t: g[:t.shape[0]].copy()


@adjoint(tape.push)
def push_adjoint(z, t, n, value, where):
    d[value] += d[z][n]
    d[t] += tape_rest(d[z], t, n)


@adjoint(tape.reserve)
def reserve_adjoint(z, t, n):
    d[t] += tape_head(d[z], t)


# the element buffers of arrays written in place: `push_items` and `pop_items` return
# (buffer or elements, new length); reverse.prepare splits each call into its two parts
# (`SPLIT`), since a rule takes a single result


nondifferentiable(items_end, items_start)
for _helper in (tape_rest, tape_head, items_rest, items_placed):
    reverse.shape_argument(_helper, 1)      # each reads the tape or buffer for its length


@adjoint(items_pushed)
def items_pushed_adjoint(z, buf, n, value):
    d[value] += items_slice(d[z], n, value)
    d[buf] += items_rest(d[z], buf, n, value)


@adjoint(items_popped)
def items_popped_adjoint(z, buf, n, like):
    d[buf] += items_placed(d[z], buf, n, like)


# ---------------------------------------------------------------- Jacobian assembly
# jacfwd(jacrev(f)) differentiates the generated jacrev, which assembles rows

_BASIS = dict(RULE_GLOBALS, **{n: getattr(basis, n) for n in basis.__all__})
nondifferentiable(basis.basis_matrix, basis.basis_vector, basis.basis_size,
                  basis.jacobian_alloc)
linear(basis.jacobian_from_rows, "rows, out, x", "jacobian_from_rows(G, out, x)",
       "reshape_like(G, rows)", _BASIS)
linear(basis.jacobian_from_columns, "columns, out, x", "jacobian_from_columns(G, out, x)",
       "columns_of_jacobian(G, columns, out, x)", _BASIS)
linear(basis.jacobian_result, "jac, out, x", "jacobian_result(G, out, x)",
       "reshape_like(G, jac)", _BASIS)
# grad of a function calling jacfwd inline differentiates its assembly from the pushed batch
linear(basis.jacobian_from_last, "columns, out, x", "jacobian_from_last(G, out, x)",
       "reshape_like(G, columns)", _BASIS)


# ---------------------------------------------------------------- bilinear products

@tangent(matmul)
def matmul_tangent(z, a, b):
    d[z] = matmul(d[a], b)
    d[z] = matmul(a, d[b])


@adjoint(matmul)
def matmul_adjoint(z, a, b):
    d[a] += matmul_grad_left(d[z], a, b)
    d[b] += matmul_grad_right(d[z], a, b)


# matmul_grad_left(g, a, b) is g @ b.T shaped like a: bilinear in (g, b)
@tangent(matmul_grad_left)
def matmul_grad_left_tangent(z, g, a, b):
    d[z] = matmul_grad_left(d[g], a, b)
    d[z] = matmul_grad_left(g, a, d[b])


@adjoint(matmul_grad_left)
def matmul_grad_left_adjoint(z, g, a, b):
    d[g] += matmul(d[z], b)
    d[b] += matmul_grad_right(g, d[z], b)


# matmul_grad_right(g, a, b) is a.T @ g shaped like b: bilinear in (g, a)
@tangent(matmul_grad_right)
def matmul_grad_right_tangent(z, g, a, b):
    d[z] = matmul_grad_right(d[g], a, b)
    d[z] = matmul_grad_right(g, d[a], b)


@adjoint(matmul_grad_right)
def matmul_grad_right_adjoint(z, g, a, b):
    d[g] += matmul(a, d[z])
    d[a] += matmul_grad_left(g, a, d[z])


@tangent(outer_or_matmul)
def outer_or_matmul_tangent(z, t, w):
    d[z] = outer_or_matmul(d[t], w)
    d[z] = outer_or_matmul(t, d[w])


# ---------------------------------------------------------------- batching (vmap)
# jacfwd and hessian push every basis vector at once through vmap; these rules keep a
# batch of matrix-vector products in derivative code one matrix-matrix product.


def is_identity(x) -> bool:
    """Whether `x` is a square identity matrix (the basis jacfwd pushes); usually decided
    at the first element that differs."""
    if np.ndim(x) != 2 or np.shape(x)[0] != np.shape(x)[1]:
        return False
    return bool(np.array_equal(x, np.eye(np.shape(x)[0])))


@overload(is_identity)
def _is_identity_nb(x):
    if not (isinstance(x, types.Array) and x.ndim == 2):
        return lambda x: False

    def impl(x):
        if x.shape[0] != x.shape[1]:
            return False
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                if x[i, j] != (1.0 if i == j else 0.0):
                    return False
        return True
    return impl


def matmul_of_batch(m, x):
    """`matmul(m, x[k])` for every k, `m` a matrix and each `x[k]` a vector: one
    matrix-matrix product, or none when `x` is the identity basis (`m @ e_k` is a
    column of `m`)."""
    from .runtime.batching import dot_right
    if np.ndim(m) != 2 or np.ndim(x) != 2:
        return dot_right(m, x)
    if is_identity(x):
        return np.ascontiguousarray(np.transpose(m))
    return x @ np.transpose(m)


@overload(matmul_of_batch)
def _matmul_of_batch_nb(m, x):
    from .runtime.batching import dot_right
    if not (isinstance(m, types.Array) and m.ndim == 2 and isinstance(x, types.Array)
            and x.ndim == 2):
        return lambda m, x: dot_right(m, x)

    def impl(m, x):
        if is_identity(x):
            return np.ascontiguousarray(m.T)
        return np.dot(np.ascontiguousarray(x), m.T)
    return impl


def grad_right_of_batch(g, a, b):
    """`matmul_grad_right(g[k], a, b)` for every k: `a.T @ g[k]` stacked, i.e. `g @ a`."""
    if np.ndim(a) == 2 and np.ndim(g) == 2 and np.ndim(b) == 1:
        return g @ a
    return np.stack([matmul_grad_right(g[k], a, b) for k in range(np.shape(g)[0])])


register_grad_right(grad_right_of_batch)


@overload(grad_right_of_batch)
def _grad_right_of_batch_nb(g, a, b):
    if isinstance(a, types.Array) and a.ndim == 2 and isinstance(g, types.Array) and \
            g.ndim == 2 and isinstance(b, types.Array) and b.ndim == 1:
        return lambda g, a, b: np.ascontiguousarray(g) @ np.ascontiguousarray(a)

    def each(g, a, b):
        first = matmul_grad_right(g[0], a, b)
        out = np.empty((g.shape[0],) + np.shape(first), first.dtype)
        out[0] = first
        for k in range(1, g.shape[0]):
            out[k] = matmul_grad_right(g[k], a, b)
        return out
    return each


def broadcast_like_of_batch(t, z):
    """`broadcast_like(t[k], z)` for every k; `t` itself when each `t[k]` is shaped like z."""
    if np.shape(t)[1:] == np.shape(z):
        return t
    return np.stack([broadcast_like(t[k], z) for k in range(np.shape(t)[0])])


@overload(broadcast_like_of_batch)
def _broadcast_like_of_batch_nb(t, z):
    if not isinstance(z, types.Array):
        return lambda t, z: t

    same_rank = isinstance(t, types.Array) and t.ndim == z.ndim + 1

    def impl(t, z):
        if same_rank and t.shape[1:] == z.shape:
            return np.ascontiguousarray(t)
        # element by element: an array assigned to `out[k]` makes Numba compile its
        # shape-mismatch message (str, repr, concatenation: ~3 s) on first use
        out = np.empty((t.shape[0], z.size), t.dtype)
        for k in range(t.shape[0]):
            example = broadcast_like(t[k], z).ravel()
            for i in range(z.size):
                out[k, i] = example[i]
        return out.reshape((t.shape[0],) + z.shape)
    return impl


linear(broadcast_like_of_batch, "t, like", "broadcast_like_of_batch(G, like)",
       "unbroadcast_examples(G, t)", dict(RULE_GLOBALS, unbroadcast_examples=unbroadcast_examples,
                                          broadcast_like_of_batch=broadcast_like_of_batch))


@adjoint(accumulated)
def accumulated_adjoint(z, target, index, values):
    d[target] += d[z]
    d[values] += unbroadcast(d[z][index], values)


def _register_batching() -> None:
    from .rules.batching import BATCHERS, LINEAR, RESULT_FLAGS, preserving

    BATCHERS[reverse.unit_cotangent] = lambda site: (
        site.helper(cast_like, const(1.0), site.args[0]), False)
    RESULT_FLAGS[reverse.unit_cotangent] = lambda flags: False
    preserving(reverse.float_zeros)

    def grad_right(site):
        if site.keywords or len(site.args) != 3 or list(site.batched) != [True, False, False]:
            return None
        return site.helper(grad_right_of_batch, *site.args), True
    def broadcast(site):
        if site.keywords or len(site.args) != 2 or list(site.batched) != [True, False]:
            return None
        return site.helper(broadcast_like_of_batch, *site.args), True
    BATCHERS[broadcast_like] = _first_of(broadcast, BATCHERS.get(broadcast_like))
    LINEAR[broadcast_like] = "first"           # an identity batch broadcasts as its `d`
    def accumulate(site):
        if site.keywords or len(site.args) != 3 or list(site.batched) != [True, False, True]:
            return None
        return site.helper(accumulated_of_batch, *site.args), True
    BATCHERS[accumulated] = accumulate
    previous = BATCHERS.get(matmul_grad_right)
    BATCHERS[matmul_grad_right] = _first_of(grad_right, previous)
    # tangent code calls runtime.matmul: batch it as np.matmul (one matrix-matrix product)
    def matrix_times_batch(site):
        if site.keywords or len(site.args) != 2 or list(site.batched) != [False, True]:
            return None
        return site.helper(matmul_of_batch, *site.args), True
    BATCHERS[matmul] = _first_of(matrix_times_batch, BATCHERS[np.matmul])


def _first_of(rule, fallback):
    """A batching rule trying `rule`, then `fallback` (vmap's own) where it declines."""
    return lambda site: rule(site) or (fallback(site) if fallback else None)


_register_batching()


def _register_outer_products() -> None:
    """vmap's `np.outer` (`outer_left`, ...) has the adjoint of `np.outer` for each example;
    then every per-example helper made while modules imported gets its derived rules."""
    from .rules.adjoints import outer as _loaded       # noqa: F401  (np.outer's adjoint)
    for key, flags in [(outer_left, (True, False)), (outer_right, (False, True)),
                       (outer_both, (True, True))]:
        ADJOINTS[key] = per_example_rule(ADJOINTS[np.outer], flags)
    derive_made()


_register_outer_products()

__all__ = ["linear"]
