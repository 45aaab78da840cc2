"""XLA's CPU floating-point arithmetic on scalars, for the samplers compiled under Numba.

`transformer.random_xla` reproduces XLA's rounding on NumPy arrays; this module does the
same one element at a time in code that runs as plain Python, inside Numba's nopython mode
and in CUDA kernels, so a sampler gives the same bits in all of them. The coefficient
tables live here and `random_xla` reads them, so both evaluate one polynomial.

Contract: every function takes and returns scalars of one float type (float32 functions
take `np.float32` values and every constant they use is a `np.float32`, since Numba would
widen a float32 meeting a Python float to float64). `fma(a, b, c)` is correctly rounded:
LLVM's `llvm.fma` under Numba, exact rational arithmetic in plain Python.
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from transformer.runtime.numba_api import intrinsic, overload, register_jitable

# ---------------------------------------------------------------- coefficient tables

# log1p as lowered by XLA: a Cephes rational approximation for |x| < sqrt(2) - 1
LOG1P_NUM = (
    4.5270000862445199635215e-5, 4.9854102823193375972212e-1, 6.5787325942061044846969e0,
    2.9911919328553073277375e1, 6.0949667980987787057556e1, 5.7112963590585538103336e1,
    2.0039553499201281259648e1)
LOG1P_DEN = (
    1.0, 1.5062909083469192043167e1, 8.3047565967967209469434e1, 2.2176239823732856465394e2,
    3.0909872225312059774938e2, 2.1642788614495947685003e2, 6.0118660497603843919306e1)
# float32 log: log(m) for m in [sqrt(1/2), sqrt(2)) by a degree-8 polynomial, plus
# e * log(2) split into a short head (Q2) and a correction (Q1)
LOG32_P = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
           1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
           3.3333331174e-1)
LOG32_Q1 = -2.12194440e-4
LOG32_Q2 = 0.693359375
# erf_inv (M. Giles, "Approximating the erfinv function"), in XLA's evaluation order
ERFINV32_SMALL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
ERFINV32_LARGE = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                  0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)
ERFINV64_A = (
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
    1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
    6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693, 1.6536545626831027356)
ERFINV64_B = (
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
    3.0838856104922207635)
ERFINV64_C = (
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
    2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
    -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
    1.0103004648645343977, 4.8499064014085844221)

# the tables as the scalar code reads them: float32 values for the float32 functions
_F32 = np.float32
_LOG1P_NUM32 = tuple(_F32(c) for c in LOG1P_NUM)
_LOG1P_DEN32 = tuple(_F32(c) for c in LOG1P_DEN)
_LOG32_P32 = tuple(_F32(c) for c in LOG32_P)
_ERFINV32_SMALL32 = tuple(_F32(c) for c in ERFINV32_SMALL)
_ERFINV32_LARGE32 = tuple(_F32(c) for c in ERFINV32_LARGE)
_LOG1P_BOUND = 0.41421356237309504880
_LOG1P_BOUND32 = _F32(_LOG1P_BOUND)
_SQRT_HALF32 = _F32(np.sqrt(0.5))
_TINY32 = _F32(np.finfo(np.float32).tiny)
_MAX32 = _F32(np.finfo(np.float32).max)
_MAX64 = float(np.finfo(np.float64).max)
_ZERO32, _HALF32, _ONE32 = _F32(0.0), _F32(0.5), _F32(1.0)
_Q1_32, _Q2_32 = _F32(LOG32_Q1), _F32(LOG32_Q2)

# ---------------------------------------------------------------- fused multiply-add


def fma(a, b, c):
    """``a * b + c`` rounded once, in the float type of `a` (float32 or float64)."""
    kind = type(a)
    if not all(math.isfinite(v) for v in (a, b, c)):
        return kind(a * b + c)
    exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
    try:
        nearest = float(exact)              # int / int division: correctly rounded
    except OverflowError:
        return kind(a * b + c)
    if kind is not np.float32:
        return kind(nearest)
    # round the float64 to odd, then to float32: one correct rounding overall
    if Fraction(nearest) != exact and int(np.float64(nearest).view(np.int64)) % 2 == 0:
        nearest = float(np.nextafter(nearest, math.inf if exact > nearest else -math.inf))
    return np.float32(nearest)


@intrinsic
def _llvm_fma(typingctx, a, b, c):
    if not (isinstance(a, types.Float) and a == b == c):
        return None

    def codegen(context, builder, signature, args):
        value = context.get_value_type(a)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(value, [value] * 3), f"llvm.fma.f{a.bitwidth}")
        return builder.call(fn, args)
    return a(a, b, c), codegen


@overload(fma)
def _fma_nb(a, b, c):
    if isinstance(a, types.Float) and a == b == c:
        return lambda a, b, c: _llvm_fma(a, b, c)
    return None

# ---------------------------------------------------------------- logarithms


@register_jitable
def log32(x):
    """XLA's float32 log (Cephes-style polynomial); `x` a np.float32."""
    if x != x or x < _ZERO32:
        return _F32(np.nan)
    if x == _ZERO32:
        return _F32(-np.inf)
    if x == _F32(np.inf):
        return x
    m, e = math.frexp(max(x, _TINY32))           # m in [0.5, 1), exact
    m, ef = _F32(m), _F32(e)
    low = m < _SQRT_HALF32
    if low:
        ef = ef - _ONE32
        r = (m - _ONE32) + m
    else:
        r = m - _ONE32
    p = _LOG32_P32
    r2 = r * r
    r3 = r2 * r
    y0 = fma(fma(r, p[0], p[1]), r, p[2])
    y1 = fma(fma(r, p[3], p[4]), r, p[5])
    y2 = fma(fma(r, p[6], p[7]), r, p[8])
    y = fma(fma(y0, r3, y1), r3, y2)
    y = fma(y, r3, ef * _Q1_32)
    return fma(ef, _Q2_32, (r - r2 * _HALF32) + y)


