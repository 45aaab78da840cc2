"""Linear algebra: matmul of any rank and its adjoints (accumulating forms too), outer
products, np.inner and its adjoints, the 2-norm, and tensordot and its adjoints.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from transformer.runtime.allocation import empty_array, full_array
from transformer.runtime.numba_api import overload, register_jitable
from numba.np.numpy_support import as_dtype

from .broadcasting import unbroadcast
from .casts import _is_none, _static
from .reductions import reduce_sum
from .small_products import matvec_for, vecmat_for


def matmul(a, b):
    """``a @ b`` for any ranks, batched over leading axes (Numba's stops at 2-D)."""
    return np.matmul(a, b)


def _batch_len(x):
    return x.shape[0] if np.ndim(x) == 3 else 1


@overload(_batch_len)
def _batch_len_nb(x):
    if x.ndim == 3:
        return lambda x: x.shape[0]
    return lambda x: 1


def _batch_item(x, i):
    return x[i % x.shape[0]] if np.ndim(x) == 3 else x


@overload(_batch_item)
def _batch_item_nb(x, i):
    if x.ndim == 3:
        return lambda x, i: np.ascontiguousarray(x[i % x.shape[0]])
    return lambda x, i: np.ascontiguousarray(x)


def _mixed_floats(x, y):
    """The common dtype of two float arrays of different float types, else None. Numba's
    `np.dot` refuses mixed operands (a float32 operand with a cotangent widened to float64
    by a Python float, `np.tanh(W @ x) * 0.5`), where NumPy computes in the common type."""
    if isinstance(x, types.Array) and isinstance(y, types.Array) and x.dtype != y.dtype \
            and isinstance(x.dtype, types.Float) and isinstance(y.dtype, types.Float):
        return np.result_type(as_dtype(x.dtype), as_dtype(y.dtype)).type
    return None


@overload(matmul)
def _matmul_nb(a, b):
    if a.ndim > 3 or b.ndim > 3:
        raise TypingError("matmul under Numba: operands of rank 3 at most")
    common = _mixed_floats(a, b)
    if common is not None:
        return lambda a, b: matmul(a.astype(common), b.astype(common))
    small = matvec_for(a, b) or vecmat_for(a, b)
    if small is not None:
        return lambda a, b: small(a, b)
    if a.ndim <= 2 and b.ndim <= 2 and _contiguous(a) and _contiguous(b):
        return lambda a, b: np.dot(a, b)           # ascontiguousarray would copy anyway
    if a.ndim <= 2 and b.ndim <= 2:
        return lambda a, b: np.dot(np.ascontiguousarray(a), np.ascontiguousarray(b))

    def batched(a, b):
        n = max(_batch_len(a), _batch_len(b))
        first = np.dot(_batch_item(a, 0), _batch_item(b, 0))
        out = empty_array((n,) + first.shape, first.dtype)
        for i in range(n):
            out[i] = np.dot(_batch_item(a, i), _batch_item(b, i))
        return out
    return batched


@register_jitable
def _swap_last_nb(x):
    return np.swapaxes(x, x.ndim - 2, x.ndim - 1)


@register_jitable
def _append_axis(x):
    return np.ascontiguousarray(x).reshape(x.shape + (1,))


@register_jitable
def _insert_axis(x):
    """(B, p) -> (B, 1, p)."""
    return np.ascontiguousarray(x).reshape((x.shape[0], 1, x.shape[1]))


def _contiguous(ty) -> bool:
    return not isinstance(ty, types.Array) or ty.layout == "C"


def _swap_last(a):
    return np.swapaxes(a, -1, -2)


def matmul_grad_left(g, a, b):
    """The adjoint of ``a`` in ``z = a @ b`` (also ``np.dot`` up to 2-D)."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    if np.ndim(b) == 1:
        return unbroadcast(np.multiply.outer(g, b), a) if np.ndim(a) > 1 else g * b
    if np.ndim(a) == 1:
        return unbroadcast(np.matmul(np.expand_dims(g, -2), _swap_last(b)), a)
    return unbroadcast(np.matmul(g, _swap_last(b)), a)


def matmul_grad_right(g, a, b):
    """The adjoint of ``b`` in ``z = a @ b`` (also ``np.dot`` up to 2-D)."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(a * g, b)
    if np.ndim(a) == 1:
        return unbroadcast(a[:, None] * np.expand_dims(g, -2), b) if np.ndim(b) > 1 else a * g
    if np.ndim(b) == 1:
        return unbroadcast(np.matmul(_swap_last(a), g[..., None])[..., 0], b)
    return unbroadcast(np.matmul(_swap_last(a), g), b)


def _outer_nb(u, v):
    """A jitable ``np.outer(u, v)`` for two vectors of these types, written as a loop:
    Numba's np.outer compiles for a second and more and copies each operand."""
    dtype = np.result_type(as_dtype(u.dtype), as_dtype(v.dtype)).type

    @register_jitable
    def outer(u, v):
        out = empty_array((u.shape[0], v.shape[0]), dtype)
        for i in range(u.shape[0]):
            ui = u[i]
            for j in range(v.shape[0]):
                out[i, j] = ui * v[j]
        return out
    return outer


@overload(matmul_grad_left)
def _matmul_grad_left_nb(g, a, b):
    common = _mixed_floats(g, b)
    if common is not None:
        return lambda g, a, b: matmul_grad_left(g.astype(common), a, b.astype(common))
    na = a.ndim if isinstance(a, types.Array) else 0
    nb = b.ndim if isinstance(b, types.Array) else 0
    if na == 0 or nb == 0:
        return lambda g, a, b: unbroadcast(g * b, a)
    if na == 1 and nb == 1:
        return lambda g, a, b: g * b
    if na == 2 and nb == 1:
        outer = _outer_nb(g, b)
        return lambda g, a, b: outer(g, b)
    if na == 1 and nb == 2 and matvec_for(b, g) is not None:
        small = matvec_for(b, g)
        return lambda g, a, b: small(b, g)
    if na == 1 and nb == 2:
        return lambda g, a, b: np.dot(np.ascontiguousarray(b), np.ascontiguousarray(g))
    if na == 2 and nb == 2:
        return lambda g, a, b: np.dot(np.ascontiguousarray(g), np.ascontiguousarray(b.T))
    if nb == 1:
        return lambda g, a, b: unbroadcast(_append_axis(g) * b, a)
    if na == 1:
        return lambda g, a, b: unbroadcast(matmul(_insert_axis(g), _swap_last_nb(b)), a)
    return lambda g, a, b: unbroadcast(matmul(g, _swap_last_nb(b)), a)


@overload(matmul_grad_right)
def _matmul_grad_right_nb(g, a, b):
    common = _mixed_floats(g, a)
    if common is not None:
        return lambda g, a, b: matmul_grad_right(g.astype(common), a.astype(common), b)
    na = a.ndim if isinstance(a, types.Array) else 0
    nb = b.ndim if isinstance(b, types.Array) else 0
    if na == 0 or nb == 0:
        return lambda g, a, b: unbroadcast(a * g, b)
    if na == 1 and nb == 1:
        return lambda g, a, b: a * g
    if na == 2 and nb == 1 and vecmat_for(g, a) is not None:
        small = vecmat_for(g, a)
        return lambda g, a, b: small(g, a)     # a.T @ g without transposing a copy
    if na == 2 and nb == 1 and _contiguous(a) and _contiguous(g):
        return lambda g, a, b: np.dot(g, a)    # a.T @ g without transposing a copy
    if na == 2 and nb == 1:
        return lambda g, a, b: np.dot(np.ascontiguousarray(a.T), np.ascontiguousarray(g))
    if na == 1 and nb == 2:
        outer = _outer_nb(a, g)
        return lambda g, a, b: outer(a, g)
    if na == 2 and nb == 2:
        return lambda g, a, b: np.dot(np.ascontiguousarray(a.T), np.ascontiguousarray(g))
    if na == 1:
        return lambda g, a, b: unbroadcast(_append_axis(a) * _insert_axis(g), b)
    if nb == 1:
        return lambda g, a, b: unbroadcast(
            matmul(_swap_last_nb(a), _append_axis(g))[:, :, 0], b)
    return lambda g, a, b: unbroadcast(matmul(_swap_last_nb(a), g), b)


def matmul_grad_left_add(acc, g, a, b):
    """``acc += matmul_grad_left(g, a, b)``, returning ``acc`` (an array is updated in place).

    Compiled code accumulates into a parameter's adjoint through this (see lowering.py):
    the adjoint of the matrix in a matrix-vector product is an outer product, which is
    added in place instead of built as a temporary matrix and then added.
    """
    acc += matmul_grad_left(g, a, b)
    return acc


def matmul_grad_right_add(acc, g, a, b):
    """``acc += matmul_grad_right(g, a, b)``, returning ``acc`` (see matmul_grad_left_add)."""
    acc += matmul_grad_right(g, a, b)
    return acc


def _is_vector(ty) -> bool:
    return isinstance(ty, types.Array) and ty.ndim == 1


def _outer_add_nb(acc, u, v):
    """A jitable ``acc += np.outer(u, v)`` in place, or None when the types are others."""
    if not (isinstance(acc, types.Array) and acc.ndim == 2 and _is_vector(u) and
            _is_vector(v)):
        return None

    @register_jitable
    def outer_add(acc, u, v):
        if acc.shape[0] != u.shape[0] or acc.shape[1] != v.shape[0]:
            raise ValueError("matmul adjoint: the accumulator's shape is not the operand's")
        for i in range(u.shape[0]):
            ui = u[i]
            for j in range(v.shape[0]):
                acc[i, j] += ui * v[j]
        return acc
    return outer_add


@overload(matmul_grad_left_add)
def _matmul_grad_left_add_nb(acc, g, a, b):
    outer_add = _outer_add_nb(acc, g, b)
    if outer_add is not None:
        return lambda acc, g, a, b: outer_add(acc, g, b)

    def generic(acc, g, a, b):
        acc += matmul_grad_left(g, a, b)
        return acc
    return generic


@overload(matmul_grad_right_add)
def _matmul_grad_right_add_nb(acc, g, a, b):
    outer_add = _outer_add_nb(acc, a, g)
    if outer_add is not None:
        return lambda acc, g, a, b: outer_add(acc, a, g)

    def generic(acc, g, a, b):
        acc += matmul_grad_right(g, a, b)
        return acc
    return generic


def outer_or_matmul(t, z):
    """``np.outer(t, z)`` for vectors, ``t @ z.T`` for matrices (the adjoint of solve)."""
    return np.outer(t, z) if np.ndim(z) == 1 else np.matmul(t, _swap_last(z))


@overload(outer_or_matmul)
def _outer_or_matmul_nb(t, z):
    if z.ndim == 1:
        return lambda t, z: np.outer(t, z)
    return lambda t, z: np.dot(np.ascontiguousarray(t), np.ascontiguousarray(z.T))

def norm(x, ord=None, axis=None, keepdims=False):
    """np.linalg.norm: ord=None (2-norm, Frobenius) with axis and keepdims; under Numba
    another ord of a vector or a matrix, without an axis, is Numba's own norm."""
    return np.linalg.norm(x, ord, axis, keepdims)


@overload(norm)
def _norm_nb(x, ord=None, axis=None, keepdims=False):
    if not _is_none(ord):
        if isinstance(ord, (types.Integer, types.Float)) and _is_none(axis) and \
                not _static(keepdims, "keepdims") and getattr(x, "ndim", 0) in (1, 2):
            return lambda x, ord=None, axis=None, keepdims=False: np.linalg.norm(x, ord)
        if isinstance(ord, types.StringLiteral) and ord.literal_value == "fro" and \
                getattr(x, "ndim", 0) == 2:
            return lambda x, ord=None, axis=None, keepdims=False: \
                np.sqrt(reduce_sum(_squared(x), axis, None, None, keepdims))
        raise TypingError("norm under Numba: a number `ord` (or 'fro') of a vector or a "
                          "matrix without an axis, or ord=None with an axis")

    def impl(x, ord=None, axis=None, keepdims=False):
        return np.sqrt(reduce_sum(_squared(x), axis, None, None, keepdims))
    return impl


def _squared(x):
    """|x|^2 of each element (x * x, of a complex element its squared modulus)."""
    return x * x if not np.iscomplexobj(x) else (x * np.conj(x)).real


@overload(_squared)
def _squared_nb(x):
    if isinstance(getattr(x, "dtype", x), types.Complex):
        return lambda x: x.real * x.real + x.imag * x.imag
    return lambda x: x * x


def tensordot(a, b, axes=2):
    """np.tensordot (plain Python only)."""
    return np.tensordot(a, b, axes)


def _tensordot_axes(a, b, axes):
    """(summed axes of a, the axes of b they pair with, free axes of a, free axes of b),
    each a list of non-negative axes, as np.tensordot reads `axes` (an int or a pair)."""
    na, nb = np.ndim(a), np.ndim(b)
    if np.ndim(axes) == 0:
        summed_a, summed_b = list(range(na - axes, na)), list(range(axes))
    else:
        summed_a, summed_b = ([int(k)] if np.ndim(k) == 0 else [int(j) for j in k]
                              for k in axes)
    summed_a, summed_b = [k % na for k in summed_a], [k % nb for k in summed_b]
    return (summed_a, summed_b, [k for k in range(na) if k not in summed_a],
            [k for k in range(nb) if k not in summed_b])


def tensordot_grad_left(g, a, b, axes=2):
    """The adjoint of ``a`` in ``z = np.tensordot(a, b, axes)``: ``g`` (free axes of a,
    then of b) summed against b's free axes, its axes put back in a's order."""
    summed_a, summed_b, free_a, free_b = _tensordot_axes(a, b, axes)
    t = np.tensordot(g, b, (list(range(len(free_a), np.ndim(g))), free_b))
    # t keeps b's summed axes in b's order: each stands for the axis of a it pairs with
    order = free_a + [summed_a[summed_b.index(k)] for k in sorted(summed_b)]
    return np.transpose(t, np.argsort(order)) if order else t


def tensordot_grad_right(g, a, b, axes=2):
    """The adjoint of ``b`` in ``z = np.tensordot(a, b, axes)``."""
    summed_a, summed_b, free_a, free_b = _tensordot_axes(a, b, axes)
    t = np.tensordot(a, g, (free_a, list(range(len(free_a)))))
    order = [summed_b[summed_a.index(k)] for k in sorted(summed_a)] + free_b
    return np.transpose(t, np.argsort(order)) if order else t

def inner(a, b):
    """np.inner: the sum over the last axes of ``a`` and ``b``."""
    return np.inner(a, b)


def inner_grad_left(g, a, b):
    """The adjoint of ``a`` in ``z = np.inner(a, b)``."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    a2, b2, g2 = _inner_matrices(g, a, b)
    return np.reshape(g2 @ b2, np.shape(a))


def inner_grad_right(g, a, b):
    """The adjoint of ``b`` in ``z = np.inner(a, b)``."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(a * g, b)
    a2, b2, g2 = _inner_matrices(g, a, b)
    return np.reshape(g2.T @ a2, np.shape(b))


def _inner_matrices(g, a, b):
    """``a`` and ``b`` as (rows, n) matrices and ``g`` as (rows of a, rows of b)."""
    n = np.shape(a)[-1]
    a2, b2 = np.reshape(a, (-1, n)), np.reshape(b, (-1, n))
    return a2, b2, np.reshape(g, (a2.shape[0], b2.shape[0]))


@register_jitable
def _rows(x):
    return np.ascontiguousarray(x).reshape((-1, x.shape[x.ndim - 1]))


def _as_matrix(g, rows, cols):
    return np.reshape(g, (rows, cols))


@overload(_as_matrix)
def _as_matrix_nb(g, rows, cols):
    if isinstance(g, types.Array):
        return lambda g, rows, cols: np.ascontiguousarray(g).reshape((rows, cols))
    dtype = as_dtype(g).type
    return lambda g, rows, cols: full_array((rows, cols), g, dtype)


def _rank(ty) -> int:
    return ty.ndim if isinstance(ty, types.Array) else 0


@overload(inner)
def _inner_nb(a, b):
    if _rank(a) == 0 or _rank(b) == 0:
        return lambda a, b: a * b
    if _rank(a) == 1 and _rank(b) == 1:
        return lambda a, b: np.dot(np.ascontiguousarray(a), np.ascontiguousarray(b))
    return lambda a, b: np.dot(_rows(a), np.ascontiguousarray(_rows(b).T)).reshape(
        a.shape[:-1] + b.shape[:-1])


@overload(inner_grad_left)
def _inner_grad_left_nb(g, a, b):
    if _rank(a) == 0 or _rank(b) == 0:
        return lambda g, a, b: unbroadcast(g * b, a)

    def impl(g, a, b):
        a2, b2 = _rows(a), _rows(b)
        return np.dot(_as_matrix(g, a2.shape[0], b2.shape[0]), b2).reshape(a.shape)
    return impl


@overload(inner_grad_right)
def _inner_grad_right_nb(g, a, b):
    if _rank(a) == 0 or _rank(b) == 0:
        return lambda g, a, b: unbroadcast(a * g, b)

    def impl(g, a, b):
        a2, b2 = _rows(a), _rows(b)
        g2 = _as_matrix(g, a2.shape[0], b2.shape[0])
        return np.dot(np.ascontiguousarray(g2.T), a2).reshape(b.shape)
    return impl


@overload(tensordot_grad_left)
@overload(tensordot_grad_right)
def _tensordot_grad_nb(g, a, b, axes=2):
    # typed, so that Numba names the np.tensordot of the forward sweep, not a helper
    raise TypingError("Numba has no np.tensordot: its derivatives run in Python mode only")
