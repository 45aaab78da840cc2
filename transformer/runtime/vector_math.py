"""Branch-free exp, expm1, log, log1p, tanh and expit that LLVM vectorizes inside a loop.

Numba lowers `np.exp` and `math.exp` to a call of the C library's scalar `exp` (SVML is not
available to this llvmlite), and a loop around a call does not vectorize. The kernels here
are straight-line code: range reduction with integer bit operations, a polynomial or the
fdlibm rational form, and selects for the special values (0, -0, denormals, the overflow
and underflow thresholds, inf, -inf, nan), so a loop over an array compiles to SIMD code.

Contract:
- `vexp`, `vexpm1`, `vlog`, `vlog1p`, `vtanh`, `vexpit` are ufuncs (Numba `vectorize`, compiled
  on first use per input type) so Numba fuses them into array expressions with the
  arithmetic around them; a scalar argument gives a scalar. float32 inputs are computed in
  float32 and give float32, float64 in float64; any other input type is handed to the NumPy
  function they replace (same result and type as before).
- Accuracy against the exactly rounded result, measured over the whole range of each type
  (tests/compiled/test_vector_math*.py): within `ULPS[name]` units in the last place; the
  special values are exactly NumPy's (inf, -inf, nan, signed zeros).
- Plain Python calls work too (the ufunc machinery compiles the kernel), but secant only
  routes compiled code here (`transformer.lowering`).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, overload, register_jitable

# the largest error seen over the sweeps, rounded up (units in the last place)
ULPS = {"exp": 1, "expm1": 2, "log": 1, "log1p": 2, "tanh": 3, "expit": 2}

# ---------------------------------------------------------------- bit casts


@intrinsic
def _bits(typingctx, x):
    """The IEEE bits of a float32/float64 as int32/int64."""
    width = x.bitwidth
    int_type = types.int64 if width == 64 else types.int32

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(width))
    return int_type(x), codegen


@intrinsic
def _float(typingctx, bits, like):
    """The float (of `like`'s type) whose IEEE bits are `bits`."""
    float_type = like

    def codegen(context, builder, signature, args):
        width = float_type.bitwidth
        value = args[0]
        if signature.args[0].bitwidth > width:
            value = builder.trunc(value, ir.IntType(width))
        elif signature.args[0].bitwidth < width:
            value = builder.sext(value, ir.IntType(width))
        return builder.bitcast(value, context.get_value_type(float_type))
    return float_type(bits, like), codegen


@intrinsic
def _div(typingctx, a, b):
    """a / b as IEEE division (inf or nan, never ZeroDivisionError): no branch in the loop."""
    def codegen(context, builder, signature, args):
        return builder.fdiv(args[0], args[1])
    return a(a, b), codegen


# a kernel must be inlined into the loop around it to vectorize, and LLVM's inliner gives up on
# the larger ones (tanh, log1p), so Numba inlines every kernel at its call site


def _inline(kernel):
    """`kernel`, callable from compiled code, inlined there by Numba (one argument `x`)."""
    @overload(kernel, inline="always")
    def _typed(x):
        return kernel
    return kernel


# ---------------------------------------------------------------- constants per type


class _F64:
    one, two, half, zero = 1.0, 2.0, 0.5, 0.0
    inf, nan = np.inf, np.nan
    log2e = 1.4426950408889634
    shifter = 6755399441055744.0          # 1.5 * 2**52: adding it rounds to an integer
    ln2_hi, ln2_lo = 6.93147180369123816490e-01, 1.90821492927058770002e-10  # fdlibm
    exp_lo, exp_hi = -746.0, 709.8        # exp is 0 below and inf above
    expm1_lo = -40.0                      # expm1 is -1 below
    p = (1.66666666666666019037e-01, -2.77777777770155933842e-03,
         6.61375632143793436117e-05, -1.65339022054652515390e-06,
         4.13813679705723846039e-08)      # fdlibm exp: the Remez rational form
    # expm1(r) = r + r*r*(1/2 + r*(1/6 + ...)), Taylor to r**13 (|r| <= ln2/2)
    em1 = tuple(1.0 / float(np.prod(np.arange(1, k + 1, dtype=np.float64)))
                for k in range(2, 14))
    lg = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
          2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
          1.479819860511658591e-01)       # fdlibm log
    bias, mant_bits, mant_mask = 1023, 52, (1 << 52) - 1
    sqrt_half_bits = 0x3FE6A09E00000000   # top word of sqrt(1/2), as fdlibm splits it
    one_bits = 0x3FF0000000000000
    tiny = 2.2250738585072014e-308        # smallest normal
    denormal_scale, denormal_bits = 18014398509481984.0, 54   # 2**54
    log1p_exact = 54                       # from 2**54 on, 1 + x has no correction term
    tanh_clamp = 20.0                      # tanh is 1.0 from 19.1 on


