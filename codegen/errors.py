"""The one error users see when secant cannot transform or compile their code.

A `TransformError` points at the user's own source: file, line and column, the line
itself with a caret under the column, and a hint saying what to write instead. It lives
in codegen, the lower layer, so that the backends and the cache raise the very class the
passes raise; `transformer.errors` re-exports it.
"""
from __future__ import annotations


class TransformError(Exception):
    """An unsupported or invalid construct in code handed to a transformation."""

    def __init__(self, message: str, *, filename: str | None = None, lineno: int | None = None,
                 col: int | None = None, line: str | None = None, hint: str | None = None):
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.line = line
        self.hint = hint
        super().__init__(self._render())

    @property
    def location(self) -> str:
        """`file:line:col`, or an empty string when the origin is unknown."""
        if self.filename is None:
            return ""
        return f"{self.filename}:{self.lineno}:{(self.col or 0) + 1}"

    def _render(self) -> str:
        parts = [f"{self.location}: {self.message}" if self.location else self.message]
        if self.line is not None:
            parts.append("    " + self.line.rstrip())
            parts.append("    " + " " * (self.col or 0) + "^")
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)
