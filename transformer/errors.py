"""The one error users see when secant cannot transform their code.

A `TransformError` points at the user's own source: file, line and column, the line
itself with a caret under the column, and a hint saying what to write instead.
"""
from __future__ import annotations


from .runtime.errors import TransformError

__all__ = ["TransformError", "copy_hint", "error_at"]


def copy_hint(name: str, source: str, either: bool = False) -> str:
    """The hint for `name`, assigned from `source` and sharing its array where secant needs
    it not to: make `name` its own array. `either`: which of the two was assigned from the
    other is not known, so both directions are named."""
    text = (f"make {name!r} its own array where it is assigned from {source!r}: "
            f"`{name} = {source}.copy()` (`{name} = {source}[...].copy()` for a slice)")
    if either:
        text += f", or `{source} = {name}.copy()` if {source!r} is assigned from {name!r}"
    return text


def error_at(fn, node, message: str, hint: str | None = None) -> TransformError:
    """A TransformError located at `node` of Function `fn` (its user's file and line)."""
    return fn.origin.error(node, message, hint)
