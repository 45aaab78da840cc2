"""Counter-based pseudo-random numbers, bit-compatible with ``jax.random``.

Design
------
* Keys are plain ``uint32`` arrays of shape ``(2,)`` -- the same "raw key"
  layout JAX uses for its default ``threefry2x32`` implementation.  There is
  no global state: every sampler takes an explicit key, and new keys are made
  with :func:`split` or :func:`fold_in`.
* Everything is built on the Threefry-2x32 block cipher (20 rounds), written
  with vectorised ``uint32`` NumPy arithmetic.
* Counters follow JAX's *partitionable* mode (``jax_threefry_partitionable``
  on, JAX's current default): element ``i`` of an output is produced from the
  64-bit counter ``i`` (its row-major flat index), split into (high, low)
  32-bit words.  Element values thus depend only on the key and the flat
  index, so e.g. ``split(k, 3)[:2] == split(k, 2)``.
* Seeds and dtypes follow JAX with ``jax_enable_x64`` on: seeds are 64-bit
  integers, and the default float / int dtypes are ``float64`` / ``int64``.
* Floating-point post-processing (mantissa filling for ``uniform``, the
  polynomial ``erf_inv`` and ``log1p`` behind ``normal``, fused multiply-adds)
  mirrors XLA's CPU lowering, so results agree with JAX bit for bit.  Known
  gap: float16 Gumbel keys (``choice`` without replacement and float16 ``p``)
  can differ from XLA's in the last bit, so rare near-ties may rank
  differently.  The XLA arithmetic itself (fma, log, log1p, erf_inv) lives in
  ``random_xla``.
* The cipher, raw bits, uniform floats and normals live in ``random_bits``; the
  samplers beyond this module's (gamma, poisson, categorical, ...) in
  ``random_samplers``, re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from . import random_xla as xla
from .runtime.random import DEFAULT_BITS_DTYPE
from .random_bits import (
    _MASK32,
    _U32,
    _UINT_DTYPES,
    _as_key,
    _canonical_shape,
    _check_broadcast,
    _float_dtype,
    _random_bits,
    _uniform,
    split_keys,
    standard_normal,
    threefry2x32,
)
from .random_samplers import (
    beta,
    categorical,
    dirichlet,
    exponential,
    gamma,
    gumbel,
    laplace,
    logistic,
    multivariate_normal,
    orthogonal,
    poisson,
    truncated_normal,
)

# users call them as `random.gamma`: errors and `secant primitives` name them so
for _sampler in (beta, categorical, dirichlet, exponential, gamma, gumbel, laplace, logistic,
                 multivariate_normal, orthogonal, poisson, truncated_normal):
    _sampler.__module__ = __name__

__all__ = [
    "PRNGKey",
    "bernoulli",
    "beta",
    "bits",
    "categorical",
    "choice",
    "dirichlet",
    "exponential",
    "fold_in",
    "gamma",
    "gumbel",
    "key",
    "key_data",
    "laplace",
    "logistic",
    "multivariate_normal",
    "normal",
    "orthogonal",
    "permutation",
    "poisson",
    "randint",
    "split",
    "threefry2x32",
    "truncated_normal",
    "uniform",
]

# ---------------------------------------------------------------------------
# Keys
# ---------------------------------------------------------------------------


def PRNGKey(seed) -> np.ndarray:
    """Make a raw key (uint32[2]) from an integer seed.

    The seed is read as a 64-bit integer (two's complement for negative
    values); the key holds its high and low 32-bit words, as JAX does with
    x64 enabled.
    """
    s = np.asarray(seed)
    if s.shape:
        raise TypeError(f"PRNGKey accepts a scalar seed, got shape {s.shape}")
    if s.dtype == bool or not np.issubdtype(s.dtype, np.integer):
        raise TypeError(f"PRNGKey seed must be an integer, got {s.dtype}")
    v = int(s)
    if not -(2**63) <= v < 2**64:
        raise OverflowError(f"seed {v} does not fit in 64 bits")
    v &= (1 << 64) - 1
    return np.array([v >> 32, v & _MASK32], dtype=_U32)


def key(seed) -> np.ndarray:
    """Alias of :func:`PRNGKey` (returns the raw uint32[2] form, not a typed key)."""
    return PRNGKey(seed)


def key_data(k) -> np.ndarray:
    """Return the uint32 words of a key (keys are already raw; provided for symmetry)."""
    return _as_key(k).copy()


def split(k, num=2) -> np.ndarray:
    """Split a key into ``num`` new keys, returned as uint32[num, 2].

    ``num`` may also be a shape tuple, giving uint32[*num, 2].
    """
    return split_keys(k, num)


def fold_in(k, data) -> np.ndarray:
    """Derive a new key from ``k`` and an integer in ``[0, 2**32)``."""
    arr = np.asarray(data)
    if arr.shape or arr.dtype.kind not in "iub":
        raise TypeError(f"fold_in data must be a scalar integer, got {data!r}")
    d = int(arr)
    if not 0 <= d <= _MASK32:
        raise OverflowError(f"fold_in data {d} is out of bounds for uint32")
    y0, y1 = threefry2x32(_as_key(k), _U32(0), _U32(d))
    return np.array([y0, y1], dtype=_U32)


# ---------------------------------------------------------------------------
# Samplers
# ---------------------------------------------------------------------------


def bits(k, shape=(), dtype=None) -> np.ndarray:
    """Uniformly distributed unsigned integers of ``dtype`` (uint8/16/32/64).

    The default dtype is uint64, JAX's default unsigned type with x64 enabled (one
    default for plain NumPy and compiled code: ``runtime.random.DEFAULT_BITS_DTYPE``).
    """
    dt = np.dtype(DEFAULT_BITS_DTYPE if dtype is None else dtype)
    if dt.kind != "u" or dt.itemsize * 8 not in _UINT_DTYPES:
        raise TypeError(f"bits requires an unsigned integer dtype, got {dt}")
    return _random_bits(k, dt.itemsize * 8, _canonical_shape(shape))


def uniform(k, shape=(), dtype=np.float64, minval=0.0, maxval=1.0) -> np.ndarray:
    """Uniform floats in ``[minval, maxval)``."""
    dt = _float_dtype(dtype, "uniform")
    shape = _canonical_shape(shape)
    lo = np.asarray(minval, dtype=dt)
    hi = np.asarray(maxval, dtype=dt)
    _check_broadcast("uniform", shape, lo.shape, hi.shape)
    return _uniform(k, shape, dt, lo, hi)


def normal(k, shape=(), dtype=np.float64) -> np.ndarray:
    """Standard normal samples (inverse-CDF transform of ``uniform``)."""
    return standard_normal(k, shape, dtype)


def _clip_to(val: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Clamp integer array ``val`` to the range of ``dtype`` and convert."""
    if val.dtype == dtype:
        return val
    info_d, info_v = np.iinfo(dtype), np.iinfo(val.dtype)
    lo = max(info_d.min, info_v.min)
    hi = min(info_d.max, info_v.max)
    return np.clip(val, val.dtype.type(lo), val.dtype.type(hi)).astype(dtype)


