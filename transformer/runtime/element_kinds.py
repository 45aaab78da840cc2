"""`scalar_elements(ranks, *values)`: whether every value is a number, or an array whose
elements a loop reads and writes one at a time, decided from the types when Numba compiles.

`transformer.parallel_loops` guards the `prange` form of a user's loop with it: the loop
runs on several threads only when each of its subscripts gives a number (an array of rank
k indexed by k items), so no operation in a trip works on arrays (a broadcast that fails
raises nothing inside a Numba `prange`, and the serial loop would have raised).
`ranks` is a string constant, one rank per value, comma-separated: 0 for a number.
"""
from __future__ import annotations

import numpy as np
from numba import types

from .numba_api import overload


def scalar_elements(ranks, *values):
    """Python: every value has the rank `ranks` gives (0: a number)."""
    wanted = [int(r) for r in ranks.split(",")] if ranks else []
    return len(wanted) == len(values) and all(
        np.ndim(v) == r and np.asarray(v).dtype.kind in "biuf"
        for v, r in zip(values, wanted))


def _numeric(ty) -> bool:
    return isinstance(ty, (types.Number, types.Boolean)) and \
        not isinstance(ty, types.Complex)


def _has_rank(ty, rank: int) -> bool:
    if rank == 0:
        return _numeric(ty)
    return isinstance(ty, types.Array) and ty.ndim == rank and _numeric(ty.dtype)


@overload(scalar_elements, prefer_literal=True)
def _scalar_elements_nb(ranks, *values):
    if not isinstance(ranks, types.StringLiteral):
        return None
    text = ranks.literal_value
    wanted = [int(r) for r in text.split(",")] if text else []
    values = values[0] if len(values) == 1 and isinstance(values[0], types.StarArgTuple) \
        else values
    answer = len(wanted) == len(values) and all(
        _has_rank(ty, r) for ty, r in zip(values, wanted))
    if answer:
        return lambda ranks, *values: True
    return lambda ranks, *values: False
