"""The run-time check of an at-update's index that secant cannot prove repeat-free.

`distinct_entries(part, n, message)` returns `part` (one part of an index, for an axis of
length `n`) unchanged when it selects no element twice: an int, a boolean mask, or an
integer array whose entries, negative ones counted from the end, are all different. An
integer array with a repeated entry raises `ValueError(message)`; `message` is a string
constant, the user's located error (`transformer.at_updates`). Runs as plain Python and
inside Numba nopython mode.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError

from .numba_api import overload


def distinct_entries(part, n, message):
    """`part`, after checking that it selects no element of an axis of length `n` twice."""
    values = np.asarray(part)
    if values.ndim == 0 or values.dtype == np.bool_:
        return part
    flat = values.ravel()
    flat = np.where(flat < 0, flat + n, flat)
    if np.unique(flat).size != flat.size:
        raise ValueError(message)
    return part


@overload(distinct_entries, prefer_literal=True)
def _distinct_entries_nb(part, n, message):
    if not isinstance(message, types.StringLiteral):
        raise TypingError("distinct_entries: the message must be a string constant")
    text = message.literal_value
    if not (isinstance(part, types.Array) and isinstance(part.dtype, types.Integer)):
        return lambda part, n, message: part            # an int or a mask: no repeat

    def impl(part, n, message):
        flat = part.ravel()
        entries = np.empty(flat.size, np.int64)
        for k in range(flat.size):
            entries[k] = flat[k] + n if flat[k] < 0 else flat[k]
        entries.sort()
        for k in range(1, entries.size):
            if entries[k] == entries[k - 1]:
                raise ValueError(text)
        return part
    return impl
