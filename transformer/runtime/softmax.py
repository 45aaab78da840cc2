"""`scipy.special.logsumexp`, `softmax` and `log_softmax` with an axis, in plain Python and
under Numba (which cannot call SciPy), and their per-example forms for vmap.

Numerics as in SciPy and JAX: the maximum along the axis is subtracted before `exp` (its
non-finite values replaced by 0), so logits of 1e3 give finite results; `b` weights the
terms of `logsumexp`; `return_sign=True` gives the pair (log|sum|, sign of the sum).
The `*_examples` forms reduce every axis but the leading one (`axis=None` per example).
"""
from __future__ import annotations

import numpy as np
from numba import types
from transformer.runtime.numba_api import overload, register_jitable
from numba.np.unsafe.ndarray import to_fixed_tuple

from .broadcasting import broadcast_reduced
from .casts import _is_none, _static
from .reductions import reduce_max, reduce_sum


@register_jitable
def _shift(a, axis):
    """The maximum of `a` over `axis` (kept as length-1 axes), 0 where it is not finite."""
    m = reduce_max(a, axis, None, None, True)
    return np.where(np.isfinite(m), m, np.zeros_like(m))


@register_jitable
def _lse_kept(a, axis):
    m = _shift(a, axis)
    s = reduce_sum(np.exp(a - broadcast_reduced(m, a, axis, True)), axis, None, None, True)
    return np.log(s) + m


@register_jitable
def _weighted_sum_kept(a, axis, b):
    """sum(b * exp(a - max)) over `axis`, kept as length-1 axes (`b` None: weights 1)."""
    e = np.exp(a - broadcast_reduced(_shift(a, axis), a, axis, True))
    if b is not None:
        e = e * b
    return reduce_sum(e, axis, None, None, True)


@register_jitable
def _lse_weighted_kept(a, axis, b):
    return np.log(_weighted_sum_kept(a, axis, b)) + _shift(a, axis)


# ---------------------------------------------------------------- one axis, compiled
# An int axis (or None) splits the array into (outer, n, inner) blocks: plain loops, which
# compile several times faster than the general reductions (kept for tuples of axes).


@register_jitable
def _blocks(a, axis):
    """`a` as a contiguous (outer, n, inner) array reducing its middle axis, and that axis."""
    if axis is None:
        return np.ascontiguousarray(a).reshape(1, a.size, 1), -1
    k = axis + a.ndim if axis < 0 else axis
    if k < 0 or k >= a.ndim:
        raise ValueError("axis is out of bounds for the array")
    outer, inner = 1, 1
    for i in range(k):
        outer *= a.shape[i]
    for i in range(k + 1, a.ndim):
        inner *= a.shape[i]
    return np.ascontiguousarray(a).reshape(outer, a.shape[k], inner), k


@register_jitable
def _block_shift(a3, o, i):
    """The max shift of block (o, :, i) and the sum of its shifted exponentials."""
    m = -np.inf
    for j in range(a3.shape[1]):
        m = max(m, a3[o, j, i])
    m = m if np.isfinite(m) else 0.0
    total = 0.0
    for j in range(a3.shape[1]):
        total += np.exp(a3[o, j, i] - m)
    return m, total


@register_jitable
def _normalized(x, axis, log):
    """softmax (or log_softmax when `log`) of `x` along one axis (None: all of them)."""
    a3, _ = _blocks(x, axis)
    out = np.empty(a3.shape, np.float64)
    for o in range(a3.shape[0]):
        for i in range(a3.shape[2]):
            m, total = _block_shift(a3, o, i)
            log_total = np.log(total)
            for j in range(a3.shape[1]):
                shifted = a3[o, j, i] - m
                out[o, j, i] = shifted - log_total if log else np.exp(shifted) / total
    return out.reshape(x.shape)


def _one_axis_lse(ndim, axis, keep):
    """Numba's logsumexp of an `ndim`-array over an int axis or None."""
    whole = _is_none(axis)
    rank = ndim if keep else (0 if whole else ndim - 1)

    def impl(a, axis=None, b=None, keepdims=False, return_sign=False):
        a3, k = _blocks(a, axis)
        out = np.empty(a3.shape[0] * a3.shape[2], np.float64)
        for o in range(a3.shape[0]):
            for i in range(a3.shape[2]):
                m, total = _block_shift(a3, o, i)
                out[o * a3.shape[2] + i] = np.log(total) + m
        if rank == 0:
            return out[0]
        shape = np.ones(ndim, np.int64)
        if k >= 0:
            for d in range(ndim):
                shape[d] = a.shape[d]
            shape[k] = 1
        if not keep:
            shape = shape[np.arange(ndim) != k]
        return out.reshape(to_fixed_tuple(shape, rank))
    return impl


