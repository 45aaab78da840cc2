"""Hand-written adjoint templates (see ``transformer.templates`` for the language).

``d[x] += e`` accumulates into the adjoint of ``x``; ``d[z]`` is the adjoint of the result.
"""

# ruff: noqa: F821  (``d`` is template syntax, never evaluated)

from __future__ import annotations

import gast
import numpy as np

from transformer.runtime import (
    astype,
    at_lower,
    at_upper,
    axis_count,
    broadcast_reduced,
    cast_cotangent,
    cast_like,
    cast_tangent,
    concatenate_part,
    einsum_grad,
    hstack_part,
    inner,
    inner_grad_left,
    inner_grad_right,
    inside,
    kept_writes,
    matmul_grad_left,
    matmul_grad_right,
    outer_or_matmul,
    real_only,
    reduce_mean,
    reduce_sum,
    reshape_like,
    scatter_add,
    stack_part,
    tensordot,
    tensordot_grad_left,
    tensordot_grad_right,
    unbroadcast,
    vstack_part,
)
from transformer.runtime.creation_rules import arange_counts, linspace_cotangent, start_weight
from transformer import einsum as einsum_loops
from transformer.templates import CALL_CHECKS, adjoint

# ---------------------------------------------------------------- builtins on two scalars


@adjoint(max)
def max_pair(z, x, y):
    d[x] += d[z] if x >= y else 0.0
    d[y] += 0.0 if x >= y else d[z]


@adjoint(min)
def min_pair(z, x, y):
    d[x] += d[z] if x <= y else 0.0
    d[y] += 0.0 if x <= y else d[z]


# ---------------------------------------------------------------- selections


@adjoint(np.where)
def where(z, condition, x, y):
    d[x] += unbroadcast(d[z] * condition, x)
    d[y] += unbroadcast(d[z] * np.logical_not(condition), y)


@adjoint(np.clip)
def clip(z, x, a_min, a_max):
    d[x] += unbroadcast(d[z] * inside(x, a_min, a_max), x)
    d[a_min] += unbroadcast(d[z] * at_lower(x, a_min, a_max), a_min)
    d[a_max] += unbroadcast(d[z] * at_upper(x, a_min, a_max), a_max)


@adjoint("getitem")
def getitem(z, x, index):
    scatter_add(d[x], index, d[z])


@adjoint("getitem:static")
def getitem_static(z, x, index):
    d[x][index] += d[z]


@adjoint("setitem", result=False)
def setitem(x, index, v):
    d[v] += unbroadcast(d[x][index], v)
    d[x][index] = 0.0


@adjoint("setitem:gathered", result=False)
def setitem_gathered(x, index, v):
    # an index array may name a position twice: only the write NumPy keeps there (the
    # last) reaches the result
    d[v] += unbroadcast(kept_writes(d[x], index), v)
    d[x][index] = 0.0


# ---------------------------------------------------------------- constructors of values


@adjoint(np.full)
def full(z, shape, fill_value, dtype=None, order="C"):
    d[fill_value] += unbroadcast(d[z], fill_value)


@adjoint(np.full_like)
def full_like(z, a, fill_value, dtype=None, order="K", subok=True, shape=None):
    d[fill_value] += unbroadcast(d[z], fill_value)


