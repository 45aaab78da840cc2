"""XLA's CPU erf, exp and lgamma for `random_samplers`, as NumPy.

Read from the LLVM IR that XLA's CPU backend emits for JAX 0.10.2 (``XLA_FLAGS=
--xla_dump_to``): float32 ``erf`` and float64 ``exp`` are XLA's own rational forms, with
the fused multiply-adds LLVM contracts them into, and float32 ``exp`` Cephes' polynomial
with subnormal results flushed to zero; float64 ``erf`` is the C library's.  Float32
``lgamma`` (a Lanczos sum) is not reproduced: the correctly rounded value stands in (it
feeds only Poisson's acceptance test).
"""

from __future__ import annotations

import math
import struct

import numpy as np

from . import random_xla as xla
from .runtime.random_samplers import ERF32_CUTOFF, ERF32_P, ERF32_Q

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


# ---------------------------------------------------------------------------
# erf
# ---------------------------------------------------------------------------

_math_erf = np.frompyfunc(math.erf, 1, 1)

# XLA's float32 erf (read from its CPU kernel): x * P(x^2) / Q(x^2) in Horner form with
# fused multiply-adds, and +-1 from |x| >= 3.8325069.  The coefficient tables (float32 bit
# patterns) are shared with the scalar form the compiled samplers run.
_ERF32_CUTOFF, _ERF32_P, _ERF32_Q = ERF32_CUTOFF, ERF32_P, ERF32_Q


def _f32_bits(pattern: int) -> np.float32:
    return np.array(pattern, np.uint32).view(np.float32)[()]


def _erf32(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, _F32)
    x2 = x * x
    p = np.full(x.shape, _f32_bits(_ERF32_P[0]))
    for c in _ERF32_P[1:]:
        p = xla.fma(x2, p, _f32_bits(c), _F32)
    q = np.full(x.shape, _f32_bits(_ERF32_Q[0]))
    for c in _ERF32_Q[1:]:
        q = xla.fma(x2, q, _f32_bits(c), _F32)
    with np.errstate(invalid="ignore"):
        ratio = (x * p) / q
    saturated = np.abs(x) >= _f32_bits(_ERF32_CUTOFF)
    return np.where(saturated, np.copysign(np.float32(1.0), x), ratio).astype(_F32)


