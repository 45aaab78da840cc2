"""The built-in derivative rules.

Families (one line registers the adjoint and the tangent of many primitives) live here;
hand-written templates live in ``adjoints.py`` and ``tangents.py``; ``lowering.py`` maps NumPy
call forms that Numba lacks to equivalents in ``transformer.runtime``.

Family expressions are written in terms of ``g`` (the incoming derivative), the arguments
``x``/``y`` and the result ``z``; because the derivative of an elementwise function is a
multiplier, the same expression gives the adjoint (``g`` = ``d[z]``) and the tangent
(``g`` = ``d[x]``).
"""

from __future__ import annotations

import math
import re

import gast
import numpy as np

from transformer import runtime, tape
from transformer.templates import ADJOINTS, TANGENTS, nondifferentiable, rule_from_source

RULE_GLOBALS = {"np": np, "math": math, "own_value": tape.own_value,
                **{n: getattr(runtime, n) for n in runtime.__all__}}


def _with_g(expr: str, g: str) -> str:
    return re.sub(r"\bg\b", g, expr)


def _register(adjoint_src: str, tangent_src: str, keys, broadcast=False) -> None:
    adj = rule_from_source(adjoint_src, RULE_GLOBALS)
    tan = rule_from_source(tangent_src, RULE_GLOBALS, broadcast=broadcast)
    for key in keys:
        ADJOINTS[key] = adj
        TANGENTS[key] = tan


def elementwise(*keys, derivative: str) -> None:
    """Unary elementwise functions with ``dz/dx = derivative`` (in terms of ``x``, ``z``)."""
    _register(f"def rule(z, x):\n    d[x] += d[z] * ({derivative})\n",
              f"def rule(z, x):\n    d[z] = d[x] * ({derivative})\n", keys)


def broadcasting(*keys, x: str, y: str, broadcast: bool = False) -> None:
    """Binary elementwise functions with broadcasting; ``x``/``y`` are ``g * dz/darg``.

    ``broadcast=True`` where a contribution alone may be smaller than the result
    (for ``x + y`` the tangent ``dx`` must be broadcast to the shape of ``z``).
    """
    _register(
        f"def rule(z, x, y):\n"
        f"    d[x] += unbroadcast({_with_g(x, 'd[z]')}, x)\n"
        f"    d[y] += unbroadcast({_with_g(y, 'd[z]')}, y)\n",
        f"def rule(z, x, y):\n"
        f"    d[z] = {_with_g(x, 'd[x]')}\n"
        f"    d[z] = {_with_g(y, 'd[y]')}\n", keys, broadcast)


def linear(*keys, adjoint: str, tangent: str, params: str = "x") -> None:
    """Functions linear in their first argument ``x``: ``adjoint`` maps ``g`` back to
    the shape of ``x``, ``tangent`` maps ``g`` (the tangent of ``x``) forward."""
    _register(f"def rule(z, {params}):\n    d[x] += {_with_g(adjoint, 'd[z]')}\n",
              f"def rule(z, {params}):\n    d[z] = {_with_g(tangent, 'd[x]')}\n", keys)


def _math(name: str) -> tuple:
    """``(math.<name>,)``, or ``()`` on a Python without it (``cbrt``, ``exp2``: 3.11+)."""
    return (getattr(math, name),) if hasattr(math, name) else ()


# ---------------------------------------------------------------- elementwise

elementwise(abs, np.abs, np.fabs, math.fabs, derivative="np.sign(x)")
elementwise(np.sqrt, math.sqrt, derivative="0.5 / z")
elementwise(np.cbrt, *_math("cbrt"), derivative="1.0 / (3.0 * z * z)")
elementwise(np.exp, math.exp, derivative="z")
elementwise(np.exp2, *_math("exp2"), derivative="z * np.log(2.0)")
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
elementwise(np.square, derivative="2.0 * x")
elementwise(np.reciprocal, derivative="-(z * z)")

# ---------------------------------------------------------------- broadcasting binary

broadcasting(gast.Add, np.add, x="g", y="g", broadcast=True)
broadcasting(gast.Sub, np.subtract, x="g", y="-g", broadcast=True)
broadcasting(gast.Mult, np.multiply, x="g * y", y="x * g")
broadcasting(gast.Div, np.divide, x="g / y", y="-(g * z / y)")
broadcasting(gast.Pow, np.power, np.float_power, math.pow, pow,
             x="g * y * x ** (y - 1)", y="g * z * np.log(x)")
