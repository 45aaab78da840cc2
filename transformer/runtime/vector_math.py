"""Branch-free exp, expm1, log, log1p, tanh and expit that LLVM vectorizes inside a loop.

Numba lowers `np.exp` and `math.exp` to a call of the C library's scalar `exp` (SVML is not
available to this llvmlite), and a loop around a call does not vectorize. The kernels here
are straight-line code: range reduction with integer bit operations, a polynomial or the
fdlibm rational form, and selects for the special values (0, -0, denormals, the overflow
and underflow thresholds, inf, -inf, nan), so a loop over an array compiles to SIMD code.

Contract:
- `vector_exp`, `vector_expm1`, `vector_log`, `vector_log1p`, `vector_tanh`, `vector_expit`
  take a number or an array. float32 is computed in float32 and gives float32, float64 in
  float64 (an array gives a new array of its shape, a 0-d array a number, as NumPy's
  ufuncs do); integers and booleans as float64; any
  other type (complex, float16) is handed to the NumPy function they replace. In plain Python
  they are that NumPy function; secant routes only compiled code here (`transformer.lowering`).
- Accuracy against the exactly rounded result, over the whole range of each type (random bit
  patterns, denormals, the thresholds; tests/compiled/test_vector_math.py): within
  `ULPS[name]` units in the last place; the special values are NumPy's (inf, -inf, nan,
  signed zeros, exp's overflow and underflow thresholds).
- `_forms(dtype).kernels[name]` are the scalar kernels, callable from compiled code only;
  the forms of a type are built when the first compile needs them.
"""
from __future__ import annotations

import ast
import functools
import re
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba import types
from transformer.runtime.allocation import empty_array
from transformer.runtime.numba_api import intrinsic, overload

# the largest error seen over the sweeps rounded up, in units in the last place (seen:
# exp 0.86, expm1 1.84, log 0.78, log1p 0.78, tanh 2.34, expit 2.33)
ULPS = {"exp": 1, "expm1": 2, "log": 1, "log1p": 1, "tanh": 3, "expit": 3}

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




def _compiled(kernel):
    """`kernel` callable from compiled code: compiled once per process and type, and left to
    LLVM to inline into the loop around it (it does for all but float64 tanh and log1p,
    which then run scalar). Numba's own inlining would vectorize those two as well but
    re-types the kernel at every call site: seconds of compile time for each function."""
    @overload(kernel, jit_options={"fastmath": False})    # its rounding tricks need IEEE
    def _typed(x):
        return kernel
    return kernel


# ---------------------------------------------------------------- constants per type
# Each kernel is generated as one flat function (no calls besides the intrinsics): every
# jitted helper would be a compile of its own, seconds for each function that uses them.


def _factorials(first, last):
    return [1.0 / float(np.prod(np.arange(1, k + 1, dtype=np.float64)))
            for k in range(first, last + 1)]


_CONSTANTS = {
    "ONE": 1.0, "TWO": 2.0, "HALF": 0.5, "ZERO": 0.0, "INF": np.inf, "NAN": np.nan,
    "LOG2E": 1.4426950408889634,
}
_F64 = dict(
    _CONSTANTS,
    SHIFTER=6755399441055744.0,                 # 1.5 * 2**52: adding it rounds to an integer
    LN2_HI=6.93147180369123816490e-01, LN2_LO=1.90821492927058770002e-10,   # fdlibm exp
    LOG_LN2_HI=6.93147180369123816490e-01, LOG_LN2_LO=1.90821492927058770002e-10,
    EXP_LO=-746.0, EXP_HI=709.8,                # exp is 0 below and inf above
    EXPM1_LO=-40.0, EXPM1_SPLIT=56.0,           # expm1 is -1 below; 2**k - 1 inexact above
    # fdlibm exp's Remez rational form, Taylor terms 1/2! .. 1/13! of expm1, fdlibm log
    P=[1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05,
       -1.65339022054652515390e-06, 4.13813679705723846039e-08],
    E=_factorials(2, 13),
    LG=[6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
        2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
        1.479819860511658591e-01],
    BIAS=1023, MANT_BITS=52, MANT_MASK=(1 << 52) - 1,
    SQRT_HALF_BITS=0x3FE6A09E00000000,          # the top word of sqrt(1/2), as fdlibm splits it
    ONE_BITS=0x3FF0000000000000,
    TINY=2.2250738585072014e-308,               # the smallest normal number
    DENORMAL_SCALE=18014398509481984.0, DENORMAL_BITS=54,      # 2**54
    LOG1P_EXACT=54,                             # from 2**54 on 1 + x loses nothing that counts
    TANH_CLAMP=20.0)                            # tanh is 1.0 from 19.1 on
