"""Runtime forms of the functions of sampled signals (np.trapezoid, np.convolve, np.interp)
and of their derivatives; each runs as plain NumPy and inside Numba (there with every
keyword of the common call, which Numba's own versions lack).

`np.interp`'s derivatives are JAX's: at a knot the segment to its right
(`searchsorted(xp, x, side='right')`, clipped into the knots), zero outside the knots
(there the value is `left`/`right`, or `fp[0]`/`fp[-1]`, whose derivatives it carries),
and a zero-width segment takes `fp` of its left end.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from transformer.runtime.numba_api import overload, register_jitable
from numba.np.numpy_support import as_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple

from .casts import _is_none
from .structure import _row_helpers

# ---------------------------------------------------------------- scalars or arrays alike


def _flat(x):
    """``x`` (a number or an array) as a 1-D float array."""
    return np.ravel(np.asarray(x, dtype=float))


@overload(_flat)
def _flat_nb(x):
    if isinstance(x, types.Array):
        return lambda x: np.ascontiguousarray(x).ravel().astype(np.float64)
    return lambda x: np.array([float(x)])


def _shaped(values, x):
    """Flat ``values`` shaped like ``x`` (a float for a number)."""
    return np.reshape(values, np.shape(x)) if np.ndim(x) else float(values[0])


@overload(_shaped)
def _shaped_nb(values, x):
    if isinstance(x, types.Array):
        return lambda values, x: values.reshape(x.shape)
    return lambda values, x: values[0]


def _given(value) -> bool:
    return value is not None


@overload(_given)
def _given_nb(value):
    none = _is_none(value)
    return lambda value: not none


def _number(value) -> float:
    return 0.0 if value is None else float(value)


@overload(_number)
def _number_nb(value):
    if _is_none(value):
        return lambda value: 0.0
    return lambda value: float(value)


# ---------------------------------------------------------------- interp


INSIDE, BELOW, ABOVE, FLAT = 0, 1, 2, 3


@register_jitable
def _locate(v, xp):
    """(i, t, state) for the point ``v``: the segment ``xp[i-1]..xp[i]``, the fraction of
    the way along it, and whether ``v`` is INSIDE, BELOW or ABOVE the knots, or on a
    segment of zero width (FLAT)."""
    n = xp.shape[0]
    lo, hi = 0, n
    while lo < hi:                        # first knot greater than v (side='right')
        mid = (lo + hi) // 2
        if xp[mid] <= v:
            lo = mid + 1
        else:
            hi = mid
    i = min(max(lo, 1), n - 1)
    width = xp[i] - xp[i - 1]
    if v < xp[0]:
        return i, 0.0, BELOW
    if v > xp[n - 1]:
        return i, 0.0, ABOVE
    if abs(width) <= 5e-324:              # JAX: np.spacing(eps) of float64
        return i, 0.0, FLAT
    return i, (v - xp[i - 1]) / width, INSIDE


@register_jitable
def _interp_flat(xs, xp, fp, left, right, has_left, has_right):
    out = np.empty(xs.shape[0])
    n = xp.shape[0]
    for k in range(xs.shape[0]):
        i, t, state = _locate(xs[k], xp)
        if state == BELOW:
            out[k] = left if has_left else fp[0]
        elif state == ABOVE:
            out[k] = right if has_right else fp[n - 1]
        elif state == FLAT:
            out[k] = fp[i - 1]
        else:
            out[k] = fp[i - 1] + t * (fp[i] - fp[i - 1])
    return out


def interp(x, xp, fp, left=None, right=None):
    """np.interp(x, xp, fp, left, right)."""
    return np.interp(x, xp, fp, left, right)


@overload(interp)
def _interp_nb(x, xp, fp, left=None, right=None):
    def impl(x, xp, fp, left=None, right=None):
        values = _interp_flat(_flat(x), xp, fp, _number(left), _number(right),
                              _given(left), _given(right))
        return _shaped(values, x)
    return impl


@register_jitable
def _fp_weights(xs, xp, has_left, has_right):
    """(index, weight) pairs per point: d value / d fp[index] (two per point)."""
    n = xp.shape[0]
    index = np.zeros((xs.shape[0], 2), np.int64)
    weight = np.zeros((xs.shape[0], 2))
    for k in range(xs.shape[0]):
        i, t, state = _locate(xs[k], xp)
        index[k, 0], index[k, 1] = i - 1, i
        if state == INSIDE:
            weight[k, 0], weight[k, 1] = 1.0 - t, t
        elif state == FLAT:
            weight[k, 0] = 1.0
        elif state == BELOW and not has_left:
            index[k, 0], weight[k, 0] = 0, 1.0
        elif state == ABOVE and not has_right:
            index[k, 0], weight[k, 0] = n - 1, 1.0
    return index, weight


@register_jitable
def _xp_weights(xs, xp, fp):
    """(index, weight) pairs per point: d value / d xp[index], and d value / d x."""
    index = np.zeros((xs.shape[0], 2), np.int64)
    weight = np.zeros((xs.shape[0], 2))
    slope = np.zeros(xs.shape[0])
    for k in range(xs.shape[0]):
        i, t, state = _locate(xs[k], xp)
        index[k, 0], index[k, 1] = i - 1, i
        if state == INSIDE:
            s = (fp[i] - fp[i - 1]) / (xp[i] - xp[i - 1])
            slope[k] = s
            weight[k, 0], weight[k, 1] = s * (t - 1.0), -s * t
    return index, weight, slope


@register_jitable
def _scatter(g, index, weight, n):
    out = np.zeros(n)
    for k in range(g.shape[0]):
        for j in range(2):
            out[index[k, j]] += g[k] * weight[k, j]
    return out


@register_jitable
def _gather(t, index, weight):
    out = np.empty(index.shape[0])
    for k in range(index.shape[0]):
        out[k] = t[index[k, 0]] * weight[k, 0] + t[index[k, 1]] * weight[k, 1]
    return out


@register_jitable
def interp_grad_x(g, x, xp, fp):
    """d interp / d x times ``g``, shaped like ``x``."""
    slope = _xp_weights(_flat(x), xp, fp)[2]
    return _shaped(_flat(g) * slope, x)


@register_jitable
def interp_grad_fp(g, x, xp, fp, left=None, right=None):
    index, weight = _fp_weights(_flat(x), xp, _given(left), _given(right))
    return _scatter(_flat(g), index, weight, fp.shape[0])


@register_jitable
def interp_grad_xp(g, x, xp, fp):
    index, weight, _ = _xp_weights(_flat(x), xp, fp)
    return _scatter(_flat(g), index, weight, xp.shape[0])


@register_jitable
def interp_outside(g, x, xp, below):
    """The derivative along ``left`` (``below``) or ``right``: the sum of ``g`` over the
    points outside the knots on that side."""
    xs, gs = _flat(x), _flat(g)
    total = 0.0
    for k in range(xs.shape[0]):
        if (xs[k] < xp[0]) if below else (xs[k] > xp[xp.shape[0] - 1]):
            total += gs[k]
    return total


@register_jitable
def interp_tangent_x(t, x, xp, fp):
    return interp_grad_x(t, x, xp, fp)


@register_jitable
def interp_tangent_fp(t, x, xp, fp, left=None, right=None):
    index, weight = _fp_weights(_flat(x), xp, _given(left), _given(right))
    return _shaped(_gather(_flat(t), index, weight), x)


@register_jitable
def interp_tangent_xp(t, x, xp, fp):
    index, weight, _ = _xp_weights(_flat(x), xp, fp)
    return _shaped(_gather(_flat(t), index, weight), x)


@register_jitable
def interp_tangent_outside(t, x, xp, below):
    xs = _flat(x)
    out = np.zeros(xs.shape[0])
    for k in range(xs.shape[0]):
        if (xs[k] < xp[0]) if below else (xs[k] > xp[xp.shape[0] - 1]):
            out[k] = t
    return _shaped(out, x)


# ---------------------------------------------------------------- convolve


def convolve(a, v, mode="full"):
    """np.convolve(a, v, mode)."""
    return np.convolve(a, v, mode)


@register_jitable
def _window(n, m, mode):
    """(start, length) of ``mode``'s part of the full convolution of lengths n and m
    (symmetric in n and m, as NumPy swaps the shorter argument second)."""
    short, full = min(n, m), n + m - 1
    if mode == "same":
        return (short - 1) // 2, max(n, m)
    if mode == "valid":
        return short - 1, max(n, m) - short + 1
    return 0, full


@overload(convolve)
def _convolve_nb(a, v, mode="full"):
    dtype = np.result_type(as_dtype(a.dtype), as_dtype(v.dtype))

    def impl(a, v, mode="full"):
        start, length = _window(a.shape[0], v.shape[0], mode)
        out = np.zeros(length, dtype)
        for i in range(a.shape[0]):
            for j in range(v.shape[0]):
                k = i + j - start
                if 0 <= k < length:
                    out[k] += a[i] * v[j]
        return out
    return impl


@register_jitable
def convolve_grad(g, a, v, mode="full"):
    """The adjoint of ``np.convolve(a, v, mode)`` with respect to ``a`` (for ``v``: swap
    the arguments; the convolution is symmetric in them)."""
    start, length = _window(a.shape[0], v.shape[0], mode)
    out = np.zeros(a.shape[0], g.dtype)
    for i in range(a.shape[0]):
        for j in range(v.shape[0]):
            k = i + j - start
            if 0 <= k < length:
                out[i] += g[k] * v[j]
    return out


# ---------------------------------------------------------------- trapezoid

_np_trapezoid = getattr(np, "trapezoid", None) or np.trapz


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """np.trapezoid(y, x, dx, axis) (np.trapz before NumPy 2)."""
    return _np_trapezoid(y, x, dx, axis)


def _points(y, x, dx, axis):
    """The sample points along ``axis``, broadcast against ``y`` (moved last)."""
    n = np.shape(y)[axis]
    if x is None:
        return np.arange(n) * float(dx)
    x = np.asarray(x, dtype=float)
    return x if x.ndim == 1 else np.moveaxis(x, axis, -1)


def _weights(points):
    """d trapezoid / d y along the last axis, for the sample ``points``."""
    gaps = np.diff(points, axis=-1) / 2.0
    zero = np.zeros(gaps.shape[:-1] + (1,))
    return np.concatenate([gaps, zero], -1) + np.concatenate([zero, gaps], -1)


def trapezoid_grad_y(g, y, x=None, dx=1.0, axis=-1):
    """The adjoint of ``np.trapezoid(y, x, dx, axis)`` with respect to ``y``."""
    weights = _weights(_points(y, x, dx, axis))
    moved = np.expand_dims(np.asarray(g, dtype=float), -1) * weights
    return np.moveaxis(np.broadcast_to(moved, np.moveaxis(np.asarray(y), axis, -1).shape),
                       -1, axis).astype(np.result_type(y, 0.0))


def trapezoid_grad_x(g, y, x, axis=-1):
    """The adjoint of ``np.trapezoid(y, x, axis=axis)`` with respect to ``x``:
    ``d/dx[j] = (y[j-1] - y[j+1]) / 2`` inside, ``-(y[0] + y[1]) / 2`` and
    ``(y[-2] + y[-1]) / 2`` at the ends."""
    ys = np.moveaxis(np.asarray(y, dtype=float), axis, -1)
    zero = np.zeros(ys.shape[:-1] + (1,))
    sums = (ys[..., 1:] + ys[..., :-1]) / 2.0
    coeff = np.concatenate([zero, sums], -1) - np.concatenate([sums, zero], -1)
    full = coeff * np.expand_dims(np.asarray(g, dtype=float), -1)
    if np.ndim(x) == 1:
        return full.reshape(-1, full.shape[-1]).sum(0)
    return np.moveaxis(full, -1, axis)


def trapezoid_grad_dx(g, y, axis=-1):
    """The adjoint of ``np.trapezoid(y, dx=dx, axis=axis)`` with respect to ``dx``."""
    return float(np.sum(np.asarray(g) * trapezoid(y, None, 1.0, axis)))


# Numba: samples of any rank, row by row along the axis (moved last)


def _check_samples(y, x=None):
    if not (isinstance(y, types.Array) and
            (_is_none(x) or isinstance(x, types.Array) and x.ndim in (1, y.ndim))):
        raise TypingError("np.trapezoid compiles with x None, a vector, or an array shaped "
                          "like y")


@register_jitable
def _weights_nb(points):
    n = points.shape[0]
    w = np.zeros(n)
    for i in range(n - 1):
        half = (points[i + 1] - points[i]) / 2.0
        w[i] += half
        w[i + 1] += half
    return w


def _point_rows(y, x):
    """Numba: `points(y, x, dx, axis)`, the sample points as rows (one shared row unless
    x is shaped like y)."""
    if _is_none(x):
        return register_jitable(lambda y, x, dx, axis: (
            np.arange(y.shape[axis]) * float(dx)).reshape((1, y.shape[axis])))
    if x.ndim == 1 and y.ndim != 1:
        return register_jitable(lambda y, x, dx, axis: (
            x.astype(np.float64).reshape((1, x.shape[0]))))
    to_rows = _row_helpers(y.ndim)[0]
    return register_jitable(lambda y, x, dx, axis: to_rows(x.astype(np.float64), axis)[0])


@register_jitable
def _row_of(points, r):
    return points[r if points.shape[0] > 1 else 0]


def _reduced(ndim: int):
    """Numba: per-row values back to the array of the other axes (a float at rank 1)."""
    if ndim == 1:
        return register_jitable(lambda out, shape: out[0])
    rank = ndim - 1                 # to_fixed_tuple needs a constant
    return register_jitable(lambda out, shape: out.reshape(to_fixed_tuple(shape[:rank], rank)))


@overload(trapezoid)
def _trapezoid_nb(y, x=None, dx=1.0, axis=-1):
    _check_samples(y, x)
    to_rows, points, reduced = _row_helpers(y.ndim)[0], _point_rows(y, x), _reduced(y.ndim)

    def impl(y, x=None, dx=1.0, axis=-1):
        rows, shape = to_rows(y, axis)
        grid = points(y, x, dx, axis)
        out = np.empty(rows.shape[0])
        for r in range(rows.shape[0]):
            out[r] = np.sum(_weights_nb(_row_of(grid, r)) * rows[r])
        return reduced(out, shape)
    return impl


@overload(trapezoid_grad_y)
def _trapezoid_grad_y_nb(g, y, x=None, dx=1.0, axis=-1):
    _check_samples(y, x)
    to_rows, from_rows = _row_helpers(y.ndim)
    points = _point_rows(y, x)

    def impl(g, y, x=None, dx=1.0, axis=-1):
        rows, shape = to_rows(y, axis)
        grid, gs = points(y, x, dx, axis), _flat(g)
        out = np.empty(rows.shape)
        for r in range(rows.shape[0]):
            out[r] = gs[r] * _weights_nb(_row_of(grid, r))
        return from_rows(out, shape, axis)
    return impl


@overload(trapezoid_grad_x)
def _trapezoid_grad_x_nb(g, y, x, axis=-1):
    _check_samples(y, x)
    to_rows, from_rows = _row_helpers(y.ndim)

    @register_jitable
    def coefficients(g, y, axis):
        """d value / d x per row (x shaped like y), and the moved shape."""
        rows, shape = to_rows(y, axis)
        gs = _flat(g)
        out = np.zeros(rows.shape)
        for r in range(rows.shape[0]):
            for i in range(rows.shape[1] - 1):
                half = gs[r] * (rows[r, i] + rows[r, i + 1]) / 2.0
                out[r, i] -= half
                out[r, i + 1] += half
        return out, shape

    if x.ndim == 1:                 # one set of points shared by every row
        return lambda g, y, x, axis=-1: _sum_rows(coefficients(g, y, axis)[0])

    def impl(g, y, x, axis=-1):
        out, shape = coefficients(g, y, axis)
        return from_rows(out, shape, axis)
    return impl


@register_jitable
def _sum_rows(out):
    total = np.zeros(out.shape[1])
    for r in range(out.shape[0]):
        total += out[r]
    return total


@overload(trapezoid_grad_dx)
def _trapezoid_grad_dx_nb(g, y, axis=-1):
    _check_samples(y)
    return lambda g, y, axis=-1: np.sum(_flat(g) * _flat(trapezoid(y, None, 1.0, axis)))
