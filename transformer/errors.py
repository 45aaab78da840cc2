"""The one error users see when secant cannot transform their code.

A `TransformError` points at the user's own source: file, line and column, the line
itself with a caret under the column, and a hint saying what to write instead. The class
is defined in `codegen.errors` (the layer below) and is the same object here; this module
adds the helpers that locate and word errors for the passes.
"""
from __future__ import annotations

from codegen.errors import TransformError

from .runtime.errors import copy_hint

__all__ = ["TransformError", "complex_intermediate", "copy_hint", "effect_hint", "error_at"]


def error_at(fn, node, message: str, hint: str | None = None) -> TransformError:
    """A TransformError located at `node` of Function `fn` (its user's file and line)."""
    return fn.origin.error(node, message, hint)


def complex_intermediate(fn) -> TransformError:
    """The error for a derivative of Function `fn` that passed through complex values: the
    rules are those of real values (np.abs's is sign(x)), so its tangent of a real output
    came out complex, or its complex cotangent met a real variable."""
    return fn.origin.error(
        fn.node, "the derivative of this function passes through complex values, which "
        "secant's rules do not differentiate (its derivative came out complex)",
        "write the complex arithmetic in real and imaginary parts (np.abs(x * (a + bj)) "
        "is np.hypot(a * x, b * x)): derivatives of complex intermediate values (JAX's "
        "holomorphic=False) are not supported")


_GROWTH_METHODS = ("append", "extend", "insert")


def effect_hint(call, otherwise: str) -> str:
    """The hint for a differentiated value handed to a call made for its effect: for a
    list grown item by item (`hs.append(h)` in a loop), the array form secant
    differentiates; else `otherwise`."""
    func = getattr(call, "func", None)
    if getattr(func, "attr", None) in _GROWTH_METHODS:
        return ("write the items into an array made before the loop instead "
                "(`hs = np.zeros((n,) + np.shape(h))`, then `hs[t] = h` inside it): "
                "secant differentiates writes into an array's rows; or build the list as "
                "a literal (`[f(w) for w in ws]`)")
    return otherwise