def randint(k, shape, minval, maxval, dtype=np.int64) -> np.ndarray:
    """Integers uniformly drawn from ``[minval, maxval)`` (JAX's algorithm and bias).

    Like JAX, 8- and 16-bit dtypes are sampled as int32 (bounds converted to
    int32, then clipped to the dtype's range) and cast back.
    """
    dt = np.dtype(dtype)
    if dt.kind not in "iu":
        raise TypeError(f"randint requires an integer dtype, got {dt}")
    shape = _canonical_shape(shape)
    lo = np.asarray(minval)
    hi = np.asarray(maxval)
    _check_broadcast("randint", shape, lo.shape, hi.shape)
    if dt.itemsize >= 4:
        return _randint(k, shape, lo, hi, dt)
    info = np.iinfo(dt)
    with np.errstate(all="ignore"):
        lo = lo.astype(np.int32).clip(info.min, info.max).astype(np.int32)
        hi = hi.astype(np.int32).clip(info.min, info.max + 1).astype(np.int32)
    return _randint(k, shape, lo, hi, np.dtype(np.int32)).astype(dt)


def _randint(k, shape, lo: np.ndarray, hi: np.ndarray, dt: np.dtype) -> np.ndarray:
    if lo.dtype.kind not in "iu":
        lo = lo.astype(np.int64)
    if hi.dtype.kind not in "iu":
        hi = hi.astype(np.int64)

    hi_out_of_range = hi > np.iinfo(dt).max
    lo = _clip_to(lo, dt)
    hi = _clip_to(hi, dt)
    nbits = dt.itemsize * 8
    uint = _UINT_DTYPES[nbits]

    k1, k2 = split(k)
    higher = _random_bits(k1, nbits, shape)
    lower = _random_bits(k2, nbits, shape)

    with np.errstate(over="ignore"):
        span = np.broadcast_to((hi - lo).astype(uint), shape)
        span = np.where(hi <= lo, uint(1), span)
        span = np.where(hi_out_of_range & (hi > lo), span + uint(1), span).astype(uint)

        def rem(a, b):
            # XLA semantics for unsigned division by zero: a % 0 == a.
            safe = np.where(b == 0, uint(1), b)
            return np.where(b == 0, a, a % safe).astype(uint)

        mult = rem(np.full(shape, uint(2 ** (nbits // 2))), span)
        mult = rem(mult * mult, span)
        offset = rem(higher, span) * mult + rem(lower, span)
        offset = rem(offset, span)
        return (lo + offset.astype(dt)).astype(dt)


def bernoulli(k, p=0.5, shape=None, mode="low") -> np.ndarray:
    """Booleans that are True with probability ``p``.

    As in JAX, the uniform draw uses the floating dtype of ``p`` (a Python
    float counts as float64).  ``mode="high"`` uses two uniform draws per
    sample, which stays accurate for tiny ``p``.
    """
    if mode not in ("low", "high"):
        raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    p = np.asarray(p)
    if p.dtype.kind != "f":
        raise TypeError(f"bernoulli probability must be a float, got {p.dtype}")
    if shape is None:
        shape = p.shape
    else:
        shape = _canonical_shape(shape)
        _check_broadcast("bernoulli", shape, p.shape)
    dt = _float_dtype(p.dtype, "bernoulli")
    zero, one = dt.type(0.0), dt.type(1.0)
    if mode == "high":
        u1, u2 = _uniform(k, (2, *shape), dt, zero, one)
        u2 = u2 * dt.type(2.0 ** -np.finfo(dt).nmant)
        return u2 < p - u1
    return _uniform(k, shape, dt, zero, one) < p


# ---------------------------------------------------------------------------
# Permutations and choice
# ---------------------------------------------------------------------------


def _shuffle(k, x: np.ndarray, axis: int) -> np.ndarray:
    # JAX sorts by fresh random 32-bit keys, repeating enough rounds to make
    # key collisions unlikely (3 * log(size) / log(2**32 - 1) rounds).
    rounds = int(np.ceil(3 * np.log(max(1, x.size)) / np.log(np.iinfo(np.uint32).max)))
    k = _as_key(k)
    for _ in range(rounds):
        k, sub = split(k)
        sort_keys = _random_bits(sub, 32, x.shape)
        order = np.argsort(sort_keys, axis=axis, kind="stable")
        x = np.take_along_axis(x, order, axis=axis)
    return x


def permutation(k, x, axis=0, independent=False) -> np.ndarray:
    """Randomly permute ``x`` along ``axis`` (or ``arange(x)`` for an integer ``x``).

    With ``independent=True`` every slice along ``axis`` is shuffled separately.
    """
    arr = np.asarray(x)
    if arr.ndim == 0:
        if arr.dtype.kind not in "iu":
            raise TypeError("x must be an integer or at least 1-dimensional")
        return _shuffle(k, np.arange(int(arr), dtype=np.int64), 0)
    axis = _normalize_axis(axis, arr.ndim)
    if independent or arr.ndim == 1:
        return _shuffle(k, arr, axis)
    ind = _shuffle(k, np.arange(arr.shape[axis], dtype=np.int64), 0)
    return np.take(arr, ind, axis=axis)


def _normalize_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


def _gumbel(k, shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    tiny = np.asarray(np.finfo(dt).tiny, dt)
    u = _uniform(k, shape, dt, tiny, np.asarray(1.0, dt))
    with np.errstate(all="ignore"):
        return -xla.log(-xla.log(u, dt), dt)


def choice(k, a, shape=(), replace=True, p=None, axis=0) -> np.ndarray:
    """Random sample from ``a`` (or ``arange(a)`` for an integer ``a``), JAX-style.

    Without ``p``: uniform draws via :func:`randint` (with replacement) or a
    prefix of :func:`permutation` (without).  With ``p``: inverse-CDF search
    on ``cumsum(p)`` (with replacement) or the Gumbel top-k trick (without).
    """
    if not isinstance(shape, Sequence):
        raise TypeError(f"shape argument of choice must be a sequence, got {shape!r}")
    shape = _canonical_shape(shape)
    arr = np.asarray(a)
    if arr.ndim == 0:
        n_inputs = int(arr)
    else:
        axis = _normalize_axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return np.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise ValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise ValueError(
            f"Cannot take a larger sample (size {n_draws}) than "
            f"population (size {n_inputs}) when 'replace=False'"
        )
    if p is None:
        if replace:
            ind = randint(k, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else np.take(arr, ind, axis=axis)
        else:
            perm = permutation(k, n_inputs if arr.ndim == 0 else arr, axis)
            result = perm[(slice(None),) * (0 if arr.ndim == 0 else axis) + (slice(n_draws),)]
    else:
        p_arr = np.asarray(p)
        if p_arr.dtype.kind not in "f":
            p_arr = p_arr.astype(np.float64)
        dt = _float_dtype(p_arr.dtype, "choice")
        if p_arr.shape != (n_inputs,):
            raise ValueError(
                "p must be None or a 1D vector with the same size as a.shape[axis]. "
                f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}."
            )
        if replace:
            p_cuml = np.cumsum(p_arr, dtype=dt)
            with np.errstate(all="ignore"):
                r = p_cuml[-1] * (dt.type(1) - uniform(k, shape, dt))
            ind = np.searchsorted(p_cuml, r).astype(np.int64)
        else:
            with np.errstate(divide="ignore"):
                logp = xla.log(p_arr, dt)
            g = _gumbel(k, (n_inputs,), dt) + logp
            ind = np.argsort(-g, kind="stable")[:n_draws].astype(np.int64)
        result = ind if arr.ndim == 0 else np.take(arr, ind, axis=axis)
    out_shape = shape if arr.ndim == 0 else arr.shape[:axis] + shape + arr.shape[axis + 1 :]
    return result.reshape(out_shape)

