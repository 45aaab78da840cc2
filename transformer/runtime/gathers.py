"""Gathers: np.roll, np.take and np.pad (mode 'constant'), linear maps each of whose output
entries is one entry of the input or a constant, and their adjoints, which put each entry
of a gradient back where it came from (`unroll`, `take_adjoint`, `unpad`).

Each runs as plain NumPy and, through an ``overload``, inside Numba with the arguments
NumPy's common calls take: Numba's np.roll and np.take take no axis and it has no np.pad.
The compiled forms work on C-ordered copies through flat indices, so any rank compiles:
`roll` maps each output index to its source axis by axis; `take` and its adjoint view the
array as (before, along, after) blocks around the axis (before = after = 1 without an axis).
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.np.numpy_support import as_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple
from transformer.runtime.allocation import empty_array, full_array, zeros_array
from transformer.runtime.numba_api import overload, register_jitable

from .casts import _is_none
from .kernels import _c_strides
from .views import strided_view

# ---------------------------------------------------------------- np.roll


def roll(a, shift, axis=None):
    """np.roll."""
    return np.roll(a, shift, axis)


def unroll(g, shift, axis=None):
    """The adjoint of ``np.roll(x, shift, axis)``: ``g`` rolled back by ``-shift``."""
    return np.roll(g, np.negative(shift), axis)


@register_jitable
def _axis_shifts(ndim, shift, axis):
    """The total shift of each axis (NumPy's broadcasting of `shift` against `axis`)."""
    shifts, axes = np.asarray(shift).ravel(), np.asarray(axis).ravel()
    n = max(shifts.size, axes.size)
    if shifts.size not in (1, n) or axes.size not in (1, n):
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    out = np.zeros(ndim, np.int64)
    for k in range(n):
        a = axes[k if axes.size > 1 else 0]
        if a < -ndim or a >= ndim:
            raise ValueError("np.roll: axis out of bounds")
        out[a % ndim] += shifts[k if shifts.size > 1 else 0]
    return out


@register_jitable
def _rolled(src, shape, shifts, sign):
    """``src`` (C order, `shape`) with element ``c`` of the result read from ``c - sign *
    shifts`` modulo the shape, axis by axis."""
    strides = _c_strides(shape)
    out = np.empty_like(src)
    for i in range(src.shape[0]):
        j = 0
        for k in range(shape.shape[0]):
            c = (i // strides[k]) % shape[k]
            j += ((c - sign * shifts[k]) % shape[k]) * strides[k]
        out[i] = src[j]
    return out


def _roll_typer(sign: int):
    def typer(a, shift, axis=None):
        if not isinstance(a, types.Array):
            return None
        if _is_none(axis) and isinstance(shift, types.Integer):
            # Numba's own np.roll: one copy, no index arithmetic per element
            return lambda a, shift, axis=None: np.roll(a, sign * shift)
        if _is_none(axis):
            def flat(a, shift, axis=None):
                src = np.ascontiguousarray(a).ravel()
                shifts = np.full(1, np.asarray(shift).ravel().sum())
                return _rolled(src, np.asarray(src.shape), shifts, sign).reshape(a.shape)
            return flat

        def along(a, shift, axis=None):
            src = np.ascontiguousarray(a).ravel()
            shifts = _axis_shifts(a.ndim, shift, axis)
            return _rolled(src, np.asarray(a.shape), shifts, sign).reshape(a.shape)
        return along
    return typer


overload(roll)(_roll_typer(1))
overload(unroll)(_roll_typer(-1))

# ---------------------------------------------------------------- np.take


def take(a, indices, axis=None):
    """np.take (Numba's takes no axis)."""
    return np.take(a, indices, axis)


def take_adjoint(g, x, indices, axis=None):
    """The adjoint of ``np.take(x, indices, axis)``: ``g`` added into zeros shaped like
    ``x`` at the indices taken, a repeated index accumulating."""
    indices, dtype = np.asarray(indices), np.asarray(g).dtype
    if axis is None:
        out = np.zeros(np.size(x), dtype)
        np.add.at(out, indices, g)
        return out.reshape(np.shape(x))
    out = np.zeros(np.shape(x), dtype)
    np.add.at(out, (slice(None),) * (axis % np.ndim(x)) + (indices,), g)
    return out


def _index_rank(indices) -> int:
    if isinstance(indices, types.Integer):
        return 0
    if isinstance(indices, types.Array):
        return indices.ndim
    if isinstance(indices, (types.Sequence, types.BaseTuple)):
        return 1
    raise TypingError(f"np.take: indices must be ints or an int array, got {indices}")


def _axis_or_flat(axis, ndim):
    """`axis` normalized; -1 for None (the flattened array)."""
    return -1 if axis is None else axis % ndim


@overload(_axis_or_flat)
def _axis_or_flat_nb(axis, ndim):
    if _is_none(axis):
        return lambda axis, ndim: -1

    def impl(axis, ndim):
        if axis < -ndim or axis >= ndim:
            raise ValueError("np.take: axis out of bounds")
        return axis % ndim
    return impl


@register_jitable
def _blocks(shape, axis):
    """(before, along, after): the sizes around `axis` (-1: the whole array along)."""
    before, after = 1, 1
    if axis < 0:
        for n in shape:
            before *= n
        return 1, before, 1
    for k in range(axis):
        before *= shape[k]
    for k in range(axis + 1, shape.shape[0]):
        after *= shape[k]
    return before, shape[axis], after


@register_jitable
def _checked(i, n):
    j = i + n if i < 0 else i
    if j < 0 or j >= n:
        raise IndexError("np.take: index out of bounds")
    return j


@register_jitable
def _gathered(a, indices, axis, rank):
    """(the entries taken, C-ordered, the shape of the result as an int array)."""
    shape, index = np.asarray(a.shape), np.asarray(indices)
    before, n, after = _blocks(shape, axis)
    flat = index.ravel()
    src = np.ascontiguousarray(a).reshape((before, n, after))
    out = empty_array((before, flat.shape[0], after), a.dtype)
    for j in range(flat.shape[0]):
        s = _checked(flat[j], n)
        for p in range(before):
            for q in range(after):
                out[p, j, q] = src[p, s, q]
    dims, k = np.empty(rank, np.int64), 0           # axes before, the indices', axes after
    for d in range(max(axis, 0)):
        dims[k] = shape[d]
        k += 1
    for m in index.shape:
        dims[k] = m
        k += 1
    for d in range(axis + 1 if axis >= 0 else shape.shape[0], shape.shape[0]):
        dims[k] = shape[d]
        k += 1
    return out.ravel(), dims


@overload(take)
def _take_nb(a, indices, axis=None):
    if not isinstance(a, types.Array):
        return None
    rank = _index_rank(indices) + (0 if _is_none(axis) else a.ndim - 1)
    if rank == 0:
        return lambda a, indices, axis=None: _gathered(
            a, indices, _axis_or_flat(axis, a.ndim), rank)[0][0]

    def impl(a, indices, axis=None):
        out, dims = _gathered(a, indices, _axis_or_flat(axis, a.ndim), rank)
        return out.reshape(to_fixed_tuple(dims, rank))
    return impl


@overload(take_adjoint)
def _take_adjoint_nb(g, x, indices, axis=None):
    _index_rank(indices)
    dtype = as_dtype(g.dtype if isinstance(g, types.Array) else g)

    def impl(g, x, indices, axis=None):
        ax = _axis_or_flat(axis, x.ndim)
        before, n, after = _blocks(np.asarray(x.shape), ax)
        flat = np.asarray(indices).ravel()
        m = flat.shape[0]
        values = np.ascontiguousarray(np.asarray(g)).reshape((before, m, after))
        out = zeros_array((before, n, after), dtype)
        for j in range(m):
            s = _checked(flat[j], n)
            for p in range(before):
                for q in range(after):
                    out[p, s, q] += values[p, j, q]
        return out.reshape(x.shape)
    return impl

# ---------------------------------------------------------------- np.pad, mode 'constant'


def pad(array, pad_width, mode="constant", constant_values=0):
    """np.pad with mode 'constant' (Numba has no np.pad)."""
    return np.pad(array, pad_width, mode, constant_values=constant_values)


def unpad(g, x, pad_width):
    """The adjoint of ``np.pad(x, pad_width)``: the part of ``g`` that holds ``x``."""
    pairs = _pad_pairs(pad_width, np.ndim(x))
    return np.array(g[tuple(slice(b, b + n) for b, n in zip(pairs[:, 0], np.shape(x)))])


@register_jitable
def _pad_pairs(pad_width, ndim):
    """(before, after) of each axis, as NumPy broadcasts `pad_width` to (ndim, 2)."""
    pairs = np.broadcast_to(np.asarray(pad_width), (ndim, 2))
    if np.any(pairs < 0):
        raise ValueError("index can't contain negative values")
    return pairs


@overload(pad)
def _pad_nb(array, pad_width, mode="constant", constant_values=0):
    if not isinstance(array, types.Array):
        return None
    if isinstance(mode, types.StringLiteral) and mode.literal_value != "constant":
        raise TypingError(f"np.pad compiles with mode='constant' only, not {mode.literal_value!r}")
    if not isinstance(constant_values, (types.Number, types.Omitted, int, float)):
        raise TypingError("np.pad compiles with one number as constant_values")
    rank = array.ndim

    def impl(array, pad_width, mode="constant", constant_values=0):
        if mode != "constant":
            raise ValueError("np.pad compiles with mode='constant' only")
        pairs = _pad_pairs(pad_width, rank)
        shape = np.asarray(array.shape) + pairs[:, 0] + pairs[:, 1]
        out = full_array(to_fixed_tuple(shape, rank), constant_values, array.dtype)
        offset = 0
        for k in range(rank):
            offset += pairs[k, 0] * out.strides[k]
        strided_view(out, array.shape, out.strides, offset)[...] = array
        return out
    return impl


@overload(unpad)
def _unpad_nb(g, x, pad_width):
    if not isinstance(g, types.Array):
        return None

    def impl(g, x, pad_width):
        pairs = _pad_pairs(pad_width, x.ndim)
        offset = 0
        for k in range(x.ndim):
            offset += pairs[k, 0] * g.strides[k]
        return strided_view(g, x.shape, g.strides, offset).copy()
    return impl
