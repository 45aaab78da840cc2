"""`poisson` of `transformer.random` under Numba, with its bits.

JAX's algorithm as `transformer.random_samplers` follows it, in float32: below `lam = 10`,
Knuth's product of uniforms (element `i` draws `uniform(sub, i)` from the same chain of
split keys as every element, so each element stops on its own); from 10 up, Hormann's
transformed rejection, which runs over the whole array: an element accepted earlier is
overwritten by each later acceptance until every element has accepted once, so the loop
here is array-wide too. Elements below 10 take part in that loop with `lam = 1e5`, as in
JAX, because they decide how long it runs.

Under Numba: `lam` is a real scalar or array, `shape` None (lam's shape), an int or a tuple
of ints lam broadcasts to, `dtype` an integer type (default int64); counts beyond the
dtype clamp to its bounds. A scalar `lam` without a shape gives a scalar. A negative,
NaN or infinite `lam` raises ValueError.
"""
from __future__ import annotations

import math

import numpy as np
from numba import from_dtype, types
from numba.core.errors import TypingError
from transformer.runtime.numba_api import overload, register_jitable

from .random import _check_key, _dtype_of, _given, _plain_shape, _uniform32, block, key_words
from .random_gamma import _flat_as, _real, _result_shape, _scalar_result
from .xla_math import fma, log32

_F = np.float32
_ZERO, _HALF, _ONE = _F(0.0), _F(0.5), _F(1.0)
_KNUTH_BELOW, _PLACEHOLDER = _F(10.0), _F(1e5)
_INTS = tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64,
                                    np.uint8, np.uint16, np.uint32, np.uint64))


@register_jitable
def _knuth(k0, k1, i, lam):
    """Element `i` of Knuth's count for rate `lam` (< 10)."""
    k = 0
    log_prod = _ZERO
    while log_prod > -lam:
        s0, s1 = block(k0, k1, 1)
        k0, k1 = block(k0, k1, 0)
        k += 1
        log_prod = log_prod + log32(_uniform32(s0, s1, i, _ZERO, _ONE))
    return k - 1


@register_jitable
def _lgamma32(x):
    # XLA's Lanczos sum is not reproduced: the correctly rounded value stands in, as in
    # random_xla_special.lgamma32 (it feeds only the acceptance test)
    if x <= _ZERO:
        return _F(np.inf)
    return _F(math.lgamma(float(x)))


@register_jitable
def _setup(lam):
    """The constants of Hormann's proposal for rate `lam`: (log lam, b, a, 1/alpha, v_r)."""
    b = fma(_F(2.53), _F(math.sqrt(lam)), _F(0.931))
    return (log32(lam), b, fma(_F(0.02483), b, _F(-0.059)),
            _F(1.1239) + _F(1.1328) / (b - _F(3.4)), _F(0.9277) - _F(3.6224) / (b - _F(2.0)))


@register_jitable
def _proposal(s0, s1, t0, t1, i, lam, setup):
    """(accepted, k) of element `i`'s proposal from the round keys `(s0, s1)`, `(t0, t1)`."""
    log_lam, b, a, inv_alpha, v_r = setup
    u = _uniform32(s0, s1, i, _ZERO, _ONE) - _HALF
    v = _uniform32(t0, t1, i, _ZERO, _ONE)
    us = _HALF - abs(u)
    k = _floor32(fma(_F(2.0) * a / us + b, u, lam) + _F(0.43))
    s = log32(v * inv_alpha / (a / (us * us) + b))
    t = fma(k, log_lam, -lam) - _lgamma32(k + _ONE)
    accept = (us >= _F(0.07) and v <= v_r) or \
        (not (k < _ZERO or (us < _F(0.013) and v > us)) and s <= t)
    return accept, k


@register_jitable
def _floor32(x):
    # float32 values from 2**23 up are whole; below, the int floor is exact (math.floor,
    # which CUDA threads have, where np.floor is not)
    return x if not abs(x) < _F(8388608.0) else _F(math.floor(x))


@register_jitable
def _rejection(k0, k1, lam, out):
    """Hormann's rejection counts (as float32) for every `lam` at once, into `out`."""
    n = lam.size
    accepted = np.zeros(n, np.bool_)
    for i in range(n):
        out[i] = _F(-1.0)
    pending = n
    while pending > 0:
        s0, s1 = block(k0, k1, 1)
        t0, t1 = block(k0, k1, 2)
        k0, k1 = block(k0, k1, 0)
        for i in range(n):
            accept, k = _proposal(s0, s1, t0, t1, i, lam[i], _setup(lam[i]))
            if accept:
                out[i] = k
                if not accepted[i]:
                    accepted[i] = True
                    pending -= 1


