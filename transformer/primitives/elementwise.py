"""Unary elementwise primitives, one line each: the derivative (in terms of ``x`` and the
result ``z``) gives grad and jvp; the family gives vmap, scalarization, jit and the CUDA
form (the `math` function of the same name unless ``scalar=`` says otherwise)."""
from __future__ import annotations

import math

import numpy as np

from transformer import runtime
from transformer.runtime.rounding import rounded

from . import registry
from .families import elementwise, lowered, nondifferentiable


def _math(name: str) -> tuple:
    """``(math.<name>,)``, or ``()`` on a Python without it (``cbrt``, ``exp2``: 3.11+)."""
    return (getattr(math, name),) if hasattr(math, name) else ()


# real_only refuses a complex x, whose derivative is not np.sign(x); it is elementwise for
# `scalarize` too
elementwise(abs, np.abs, derivative="np.sign(real_only(x))", scalar="abs(x)", keeps_int=True,
            float_result=False)
elementwise(np.fabs, math.fabs, derivative="np.sign(real_only(x))", scalar="abs(x)",
            float_result=False)
registry.record(runtime.real_only).elementwise = True
registry.record(runtime.real_only).keeps_int = True
elementwise(np.sqrt, math.sqrt, derivative="0.5 / z")
elementwise(np.cbrt, *_math("cbrt"), derivative="1.0 / (3.0 * z * z)",
            scalar="math.copysign(abs(x) ** (1.0 / 3.0), x)")
elementwise(np.exp, math.exp, derivative="z")
elementwise(np.exp2, *_math("exp2"), derivative="z * np.log(2.0)", scalar="2.0 ** x")
elementwise(np.expm1, math.expm1, derivative="z + 1.0")
elementwise(np.log, math.log, derivative="1.0 / x")
elementwise(np.log2, math.log2, derivative="1.0 / (x * np.log(2.0))")
elementwise(np.log10, math.log10, derivative="1.0 / (x * np.log(10.0))")
elementwise(np.log1p, math.log1p, derivative="1.0 / (x + 1.0)")
elementwise(np.sin, math.sin, derivative="np.cos(x)")
elementwise(np.cos, math.cos, derivative="-np.sin(x)")
elementwise(np.tan, math.tan, derivative="1.0 + z * z")
elementwise(np.arcsin, math.asin, derivative="1.0 / np.sqrt(1.0 - x * x)")
elementwise(np.arccos, math.acos, derivative="-1.0 / np.sqrt(1.0 - x * x)")
elementwise(np.arctan, math.atan, derivative="1.0 / (1.0 + x * x)")
elementwise(np.sinh, math.sinh, derivative="np.cosh(x)")
elementwise(np.cosh, math.cosh, derivative="np.sinh(x)")
elementwise(np.tanh, math.tanh, derivative="1.0 - z * z")
elementwise(np.arcsinh, math.asinh, derivative="1.0 / np.sqrt(x * x + 1.0)")
elementwise(np.arccosh, math.acosh, derivative="1.0 / np.sqrt(x * x - 1.0)")
elementwise(np.arctanh, math.atanh, derivative="1.0 / (1.0 - x * x)")
elementwise(np.square, derivative="2.0 * x", scalar="x * x", keeps_int=True,
            float_result=False)
elementwise(np.reciprocal, derivative="-(z * z)", float_result=False)
elementwise(math.erf, derivative="1.1283791670955126 * np.exp(-x * x)")
elementwise(np.deg2rad, math.radians, derivative="0.017453292519943295")

if hasattr(math, "cbrt"):
    lowered(math.cbrt, np.cbrt)      # Numba has no math.cbrt; its np.cbrt takes numbers
registry.unsupported(np.reciprocal, "cuda", "NumPy's reciprocal of an integer is an integer "
                     "(0 for |x| > 1); write 1.0 / x in a CUDA kernel")

# ---------------------------------------------------------------- no derivative

for _keys, _scalar, _keeps_int in [
        ((np.round, np.around, np.rint), "rint(x)", True),
        ((np.floor, math.floor), "math.floor(x)", False),
        ((np.ceil, math.ceil), "math.ceil(x)", False),
        ((np.trunc,), None, False),
        ((math.trunc,), "math.trunc(x)", False),
        ((np.sign,), None, True)]:
    nondifferentiable(*_keys, kind="elementwise")
    for _key in _keys:
        _record = registry.record(_key)
        _record.elementwise = _key.__module__ != "math"
        _record.keeps_int = _keeps_int
        _record.scalar = _scalar
        _record.cuda = "elementwise" if _scalar else None
registry.record(np.round).unary_only = registry.record(np.around).unary_only = True
for _key in (np.round, np.around):   # Numba's own compiles every decimals' algorithm
    lowered(_key, rounded)
for _key, _hint in [(np.fix, "math.trunc(x)"), (np.trunc, "math.trunc(x)"),
                    (np.sign, "1.0 if x > 0 else -1.0 if x < 0 else 0.0")]:
    registry.unsupported(_key, "cuda", f"no scalar form in CUDA kernels yet; write {_hint}")

registry.unsupported(round, "vmap", "round() takes one number; write np.round for arrays")
registry.unsupported(round, "cuda", "write np.rint (round half to even) in a CUDA kernel")
registry.unsupported(bool, "vmap", "bool() of a batched value is ambiguous; compare (x != 0)")

for _np_fn, _math_fn in [(np.isnan, math.isnan), (np.isinf, math.isinf),
                         (np.isfinite, math.isfinite)]:
    nondifferentiable(_np_fn, _math_fn, kind="predicate")
    for _key in (_np_fn, _math_fn):
        _record = registry.record(_key)
        _record.scalar, _record.cuda = f"math.{_math_fn.__name__}(x)", "predicate"
