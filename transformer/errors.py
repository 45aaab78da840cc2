"""The one error users see when secant cannot transform their code.

A `TransformError` points at the user's own source: file, line and column, the line
itself with a caret under the column, and a hint saying what to write instead. The class
is defined in `codegen.errors` (the layer below) and is the same object here; this module
adds the helpers that locate and word errors for the passes.
"""
from __future__ import annotations

from codegen.errors import TransformError

from .runtime.errors import copy_hint

__all__ = ["TransformError", "copy_hint", "effect_hint", "error_at"]


def error_at(fn, node, message: str, hint: str | None = None) -> TransformError:
    """A TransformError located at `node` of Function `fn` (its user's file and line)."""
    return fn.origin.error(node, message, hint)


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
