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
_LOG1P_NUM = (
    4.5270000862445199635215e-5,
    4.9854102823193375972212e-1,
    6.5787325942061044846969e0,
    2.9911919328553073277375e1,
    6.0949667980987787057556e1,
    5.7112963590585538103336e1,
    2.0039553499201281259648e1,
)
_LOG1P_DEN = (
    1.0,
    1.5062909083469192043167e1,
    8.3047565967967209469434e1,
    2.2176239823732856465394e2,
    3.0909872225312059774938e2,
    2.1642788614495947685003e2,
    6.0118660497603843919306e1,
)
# Float32 log: log(m) for m in [sqrt(1/2), sqrt(2)) by a degree-8 polynomial,
# plus e * log(2) split into a short head and a correction.
_LOG32_P = (
    7.0376836292e-2,
    -1.1514610310e-1,
    1.1676998740e-1,
    -1.2420140846e-1,
    1.4249322787e-1,
    -1.6668057665e-1,
    2.0000714765e-1,
    -2.4999993993e-1,
    3.3333331174e-1,
)
_LOG32_Q1 = -2.12194440e-4
_LOG32_Q2 = 0.693359375
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


# erf_inv polynomial coefficients (M. Giles, "Approximating the erfinv
# function"), evaluated in the same order and precision as XLA so that
# ``normal`` reproduces JAX.
_ERFINV32_SMALL = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_ERFINV32_LARGE = (
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
)
_ERFINV64_A = (
    -3.6444120640178196996e-21,
    -1.685059138182016589e-19,
    1.2858480715256400167e-18,
    1.115787767802518096e-17,
    -1.333171662854620906e-16,
    2.0972767875968561637e-17,
    6.6376381343583238325e-15,
    -4.0545662729752068639e-14,
    -8.1519341976054721522e-14,
    2.6335093153082322977e-12,
    -1.2975133253453532498e-11,
    -5.4154120542946279317e-11,
    1.051212273321532285e-09,
    -4.1126339803469836976e-09,
    -2.9070369957882005086e-08,
    4.2347877827932403518e-07,
    -1.3654692000834678645e-06,
    -1.3882523362786468719e-05,
    0.0001867342080340571352,
    -0.00074070253416626697512,
    -0.0060336708714301490533,
    0.24015818242558961693,
    1.6536545626831027356,
)
_ERFINV64_B = (
    2.2137376921775787049e-09,
    9.0756561938885390979e-08,
    -2.7517406297064545428e-07,
    1.8239629214389227755e-08,
    1.5027403968909827627e-06,
    -4.013867526981545969e-06,
    2.9234449089955446044e-06,
    1.2475304481671778723e-05,
    -4.7318229009055733981e-05,
    6.8284851459573175448e-05,
    2.4031110387097893999e-05,
    -0.0003550375203628474796,
    0.00095328937973738049703,
    -0.0016882755560235047313,
    0.0024914420961078508066,
    -0.0037512085075692412107,
    0.005370914553590063617,
    1.0052589676941592334,
    3.0838856104922207635,
)
_ERFINV64_C = (
    -2.7109920616438573243e-11,
    -2.5556418169965252055e-10,
    1.5076572693500548083e-09,
    -3.7894654401267369937e-09,
    7.6157012080783393804e-09,
    -1.4960026627149240478e-08,
    2.9147953450901080826e-08,
    -6.7711997758452339498e-08,
    2.2900482228026654717e-07,
    -9.9298272942317002539e-07,
    4.5260625972231537039e-06,
    -1.9681778105531670567e-05,
    7.5995277030017761139e-05,
    -0.00021503011930044477347,
    -0.00013871931833623122026,
    1.0103004648645343977,
    4.8499064014085844221,
)


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
