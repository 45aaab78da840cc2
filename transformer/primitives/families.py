"""Family helpers: one call describes a whole class of primitives at once.

`elementwise(np.sinh, math.sinh, derivative="np.cosh(x)")` gives each key its adjoint and
tangent (from the derivative: the same multiplier serves both), its batching rule, its
shape class (scalarization), its scalar `math` form (CUDA kernels) and, for a scalar
`math` function, its array form under vmap. `broadcasting`, `linear` and
`nondifferentiable` do the same for binary elementwise functions, linear maps of one
argument and functions without a derivative.

Derivative expressions are written in terms of ``g`` (the incoming derivative), the
arguments ``x``/``y`` and the result ``z``; because the derivative of an elementwise
function is a multiplier, the same expression gives the adjoint (``g`` = ``d[z]``) and the
tangent (``g`` = ``d[x]``).
"""
from __future__ import annotations

import math
import re

import gast
import numpy as np

from transformer import runtime, tape
from transformer.rules import batching as batching_rules
from transformer.runtime.elementwise import array_form
from transformer.templates import ADJOINTS, CALL_CHECKS, TANGENTS, MissingRule, rule_from_source

from . import registry

RULE_GLOBALS = {"np": np, "math": math, "own_value": tape.own_value,
                **{n: getattr(runtime, n) for n in runtime.__all__}}

# NumPy's names for the inverse functions that `math` spells `a...`
_MATH_NAMES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
               "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2", "absolute": "fabs",
               "deg2rad": "radians", "rad2deg": "degrees"}


def _with_g(expr: str, g: str) -> str:
    return re.sub(r"\bg\b", g, expr)


def _register(adjoint_src: str, tangent_src: str, keys, broadcast=False) -> None:
    adj = rule_from_source(adjoint_src, RULE_GLOBALS)
    tan = rule_from_source(tangent_src, RULE_GLOBALS, broadcast=broadcast)
    for key in keys:
        ADJOINTS[key] = adj
        TANGENTS[key] = tan


def _is_math(key) -> bool:
    return getattr(key, "__module__", None) == "math"


def _scalar_form(keys, arity: int) -> str | None:
    """`math.<name>(x[, y])` for the `math` function among `keys` or named like one."""
    args = "x, y" if arity == 2 else "x"
    for key in keys:
        name = key.__name__
        name = name if _is_math(key) else _MATH_NAMES.get(name, name)
        if hasattr(math, name) and (_is_math(key) or hasattr(np, key.__name__)):
            return f"math.{name}({args})"
    return None


def _describe_elementwise(keys, arity: int, scalar: str | None, float_result: bool,
                          keeps_int: bool, elementwise: bool = True) -> None:
    """Kind, shape class, scalar/CUDA form and batching rule of elementwise `keys`."""
    array_keys = [k for k in keys if not _is_math(k) and k not in (abs, pow, min, max)]
    scalar = scalar or _scalar_form(keys, arity)
    for key in keys:
        r = registry.record(key)
        r.kind = "elementwise" if arity == 1 else "binary elementwise"
        r.float_result, r.keeps_int = float_result, keeps_int
        r.elementwise = key in array_keys and elementwise
        if scalar is not None:
            r.scalar, r.cuda = scalar, "elementwise"
        if key in array_keys:
            r.batcher = batching_rules.elementwise_rule()
            continue
        r.vector = array_keys[0] if array_keys else array_form(key)
        r.batcher = batching_rules.elementwise_rule(target=r.vector)


def elementwise(*keys, derivative: str, scalar: str | None = None, keeps_int: bool = False,
                float_result: bool = True) -> None:
    """Unary elementwise functions with ``dz/dx = derivative`` (in terms of ``x``, ``z``).

    `scalar` is the form CUDA kernels use (an expression of ``x`` in ``math.*``, builtins
    and operators); by default the `math` function among `keys` or named like the NumPy one.
    """
    _register(f"def rule(z, x):\n    d[x] += d[z] * ({derivative})\n",
              f"def rule(z, x):\n    d[z] = d[x] * ({derivative})\n", keys)
    _describe_elementwise(keys, 1, scalar, float_result, keeps_int)


def broadcasting(*keys, x: str, y: str, broadcast: bool = False, scalar: str | None = None,
                 keeps_int: bool = False, float_result: bool = False,
                 scalarized: bool = False) -> None:
    """Binary elementwise functions with broadcasting; ``x``/``y`` are ``g * dz/darg``.
    `scalarized`: the shape analysis splits short vectors of them element by element.

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
    functions = [k for k in keys if not isinstance(k, type)]     # operators: AST classes
    for key in keys:
        if isinstance(key, type):
            registry.record(key).kind = "operator"
    _describe_elementwise(functions, 2, scalar, float_result, keeps_int, scalarized)


def linear(*keys, adjoint: str, tangent: str, params: str = "x", kind: str = "linear") -> None:
    """Functions linear in their first argument ``x``: ``adjoint`` maps ``g`` back to
    the shape of ``x``, ``tangent`` maps ``g`` (the tangent of ``x``) forward."""
    _register(f"def rule(z, {params}):\n    d[x] += {_with_g(adjoint, 'd[z]')}\n",
              f"def rule(z, {params}):\n    d[z] = {_with_g(tangent, 'd[x]')}\n", keys)
    for key in keys:
        r = registry.record(key)
        r.kind = r.kind or ("operator" if isinstance(key, type) and key not in (float,)
                            else kind)


def nondifferentiable(*keys, kind: str = "") -> None:
    """Functions whose outputs carry no derivative (shapes, constructors, rounding,
    comparisons, indices); `kind` classifies them in the table of primitives."""
    for key in keys:
        r = registry.record(key)
        r.nondifferentiable = True
        if kind and not r.kind:
            r.kind = kind


def differentiated_only_with(key, name: str, position: int, accepted: tuple, message: str,
                             hint: str) -> None:
    """grad and jvp take calls of `key` whose argument `name` (or positional `position`) is
    left out or a constant in `accepted`: its rules are those values' derivatives. Any
    other call is refused while transforming, at the call, with `message` and `hint`."""
    def check(args, keywords):
        value = keywords.get(name, args[position] if len(args) > position else None)
        if value is None or isinstance(value, gast.Constant) and value.value in accepted:
            return
        raise MissingRule(message, hint)
    CALL_CHECKS[key] = check


def lowered(key, equivalent, *, plain_form_ok: bool = False, python_only: bool = False,
            reason: str = "") -> None:
    """`key` runs under Numba as the runtime function `equivalent` (same signature) where
    Numba lacks its call form (`plain_form_ok`: Numba takes the one-argument form itself).
    `python_only`: the equivalent does not compile yet, `reason` says what jit does."""
    r = registry.record(key)
    r.numba, r.plain_form_ok, r.python_only = equivalent, plain_form_ok, python_only
    if python_only:
        registry.unsupported(key, "jit", reason)
