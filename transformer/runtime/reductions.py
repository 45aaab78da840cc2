"""Reductions with an axis (sum, prod, max, min, mean, var, std, average) and scans
(cumsum, cumprod and the cumsum adjoint), which Numba's own versions lack.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from transformer.runtime.allocation import full_array
from transformer.runtime.numba_api import overload, register_jitable
from numba.np.numpy_support import as_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple

from .broadcasting import broadcast_reduced
from .casts import _is_none, _nb_float, _static
from .kernels import _numba_sum, _reduce_into, _removed, axis_count, axis_mask
from .wide_sums import is_float32_array, wide_sum

_FOLD_START = {0: 0.0, 1: 1.0, 2: -np.inf, 3: np.inf}


def sum_all(a):
    """`np.sum(a)`. Under Numba, of a float32 array: added in float64 (`wide_sum`; Numba
    adds in float32, one element after another, far from NumPy's result for many values);
    of another array: the one loop Numba's `np.sum(a)` runs (its `_numpy_sum`), without
    compiling the wrapper that checks an axis and a dtype there are none of (three
    compiles per array type)."""
    return np.sum(a)


@overload(sum_all)
def _sum_all_nb(a):
    if is_float32_array(a):
        return lambda a: wide_sum(a)
    if isinstance(a, types.Array):
        total = _numba_sum()
        return lambda a: total(a, None, None)
    return lambda a: np.sum(a)


def mean_all(a):
    """`np.mean(a)`; under Numba of a float32 array the sum added in float64 (`wide_sum`)
    over the count, in float32 as NumPy gives it."""
    return np.mean(a)


@overload(mean_all)
def _mean_all_nb(a):
    if not is_float32_array(a):
        return lambda a: np.mean(a)
    return lambda a: wide_sum(a) / np.float32(a.size)


def var_all(a):
    """`np.var(a)`, as `mean_all`: the mean and the sum of squared deviations added in
    float64."""
    return np.var(a)


def std_all(a):
    """`np.std(a)`, as `var_all`."""
    return np.std(a)


@register_jitable
def _wide_var(a):
    centered = a - wide_sum(a) / np.float32(a.size)
    return wide_sum(centered * centered) / np.float32(a.size)


@overload(var_all)
def _var_all_nb(a):
    if not is_float32_array(a):
        return lambda a: np.var(a)
    return lambda a: _wide_var(a)


@overload(std_all)
def _std_all_nb(a):
    if not is_float32_array(a):
        return lambda a: np.std(a)
    return lambda a: np.sqrt(_wide_var(a))


_FOLDS = {0: np.sum, 1: np.prod, 2: np.max, 3: np.min}


def _fold_nb(a, axis, keepdims, op):
    """A Numba implementation of one fold; the output rank is fixed at typing time."""
    keep = bool(_static(keepdims, "keepdims"))
    rank = a.ndim if keep else a.ndim - _removed(a.ndim, axis)
    dtype = as_dtype(a.dtype).type
    start = _FOLD_START[op]

    @register_jitable
    def folded(a, axis):
        shape = np.asarray(a.shape)
        mask = axis_mask(a.ndim, axis)
        oshape = shape.copy()
        oshape[mask] = 1
        res = full_array(np.prod(oshape), start, dtype)
        _reduce_into(np.ascontiguousarray(a).ravel(), shape, res, oshape, op)
        return res, (oshape if keep else shape[~mask])

    if rank == 0 and op == 0 and is_float32_array(a):     # the whole array's sum, in float64
        return lambda a, axis=None, dtype=None, out=None, keepdims=False: wide_sum(a)
    if rank == 0:
        return lambda a, axis=None, dtype=None, out=None, keepdims=False: folded(a, axis)[0][0]

    def impl(a, axis=None, dtype=None, out=None, keepdims=False):
        res, kept = folded(a, axis)
        return res.reshape(to_fixed_tuple(kept, rank))
    return impl


def _make_fold(op, name):
    def fold(a, axis=None, dtype=None, out=None, keepdims=False):
        extra = {k: v for k, v in (("dtype", dtype), ("out", out)) if v is not None}
        return _FOLDS[op](a, axis=axis, keepdims=keepdims, **extra)
    fold.__name__ = fold.__qualname__ = name
    fold.__doc__ = f"np.{name[7:]} with axis and keepdims, also under Numba."

    @overload(fold)
    def _nb(a, axis=None, dtype=None, out=None, keepdims=False):
        if isinstance(a, (types.Float, types.Complex)) and _is_none(axis) and \
                _is_none(dtype):
            # a fold of a float is that float, as np.sum(2.5) is 2.5 (forward mode folds
            # the tangent of a 0-d value, `np.sum(np.dot(x, x) ** 2)`; np.prod's rules
            # fold with keepdims, which keeps a 0-d value 0-d)
            return lambda a, axis=None, dtype=None, out=None, keepdims=False: a
        return _fold_nb(a, axis, keepdims, op)
    return fold


reduce_sum = _make_fold(0, "reduce_sum")
reduce_prod = _make_fold(1, "reduce_prod")
reduce_max = _make_fold(2, "reduce_max")
reduce_min = _make_fold(3, "reduce_min")


def reduce_all(a, axis=None, out=None, keepdims=False):
    """np.all with axis and keepdims, also under Numba (whose np.all takes no axis)."""
    return np.all(a, axis=axis, out=out, keepdims=keepdims)


@overload(reduce_all)
def _reduce_all_nb(a, axis=None, out=None, keepdims=False):
    def impl(a, axis=None, out=None, keepdims=False):   # no zero among the elements
        return np.logical_not(reduce_any(a == 0, axis, None, keepdims))
    return impl


def reduce_any(a, axis=None, out=None, keepdims=False):
    """np.any with axis and keepdims, also under Numba (whose np.any takes no axis)."""
    return np.any(a, axis=axis, out=out, keepdims=keepdims)


@overload(reduce_any)
def _reduce_any_nb(a, axis=None, out=None, keepdims=False):
    def impl(a, axis=None, out=None, keepdims=False):   # some element not zero (NaN too)
        return reduce_sum((a != 0).astype(np.int64), axis, None, None, keepdims) != 0
    return impl


def reduce_mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """np.mean with axis and keepdims, also under Numba."""
    return np.mean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)


@overload(reduce_mean)
def _reduce_mean_nb(a, axis=None, dtype=None, out=None, keepdims=False):
    target = as_dtype(_nb_float(a)).type

    def impl(a, axis=None, dtype=None, out=None, keepdims=False):
        return reduce_sum(a, axis, None, None, keepdims) / target(axis_count(a, axis))
    return impl


def reduce_var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """np.var with axis, ddof and keepdims, also under Numba."""
    return np.var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)


@overload(reduce_var)
def _reduce_var_nb(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    target = as_dtype(_nb_float(a)).type

    def impl(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        n = axis_count(a, axis)
        mean = reduce_sum(a, axis, None, None, True) / target(n)
        centered = a - broadcast_reduced(mean, a, axis, True)
        return reduce_sum(centered * centered, axis, None, None, keepdims) / target(n - ddof)
    return impl


def reduce_std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """np.std with axis, ddof and keepdims, also under Numba."""
    return np.std(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)


@overload(reduce_std)
def _reduce_std_nb(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    def impl(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return np.sqrt(reduce_var(a, axis, None, None, ddof, keepdims))
    return impl


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """np.average, also under Numba with an int axis (Numba's refuses one at run time):
    the weighted sum along `axis` over the weights' sum there, 1-d weights laid along
    `axis`; `returned`, `keepdims` and a tuple of axes are refused at typing."""
    return np.average(a, axis=axis, weights=weights, returned=returned, keepdims=keepdims)


@overload(average)
def _average_nb(a, axis=None, weights=None, returned=False, keepdims=False):
    for flag, value in (("returned", returned), ("keepdims", keepdims)):
        if _static(value, flag):
            raise TypingError(f"np.average(..., {flag}=True) cannot be compiled: write the "
                              "weighted sum over the weights' sum (np.sum)")
    if _is_none(axis):
        if _is_none(weights):
            return lambda a, axis=None, weights=None, returned=False, keepdims=False: \
                np.average(a)
        return lambda a, axis=None, weights=None, returned=False, keepdims=False: \
            np.average(a, weights=weights)
    if not isinstance(axis, types.Integer) or not isinstance(a, types.Array):
        raise TypingError("np.average with an axis compiles for an array and one int axis")
    if _is_none(weights):
        return lambda a, axis=None, weights=None, returned=False, keepdims=False: \
            reduce_mean(a, axis)
    if not isinstance(weights, types.Array) or weights.ndim not in (1, a.ndim):
        raise TypingError("np.average: the weights must be shaped like the array, or be "
                          "1-d along the axis (NumPy raises ValueError)")
    if weights.ndim == 1:
        return _along_axis
    return _shaped_like


# NumPy's errors for weights it cannot average with
_MISSHAPEN = "Shape of weights must be consistent with shape of a along specified axis."
_ZERO_SUM = "Weights sum to zero, can't be normalized"


def _along_axis(a, axis=None, weights=None, returned=False, keepdims=False):
    """`average` with 1-d weights, laid along `axis` (each result's weights sum alike)."""
    ax = axis % a.ndim
    if weights.shape[0] != a.shape[ax]:
        raise ValueError(_MISSHAPEN)
    shape = np.ones(a.ndim, np.int64)
    shape[ax] = weights.shape[0]
    laid = np.ascontiguousarray(weights).reshape(to_fixed_tuple(shape, a.ndim))
    total = np.sum(weights)
    if total == 0:
        raise ZeroDivisionError(_ZERO_SUM)
    return reduce_sum(a * laid, axis) / total


def _shaped_like(a, axis=None, weights=None, returned=False, keepdims=False):
    """`average` with weights shaped like `a`."""
    if weights.shape != a.shape:
        raise ValueError(_MISSHAPEN)
    total = reduce_sum(weights, axis)
    if np.any(total == 0):
        raise ZeroDivisionError(_ZERO_SUM)
    return reduce_sum(a * weights, axis) / total


# ---------------------------------------------------------------- scans


def cumsum(a, axis=None):
    """np.cumsum, also under Numba with an axis."""
    return np.cumsum(a, axis=axis)


def cumprod(a, axis=None):
    """np.cumprod, also under Numba with an axis."""
    return np.cumprod(a, axis=axis)


def cumsum_adjoint(g, x, axis=None):
    """The adjoint of ``np.cumsum(x, axis)``: reversed cumulative sums, shaped like ``x``."""
    if axis is None:
        return np.flip(np.cumsum(np.flip(np.ravel(g)))).reshape(np.shape(x))
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


def _scan_nb(a, axis, product, reverse):
    """Numba: cumulative sum or product along an axis (flattened for None)."""
    dtype = as_dtype(a.dtype).type

    @register_jitable
    def scan(src, ax):
        out = src.copy()
        shape = np.asarray(out.shape)
        stride = 1
        for k in range(ax + 1, out.ndim):
            stride *= shape[k]
        n = shape[ax]
        flat = out.reshape(-1)
        for start in range(flat.shape[0]):
            if (start // stride) % n != 0:
                continue
            acc = dtype(1) if product else dtype(0)
            for m in range(n):
                i = start + (n - 1 - m if reverse else m) * stride
                acc = acc * flat[i] if product else acc + flat[i]
                flat[i] = acc
        return out

    if _is_none(axis):
        return lambda a, axis: scan(np.ascontiguousarray(a).reshape(-1), 0)
    return lambda a, axis: scan(np.ascontiguousarray(a), axis % a.ndim)


@overload(cumsum)
def _cumsum_nb(a, axis=None):
    impl = register_jitable(_scan_nb(a, axis, False, False))
    return lambda a, axis=None: impl(a, axis)


@overload(cumprod)
def _cumprod_nb(a, axis=None):
    impl = register_jitable(_scan_nb(a, axis, True, False))
    return lambda a, axis=None: impl(a, axis)


@overload(cumsum_adjoint)
def _cumsum_adjoint_nb(g, x, axis=None):
    impl = register_jitable(_scan_nb(g, axis, False, True))
    return lambda g, x, axis=None: impl(g, axis).reshape(x.shape)
