"""`permutation` and `choice` of `transformer.random` under Numba, with its bits.

As in `transformer.random` (JAX's algorithm): a shuffle sorts by fresh 32-bit keys (stable
sort), `3 * log(size) / log(2**32 - 1)` rounds rounded up, each round splitting the key;
`choice` draws indices with `randint` (with replacement), takes a prefix of a permutation
(without), inverts the cumulative `p` at a uniform draw (with `p`, with replacement) or
ranks Gumbel keys (with `p`, without). Under Numba `x`/`a` is an integer or an array
shuffled or drawn from along axis 0, and a `shape` of () gives a scalar; other call forms
are refused while typing, naming the form. The plain Python functions run the same scalar
code (slow; for checks without a compile).
"""
from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.core.errors import TypingError
from transformer.runtime.numba_api import overload, register_jitable

from .random import (_bits32, _check_key, _given, _scalar_shape, _uniform32, _uniform64,
                     block, key_words, randint)
from .xla_math import log32

_LOG_U32_MAX = math.log(4294967295.0)
_TINY32 = np.finfo(np.float32).tiny


@register_jitable
def _rounds(n):
    return int(math.ceil(3.0 * math.log(max(1, n)) / _LOG_U32_MAX))


@register_jitable
def _shuffled(key, values):
    """`values` (1-D) shuffled as `transformer.random._shuffle` does."""
    k0, k1 = key_words(key)
    n = values.size
    x = values.copy()
    sort_keys = np.empty(n, np.uint32)
    for _ in range(_rounds(n)):
        s0, s1 = block(k0, k1, 1)
        k0, k1 = block(k0, k1, 0)
        for i in range(n):
            sort_keys[i] = _bits32(s0, s1, i, 0, 0)
        x = x[np.argsort(sort_keys, kind="mergesort")]
    return x


@register_jitable
def _log64(x):
    if x > 0.0:
        return math.log(x)
    return -math.inf if x == 0.0 else math.nan


@register_jitable
def _gumbel64(k0, k1, i):
    return -_log64(-_log64(_uniform64(k0, k1, i, 2.2250738585072014e-308, 1.0)))


@register_jitable
def _gumbel32(k0, k1, i):
    u = _uniform32(k0, k1, i, _TINY32, np.float32(1.0))
    return -log32(-log32(u))


def permutation(key, x, axis=0, independent=False) -> np.ndarray:
    """`x` shuffled along axis 0 (`arange(x)` for an integer `x`)."""
    arr = np.asarray(x)
    if arr.ndim == 0:
        return _shuffled(np.asarray(key), np.arange(int(arr), dtype=np.int64))
    if arr.ndim == 1:
        return _shuffled(np.asarray(key), arr)
    return arr[_shuffled(np.asarray(key), np.arange(arr.shape[0], dtype=np.int64))]


def choice(key, a, shape=(), replace=True, p=None, axis=0) -> np.ndarray:
    """Draws from `a` (or `arange(a)`), JAX's way; see the module docstring."""
    arr = np.asarray(a)
    n = int(arr) if arr.ndim == 0 else arr.shape[0]
    draws = _draws(np.asarray(key), n, tuple(shape), replace,
                   None if p is None else np.asarray(p))
    return draws if arr.ndim == 0 else arr[draws]


def _draws(key, n, shape, replace, p):
    size = math.prod(shape)
    if size and n <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and size > n:
        raise ValueError("Cannot take a larger sample than population when 'replace=False'")
    if p is None:
        if replace:
            return randint(key, shape, 0, n)
        return _shuffled(key, np.arange(n, dtype=np.int64))[:size].reshape(shape)
    k0, k1 = key_words(key)
    p = p.astype(np.float64) if p.dtype.kind != "f" else p
    inverse_cdf, top_gumbel = _BY_FLOAT[p.dtype]
    return (inverse_cdf if replace else top_gumbel)(k0, k1, p, size).reshape(shape)


def _inverse_cdf_for(unit, one):
    """A jitable `(k0, k1, p, size) -> indices`: `searchsorted(cumsum(p), total * (1 - u))`
    for the uniform draws `unit(k0, k1, i)` of p's float type."""
    def inverse_cdf(k0, k1, p, size):
        cuml = np.cumsum(p)
        r = np.empty(size, cuml.dtype)
        for i in range(size):
            r[i] = cuml[-1] * (one - unit(k0, k1, i))
        return np.searchsorted(cuml, r).astype(np.int64)
    return register_jitable(inverse_cdf)


def _top_gumbel_for(gumbel, log):
    """A jitable `(k0, k1, p, size) -> indices`: the `size` largest `gumbel + log(p)`."""
    def top_gumbel(k0, k1, p, size):
        g = np.empty(p.size, p.dtype)
        for i in range(p.size):
            g[i] = -(gumbel(k0, k1, i) + log(p[i]))
        return np.argsort(g, kind="mergesort")[:size].astype(np.int64)
    return register_jitable(top_gumbel)


