"""`multivariate_normal` and `orthogonal` of `transformer.random` under Numba.

As in `transformer.random_samplers`: `multivariate_normal` is `mean + factor @ z` with
`cov = factor @ factor.T` (Cholesky, or `v * sqrt(w)` of `eigh`, or `u * sqrt(s)` of `svd`)
and `z` the standard normals of shape `batch + (n,)`; `orthogonal` takes the QR factors of
a normal matrix of shape `(max(n, m), min(n, m))` and moves the signs of R's diagonal into
Q (transposed when `n < m`). The normals are `transformer.runtime.random`'s, bit for bit;
the factorizations are LAPACK's through Numba, so results agree with plain NumPy to
rounding (about 1e-15 relative in float64), not bit for bit.

Under Numba: `mean` is a float array (..., n) and `cov` one float (n, n) matrix of the
same dtype (a batch of covariances runs in plain Python); `shape` None (mean's batch
shape) or a tuple; `dtype` None or the dtype of mean; `method` a literal string.
`orthogonal` takes integer `n`, `m` and a tuple `shape`; `dtype` np.float32 or np.float64.
"""
from __future__ import annotations

import math

import numpy as np
from numba import from_dtype, types
from numba.core.errors import TypingError
from transformer.runtime.numba_api import overload, register_jitable

from .random import _check_key, _dtype_of, _given, _normal32, _normal64, key_words
from .random_choice import _one, _product
from .random_gamma import _flat_as, _no_shape

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_FLOATS = (_F32, _F64)
_METHODS = ("cholesky", "eigh", "svd")
_NORMAL = {_F32: _normal32, _F64: _normal64}
_NOT_PD = ("multivariate_normal: cov is not positive definite; for a singular covariance "
           "pass method='svd' or method='eigh'")

# ---------------------------------------------------------------- shared scalar code


@register_jitable
def _cholesky(cov):
    failed = False
    factor = np.zeros_like(cov)
    try:
        factor = np.linalg.cholesky(cov)
    except Exception:                 # Numba cannot raise from inside the handler
        failed = True
    if failed:
        raise ValueError(_NOT_PD)
    return factor


@register_jitable
def _eigh(cov):
    w, v = np.linalg.eigh(cov)
    return v * np.sqrt(w).reshape((1, w.size))


@register_jitable
def _svd(cov):
    u, s, _ = np.linalg.svd(cov)
    return u * np.sqrt(s).reshape((1, s.size))


_FACTORS = {"cholesky": _cholesky, "eigh": _eigh, "svd": _svd}


def _shifted_for(dt: np.dtype):
    """A jitable `(k0, k1, mean, factor, out)`: row `r` of `out` (rows, n) is
    `mean[r] + factor @ z[r]` for the normals `z` of shape (rows, n)."""
    normal, zero = _NORMAL[dt], dt.type(0.0)

    def shifted(k0, k1, mean, factor, out):
        rows, n = out.shape
        z = np.empty(n, out.dtype)
        for r in range(rows):
            for j in range(n):
                z[j] = normal(k0, k1, r * n + j, 0, 0)
            for i in range(n):
                acc = zero
                for j in range(n):
                    acc += factor[i, j] * z[j]
                out[r, i] = mean[r, i] + acc
    return register_jitable(shifted)


def _haar_for(dt: np.dtype):
    """A jitable `(k0, k1, out)`: `out` (count, rows, cols), rows >= cols, filled with the
    sign-corrected Q factors of consecutive normal matrices."""
    normal = _NORMAL[dt]

    def haar(k0, k1, out):
        count, rows, cols = out.shape
        z = np.empty((rows, cols), out.dtype)
        for b in range(count):
            for i in range(rows):
                for j in range(cols):
                    z[i, j] = normal(k0, k1, (b * rows + i) * cols + j, 0, 0)
            q, r = np.linalg.qr(z)
            for j in range(cols):
                sign = np.sign(r[j, j])
                for i in range(rows):
                    out[b, i, j] = q[i, j] * sign
    return register_jitable(haar)


_SHIFTED = {dt: _shifted_for(dt) for dt in _FLOATS}
_HAAR = {dt: _haar_for(dt) for dt in _FLOATS}

