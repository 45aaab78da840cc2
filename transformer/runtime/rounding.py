"""`np.round` (and `np.around`) under Numba, without compiling Numba's general form for the
common call `np.round(x)` of a number.

Numba's `np.round` of a float compiles `round_ndigits` (CPython's algorithm for any number
of decimals) even when `decimals` is left at 0, because it tests the decimals at run time:
about a quarter of a second of a cold `jit(grad(f))` for one `np.round(d / box)`
(benchmarks/bench_compile.py, the `lj` case). With the decimals left out (or a literal 0)
`rounded` of a float is one `llvm.rint` (round half to even: NumPy's rounding, and what
Numba's `np.round` runs for 0 decimals), of an integer the integer itself.

With other decimals, a float (or an array of floats) is rounded by NumPy's own algorithm
(`PyArray_Round`): scale by a power of ten, `rint`, scale back, each step in the float's own
type. Numba's `np.round` scales in float64 and rounds the result back, so a float32 half-way
value such as `np.round(np.float32(84.1355), 3)` came out 84.135 where NumPy gives 84.136
(about half of all float32 half-way values), and a product that overflows gave back `x`
where NumPy gives inf. Every other call (`out=`, complex, integers with decimals) is Numba's
`np.round`. The lowering calls `rounded` for every `np.round` of compiled code
(`primitives.elementwise`); plain Python runs NumPy's.
"""
from __future__ import annotations

import functools

import llvmlite.ir
import numpy as np
from numba import types
from numba.core import cgutils

from transformer.runtime.allocation import empty_array
from transformer.runtime.numba_api import intrinsic, overload, register_jitable


def rounded(a, decimals=0, out=None):
    """`np.round(a, decimals, out)`."""
    return np.round(a, decimals, out)


@intrinsic
def _rint(typingctx, value):
    """`value` rounded to the nearest integer, ties to even, in its float type."""
    def codegen(context, builder, sig, args):
        llty = context.get_value_type(sig.args[0])
        fn = cgutils.get_or_insert_function(builder.module,
                                            llvmlite.ir.FunctionType(llty, [llty]),
                                            f"llvm.rint.f{sig.args[0].bitwidth}")
        return builder.call(fn, args)
    return value(value), codegen


def _no_decimals(decimals) -> bool:
    """Whether the decimals are 0 at typing time: left out (Numba passes the default
    itself, or `Omitted`), or a literal 0."""
    if isinstance(decimals, types.Omitted):
        decimals = decimals.value
    if isinstance(decimals, types.IntegerLiteral):
        decimals = decimals.literal_value
    return type(decimals) is int and decimals == 0


def _no_out(out) -> bool:
    if isinstance(out, types.Omitted):
        out = out.value
    return out is None or isinstance(out, types.NoneType)


@register_jitable
def _power_of_ten(n):
    """10.0 ** n as NumPy's `power_of_ten` computes it (exact up to 1e22, then by tens)."""
    if n < 9:
        return 10.0 ** n
    power = 1e9
    for _ in range(n - 9):
        power *= 10.0
    return power


@functools.lru_cache(maxsize=None)
def _float_rounding(float_type):
    """`np.round(x, decimals)` of one float of NumPy type `float_type`, in that type."""
    @register_jitable
    def round_float(x, decimals):
        if decimals >= 0:
            scale = float_type(_power_of_ten(decimals))
            return _rint(x * scale) / scale
        scale = float_type(_power_of_ten(-decimals))
        return _rint(x / scale) * scale
    return round_float


@functools.lru_cache(maxsize=None)
def _floats_rounding(float_type):
    """`np.round(a, decimals)` of an array of NumPy type `float_type`, elementwise."""
    round_float = _float_rounding(float_type)

    @register_jitable
    def round_floats(a, decimals):
        rounded_values = empty_array(a.shape, a.dtype)
        values = np.ascontiguousarray(a).reshape(a.size)
        results = rounded_values.reshape(a.size)
        for i in range(a.size):
            results[i] = round_float(values[i], decimals)
        return rounded_values
    return round_floats


@overload(rounded)
def _rounded_nb(a, decimals=0, out=None):
    if _no_decimals(decimals) and _no_out(out):
        if isinstance(a, types.Float):
            return lambda a, decimals=0, out=None: _rint(a)
        if isinstance(a, types.Integer):
            return lambda a, decimals=0, out=None: a
    if _no_out(out) and isinstance(decimals, (types.Integer, types.Omitted)):
        if isinstance(a, types.Float):
            round_float = _float_rounding(np.dtype(a.name).type)
            return lambda a, decimals=0, out=None: round_float(a, decimals)
        if isinstance(a, types.Array) and isinstance(a.dtype, types.Float):
            round_floats = _floats_rounding(np.dtype(a.dtype.name).type)
            return lambda a, decimals=0, out=None: round_floats(a, decimals)
    return lambda a, decimals=0, out=None: np.round(a, decimals, out)
