"""Threefry-2x32 counters and the numbers made from them: the base of `transformer.random`.

Keys are uint32[2] arrays; element ``i`` of an output comes from the 64-bit counter ``i``
(its row-major flat index, JAX's partitionable mode).  This module holds the cipher, key
and shape checks, raw bits, uniform floats and standard normals; `random` (keys and the
first samplers) and `random_samplers` (the further ones) build on it, so neither needs
the other.  See `random` for the design and JAX compatibility.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from . import random_xla as xla
from .runtime.random import _plain_shape

_U32 = np.uint32
_MASK32 = 0xFFFFFFFF

_UINT_DTYPES = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


# ---------------------------------------------------------------------------
# Threefry-2x32
# ---------------------------------------------------------------------------

_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U32(r)) | (x >> _U32(32 - r))


def threefry2x32(key_pair, x0, x1) -> tuple[np.ndarray, np.ndarray]:
    """Apply the Threefry-2x32 block cipher (20 rounds) to counter words.

    ``key_pair`` is a uint32 array of shape ``(2,)``; ``x0`` and ``x1`` are
    broadcast-compatible uint32 arrays holding the two words of each block.
    Returns the two enciphered words.
    """
    k = _as_key(key_pair)
    return _threefry(k[0], k[1], x0, x1)


def _threefry_rows(keys: np.ndarray, x0, x1) -> tuple[np.ndarray, np.ndarray]:
    """Threefry-2x32 with one key per row: ``keys`` uint32[m, 2], counters [m, c] or [c]."""
    return _threefry(keys[:, :1], keys[:, 1:], x0, x1)


def _threefry(k0, k1, x0, x1) -> tuple[np.ndarray, np.ndarray]:
    ks = (k0, k1, k0 ^ k1 ^ _U32(0x1BD11BDA))
    x0, x1 = np.broadcast_arrays(np.asarray(x0, dtype=_U32), np.asarray(x1, dtype=_U32))
    with np.errstate(over="ignore"):
        x0 = x0 + ks[0]
        x1 = x1 + ks[1]
        for i in range(5):
            for r in _ROTATIONS[i % 2]:
                x0 = x0 + x1
                x1 = _rotl(x1, r) ^ x0
            x0 = x0 + ks[(i + 1) % 3]
            x1 = x1 + ks[(i + 2) % 3] + _U32(i + 1)
    return x0, x1


# ---------------------------------------------------------------------------
# Keys, shapes and dtypes
# ---------------------------------------------------------------------------


def _as_key(k) -> np.ndarray:
    arr = np.asarray(k)
    if arr.shape != (2,):
        raise TypeError(f"expected a raw PRNG key of shape (2,), got shape {arr.shape}")
    if arr.dtype != _U32:
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"expected a uint32 PRNG key, got dtype {arr.dtype}")
        arr = arr.astype(_U32)
    return arr


def _canonical_shape(shape) -> tuple[int, ...]:
    if not isinstance(shape, (int, np.integer, Sequence, np.ndarray, type(None))):
        raise TypeError(f"shape must be an int or a tuple of ints, got {shape!r}")
    out = _plain_shape(shape)       # a float dimension is refused, not truncated
    if any(d < 0 for d in out):
        raise ValueError(f"negative dimension in shape {out}")
    return out


def _iota_2x32(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Row-major flat index of every element of ``shape`` as (hi, lo) uint32 words."""
    n = math.prod(shape)
    if n > 2**64:
        raise ValueError("random arrays are limited to 2**64 elements (the counter is 64-bit)")
    idx = np.arange(n, dtype=np.uint64).reshape(shape)
    return (idx >> np.uint64(32)).astype(_U32), (idx & np.uint64(_MASK32)).astype(_U32)