# ---------------------------------------------------------------- plain Python forms


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Samples of N(mean, cov) (one covariance matrix), see the module docstring."""
    mean, cov = np.asarray(mean), np.asarray(cov)
    dt = np.dtype(mean.dtype if dtype is None else dtype)
    if method not in _METHODS or dt not in _FLOATS or cov.ndim != 2:
        raise ValueError(f"multivariate_normal: the element-wise form takes a float mean, "
                         f"one cov matrix and a method of {_METHODS}")
    n = mean.shape[-1]
    batch = mean.shape[:-1] if shape is None else tuple(shape)
    factor = _FACTORS[method](cov.astype(dt))
    out = np.empty((math.prod(batch), n), dt)
    k0, k1 = key_words(np.asarray(key))
    _SHIFTED[dt](k0, k1, np.broadcast_to(mean, batch + (n,)).reshape(out.shape).astype(dt),
                 factor, out)
    return out.reshape(batch + (n,))


def orthogonal(key, n, shape=(), dtype=None, m=None) -> np.ndarray:
    """Haar-random matrices of shape `(*shape, n, m)` (`m` defaults to `n`)."""
    dt = np.dtype(np.float64 if dtype is None else dtype)
    m = n if m is None else m
    shape = (int(shape),) if np.ndim(shape) == 0 else tuple(shape)
    out = np.empty((math.prod(shape), max(n, m), min(n, m)), dt)
    k0, k1 = key_words(np.asarray(key))
    _HAAR[dt](k0, k1, out)
    if n < m:
        out = np.swapaxes(out, -1, -2)
    return np.ascontiguousarray(out).reshape(shape + (n, m))

# ---------------------------------------------------------------- Numba forms


def _float_array(arr, name: str, what: str, ndim: int) -> np.dtype:
    if not (isinstance(arr, types.Array) and arr.ndim >= ndim and
            str(arr.dtype) in ("float32", "float64")):
        raise TypingError(f"random.{name} under jit takes {what} as a float32/float64 array "
                          f"with at least {ndim} dimension(s), got {arr}; cast it with "
                          f"np.asarray(..., np.float64)")
    return np.dtype(str(arr.dtype))


@overload(multivariate_normal, prefer_literal=True)
def _multivariate_normal_nb(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    _check_key(key, "multivariate_normal")
    dt = _float_array(mean, "multivariate_normal", "mean", 1)
    if _float_array(cov, "multivariate_normal", "cov", 2) != dt or cov.ndim != 2:
        raise TypingError("random.multivariate_normal under jit takes one covariance matrix "
                          "(cov.ndim == 2) of mean's dtype; draw a batch of covariances "
                          "in plain Python or loop over them")
    if _given(dtype, default=dtype) is not None and \
            _dtype_of(dtype, "multivariate_normal", _FLOATS) != dt:
        raise TypingError("random.multivariate_normal under jit draws in mean's dtype: "
                          "cast mean and cov instead of passing another dtype")
    chosen = _given(method, default=None)
    if chosen not in _METHODS:
        raise TypingError(f"random.multivariate_normal: method must be one of {_METHODS} "
                          f"written as a literal, got {method}")
    factor_of, shifted, nb_dt = _FACTORS[chosen], _SHIFTED[dt], from_dtype(dt)
    if _no_shape(shape):
        batch_of = register_jitable(lambda shape, mean: mean.shape[:-1])
    elif isinstance(shape, types.BaseTuple) and all(isinstance(d, types.Integer)
                                                    for d in shape):
        batch_of = register_jitable(lambda shape, mean: shape)
    else:
        raise TypingError(f"random.multivariate_normal: shape must be a tuple of ints, "
                          f"got {shape}")

    def impl(key, mean, cov, shape=None, dtype=None, method="cholesky"):
        n = mean.shape[-1]
        if cov.shape[0] != n or cov.shape[1] != n:
            raise ValueError("multivariate_normal requires cov.shape == (n, n) for the n "
                             "of mean.shape[-1]")
        full = batch_of(shape, mean) + (n,)
        means = _flat_as(mean, full, nb_dt)
        out = np.empty((means.size // max(n, 1), n), nb_dt)
        k0, k1 = key_words(key)
        shifted(k0, k1, means.reshape(out.shape), factor_of(np.ascontiguousarray(cov)), out)
        return out.reshape(full)
    return impl


@overload(orthogonal)
def _orthogonal_nb(key, n, shape=(), dtype=None, m=None):
    _check_key(key, "orthogonal")
    given = _given(dtype, default=dtype)
    dt = _F64 if given is None else _dtype_of(dtype, "orthogonal", _FLOATS)
    if not isinstance(n, types.Integer) or not (
            _given(m, default=False) is None or isinstance(m, types.Integer)):
        raise TypingError(f"random.orthogonal: n and m must be integers, got {n} and {m}")
    if not (isinstance(shape, (types.BaseTuple, tuple)) and
            all(isinstance(d, (types.Integer, int)) for d in shape)):
        raise TypingError(f"random.orthogonal: shape must be a tuple of ints, got {shape}")
    haar, nb_dt = _HAAR[dt], from_dtype(dt)
    count_of = _one if len(shape) == 0 else _product
    width = register_jitable(lambda n, m: n) if _given(m, default=False) is None else \
        register_jitable(lambda n, m: m)

    def impl(key, n, shape=(), dtype=None, m=None):
        cols = width(n, m)
        if n < 0 or cols < 0:
            raise ValueError("orthogonal: n and m must be non-negative integers")
        count = count_of(shape)
        stacked = np.empty((count, max(n, cols), min(n, cols)), nb_dt)
        k0, k1 = key_words(key)
        haar(k0, k1, stacked)
        out = np.empty((count, n, cols), nb_dt)
        for b in range(count):
            out[b] = stacked[b].T if n < cols else stacked[b]
        return out.reshape(shape + (n, cols))
    return impl