def erf(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """erf as XLA computes it: the C library's in float64, a rational form otherwise."""
    if dt != _F64:
        return _erf32(np.asarray(x, dt).astype(_F32)).astype(dt)
    x64 = np.asarray(x, _F64)
    return np.asarray(_math_erf(x64), dtype=_F64).reshape(x64.shape)


# ---------------------------------------------------------------------------
# Subnormals
# ---------------------------------------------------------------------------


def flush_subnormal(x: np.ndarray) -> np.ndarray:
    """Subnormal values as zero: XLA runs with the CPU's flush-to-zero mode on."""
    x = np.asarray(x)
    return np.where(np.abs(x) < np.finfo(x.dtype).tiny, x.dtype.type(0.0), x)


# ---------------------------------------------------------------------------
# exp
# ---------------------------------------------------------------------------
# Cephes' exp: n = round(x * log2(e)), g = x - n * log(2) in two parts, a rational
# approximation of e**g, and 2**n applied as four exact scalings (so that n up to
# +-2099 neither overflows nor flushes early).


def _f64_bits(pattern: str) -> float:
    return struct.unpack(">d", bytes.fromhex(pattern))[0]


_EXP_LO, _EXP_HI = _f64_bits("C086232BDD7ABCD2"), _f64_bits("40862E42FEFA39EF")
_LOG2E = _f64_bits("3FF71547652B82FE")
_LN2_HI, _LN2_LO = _f64_bits("3FE62E4000000000"), _f64_bits("3EB7F7D1CF79ABCA")
_EXP_P = (_f64_bits("3F2089CDD5E44BE8"), _f64_bits("3F9F06D10CCA2C7E"), 1.0)
_EXP_Q = (
    _f64_bits("3EC92EB6BC365FA0"),
    _f64_bits("3F64AE39B508B6C0"),
    _f64_bits("3FCD17099887E074"),
    2.0,
)
_ONE_BITS = 0x3FF0000000000000


def _exp64(x: np.ndarray) -> np.ndarray:
    def fma(a, b, c):
        return xla.fma(a, b, c, _F64)

    x = np.asarray(x, _F64)
    xc = np.maximum(np.minimum(x, _EXP_HI), _EXP_LO)
    n = np.floor(fma(xc, _LOG2E, 0.5))
    g = fma(-n, _LN2_LO, fma(-n, _LN2_HI, xc))
    g2 = g * g
    p = fma(fma(g2, _EXP_P[0], _EXP_P[1]), g2, _EXP_P[2]) * g
    q = fma(fma(fma(g2, _EXP_Q[0], _EXP_Q[1]), g2, _EXP_Q[2]), g2, _EXP_Q[3])
    e = fma(p / (q - p), 2.0, 1.0)
    ni = np.clip(np.nan_to_num(n), -2099, 2099).astype(np.int64)
    quarter = ni >> 2
    scale = ((quarter << 52) + _ONE_BITS).view(np.float64)
    rest = (((ni - 3 * quarter) << 52) + _ONE_BITS).view(np.float64)
    out = e * scale * scale * scale * rest
    out = np.where(x < _EXP_LO, 0.0, out)
    return np.where(x > _EXP_HI, np.inf, out)


_EXP32_LOG2E, _EXP32_LN2_HI, _EXP32_LN2_LO = 0x3FB8AA3B, 0x3F318000, 0xB95E8083
_EXP32_P = (0x39506967, 0x3AB743CE, 0x3C088908, 0x3D2AA9C1, 0x3E2AAAAA, 0x3F000000)


def _exp32(x: np.ndarray) -> np.ndarray:
    f = np.float32

    def fma(a, b, c):
        return xla.fma(a, b, c, _F32)

    x = np.asarray(x, f)
    # Clamps written as XLA's selects: NaN passes through.
    xc = np.where((x < f(-87.8)) & ~np.isnan(x), f(-87.8), x)
    xc = np.where(xc > f(88.8), f(88.8), xc)
    n = np.clip(np.floor(fma(xc, _f32_bits(_EXP32_LOG2E), f(0.5))), f(-127), f(127))
    r = fma(-_f32_bits(_EXP32_LN2_LO), n, fma(-_f32_bits(_EXP32_LN2_HI), n, xc))
    p = fma(r, _f32_bits(_EXP32_P[0]), _f32_bits(_EXP32_P[1]))
    for c in _EXP32_P[2:]:
        p = fma(p, r, _f32_bits(c))
    y = f(1.0) + fma(p, r * r, r)
    scale = ((np.nan_to_num(n).astype(np.int32) + 127) << 23).view(f)
    return flush_subnormal(y * scale)


def exp(x, dt: np.dtype) -> np.ndarray:
    """exp as XLA computes it (float16 through float32)."""
    with np.errstate(all="ignore"):
        if dt == _F64:
            return _exp64(x)
        return _exp32(np.asarray(x, dt).astype(_F32)).astype(dt)


# ---------------------------------------------------------------------------
# lgamma
# ---------------------------------------------------------------------------

_math_lgamma = np.frompyfunc(math.lgamma, 1, 1)


def lgamma32(x: np.ndarray) -> np.ndarray:
    # XLA's float32 lgamma is a Lanczos sum; the correctly rounded value stands in.
    # Its poles (k + 1 <= 0, only reached by rejected proposals) give +inf.
    x64 = x.astype(np.float64)
    pole = x64 <= 0
    vals = np.asarray(_math_lgamma(np.where(pole, 1.0, x64)), np.float64).reshape(x.shape)
    return np.where(pole, np.inf, vals).astype(np.float32)
