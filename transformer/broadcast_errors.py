"""A broadcasting error raised by compiled code, told at the user's line in NumPy's words.

Numba's broadcasting failures ("unable to broadcast argument 1 to output array", "shape
mismatch: objects cannot be broadcast to a single shape") name neither the shapes nor a
line of the program: their only location is Numba's own source. `located` runs the
generated function's Python form - the dispatcher's `py_func`, whose callees are compiled
already - on copies of the arguments (the compiled run may have written into them, and
this run must not write into them again). NumPy raises its own message there, with the
shapes, at a line of a generated module; `generated_lines.user_site` maps that line to
the user's statement.

Contract: `located` returns a new ValueError `file:line:col: <NumPy's message>` with the
line and a caret (the form of `index_checks.with_source_line`), or the original exception
when the Python form does not fail the same way. Where the user's code cannot be told
for sure, the generated statement is the one shown (its module is on disk, readable).
"""
from __future__ import annotations

import linecache
import re

import numpy as np

from .generated_lines import user_site
from .random_sites import origin_function

_LOCATED = re.compile(r"^\S.*:\d+:\d+: ")
_NUMBA_BROADCAST = ("unable to broadcast", "cannot be broadcast", "could not be broadcast")


def located(exc: ValueError, function, arguments: tuple) -> ValueError:
    """`exc`, located as the module doc says, when it is a broadcasting failure."""
    if not any(words in str(exc) for words in _NUMBA_BROADCAST) or _LOCATED.match(str(exc)):
        return exc          # not a broadcast, or located already (a fused loop's check)
    python = getattr(function, "py_func", None)
    if python is None:
        return exc
    copies = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in arguments)
    try:
        python(*copies)
    except ValueError as numpy_error:
        if not any(words in str(numpy_error) for words in _NUMBA_BROADCAST):
            return exc
        site = _generated_site(numpy_error.__traceback__)
        if site is None:
            return exc
        filename, lineno, col = user_site(*site) or (*site, _indent(*site))
        text = linecache.getline(filename, lineno).rstrip()
        return ValueError(f"{filename}:{lineno}:{col + 1}: {str(numpy_error).strip()}\n"
                          f"    {text}\n    {' ' * col}^")
    except Exception:       # the Python form fails otherwise: keep Numba's error
        return exc
    return exc


def _generated_site(traceback) -> tuple[str, int] | None:
    """(file, line) of the innermost frame in a generated module."""
    site = None
    while traceback is not None:
        filename = traceback.tb_frame.f_code.co_filename
        if origin_function(filename) is not None:
            site = filename, traceback.tb_lineno
        traceback = traceback.tb_next
    return site


def _indent(filename: str, lineno: int) -> int:
    line = linecache.getline(filename, lineno)
    return len(line) - len(line.lstrip())