_F32 = dict(
    _CONSTANTS,
    SHIFTER=12582912.0,                         # 1.5 * 2**23
    LN2_HI=6.9314575195e-01, LN2_LO=1.4286067653e-06,          # fdlibm expf
    LOG_LN2_HI=6.9313812256e-01, LOG_LN2_LO=9.0580006145e-06,  # fdlibm logf
    EXP_LO=-104.0, EXP_HI=89.0, EXPM1_LO=-18.0, EXPM1_SPLIT=56.0,
    P=[1.6666625440e-1, -2.7667332906e-3],
    E=_factorials(2, 8),
    LG=[0.66666662693, 0.40000972152, 0.28498786688, 0.24279078841],
    BIAS=127, MANT_BITS=23, MANT_MASK=(1 << 23) - 1,
    SQRT_HALF_BITS=0x3F3504F3, ONE_BITS=0x3F800000,
    TINY=1.1754943508222875e-38,
    DENORMAL_SCALE=33554432.0, DENORMAL_BITS=25,               # 2**25
    LOG1P_EXACT=25,
    TANH_CLAMP=10.0)                            # tanh is 1.0f from 9.01 on


def _horner(coefficients: str, count: int, var: str) -> str:
    """`c[0] + var*(c[1] + var*(...))` as source."""
    text = f"{coefficients}{count - 1}"
    for j in range(count - 2, -1, -1):
        text = f"{coefficients}{j} + {var} * ({text})"
    return text


def _polynomials(c: dict) -> dict:
    """The polynomial expressions of one type: exp's rational form, expm1's Taylor sum, log's
    fdlibm R(z) split in odd and even powers of w = z*z."""
    odd, even = len(c["LG"][0::2]), len(c["LG"][1::2])
    return {"@EXP_Q@": f"r - tt * ({_horner('P', len(c['P']), 'tt')})",
            "@EXPM1_S@": _horner("E", len(c["E"]), "r"),
            "@LOG_R@": f"z * ({_horner('LGO', odd, 'w')}) + w * ({_horner('LGE', even, 'w')})"}


def _exp_code(src: str, dst: str) -> str:
    """dst = exp(src), src already a name; clamped so that the scale stays finite."""
    return f"""
    xc = EXP_HI if {src} > EXP_HI else (EXP_LO if {src} < EXP_LO else {src})
    t = xc * LOG2E + SHIFTER            # Cody-Waite: xc = k*ln2 + (hi - lo)
    kf = t - SHIFTER
    k = _bits(t) - SHIFTER_BITS         # k read off the bits (AVX2 has no 64-bit cvt)
    hi = xc - kf * LN2_HI
    lo = kf * LN2_LO
    r = hi - lo
    tt = r * r
    q = @EXP_Q@
    y = ONE - ((lo - _div(r * q, TWO - q)) - hi)
    k1 = k >> 1                         # 2**k in two exact halves: denormals round once
    {dst} = y * _float((k1 + BIAS) << MANT_BITS, ONE) * _float((k - k1 + BIAS) << MANT_BITS, ONE)
"""


def _expm1_code(src: str, dst: str) -> str:
    return f"""
    xc = EXP_HI if {src} > EXP_HI else (EXPM1_LO if {src} < EXPM1_LO else {src})
    t = xc * LOG2E + SHIFTER
    kf = t - SHIFTER
    k = _bits(t) - SHIFTER_BITS
    r = (xc - kf * LN2_HI) - kf * LN2_LO
    e = r + r * r * (@EXPM1_S@)
    k1 = k >> 1
    s1 = _float((k1 + BIAS) << MANT_BITS, ONE)
    s2 = _float((k - k1 + BIAS) << MANT_BITS, ONE)
    s = s1 * s2
    if kf < EXPM1_SPLIT:
        {dst} = s * e + (s - ONE)       # 2**k - 1 exact: one rounding
    else:
        {dst} = (e + ONE) * s1 * s2 - ONE
    {dst} = {src} if ({src} != {src} or {src} == ZERO) else {dst}   # nan, and -0 stays -0
"""


def _log_code(u: str, correction: str, dst: str) -> str:
    """dst = log(u) + correction for u > 0 finite: fdlibm's kernel on u's bits."""
    return f"""
    denormal = {u} < TINY
    us = {u} * DENORMAL_SCALE if denormal else {u}
    ix = _bits(us) + (ONE_BITS - SQRT_HALF_BITS)
    k = (ix >> MANT_BITS) - BIAS - (DENORMAL_BITS if denormal else 0)
    f = _float((ix & MANT_MASK) + SQRT_HALF_BITS, ONE) - ONE
    hfsq = HALF * f * f
    s = _div(f, TWO + f)
    z = s * s
    w = z * z
    dk = _float(k + SHIFTER_BITS, ONE) - SHIFTER   # k as a float, through the shifter
    {dst} = (s * (hfsq + (@LOG_R@)) + (dk * LOG_LN2_LO + {correction}) - hfsq + f
             + dk * LOG_LN2_HI)
"""


