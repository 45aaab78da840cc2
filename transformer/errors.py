"""The one error users see when secant cannot transform their code.

A `TransformError` points at the user's own source: file, line and column, the line
itself with a caret under the column, and a hint saying what to write instead.
"""
from __future__ import annotations

from .runtime.errors import TransformError, copy_hint

__all__ = ["TransformError", "copy_hint", "error_at"]
# its public home, which tracebacks and pickles name (the class lives in the runtime package
# so that runtime helpers can raise it without importing transformer)
TransformError.__module__ = __name__


def error_at(fn, node, message: str, hint: str | None = None) -> TransformError:
    """A TransformError located at `node` of Function `fn` (its user's file and line)."""
    return fn.origin.error(node, message, hint)
