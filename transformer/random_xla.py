"""XLA's CPU floating-point arithmetic, reproduced in NumPy for `transformer.random`.

JAX's samplers agree bit for bit with `transformer.random` only if the post-processing
rounds as XLA's CPU lowering does: a correctly rounded fused multiply-add (`fma`), XLA's
`log` (a Cephes-style polynomial in float32, the C library's in float64), its `log1p`, and
the polynomial `erf_inv` behind `normal`. Every function takes and returns NumPy arrays in
the dtype it is given; float16 is evaluated in float32, as XLA does.
"""

from __future__ import annotations

import math

import numpy as np

from .runtime.xla_math import (
    ERFINV32_LARGE as _ERFINV32_LARGE,
    ERFINV32_SMALL as _ERFINV32_SMALL,
    ERFINV64_A as _ERFINV64_A,
    ERFINV64_B as _ERFINV64_B,
    ERFINV64_C as _ERFINV64_C,
    LOG1P_DEN as _LOG1P_DEN,
    LOG1P_NUM as _LOG1P_NUM,
    LOG32_P as _LOG32_P,
    LOG32_Q1 as _LOG32_Q1,
    LOG32_Q2 as _LOG32_Q2,
)


# ---------------------------------------------------------------------------
# Fused multiply-add
# ---------------------------------------------------------------------------
# XLA's CPU backend (on hosts with FMA instructions) contracts ``a * b + c``
# into one fused multiply-add for float32/float64, so reproducing JAX's floats
# bit for bit needs a correctly rounded fma.  NumPy has none; it is emulated
# with error-free transformations and an addition rounded to odd (Boldo &
# Melquiond, "Emulation of FMA and correctly rounded sums: proved algorithms
# using rounding to odd", 2008).  float16 arithmetic is not fused by XLA.


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _veltkamp_split(a):
    c = 134217729.0 * a  # 2**27 + 1
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    p = a * b
    ah, al = _veltkamp_split(a)
    bh, bl = _veltkamp_split(b)
    return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl


def _add_round_to_odd(a, b):
    """``a + b`` (float64) rounded to odd: inexact results get an odd last bit."""
    s, e = _two_sum(a, b)
    even = (s.view(np.int64) & 1) == 0
    away = np.nextafter(s, np.where(e > 0, np.inf, -np.inf))
    return np.where((e != 0) & even, away, s)


def fma(a, b, c, dtype: np.dtype) -> np.ndarray:
    """``a * b + c`` as XLA computes it in ``dtype``: fused for float32/64."""
    with np.errstate(all="ignore"):
        if dtype == np.float16:
            a, b, c = (np.asarray(v, dtype) for v in (a, b, c))
            return a * b + c
        if dtype != np.float64:
            # Products of float32 values are exact in float64, and a float64
            # sum rounded to odd rounds correctly to float32.
            a, b, c = (np.asarray(v, dtype).astype(np.float64) for v in (a, b, c))
            return _add_round_to_odd(a * b, c).astype(dtype)
        a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
        ph, pl = _two_prod(a, b)
        th, tl = _two_sum(c, ph)
        r = th + _add_round_to_odd(tl, pl)
        # The splitting overflows for huge operands; fall back to two roundings.
        ok = np.isfinite(r) & (np.abs(a) < 1e290) & (np.abs(b) < 1e290)
        return np.where(ok, r, a * b + c)



# log1p as lowered by XLA's CPU backend: a Cephes rational approximation for
# |x| < sqrt(2) - 1 and log(1 + x) otherwise.  For log, float32 uses XLA's
# Cephes-style polynomial; float64 calls the C library's ``log`` (as XLA does),
# reached here through ``math.log``.
_math_log = np.frompyfunc(math.log, 1, 1)