class _F32:
    one, two, half, zero = (np.float32(v) for v in (1.0, 2.0, 0.5, 0.0))
    inf, nan = np.float32(np.inf), np.float32(np.nan)
    log2e = np.float32(1.4426950408889634)
    shifter = np.float32(12582912.0)      # 1.5 * 2**23
    ln2_hi, ln2_lo = np.float32(6.9314575195e-01), np.float32(1.4286067653e-06)
    exp_lo, exp_hi = np.float32(-104.0), np.float32(89.0)
    expm1_lo = np.float32(-18.0)
    p = (np.float32(1.6666625440e-1), np.float32(-2.7667332906e-3))   # fdlibm expf
    em1 = tuple(np.float32(1.0 / float(np.prod(np.arange(1, k + 1, dtype=np.float64))))
                for k in range(2, 9))
    lg = (np.float32(0.66666662693), np.float32(0.40000972152), np.float32(0.28498786688),
          np.float32(0.24279078841))     # fdlibm logf
    bias, mant_bits, mant_mask = np.int32(127), np.int32(23), np.int32((1 << 23) - 1)
    sqrt_half_bits = np.int32(0x3F3504F3)
    one_bits = np.int32(0x3F800000)
    tiny = np.float32(1.1754943508222875e-38)
    denormal_scale, denormal_bits = np.float32(33554432.0), np.int32(25)   # 2**25
    log1p_exact = np.int32(25)
    tanh_clamp = np.float32(10.0)         # tanh is 1.0f from 9.01 on


def _polynomials64():
    p, e, lg = _F64.p, _F64.em1, _F64.lg

    @register_jitable
    def exp_q(r, t):
        return r - t * (p[0] + t * (p[1] + t * (p[2] + t * (p[3] + t * p[4]))))

    @register_jitable
    def expm1_s(r):
        return e[0] + r * (e[1] + r * (e[2] + r * (e[3] + r * (e[4] + r * (e[5] + r * (
            e[6] + r * (e[7] + r * (e[8] + r * (e[9] + r * (e[10] + r * e[11]))))))))))

    @register_jitable
    def log_r(z, w):
        return (z * (lg[0] + w * (lg[2] + w * (lg[4] + w * lg[6])))
                + w * (lg[1] + w * (lg[3] + w * lg[5])))

    return exp_q, expm1_s, log_r


def _polynomials32():
    p, e, lg = _F32.p, _F32.em1, _F32.lg

    @register_jitable
    def exp_q(r, t):
        return r - t * (p[0] + t * p[1])

    @register_jitable
    def expm1_s(r):
        return e[0] + r * (e[1] + r * (e[2] + r * (e[3] + r * (e[4] + r * (e[5] + r * e[6])))))

    @register_jitable
    def log_r(z, w):
        return z * (lg[0] + w * lg[2]) + w * (lg[1] + w * lg[3])

    return exp_q, expm1_s, log_r


