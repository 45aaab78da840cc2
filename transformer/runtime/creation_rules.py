"""Derivatives of the constructors whose values depend on their arguments: `np.linspace`
(linear in `start` and `stop`) and `np.arange` (`start + k * step`). `np.full` and
`np.full_like` need no helper: their rules sum the cotangent (`transformer/rules`).

`z = np.linspace(start, stop, num, endpoint)` is `start + (stop - start) * t` with the
weights `t_k = k / div` (`div` is `num - 1` with the endpoint, else `num`; the endpoint's
weight is exactly 1, as NumPy sets the last value to `stop`), so `start`'s derivative in
`z_k` is `1 - t_k` and `stop`'s is `t_k`. Arrays of endpoints lay the `num` values along
`axis`; under Numba the endpoints are numbers (the primal is Numba's linspace).
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from transformer.runtime.numba_api import overload, register_jitable

from .broadcasting import unbroadcast


@register_jitable
def stop_weights(num, endpoint):
    """The weights `t_k` of `stop` in the `num` values of np.linspace."""
    div = num - 1 if endpoint else num
    t = np.zeros(num)
    for k in range(num):
        t[k] = k / div if div > 0 else 0.0
    if endpoint and num > 1:
        t[num - 1] = 1.0
    return t


def _laid_along(t, ndim: int, axis: int):
    """`t` shaped to broadcast along `axis` of an array of rank `ndim`."""
    shape = [1] * ndim
    shape[axis % ndim] = t.shape[0]
    return t.reshape(shape)


def linspace_cotangent(g, end, num=50, endpoint=True, axis=0, of_stop=False):
    """The cotangent of `start` (or, `of_stop`, of `stop`) = `end` of
    `z = np.linspace(start, stop, num, endpoint, axis=axis)` whose cotangent is `g`."""
    t = stop_weights(num, endpoint)
    weights = t if of_stop else 1.0 - t
    g = np.asarray(g)
    summed = np.sum(g * _laid_along(weights, g.ndim, axis), axis=axis)
    return unbroadcast(summed, end)


@overload(linspace_cotangent)
def _linspace_cotangent_nb(g, end, num=50, endpoint=True, axis=0, of_stop=False):
    if not isinstance(end, types.Number):
        raise TypingError("the derivative of np.linspace compiles for number endpoints")

    def impl(g, end, num=50, endpoint=True, axis=0, of_stop=False):
        t = stop_weights(num, endpoint)
        return np.sum(g * t) if of_stop else np.sum(g * (1.0 - t))
    return impl


def linspace_tangent(d_start, d_stop, num=50, endpoint=True, axis=0):
    """The tangent of `np.linspace(start, stop, num, endpoint, axis=axis)`: the same
    linspace of the endpoints' tangents (either may be 0.0)."""
    t = stop_weights(num, endpoint)
    d_start, d_stop = np.asarray(d_start), np.asarray(d_stop)
    ndim = max(d_start.ndim, d_stop.ndim) + 1
    laid = _laid_along(t, ndim, axis)
    return np.expand_dims(d_start, axis % ndim) * (1.0 - laid) + \
        np.expand_dims(d_stop, axis % ndim) * laid


@overload(linspace_tangent)
def _linspace_tangent_nb(d_start, d_stop, num=50, endpoint=True, axis=0):
    if not (isinstance(d_start, types.Number) and isinstance(d_stop, types.Number)):
        raise TypingError("the derivative of np.linspace compiles for number endpoints")

    def impl(d_start, d_stop, num=50, endpoint=True, axis=0):
        t = stop_weights(num, endpoint)
        return d_start * (1.0 - t) + d_stop * t
    return impl


def start_weight(stop):
    """The derivative of each value of np.arange in its first argument: 1.0 where that is
    `start` (a stop is given), 0.0 for np.arange(n), whose values move with n only in
    steps."""
    return 0.0 if stop is None else 1.0


@overload(start_weight)
def _start_weight_nb(stop):
    if isinstance(stop, (types.NoneType, types.Omitted)):
        return lambda stop: 0.0
    return lambda stop: 1.0


@register_jitable
def arange_counts(z):
    """`k` for each value `start + k * step` of `z = np.arange(...)`, as floats."""
    return np.arange(z.shape[0]) * 1.0