@register_jitable
def log1p64(x):
    """XLA's float64 log1p."""
    if not abs(x) < _LOG1P_BOUND:
        return math.log(x + 1.0) if x > -1.0 else (-math.inf if x == -1.0 else math.nan)
    num = 0.0
    den = 0.0
    for i in range(7):
        num = fma(num, x, LOG1P_NUM[i])
        den = fma(den, x, LOG1P_DEN[i])
    x2 = x * x
    return x + fma(x2, -0.5, (x * x2) * (num / den))


@register_jitable
def log1p32(x):
    """XLA's float32 log1p; `x` a np.float32."""
    if not abs(x) < _LOG1P_BOUND32:
        return log32(x + _ONE32)
    num = _ZERO32
    den = _ZERO32
    for i in range(7):
        num = fma(num, x, _LOG1P_NUM32[i])
        den = fma(den, x, _LOG1P_DEN32[i])
    x2 = x * x
    return x + fma(x2, -_HALF32, (x * x2) * (num / den))

# ---------------------------------------------------------------- erf_inv


@register_jitable
def erf_inv64(x):
    """XLA's float64 erf_inv (the polynomial behind `normal`)."""
    if abs(x) == 1.0:
        return x * _MAX64
    w = -log1p64(-x * x)
    if w < 6.25:
        w = w - 3.125
        p = ERFINV64_A[0]
        for i in range(1, 23):
            p = fma(p, w, ERFINV64_A[i])
    elif w < 16.0:
        w = math.sqrt(w) - 3.25
        p = ERFINV64_B[0]
        for i in range(1, 19):
            p = fma(p, w, ERFINV64_B[i])
    else:
        w = math.sqrt(w) - 5.0
        p = ERFINV64_C[0]
        for i in range(1, 17):
            p = fma(p, w, ERFINV64_C[i])
    return p * x


@register_jitable
def erf_inv32(x):
    """XLA's float32 erf_inv; `x` a np.float32."""
    if abs(x) == _ONE32:
        return x * _MAX32
    w = -log1p32(-x * x)
    if w < _F32(5.0):
        w = w - _F32(2.5)
        p = _ERFINV32_SMALL32[0]
        for i in range(1, 9):
            p = fma(p, w, _ERFINV32_SMALL32[i])
    else:
        w = _F32(math.sqrt(w)) - _F32(3.0)
        p = _ERFINV32_LARGE32[0]
        for i in range(1, 9):
            p = fma(p, w, _ERFINV32_LARGE32[i])
    return p * x