def _kernels(c, polynomials):
    """The scalar kernels of one float type, its constants `c` frozen in as typed values."""
    exp_q, expm1_s, log_r = polynomials()
    (bias, denormal_bits, denormal_scale, exp_hi, exp_lo, expm1_lo, expm1_split, half, inf,
     ln2_hi, ln2_hi_log, ln2_lo, ln2_lo_log, log1p_exact, log2e, mant_bits, mant_mask, nan,
     one, one_bits, shifter, shifter_bits, sqrt_half_bits, tanh_clamp, tiny, two, zero) = \
        (getattr(c, name) for name in (
            'bias', 'denormal_bits', 'denormal_scale', 'exp_hi', 'exp_lo', 'expm1_lo',
            'expm1_split', 'half', 'inf', 'ln2_hi', 'ln2_hi_log', 'ln2_lo', 'ln2_lo_log',
            'log1p_exact', 'log2e', 'mant_bits', 'mant_mask', 'nan', 'one', 'one_bits',
            'shifter', 'shifter_bits', 'sqrt_half_bits', 'tanh_clamp', 'tiny', 'two', 'zero'))

    @register_jitable
    def power2(n):
        """2**n for a normal exponent n, from its bits."""
        return _float((n + bias) << mant_bits, one)

    @register_jitable
    def reduce(x):
        """(k, kf, hi, lo): x = k*ln2 + (hi - lo), |hi - lo| <= ln2/2 (Cody-Waite); k as an
        integer and as a float, both read off the shifted sum (no float-int conversion,
        which AVX2 lacks for 64-bit lanes)."""
        t = x * log2e + shifter
        kf = t - shifter
        return _bits(t) - shifter_bits, kf, x - kf * ln2_hi, kf * ln2_lo

    @register_jitable
    def as_float(k):
        """The small integer k as a float, through the shifter's bits."""
        return _float(k + shifter_bits, one) - shifter

    @_inline
    def exp(x):
        xc = exp_hi if x > exp_hi else (exp_lo if x < exp_lo else x)
        k, kf, hi, lo = reduce(xc)
        r = hi - lo
        q = exp_q(r, r * r)
        y = one - ((lo - _div(r * q, two - q)) - hi)
        k1 = k >> 1               # two exact halves: denormals round once, k = 1024 works
        y = y * power2(k1) * power2(k - k1)
        return x if x != x else y

    @_inline
    def expm1(x):
        xc = exp_hi if x > exp_hi else (expm1_lo if x < expm1_lo else x)
        k, kf, hi, lo = reduce(xc)
        r = hi - lo
        e = r + r * r * expm1_s(r)
        k1 = k >> 1
        s1, s2 = power2(k1), power2(k - k1)
        s = s1 * s2
        small = s * e + (s - one)                  # 2**k exact, one rounding
        large = (e + one) * s1 * s2 - one          # k near the overflow threshold
        y = small if kf < expm1_split else large
        return x if (x != x or x == zero) else y   # keeps nan and the sign of zero

    @register_jitable
    def log_parts(u, correction):
        """log(u) + correction for u > 0 finite: fdlibm's kernel on u's bits."""
        denormal = u < tiny
        us = u * denormal_scale if denormal else u
        ix = _bits(us) + (one_bits - sqrt_half_bits)
        k = (ix >> mant_bits) - bias - (denormal_bits if denormal else 0)
        f = _float((ix & mant_mask) + sqrt_half_bits, one) - one
        hfsq = half * f * f
        s = _div(f, two + f)
        z = s * s
        dk = as_float(k)
        return (s * (hfsq + log_r(z, z * z)) + (dk * ln2_lo_log + correction) - hfsq + f
                + dk * ln2_hi_log)

    @register_jitable
    def special_log(x, y):
        """NumPy's values where log's argument `x` is not a positive finite number."""
        if x != x or x == inf:
            return x
        if x == zero:
            return -inf
        return nan if x < zero else y

    @_inline
    def log(x):
        return special_log(x, log_parts(x, zero))

    @_inline
    def log1p(x):
        u = one + x
        ku = ((_bits(u) + (one_bits - sqrt_half_bits)) >> mant_bits) - bias
        corr = (one - (u - x)) if ku >= 2 else (x - (u - one))
        corr = zero if ku >= log1p_exact else _div(corr, u)    # what 1 + x lost in rounding
        y = log_parts(u, corr)
        y = x if (x > -tiny and x < tiny) else y        # log1p(x) = x, and -0 stays
        return special_log(u, y)

    @_inline
    def tanh(x):
        ax = -x if x < zero else x
        ax = tanh_clamp if ax > tanh_clamp else ax
        e = expm1(two * ax)
        t = _div(e, e + two)
        return _float(_bits(t) | (_bits(x) & _bits(-zero)), one)   # sign of x, -0 too

    @_inline
    def expit(x):
        e = exp(-x if x >= zero else x)               # exp(-|x|) <= 1 never overflows
        return _div(one if x >= zero else e, one + e)

    return {"exp": exp, "expm1": expm1, "log": log, "log1p": log1p, "tanh": tanh,
            "expit": expit}


_F64.ln2_hi_log, _F64.ln2_lo_log = 6.93147180369123816490e-01, 1.90821492927058770002e-10
_F32.ln2_hi_log, _F32.ln2_lo_log = np.float32(6.9313812256e-01), np.float32(9.0580006145e-06)
_F64.expm1_split, _F32.expm1_split = 56.0, np.float32(56.0)
_F64.shifter_bits = int(np.float64(_F64.shifter).view(np.int64))
_F32.shifter_bits = np.int32(np.float32(_F32.shifter).view(np.int32))
KERNELS = {np.float64: _kernels(_F64, _polynomials64),
           np.float32: _kernels(_F32, _polynomials32)}
