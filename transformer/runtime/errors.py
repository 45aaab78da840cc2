"""The error runtime helpers refuse with, and the hint they share with the passes.

`TransformError` is the one class users catch (`transformer.TransformError`); it is
defined in `codegen.errors`, the bottom layer, which imports nothing, so the runtime
package can raise it while importing nothing from `transformer`.
"""
from __future__ import annotations

from codegen.errors import TransformError

__all__ = ["TransformError", "copy_hint"]


def copy_hint(name: str, source: str, either: bool = False) -> str:
    """The hint for `name`, assigned from `source` and sharing its array where secant needs
    it not to: make `name` its own array. `either`: which of the two was assigned from the
    other is not known, so both directions are named."""
    text = (f"make {name!r} its own array where it is assigned from {source!r}: "
            f"`{name} = {source}.copy()` (`{name} = {source}[...].copy()` for a slice)")
    if either:
        text += f", or `{source} = {name}.copy()` if {source!r} is assigned from {name!r}"
    return text