@register_jitable
def _unit64(k0, k1, i):
    return _uniform64(k0, k1, i, 0.0, 1.0)


@register_jitable
def _unit32(k0, k1, i):
    return _uniform32(k0, k1, i, np.float32(0.0), np.float32(1.0))


_BY_FLOAT = {np.dtype(np.float64): (_inverse_cdf_for(_unit64, 1.0),
                                    _top_gumbel_for(_gumbel64, _log64)),
             np.dtype(np.float32): (_inverse_cdf_for(_unit32, np.float32(1.0)),
                                    _top_gumbel_for(_gumbel32, log32))}

# ---------------------------------------------------------------- Numba forms


def _axis_zero(axis, name: str) -> None:
    if _given(axis, default=None) not in (0, None) or \
            isinstance(axis, types.Integer) and not isinstance(axis, types.IntegerLiteral):
        raise TypingError(f"random.{name} under jit works along axis 0 only (pass axis=0 "
                          f"or leave it out); got axis {axis}")


@overload(permutation, prefer_literal=True)
def _permutation_nb(key, x, axis=0, independent=False):
    _check_key(key, "permutation")
    _axis_zero(axis, "permutation")
    if _given(independent, default=True) not in (False, None):
        raise TypingError("random.permutation under jit shuffles whole rows: leave out "
                          "independent=True (plain Python supports it)")
    if isinstance(x, types.Integer):
        return lambda key, x, axis=0, independent=False: \
            _shuffled(key, np.arange(np.int64(x)))
    if isinstance(x, types.Array) and x.ndim == 1:
        return lambda key, x, axis=0, independent=False: _shuffled(key, x)
    if isinstance(x, types.Array):
        return lambda key, x, axis=0, independent=False: \
            x[_shuffled(key, np.arange(x.shape[0]))]
    raise TypingError(f"random.permutation: x must be an integer or an array, got {x}")


@register_jitable
def _one(shape):
    return 1


@register_jitable
def _product(shape):
    size = 1
    for d in shape:
        size *= d
    return size


@register_jitable
def _check_draws(n, size, replace):
    if size > 0 and n <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and size > n:
        raise ValueError("Cannot take a larger sample than population when 'replace=False'")


@overload(choice, prefer_literal=True)
def _choice_nb(key, a, shape=(), replace=True, p=None, axis=0):
    _check_key(key, "choice")
    _axis_zero(axis, "choice")
    if not (isinstance(shape, (types.BaseTuple, tuple)) and
            all(isinstance(d, (types.Integer, int)) for d in shape)):
        raise TypingError(f"random.choice: shape must be a tuple of ints, got {shape}")
    scalar = _scalar_shape(shape, "choice")
    if not (isinstance(a, types.Integer) or isinstance(a, types.Array) and a.ndim == 1):
        raise TypingError(f"random.choice under jit draws from an integer or a 1-D array, "
                          f"got {a}")
    draw, size_of = _choice_draws(p), _one if scalar else _product
    from_int = isinstance(a, types.Integer)

    def impl(key, a, shape=(), replace=True, p=None, axis=0):
        n = np.int64(a) if from_int else a.shape[0]
        flat = draw(key, n, size_of(shape), replace, p)
        values = flat if from_int else a[flat]
        if scalar:
            return values[0]
        return values.reshape(shape)
    return impl


def _choice_draws(p):
    """A jitable `(key, n, size, replace, p) -> flat indices` for the type of `p`."""
    if _given(p, default=False) is None:
        @register_jitable
        def uniform_draws(key, n, size, replace, p):
            _check_draws(n, size, replace)
            if replace:
                return randint(key, size, 0, n)
            return _shuffled(key, np.arange(n))[:size]
        return uniform_draws
    if not (isinstance(p, types.Array) and p.ndim == 1 and isinstance(p.dtype, types.Float)
            and str(p.dtype) in ("float32", "float64")):
        raise TypingError(f"random.choice under jit takes p as a 1-D float32/float64 "
                          f"array, got {p}")
    inverse_cdf, top_gumbel = _BY_FLOAT[np.dtype(str(p.dtype))]

    @register_jitable
    def weighted_draws(key, n, size, replace, p):
        _check_draws(n, size, replace)
        if p.shape[0] != n:
            raise ValueError("p must be None or a 1D vector with the same size as "
                             "a.shape[axis]")
        k0, k1 = key_words(key)
        if replace:
            return inverse_cdf(k0, k1, p, size)
        return top_gumbel(k0, k1, p, size)
    return weighted_draws