broadcasting(gast.Mod, np.mod, x="g", y="-(g * np.floor(x / y))", broadcast=True)
broadcasting(np.fmod, math.fmod, x="g", y="-(g * np.trunc(x / y))", broadcast=True)
broadcasting(np.maximum, np.fmax, x="g * (x >= y)", y="g * (x < y)")
broadcasting(np.minimum, np.fmin, x="g * (x <= y)", y="g * (x > y)")
broadcasting(np.arctan2, math.atan2, x="g * y / (x * x + y * y)", y="-(g * x) / (x * x + y * y)")
broadcasting(np.hypot, math.hypot, x="g * x / z", y="g * y / z")
broadcasting(np.logaddexp, x="g * np.exp(x - z)", y="g * np.exp(y - z)")
broadcasting(np.logaddexp2, x="g * np.exp2(x - z)", y="g * np.exp2(y - z)")

# ---------------------------------------------------------------- linear maps of one argument

linear(gast.UAdd, np.positive, np.copy, np.ascontiguousarray, float,
       adjoint="g", tangent="g")
linear(np.asarray, np.array, adjoint="g", tangent="g", params="x, dtype=None")
# the reverse sweep's copy of a view (reverse_views): the tangent is copied too, since it is
# a view of the base's tangent, which the same later write changes
linear(tape.own_value, adjoint="g", tangent="own_value(g)")
linear(gast.USub, np.negative, adjoint="-g", tangent="-g")
linear(np.reshape, adjoint="reshape_like(g, x)", tangent="reshape(g, shape)",
       params="x, shape, order='C'")
linear(np.ravel, adjoint="reshape_like(g, x)", tangent="np.ravel(g)")
linear(np.expand_dims, adjoint="reshape_like(g, x)", tangent="np.expand_dims(g, axis)",
       params="x, axis")
linear(np.squeeze, adjoint="reshape_like(g, x)", tangent="squeeze(g, axis)",
       params="x, axis=None")
linear(np.transpose, adjoint="untranspose(g, axes)", tangent="transpose(g, axes)",
       params="x, axes=None")
linear(np.swapaxes, adjoint="np.swapaxes(g, axis1, axis2)",
       tangent="np.swapaxes(g, axis1, axis2)", params="x, axis1, axis2")
linear(np.moveaxis, adjoint="moveaxis(g, destination, source)",
       tangent="moveaxis(g, source, destination)", params="x, source, destination")
linear(np.flip, adjoint="flip(g, axis)", tangent="flip(g, axis)", params="x, axis=None")
linear(np.tile, adjoint="untile(g, x, reps)", tangent="tile(g, reps)", params="x, reps")
linear(np.repeat, adjoint="unrepeat(g, x, repeats, axis)", tangent="repeat(g, repeats, axis)",
       params="x, repeats, axis=None")
linear(np.trace, adjoint="g * cast_like(np.eye(x.shape[0], x.shape[1]), x)",
       tangent="np.trace(g)")
linear(np.sum, adjoint="broadcast_reduced(g, x, axis, keepdims)",
       tangent="reduce_sum(g, axis, None, None, keepdims)",
       params="x, axis=None, dtype=None, out=None, keepdims=False")
linear(np.mean, adjoint="broadcast_reduced(g, x, axis, keepdims) "
                        "/ cast_like(axis_count(x, axis), x)",
       tangent="reduce_mean(g, axis, None, None, keepdims)",
       params="x, axis=None, dtype=None, out=None, keepdims=False")
linear(np.cumsum, adjoint="cumsum_adjoint(g, x, axis)", tangent="cumsum(g, axis)",
       params="x, axis=None, dtype=None, out=None")

# ---------------------------------------------------------------- no derivative

nondifferentiable(
    np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like,
    np.full_like, np.eye, np.identity, np.arange, np.linspace, np.shape, np.size, np.ndim,
    len, range, int, bool, round, np.floor, np.ceil, np.round, np.rint, np.trunc, np.fix,
    np.sign, math.floor, math.ceil, math.trunc, gast.FloorDiv, np.floor_divide, np.argmax,
    np.argmin, np.argsort, np.isnan, np.isinf, np.isfinite, math.isnan, math.isinf,
    math.isfinite, np.nonzero, np.count_nonzero, np.any, np.all, np.searchsorted,
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_not, np.heaviside, gast.Not, gast.Invert,
)

from transformer.rules import adjoints, tangents  # noqa: E402,F401  (hand-written rules)
