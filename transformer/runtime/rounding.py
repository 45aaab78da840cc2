"""`np.round` (and `np.around`) under Numba, without compiling Numba's general form for the
common call `np.round(x)` of a number.

Numba's `np.round` of a float compiles `round_ndigits` (CPython's algorithm for any number
of decimals) even when `decimals` is left at 0, because it tests the decimals at run time:
about a quarter of a second of a cold `jit(grad(f))` for one `np.round(d / box)`
(benchmarks/bench_compile.py, the `lj` case). With the decimals left out (or a literal 0)
`rounded` of a float is one `llvm.rint` (round half to even: NumPy's rounding, and what
Numba's `np.round` runs for 0 decimals), of an integer the integer itself; every other call
(other decimals, `out=`, arrays, complex) is Numba's `np.round`. The lowering calls it for
every `np.round` of compiled code (`primitives.elementwise`); plain Python runs NumPy's.
"""
from __future__ import annotations

import llvmlite.ir
import numpy as np
from numba import types
from numba.core import cgutils

from transformer.runtime.numba_api import intrinsic, overload


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


@overload(rounded)
def _rounded_nb(a, decimals=0, out=None):
    if _no_decimals(decimals) and _no_out(out):
        if isinstance(a, types.Float):
            return lambda a, decimals=0, out=None: _rint(a)
        if isinstance(a, types.Integer):
            return lambda a, decimals=0, out=None: a
    return lambda a, decimals=0, out=None: np.round(a, decimals, out)