def _blocks(k, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    hi, lo = _iota_2x32(shape)
    return threefry2x32(k, hi, lo)


def split_keys(k, num=2) -> np.ndarray:
    """Split a key into ``num`` new keys, returned as uint32[num, 2].

    ``num`` may also be a shape tuple, giving uint32[*num, 2].
    """
    shape = _canonical_shape(num)
    b1, b2 = _blocks(_as_key(k), shape)
    return np.stack([b1, b2], axis=-1)


def _random_bits(k, bit_width: int, shape: tuple[int, ...]) -> np.ndarray:
    return _bits_from_blocks(*_blocks(_as_key(k), shape), bit_width)


def _bits_from_blocks(b1: np.ndarray, b2: np.ndarray, bit_width: int) -> np.ndarray:
    if bit_width == 64:
        return (b1.astype(np.uint64) << np.uint64(32)) | b2.astype(np.uint64)
    out = b1 ^ b2
    if bit_width == 32:
        return out
    return out.astype(_UINT_DTYPES[bit_width])


def _float_dtype(dtype, name: str) -> np.dtype:
    dt = np.dtype(dtype)
    if dt not in (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"{name} requires a float16/32/64 dtype, got {dt}")
    return dt


def _check_broadcast(name: str, shape, *param_shapes) -> None:
    try:
        out = np.broadcast_shapes(shape, *param_shapes)
    except ValueError:
        out = None
    if out != tuple(shape):
        raise ValueError(
            f"{name}: arrays of shapes {param_shapes} are not broadcast-compatible "
            f"with the requested shape {tuple(shape)}"
        )


def _uniform(k, shape, dt: np.dtype, minval, maxval) -> np.ndarray:
    raw = _random_bits(k, np.finfo(dt).bits, shape)
    return _uniform_from_bits(raw, dt, minval, maxval)


def _uniform_from_bits(raw: np.ndarray, dt: np.dtype, minval, maxval) -> np.ndarray:
    """Floats in [minval, maxval) from raw bits of ``dt``'s width: JAX's mantissa recipe."""
    finfo = np.finfo(dt)
    nbits, nmant = finfo.bits, finfo.nmant
    uint = _UINT_DTYPES[nbits]
    raw = raw.astype(uint, copy=False)
    one_bits = np.array(1.0, dtype=dt).view(uint)
    mant = (raw >> uint(nbits - nmant)) | one_bits
    floats = mant.view(dt) - dt.type(1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        out = xla.fma(floats, maxval - minval, minval, dt)
    return np.maximum(minval, out).astype(dt, copy=False)


def standard_normal(k, shape=(), dtype=np.float64) -> np.ndarray:
    """Standard normal samples (inverse-CDF transform of ``uniform``)."""
    dt = _float_dtype(dtype, "normal")
    shape = _canonical_shape(shape)
    lo = np.nextafter(np.array(-1.0, dt), np.array(0.0, dt))
    return normal_from_uniform(_uniform(k, shape, dt, lo, np.array(1.0, dt)), dt)


def normal_from_uniform(u: np.ndarray, dt: np.dtype) -> np.ndarray:
    """``sqrt(2) * erf_inv(u)`` in ``dt``, rounded as XLA rounds it."""
    if dt == np.float64:
        return np.sqrt(2.0) * xla.erf_inv64(u)
    z = xla.erf_inv32(u).astype(dt)
    return (np.array(np.sqrt(2.0), dt) * z).astype(dt, copy=False)


# ---------------------------------------------------------------------------
# One key per row
# ---------------------------------------------------------------------------
# Loops that JAX runs per element (vmapped while loops over split keys) run here over
# all pending elements at once, each with its own key row: the same draws as one loop
# per element.


def split_rows(keys: np.ndarray, num: int) -> np.ndarray:
    """``split(key, num)`` of every row of uint32[m, 2]: uint32[m, num, 2]."""
    b1, b2 = _threefry_rows(keys, np.zeros(num, _U32), np.arange(num, dtype=_U32))
    return np.stack([b1, b2], axis=-1)


def uniform_rows(keys: np.ndarray, dt: np.dtype, minval, maxval) -> np.ndarray:
    """``uniform(key, (), dt, minval, maxval)`` of every row."""
    b1, b2 = (w[:, 0] for w in _threefry_rows(keys, _U32(0), _U32(0)))
    raw = _bits_from_blocks(b1, b2, np.finfo(dt).bits)
    return _uniform_from_bits(raw, dt, minval, maxval)


def normal_rows(keys: np.ndarray, dt: np.dtype) -> np.ndarray:
    """``normal(key, (), dt)`` of every row."""
    lo = np.nextafter(np.array(-1.0, dt), np.array(0.0, dt))
    return normal_from_uniform(uniform_rows(keys, dt, lo, np.array(1.0, dt)), dt)