@adjoint(np.linspace)
def linspace(z, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    d[start] += linspace_cotangent(d[z], start, num, endpoint, axis, False)
    d[stop] += linspace_cotangent(d[z], stop, num, endpoint, axis, True)


@adjoint(np.arange)
def arange(z, start, stop=None, step=None, dtype=None):
    d[start] += cast_like(np.sum(d[z]) * start_weight(stop), start)
    d[step] += cast_like(np.sum(d[z] * arange_counts(z)), step)


# ---------------------------------------------------------------- dtype casts
# back in the type of the value cast; nothing through a cast to an integer or bool dtype


@adjoint(astype)
def astype_(z, x, dtype):
    d[x] += cast_cotangent(d[z], x, dtype)


@adjoint(np.asarray, np.array)
def asarray(z, x, dtype=None):
    d[x] += cast_cotangent(d[z], x, dtype)


@adjoint(cast_cotangent)
def cast_cotangent_(z, g, x, dtype):
    d[g] += cast_cotangent(d[z], g, dtype)


@adjoint(cast_tangent)
def cast_tangent_(z, dx, dtype):
    d[dx] += cast_cotangent(d[z], dx, dtype)


# ---------------------------------------------------------------- reductions


@adjoint(np.max, np.amax, np.min, np.amin)
def max_(z, x, axis=None, out=None, keepdims=False):
    hit = cast_like(x == broadcast_reduced(z, x, axis, keepdims), x)
    share = d[z] / reduce_sum(hit, axis, None, None, keepdims)
    d[x] += hit * broadcast_reduced(share, x, axis, keepdims)


@adjoint(np.var)
def var(z, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    centered = x - broadcast_reduced(reduce_mean(x, axis, None, None, True), x, axis, True)
    scale = 2.0 / cast_like(axis_count(x, axis) - ddof, x)
    d[x] += broadcast_reduced(d[z], x, axis, keepdims) * centered * scale


@adjoint(np.std)
def std(z, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    centered = x - broadcast_reduced(reduce_mean(x, axis, None, None, True), x, axis, True)
    scale = 1.0 / cast_like(axis_count(x, axis) - ddof, x)
    d[x] += broadcast_reduced(d[z] / z, x, axis, keepdims) * centered * scale


@adjoint(np.linalg.norm)
def norm(z, x, ord=None, axis=None, keepdims=False):
    # the 2-norm / Frobenius norm: another ord is refused (primitives/structural.py)
    d[x] += broadcast_reduced(d[z] / z, x, axis, keepdims) * real_only(x)


# ---------------------------------------------------------------- linear algebra


@adjoint(gast.MatMult, np.matmul, np.dot)
def matmul(z, x, y):
    d[x] += matmul_grad_left(d[z], x, y)
    d[y] += matmul_grad_right(d[z], x, y)


@adjoint(np.inner, inner)
def inner_(z, x, y):
    d[x] += inner_grad_left(d[z], x, y)
    d[y] += inner_grad_right(d[z], x, y)


@adjoint(inner_grad_left)
def inner_grad_left_(z, g, a, b):
    d[g] += inner(d[z], b)
    d[b] += inner_grad_right(g, d[z], b)


@adjoint(inner_grad_right)
def inner_grad_right_(z, g, a, b):
    d[g] += inner(a, d[z])
    d[a] += inner_grad_left(g, a, d[z])


@adjoint(np.tensordot, tensordot)
def tensordot_(z, a, b, axes=2):
    d[a] += tensordot_grad_left(d[z], a, b, axes)
    d[b] += tensordot_grad_right(d[z], a, b, axes)


# tensordot_grad_left(g, a, b, axes) is bilinear in (g, b), tensordot_grad_right in (g, a)
@adjoint(tensordot_grad_left)
def tensordot_grad_left_(z, g, a, b, axes=2):
    d[g] += tensordot(d[z], b, axes)
    d[b] += tensordot_grad_right(g, d[z], b, axes)


@adjoint(tensordot_grad_right)
def tensordot_grad_right_(z, g, a, b, axes=2):
    d[g] += tensordot(a, d[z], axes)
    d[a] += tensordot_grad_left(g, a, d[z], axes)


@adjoint(np.outer)
def outer(z, x, y):
    d[x] += reshape_like(np.dot(d[z], np.ravel(y)), x)
    d[y] += reshape_like(np.dot(np.ravel(x), d[z]), y)


@adjoint(np.vdot)
def vdot(z, x, y):
    d[x] += reshape_like(d[z] * np.ravel(y), x)
    d[y] += reshape_like(d[z] * np.ravel(x), y)


@adjoint(np.einsum)
def einsum(z, subscripts, *operands):
    for k in range(len(operands)):
        d[operands[k]] += einsum_grad(subscripts, k, d[z], operands)


CALL_CHECKS[np.einsum] = einsum_loops.check_call   # subscripts are checked when transforming


# the matrices are the last two axes (np.linalg's stacks of matrices): transposes swap them

@adjoint(np.linalg.inv)
def inv(z, a):
    d[a] -= np.swapaxes(z, -1, -2) @ d[z] @ np.swapaxes(z, -1, -2)


@adjoint(np.linalg.solve)
def solve(z, a, b):
    t = np.linalg.solve(np.swapaxes(a, -1, -2), d[z])
    d[b] += t
    d[a] -= outer_or_matmul(t, z)


@adjoint(np.linalg.det)
def det(z, a):
    d[a] += broadcast_reduced(d[z] * z, a, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


@adjoint(np.linalg.slogdet)
def slogdet(z, a):
    # z is the pair (sign, logabsdet); only logabsdet carries a derivative
    d[a] += broadcast_reduced(d[z][1], a, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


# ---------------------------------------------------------------- joining arrays


@adjoint(np.concatenate)
def concatenate(z, arrays, axis=0):
    for k in range(len(arrays)):
        d[arrays[k]] += concatenate_part(d[z], arrays, k, axis)


@adjoint(np.stack)
def stack(z, arrays, axis=0):
    for k in range(len(arrays)):
        d[arrays[k]] += stack_part(d[z], k, axis)


@adjoint(np.hstack)
def hstack(z, tup):
    for k in range(len(tup)):
        d[tup[k]] += hstack_part(d[z], tup, k)


@adjoint(np.vstack)
def vstack(z, tup):
    for k in range(len(tup)):
        d[tup[k]] += vstack_part(d[z], tup, k)


@adjoint(np.broadcast_to)
def broadcast_to(z, x, shape):
    d[x] += unbroadcast(d[z], x)