def log32(x: np.ndarray) -> np.ndarray:
    f, f32 = np.float32, np.dtype(np.float32)
    x = np.asarray(x, f)
    tiny = f(np.finfo(f).tiny)
    b = np.where(x > tiny, x, tiny).view(np.uint32)
    e = ((b >> np.uint32(23)).astype(np.int32) - 126).astype(f)
    m = ((b & np.uint32(0x807FFFFF)) | np.uint32(0x3F000000)).view(f)  # in [0.5, 1)
    low = m < f(np.sqrt(0.5))
    e = e - np.where(low, f(1), f(0))
    r = (m - f(1)) + np.where(low, m, f(0))
    p = [f(c) for c in _LOG32_P]
    r2 = r * r
    r3 = r2 * r
    y0 = fma(fma(r, p[0], p[1], f32), r, p[2], f32)
    y1 = fma(fma(r, p[3], p[4], f32), r, p[5], f32)
    y2 = fma(fma(r, p[6], p[7], f32), r, p[8], f32)
    y = fma(fma(y0, r3, y1, f32), r3, y2, f32)
    y = fma(y, r3, e * f(_LOG32_Q1), f32)
    out = fma(e, f(_LOG32_Q2), (r - r2 * f(0.5)) + y, f32)
    out = np.where(x == f(0), f(-np.inf), out)
    out = np.where(x == f(np.inf), f(np.inf), out)
    return np.where((x < f(0)) | np.isnan(x), f(np.nan), out)


def log64(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    out = np.full(x.shape, np.nan)
    pos = x > 0
    if pos.any():
        out[pos] = _math_log(x[pos]).astype(np.float64)
    out[x == 0] = -np.inf
    out[x == np.inf] = np.inf
    return out


def log(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Natural log as XLA computes it (float16 is evaluated in float32)."""
    if dt == np.float64:
        return log64(x)
    return log32(np.asarray(x, dt).astype(np.float32)).astype(dt)


def log1p(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    x = np.asarray(x, dt)
    with np.errstate(all="ignore"):
        x2 = x * x
        num = np.zeros_like(x)
        den = np.zeros_like(x)
        for cn, cd in zip(_LOG1P_NUM, _LOG1P_DEN):
            num = fma(num, x, dt.type(cn), dt)
            den = fma(den, x, dt.type(cd), dt)
        small = x + fma(x2, dt.type(-0.5), (x * x2) * (num / den), dt)
        one_plus = x + dt.type(1)
        large = log32(one_plus) if dt == np.float32 else log64(one_plus)
        return np.where(np.abs(x) < dt.type(0.41421356237309504880), small, large)


def erf_inv32(x: np.ndarray) -> np.ndarray:
    f = np.float32
    x = x.astype(f)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w = -log1p(-x * x, np.dtype(f))
        small = w < f(5.0)
        w = np.where(small, w - f(2.5), np.sqrt(w) - f(3.0))
        p = np.where(small, f(_ERFINV32_SMALL[0]), f(_ERFINV32_LARGE[0]))
        for a, b in zip(_ERFINV32_SMALL[1:], _ERFINV32_LARGE[1:]):
            p = fma(p, w, np.where(small, f(a), f(b)), np.dtype(f))
        res = p * x
        return np.where(np.abs(x) == f(1.0), x * np.finfo(f).max, res).astype(f)


def erf_inv64(x: np.ndarray) -> np.ndarray:
    d = np.float64
    x = x.astype(d)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w = -log1p(-x * x, np.dtype(d))
        lt6 = w < 6.25
        lt16 = w < 16.0
        sw = np.sqrt(w)
        w = np.where(lt6, w - 3.125, sw - np.where(lt16, 3.25, 5.0))

        def coef(i: int) -> np.ndarray:
            c = d(_ERFINV64_A[i])
            if i < 19:
                c = np.where(lt6, c, d(_ERFINV64_B[i]))
            if i < 17:
                c = np.where(lt16, c, d(_ERFINV64_C[i]))
            return c

        p = coef(0) * np.ones_like(x)
        f64 = np.dtype(d)
        for i in range(1, 17):
            p = fma(p, w, coef(i), f64)
        for i in range(17, 19):
            p = np.where(lt16, fma(p, w, coef(i), f64), p)
        for i in range(19, 23):
            p = np.where(lt6, fma(p, w, coef(i), f64), p)
        res = p * x
        return np.where(np.abs(x) == 1.0, x * np.finfo(d).max, res)
