"""Hand-written tangent templates (see ``transformer.templates`` for the language).

Each ``d[z] = e`` is the contribution of the one argument whose tangent ``e`` reads.
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
    einsum_grad,
    einsum_grad_tangent,
    einsum_tangent,
    inner,
    inner_grad_left,
    inner_grad_right,
    inside,
    matmul,
    real_only,
    reduce_mean,
    reduce_sum,
    tensordot,
    tensordot_grad_left,
    tensordot_grad_right,
)
from transformer.runtime.creation_rules import arange_counts, linspace_tangent, start_weight
from transformer.templates import tangent

# ---------------------------------------------------------------- builtins on two scalars


@tangent(max)
def max_pair(z, x, y):
    d[z] = d[x] if x >= y else 0.0
    d[z] = 0.0 if x >= y else d[y]


@tangent(min)
def min_pair(z, x, y):
    d[z] = d[x] if x <= y else 0.0
    d[z] = 0.0 if x <= y else d[y]


# ---------------------------------------------------------------- constructors of values


@tangent(np.full, broadcast=True)
def full(z, shape, fill_value, dtype=None, order="C"):
    d[z] = d[fill_value]


@tangent(np.full_like, broadcast=True)
def full_like(z, a, fill_value, dtype=None, order="K", subok=True, shape=None):
    d[z] = d[fill_value]


@tangent(np.linspace)
def linspace(z, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    d[z] = linspace_tangent(d[start], 0.0, num, endpoint, axis)
    d[z] = linspace_tangent(0.0, d[stop], num, endpoint, axis)


@tangent(np.arange, broadcast=True)
def arange(z, start, stop=None, step=None, dtype=None):
    d[z] = d[start] * start_weight(stop)
    d[z] = d[step] * arange_counts(z)


# ---------------------------------------------------------------- selections


@tangent(np.where, broadcast=True)
def where(z, condition, x, y):
    d[z] = d[x] * condition
    d[z] = d[y] * np.logical_not(condition)


@tangent(np.clip, broadcast=True)
def clip(z, x, a_min, a_max):
    d[z] = d[x] * inside(x, a_min, a_max)
    d[z] = d[a_min] * at_lower(x, a_min, a_max)
    d[z] = d[a_max] * at_upper(x, a_min, a_max)


@tangent("getitem")
def getitem(z, x, index):
    d[z] = d[x][index]


@tangent("setitem", result=False)
def setitem(x, index, v):
    d[x][index] = d[v]


# ---------------------------------------------------------------- dtype casts


@tangent(astype)
def astype_(z, x, dtype):
    d[z] = cast_tangent(d[x], dtype)


@tangent(np.asarray, np.array)
def asarray(z, x, dtype=None):
    # the tangent of an array built from a sequence is an array too (not the list of tangents)
    d[z] = cast_tangent(np.asarray(d[x]), dtype)


@tangent(cast_cotangent)
def cast_cotangent_(z, g, x, dtype):
    d[z] = cast_cotangent(d[g], x, dtype)


@tangent(cast_tangent)
def cast_tangent_(z, dx, dtype):
    d[z] = cast_tangent(d[dx], dtype)


# ---------------------------------------------------------------- reductions


@tangent(np.max, np.amax, np.min, np.amin)
def max_(z, x, axis=None, out=None, keepdims=False):
    hit = cast_like(x == broadcast_reduced(z, x, axis, keepdims), x)
    d[z] = reduce_sum(d[x] * hit, axis, None, None, keepdims) \
        / reduce_sum(hit, axis, None, None, keepdims)


@tangent(np.var)
def var(z, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    centered = x - broadcast_reduced(reduce_mean(x, axis, None, None, True), x, axis, True)
    scale = 2.0 / cast_like(axis_count(x, axis) - ddof, x)
    d[z] = reduce_sum(d[x] * centered, axis, None, None, keepdims) * scale


@tangent(np.std)
def std(z, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    centered = x - broadcast_reduced(reduce_mean(x, axis, None, None, True), x, axis, True)
    scale = 1.0 / cast_like(axis_count(x, axis) - ddof, x)
    d[z] = reduce_sum(d[x] * centered, axis, None, None, keepdims) * scale / z


@tangent(np.linalg.norm)
def norm(z, x, ord=None, axis=None, keepdims=False):
    d[z] = reduce_sum(d[x] * real_only(x), axis, None, None, keepdims) / z


# ---------------------------------------------------------------- linear algebra


@tangent(gast.MatMult, np.matmul)
def matmul_(z, x, y):
    d[z] = matmul(d[x], y)
    d[z] = matmul(x, d[y])


@tangent(np.dot)
def dot(z, x, y):
    d[z] = np.dot(d[x], y)
    d[z] = np.dot(x, d[y])


@tangent(np.inner, inner)
def inner_(z, x, y):
    d[z] = inner(d[x], y)
    d[z] = inner(x, d[y])


@tangent(inner_grad_left)
def inner_grad_left_(z, g, a, b):
    d[z] = inner_grad_left(d[g], a, b)
    d[z] = inner_grad_left(g, a, d[b])


@tangent(inner_grad_right)
def inner_grad_right_(z, g, a, b):
    d[z] = inner_grad_right(d[g], a, b)
    d[z] = inner_grad_right(g, d[a], b)


@tangent(np.tensordot, tensordot)
def tensordot_(z, a, b, axes=2):
    d[z] = tensordot(d[a], b, axes)
    d[z] = tensordot(a, d[b], axes)


@tangent(tensordot_grad_left)
def tensordot_grad_left_(z, g, a, b, axes=2):
    d[z] = tensordot_grad_left(d[g], a, b, axes)
    d[z] = tensordot_grad_left(g, a, d[b], axes)


@tangent(tensordot_grad_right)
def tensordot_grad_right_(z, g, a, b, axes=2):
    d[z] = tensordot_grad_right(d[g], a, b, axes)
    d[z] = tensordot_grad_right(g, d[a], b, axes)


@tangent(np.outer)
def outer(z, x, y):
    d[z] = np.outer(d[x], y)
    d[z] = np.outer(x, d[y])


@tangent(np.vdot)
def vdot(z, x, y):
    d[z] = np.vdot(d[x], y)
    d[z] = np.vdot(x, d[y])


@tangent(np.einsum)
def einsum(z, subscripts, *operands):
    for k in range(len(operands)):
        d[z] = einsum_tangent(subscripts, k, d[operands[k]], operands)


@tangent(einsum_grad)
def einsum_grad_(z, subscripts, k, g, operands):
    # linear in g and in each operand but the k-th
    d[z] = einsum_grad(subscripts, k, d[g], operands)
    d[z] = einsum_grad_tangent(subscripts, k, g, operands, d[operands])


@tangent(np.linalg.inv)
def inv(z, a):
    d[z] = -(z @ d[a] @ z)


@tangent(np.linalg.solve)
def solve(z, a, b):
    d[z] = -np.linalg.solve(a, d[a] @ z)
    d[z] = np.linalg.solve(a, d[b])


@tangent(np.linalg.det)
def det(z, a):
    d[z] = z * reduce_sum(np.swapaxes(np.linalg.inv(a), -1, -2) * d[a], (-2, -1))


@tangent(np.linalg.slogdet)
def slogdet(z, a):
    # z is the pair (sign, logabsdet); the sign is piecewise constant
    d[z] = (0.0, reduce_sum(np.swapaxes(np.linalg.inv(a), -1, -2) * d[a], (-2, -1)))


# ---------------------------------------------------------------- joining arrays


@tangent(np.concatenate)
def concatenate(z, arrays, axis=0):
    d[z] = np.concatenate(d[arrays], axis)


@tangent(np.stack)
def stack(z, arrays, axis=0):
    d[z] = np.stack(d[arrays], axis)


@tangent(np.hstack)
def hstack(z, tup):
    d[z] = np.hstack(d[tup])


@tangent(np.vstack)
def vstack(z, tup):
    d[z] = np.vstack(d[tup])


@tangent(np.broadcast_to, broadcast=True)
def broadcast_to(z, x, shape):
    d[z] = d[x]