@register_jitable
def _rejection_element(k0, k1, i, lam, size):
    """Element `i` of `_rejection` for `size` elements that share the rate `lam`, on its
    own (a CUDA thread keeps no arrays): the rounds the whole array runs are the most any
    element needs to accept once; element `i` keeps its last acceptance within them."""
    setup = _setup(lam)
    rounds = 0
    for j in range(size):
        a0, a1 = k0, k1
        r = 0
        accept = False
        while not accept:
            s0, s1 = block(a0, a1, 1)
            t0, t1 = block(a0, a1, 2)
            a0, a1 = block(a0, a1, 0)
            r += 1
            accept, k = _proposal(s0, s1, t0, t1, j, lam, setup)
        rounds = max(rounds, r)
    last = _F(-1.0)
    for _ in range(rounds):
        s0, s1 = block(k0, k1, 1)
        t0, t1 = block(k0, k1, 2)
        k0, k1 = block(k0, k1, 0)
        accept, k = _proposal(s0, s1, t0, t1, i, lam, setup)
        if accept:
            last = k
    return last


def _counts_for(dt: np.dtype):
    """Jitables `counts(k0, k1, lam, out)`: Poisson counts of `dt` for the flat float32
    `lam`; and `element(k0, k1, i, lam, size)`: element `i` of `size` counts of one scalar
    rate, for CUDA threads (an invalid `lam` gives -1 there: a kernel cannot raise)."""
    info, nb_dt = np.iinfo(dt), from_dtype(dt)
    top = 2.0 ** (info.bits - (1 if info.min < 0 else 0))
    low, high, bottom = nb_dt(info.min), nb_dt(info.max), float(info.min)

    def saturated(count):
        x = float(count)                   # XLA's conversion clamps to the dtype's range
        return high if x >= top else (low if x < bottom else nb_dt(x))
    saturated = register_jitable(saturated)

    def element(k0, k1, i, lam, size):
        if not (lam >= _ZERO and lam < _F(np.inf)):
            return nb_dt(-1)
        if lam == _ZERO:
            return nb_dt(0)
        if lam < _KNUTH_BELOW:
            return nb_dt(_knuth(k0, k1, i, lam))
        return saturated(_rejection_element(k0, k1, i, lam, size))

    def counts(k0, k1, lam, out):
        for i in range(lam.size):
            if not (lam[i] >= _ZERO and lam[i] < _F(np.inf)):
                raise ValueError("poisson: lam must be >= 0, not NaN and finite")
        rejected = np.empty(lam.size, _F)
        _rejection(k0, k1, np.where(lam < _KNUTH_BELOW, _PLACEHOLDER, lam), rejected)
        for i in range(lam.size):
            if lam[i] == _ZERO:
                out[i] = nb_dt(0)
            elif lam[i] < _KNUTH_BELOW:
                out[i] = nb_dt(_knuth(k0, k1, i, lam[i]))
            else:
                out[i] = saturated(rejected[i])
    return register_jitable(counts), register_jitable(element)


_COUNTS, ELEMENTS = {}, {}
for _dt in _INTS:
    _COUNTS[_dt], ELEMENTS[_dt] = _counts_for(_dt)


def poisson(key, lam, shape=None, dtype=None) -> np.ndarray:
    """Poisson(lam) counts (int64 by default); `lam` is read as float32, as in JAX."""
    dt = np.dtype(np.int64 if dtype is None else dtype)
    if dt not in _INTS:
        raise TypeError(f"poisson requires an integer dtype, got {dt}")
    lam = np.asarray(lam, np.float32)
    shape = lam.shape if shape is None else \
        _plain_shape(shape)
    k0, k1 = key_words(np.asarray(key))
    flat = np.ascontiguousarray(np.broadcast_to(lam, shape)).reshape(-1)
    out = np.empty(flat.size, dt)
    with np.errstate(all="ignore"):
        _COUNTS[dt](k0, k1, flat, out)
    return out.reshape(shape)


@overload(poisson)
def _poisson_nb(key, lam, shape=None, dtype=None):
    _check_key(key, "poisson")
    given = _given(dtype, default=dtype)
    dt = np.dtype(np.int64) if given is None else _dtype_of(dtype, "poisson", _INTS)
    _real(lam, "poisson", "lam")
    counts, nb_dt = _COUNTS[dt], from_dtype(dt)
    f32 = from_dtype(np.dtype(np.float32))
    if _scalar_result(shape, lam):
        def one(key, lam, shape=None, dtype=None):
            k0, k1 = key_words(key)
            out = np.empty(1, nb_dt)
            counts(k0, k1, np.full(1, f32(lam)), out)
            return out[0]
        return one
    result_shape = _result_shape(shape, lam, lam)
    if isinstance(shape, types.Integer):
        raise TypingError("random.poisson under jit takes shape as a tuple, e.g. (n,)")

    def impl(key, lam, shape=None, dtype=None):
        out_shape = result_shape(shape, lam, lam)
        flat = _flat_as(lam, out_shape, f32)
        k0, k1 = key_words(key)
        out = np.empty(flat.size, nb_dt)
        counts(k0, k1, flat, out)
        return out.reshape(out_shape)
    return impl
