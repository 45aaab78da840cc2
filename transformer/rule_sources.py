"""The text of a rule template written as a function, read from its file when the rule is
first used.

Templates are parsed on first use, not at import (`templates.Template`), so the text comes
from the function's file at that moment, at the line numbers of the code imported. A file
changed under a running process (an upgrade, a checkout) would be read at the old line
numbers: another rule's text, a silently wrong derivative. `read` refuses that instead:
each file's modification time is noted when its first rule is registered (one `stat` per
file) and must be the same when a rule is read.
"""
from __future__ import annotations

import inspect
import os

_STAMPS: dict = {}      # filename -> its modification time when a rule was registered from it


def _modified(filename: str) -> int | None:
    try:
        return os.stat(filename).st_mtime_ns
    except OSError:
        return None


def stamp(fn) -> tuple:
    """(filename, modification time) of `fn`'s file when its first rule was registered;
    the time is None for source that is not a file (`<stdin>`, a notebook cell)."""
    filename = getattr(getattr(fn, "__code__", None), "co_filename", None) or ""
    if filename not in _STAMPS:
        _STAMPS[filename] = _modified(filename) if filename else None
    return filename, _STAMPS[filename]


def read(source, noted: tuple | None) -> str:
    """`source` itself when it is text; else the source of the function `source`, whose
    file must be unchanged since `noted` (`stamp`) or RuntimeError."""
    if not callable(source):
        return source
    filename, when = noted
    if when is not None and _modified(filename) != when:
        raise RuntimeError(
            f"{filename} changed on disk after this process imported it (an upgrade or a "
            "checkout while Python ran): its derivative rules can no longer be read; "
            "restart Python to use the new version")
    return inspect.getsource(source)
