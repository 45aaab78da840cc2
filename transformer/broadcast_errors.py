"""A broadcasting error raised by compiled code, told at the user's line in NumPy's words.

Numba's broadcasting failures ("unable to broadcast argument 1 to output array", "shape
mismatch: objects cannot be broadcast to a single shape", and under `parallel=True` the
AssertionError "Sizes of $a, $b do not match on <generated module> (22)") name neither
the shapes nor a line of the program. `located` runs the
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
# under parallel=True Numba's parfors assert that the operands of an array expression
# have equal sizes: `AssertionError: Sizes of $a.4, $b.7 do not match on <module> (22)`
_PARFOR_SIZES = re.compile(r"^Sizes of \S+(, \S+)* do not match on ")


def located(exc: Exception, function, arguments: tuple) -> Exception:
    """`exc`, located as the module doc says, when it is a broadcasting failure: a
    ValueError of Numba's broadcasting, or the AssertionError of a parallel one."""
    if isinstance(exc, AssertionError):
        if not _PARFOR_SIZES.match(str(exc)):
            return exc
    elif not any(words in str(exc) for words in _NUMBA_BROADCAST) or \
            _LOCATED.match(str(exc)):
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
