"""The error type of every secant refusal, defined in the runtime package so that runtime
helpers, which import nothing from `transformer`, refuse with the same type users catch
(`transformer.errors.TransformError` is this class), and the hint they share with the passes.
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


def copy_hint(name: str, source: str, either: bool = False) -> str:
    """The hint for `name`, assigned from `source` and sharing its array where secant needs
    it not to: make `name` its own array. `either`: which of the two was assigned from the
    other is not known, so both directions are named."""
    text = (f"make {name!r} its own array where it is assigned from {source!r}: "
            f"`{name} = {source}.copy()` (`{name} = {source}[...].copy()` for a slice)")
    if either:
        text += f", or `{source} = {name}.copy()` if {source!r} is assigned from {name!r}"
    return text