# ---------------------------------------------------------------- the three functions


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """log(sum(b * exp(a))) over `axis` without overflow (scipy.special.logsumexp);
    with `return_sign`, the pair (log|sum|, sign of the sum)."""
    a = np.asarray(a, np.float64) if np.ndim(a) == 0 else a
    m = _shift(a, axis)
    s = reduce_sum(np.exp(a - m) * (1.0 if b is None else b), axis, None, None, True)
    with np.errstate(divide="ignore", invalid="ignore"):
        kept = np.log(np.abs(s) if return_sign else s) + m
    out = reduce_sum(kept, axis, None, None, keepdims)
    return (out, reduce_sum(np.sign(s), axis, None, None, keepdims)) if return_sign else out


@overload(logsumexp)
def _logsumexp_nb(a, axis=None, b=None, keepdims=False, return_sign=False):
    keep = bool(_static(keepdims, "keepdims"))
    if _static(return_sign, "return_sign"):
        def signed(a, axis=None, b=None, keepdims=False, return_sign=False):
            s = _weighted_sum_kept(a, axis, b)
            m = _shift(a, axis)
            return (reduce_sum(np.log(np.abs(s)) + m, axis, None, None, keep),
                    reduce_sum(np.sign(s), axis, None, None, keep))
        return signed
    if _is_none(b) and _one_axis(axis):
        return _one_axis_lse(a.ndim, axis, keep)
    if _is_none(b):
        def impl(a, axis=None, b=None, keepdims=False, return_sign=False):
            return reduce_sum(_lse_kept(a, axis), axis, None, None, keep)
        return impl

    def weighted(a, axis=None, b=None, keepdims=False, return_sign=False):
        return reduce_sum(_lse_weighted_kept(a, axis, b), axis, None, None, keep)
    return weighted


@register_jitable
def _softmax_general(x, axis):
    e = np.exp(x - broadcast_reduced(_shift(x, axis), x, axis, True))
    return e / broadcast_reduced(reduce_sum(e, axis, None, None, True), x, axis, True)


@register_jitable
def _log_softmax_general(x, axis):
    shifted = x - broadcast_reduced(_shift(x, axis), x, axis, True)
    total = reduce_sum(np.exp(shifted), axis, None, None, True)
    return shifted - broadcast_reduced(np.log(total), x, axis, True)


def softmax(x, axis=None):
    """exp(x) / sum(exp(x)) over `axis`, shifted by the maximum (scipy.special.softmax)."""
    return _softmax_general(x, axis)


def log_softmax(x, axis=None):
    """x - logsumexp(x) over `axis`, shifted by the maximum (scipy.special.log_softmax)."""
    return _log_softmax_general(x, axis)


def _one_axis(axis) -> bool:
    return _is_none(axis) or isinstance(axis, types.Integer)


@overload(softmax)
def _softmax_nb(x, axis=None):
    if _one_axis(axis):
        return lambda x, axis=None: _normalized(x, axis, False)
    return lambda x, axis=None: _softmax_general(x, axis)


@overload(log_softmax)
def _log_softmax_nb(x, axis=None):
    if _one_axis(axis):
        return lambda x, axis=None: _normalized(x, axis, True)
    return lambda x, axis=None: _log_softmax_general(x, axis)


# ---------------------------------------------------------------- per example (vmap)


@register_jitable
def _flat_examples(a):
    return np.ascontiguousarray(a).reshape(a.shape[0], -1)


@register_jitable
def logsumexp_examples(a):
    """logsumexp of each a[i] over all its axes: shape (n,)."""
    return logsumexp(_flat_examples(a), 1)


@register_jitable
def softmax_examples(x):
    """softmax of each x[i] over all its axes."""
    return softmax(_flat_examples(x), 1).reshape(x.shape)


@register_jitable
def log_softmax_examples(x):
    """log_softmax of each x[i] over all its axes."""
    return log_softmax(_flat_examples(x), 1).reshape(x.shape)