_SPECIAL_LOG = """
    return {x} if ({x} != {x} or {x} == INF) else (
        -INF if {x} == ZERO else (NAN if {x} < ZERO else y))
"""

_SOURCES = {
    "exp": "def exp(x):" + _exp_code("x", "y") + "    return x if x != x else y\n",
    "expm1": "def expm1(x):" + _expm1_code("x", "y") + "    return y\n",
    "log": "def log(x):" + _log_code("x", "ZERO", "y") + _SPECIAL_LOG.format(x="x"),
    "log1p": """def log1p(x):
    u = ONE + x
    ku = ((_bits(u) + (ONE_BITS - SQRT_HALF_BITS)) >> MANT_BITS) - BIAS
    corr = (ONE - (u - x)) if ku >= 2 else (x - (u - ONE))
    corr = ZERO if ku >= LOG1P_EXACT else _div(corr, u)      # what 1 + x lost in rounding
""" + _log_code("u", "corr", "y") + """
    y = x if (x > -TINY and x < TINY) else y                  # log1p(x) = x, and -0 stays
""" + _SPECIAL_LOG.format(x="u"),
    "tanh": """def tanh(x):
    ax = -x if x < ZERO else x
    ax2 = TWO * (TANH_CLAMP if ax > TANH_CLAMP else ax)
""" + _expm1_code("ax2", "e") + """
    t = _div(e, e + TWO)
    return _float(_bits(t) | (_bits(x) & _bits(-ZERO)), ONE)  # x's sign, -0 too
""",
    "expit": """def expit(x):
    xe = -x if x >= ZERO else x                                 # exp(-|x|) never overflows
""" + _exp_code("xe", "e") + """
    e = xe if xe != xe else e
    return _div(ONE if x >= ZERO else e, ONE + e)
""",
}


def _namespace(c: dict, ftype, itype) -> dict:
    """The kernels' globals for one type: every constant a typed NumPy scalar, since Numba
    widens a float32 meeting a Python float to float64."""
    names = {"_bits": _bits, "_float": _float, "_div": _div, "np": np,
             "empty_array": empty_array}
    for key, value in c.items():
        if isinstance(value, list):
            prefix = {"P": "P", "E": "E"}.get(key)
            groups = {"LGO": value[0::2], "LGE": value[1::2]} if key == "LG" \
                else {prefix: value}
            for group, values in groups.items():
                names.update({f"{group}{j}": ftype(v) for j, v in enumerate(values)})
        elif isinstance(value, int):
            names[key] = itype(value)
        else:
            names[key] = ftype(value)
    names["SHIFTER_BITS"] = itype(np.asarray(c["SHIFTER"], ftype).view(itype))
    return names


class _TypeForms(NamedTuple):
    kernels: dict       # name -> scalar kernel
    texts: dict         # name -> the kernel's source
    loops: dict         # name -> its loop over an array's elements
    namespace: dict     # the constants and intrinsics their code reads


def _kernels(c: dict, ftype, itype) -> _TypeForms:
    """The scalar kernels of one float type, their texts, their loops over arrays
    (`_loop_form`), and the namespace (constants, intrinsics) their code reads."""
    namespace, expressions = _namespace(c, ftype, itype), _polynomials(c)
    kernels, texts, loops = {}, {}, {}
    for name, text in _SOURCES.items():
        for key, expression in expressions.items():
            text = text.replace(key, expression)
        texts[name] = text
        exec(compile(text, f"<vector_math {name} {ftype.__name__}>", "exec"), namespace)
        kernels[name] = _compiled(namespace.pop(name))
    for name in _SOURCES:
        loop_text = _loop_form(name, texts[name])
        exec(compile(loop_text, f"<vector_math {name} loop {ftype.__name__}>", "exec"),
             namespace)
        loops[name] = namespace.pop(f"{name}_elements")
    return _TypeForms(kernels, texts, loops, namespace)


