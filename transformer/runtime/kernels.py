"""Index-mapping kernels shared by reductions, broadcasting and their adjoints (any rank,
an axis that is an int, negative too, a tuple or None), and axis bookkeeping.
"""
from __future__ import annotations

import numpy as np
from numba import types
from transformer.runtime.allocation import full_array, zeros_array
from transformer.runtime.numba_api import overload, register_jitable

from .casts import _is_none


@register_jitable
def _c_strides(shape):
    strides = np.empty(shape.shape[0], np.int64)
    acc = 1
    for k in range(shape.shape[0] - 1, -1, -1):
        strides[k] = acc
        acc *= shape[k]
    return strides


@register_jitable
def _reduce_into(src, src_shape, out, out_shape, op):
    """Fold the C-ordered ``src`` into ``out``: element ``i`` of ``src`` lands on the index
    ``i mod out_shape`` (axis by axis), so axes of length 1 are reduced and longer axes
    wrap around (the adjoint of tiling).

    ``op``: 0 sum, 1 product, 2 max, 3 min. ``out`` holds the starting values.
    """
    ss = _c_strides(src_shape)
    os_ = _c_strides(out_shape)
    for i in range(src.shape[0]):
        j = 0
        for k in range(src_shape.shape[0]):
            j += (((i // ss[k]) % src_shape[k]) % out_shape[k]) * os_[k]
        v = src[i]
        if op == 0:
            out[j] += v
        elif op == 1:
            out[j] *= v
        elif op == 2:
            if v > out[j] or np.isnan(v):
                out[j] = v
        elif v < out[j] or np.isnan(v):
            out[j] = v


@register_jitable
def _gather(src, src_shape, out, out_shape):
    """Fill the C-ordered ``out`` from ``src``: element ``i`` of ``out`` reads the index
    ``i mod src_shape`` (axis by axis), which broadcasts axes of length 1 and tiles the rest.
    """
    ss = _c_strides(src_shape)
    os_ = _c_strides(out_shape)
    for i in range(out.shape[0]):
        j = 0
        for k in range(out_shape.shape[0]):
            j += (((i // os_[k]) % out_shape[k]) % src_shape[k]) * ss[k]
        out[i] = src[j]


def _axes(ndim, axis):
    if axis is None:
        return tuple(range(ndim))
    axis = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return tuple(sorted(a % ndim for a in axis))


def axis_mask(ndim, axis):
    """Boolean mask of the axes a reduction over ``axis`` removes."""
    mask = np.zeros(ndim, np.bool_)
    mask[list(_axes(ndim, axis))] = True
    return mask


@overload(axis_mask)
def _axis_mask_nb(ndim, axis):
    if _is_none(axis):
        return lambda ndim, axis: full_array(ndim, True, np.bool_)
    if isinstance(axis, types.Integer):
        def one(ndim, axis):
            mask = zeros_array(ndim, np.bool_)
            mask[axis % ndim] = True
            return mask
        return one

    def several(ndim, axis):
        mask = zeros_array(ndim, np.bool_)
        for a in axis:
            mask[a % ndim] = True
        return mask
    return several


def _removed(ndim, axis_ty) -> int:
    if _is_none(axis_ty):
        return ndim
    if isinstance(axis_ty, types.Integer):
        return 1
    return len(axis_ty)


def axis_count(x, axis=None) -> int:
    """How many elements of ``x`` a reduction over ``axis`` folds into each result."""
    shape = np.shape(x)
    return int(np.prod([shape[a] for a in _axes(len(shape), axis)], dtype=np.int64))


@overload(axis_count)
def _axis_count_nb(x, axis=None):
    def impl(x, axis=None):
        shape = np.asarray(x.shape)
        return np.prod(shape[axis_mask(x.ndim, axis)])
    return impl


def _numba_sum():
    """Numba's own `np.sum(a)` loop (`_numpy_sum(a, None, None)`: its order, its accumulator),
    imported when compiling: numba.np.arraymath loads Numba's NumPy registries and SciPy, a
    third of a second of `import transformer`."""
    try:
        from numba.np.arraymath import _numpy_sum
    except ImportError:         # a Numba without that private name: its public np.sum
        return _public_sum
    return _numpy_sum


@register_jitable
def _public_sum(a, axis, dtype):
    return np.sum(a)
