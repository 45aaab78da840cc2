"""The one error users see when secant cannot transform their code.

A `TransformError` points at the user's own source: file, line and column, the line
itself with a caret under the column, and a hint saying what to write instead. The class
is defined in `codegen.errors` (the layer below) and is the same object here; this module
adds the helpers that locate and word errors for the passes.
"""
from __future__ import annotations

from codegen.errors import TransformError

from .runtime.errors import copy_hint

__all__ = ["TransformError", "copy_hint", "error_at"]


def error_at(fn, node, message: str, hint: str | None = None) -> TransformError:
    """A TransformError located at `node` of Function `fn` (its user's file and line)."""
    return fn.origin.error(node, message, hint)