def _statements_of(name: str, text: str, value: str, result: str, tag: str) -> list[str]:
    """The kernel `text`'s body as statements computing `result = name(value)` in place of a
    call: the parameter and every local name take the suffix `_tag` (so that several
    kernels share one function), and the one `return` becomes the assignment. Lines are
    indented as a function body (four spaces)."""
    tree = ast.parse(text)
    assert tree.body[0].name == name and [a.arg for a in tree.body[0].args.args] == ["x"]
    returns = [n for n in ast.walk(tree) if isinstance(n, ast.Return)]
    # one return, at the body's level, and last: no statement may follow it
    assert len(returns) == 1 and returns[0] is tree.body[0].body[-1], name
    local = {"x"} | {n.id for n in ast.walk(tree)
                     if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    pattern = re.compile(r"\b(" + "|".join(sorted(local)) + r")\b")
    body = [line.split("#")[0].rstrip() for line in text.rstrip().splitlines()[1:]]
    at = returns[0].lineno - 2                    # the return's line within the body
    body[at] = body[at].replace("return ", "RESULT_ = ", 1)
    lines = [f"    x = {value}"] + [line for line in body if line]
    lines = [pattern.sub(lambda m: f"{m.group(1)}_{tag}", line) for line in lines]
    return [line.replace("RESULT_", result) for line in lines]


def kernel_statements(name: str, dtype, value: str, result: str, tag: str) -> list[str]:
    """`result = <name>(value)` as statements (the kernel of `dtype` written out, see
    `_statements_of`), for a loop that LLVM should vectorize; `kernel_namespace(dtype)`
    holds the names they read."""
    return _statements_of(name, _forms(dtype).texts[name], value, result, tag)


def kernel_namespace(dtype) -> dict:
    """The constants and intrinsics `kernel_statements` of `dtype` read."""
    return _forms(dtype).namespace


def _loop_form(name: str, kernel_text: str) -> str:
    """`<name>_elements(x)`: the kernel's body written out inside a loop over the elements.
    LLVM declines to inline the larger kernels (float64 tanh and log1p) into a loop that
    calls them, and such a loop runs scalar: 4-5x slower on a 32-element vector."""
    body = _statements_of(name, kernel_text, "flat_[i_]", "out_[i_]", "k")
    return (f"def {name}_elements(x):\n"
            "    flat_ = x.ravel()                      # a view when x is contiguous\n"
            "    out_ = empty_array(flat_.size, x.dtype)\n"
            "    for i_ in range(flat_.size):\n"
            + "".join(f"    {line}\n" for line in body)
            + "    return out_.reshape(x.shape)\n")


@functools.cache
def _forms(dtype) -> _TypeForms:
    """The forms of float type `dtype`, made on first use: building them (texts, kernels,
    loops) is a sixth of `import transformer`, and only compiling reads them."""
    if dtype is np.float64:
        return _kernels(_F64, np.float64, np.int64)
    return _kernels(_F32, np.float32, np.int32)


# ---------------------------------------------------------------- the public forms


def _expit_numpy(x):
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


_FLOAT_OF_BITS = {32: np.float32, 64: np.float64}


def _vector_form(name: str, numpy_fn):
    """`vector_<name>(x)`: NumPy's `numpy_fn` in Python; under Numba the kernel of x's float
    type on a number or on every element of an array (a new array of x's shape and dtype);
    integers and booleans as float64; every other type (complex, float16) as `numpy_fn`."""
    def python(x):
        return numpy_fn(x)

    python.__name__ = python.__qualname__ = f"vector_{name}"
    python.__doc__ = f"`{name}` of a number or of every element (compiled: vectorizable)."

    @overload(python, jit_options={"fastmath": False})    # the kernels' rounding tricks
    def _nb(x):
        if isinstance(x, types.Float) and x.bitwidth in (32, 64):
            kernel = _forms(_FLOAT_OF_BITS[x.bitwidth]).kernels[name]
            return lambda x: kernel(x)
        if isinstance(x, (types.Integer, types.Boolean)):
            k64 = _forms(np.float64).kernels[name]
            return lambda x: k64(np.float64(x))
        if isinstance(x, types.Array) and isinstance(x.dtype, types.Float) \
                and x.dtype.bitwidth in (32, 64):
            forms = _forms(_FLOAT_OF_BITS[x.dtype.bitwidth])
            if x.ndim == 0:             # NumPy's ufuncs give a 0-d array's value a number
                scalar = forms.kernels[name]
                return lambda x: scalar(x[()])
            return forms.loops[name]
        return lambda x: numpy_fn(x)
    return python


vector_exp = _vector_form("exp", np.exp)
vector_expm1 = _vector_form("expm1", np.expm1)
vector_log = _vector_form("log", np.log)
vector_log1p = _vector_form("log1p", np.log1p)
vector_tanh = _vector_form("tanh", np.tanh)
vector_expit = _vector_form("expit", _expit_numpy)
