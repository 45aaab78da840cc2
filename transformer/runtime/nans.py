"""The checks `debug_nans` puts after each computed value (`transformer.nan_checks`).

`finite_check(value, head, tail)` raises `FloatingPointError(head + "nan" + tail)` when
`value` (a float or complex number, or an array of them) holds a NaN, and
`FloatingPointError(head + "inf" + tail)` when it holds an infinity; `nan_check(value,
head, tail)` looks for NaNs only (for a value the user's code builds from an infinity on
purpose, `-np.inf` as the start of a maximum). Values of other types (integers, booleans,
tuples, tapes) pass unchecked: under Numba that is decided while typing, so they cost
nothing. `head` and `tail` are string constants: Numba bakes the two messages into the
compiled code, and the check is a loop over the value with one comparison per element.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from transformer.runtime.numba_api import overload, register_jitable

__all__ = ["finite_check", "nan_check"]


def _bad(value, infs: bool) -> str | None:
    """"nan" or "inf" for the first kind of non-finite value found in `value`, else None."""
    if isinstance(value, (float, complex, np.floating, np.complexfloating)):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fc":
        return None
    if np.isnan(value).any():
        return "nan"
    if infs and np.isinf(value).any():
        return "inf"
    return None


def finite_check(value, head, tail):
    """Raise FloatingPointError if `value` holds a NaN or an infinity."""
    kind = _bad(value, True)
    if kind is not None:
        raise FloatingPointError(head + kind + tail)


def nan_check(value, head, tail):
    """Raise FloatingPointError if `value` holds a NaN."""
    kind = _bad(value, False)
    if kind is not None:
        raise FloatingPointError(head + kind + tail)


def _messages(head, tail) -> tuple[str, str]:
    if not (isinstance(head, types.StringLiteral) and isinstance(tail, types.StringLiteral)):
        raise TypingError("finite_check: the message parts must be string constants")
    return (head.literal_value + "nan" + tail.literal_value,
            head.literal_value + "inf" + tail.literal_value)


def _checker(value, head, tail, infs: bool):
    """The Numba implementation for the type of `value` (a no-op for non-float types)."""
    nan_message, inf_message = _messages(head, tail)
    if isinstance(value, types.Array):
        element = value.dtype
    elif isinstance(value, (types.Float, types.Complex)):
        element = value
    else:
        return lambda value, head, tail: None
    if not isinstance(element, (types.Float, types.Complex)):
        return lambda value, head, tail: None
    scalar = not isinstance(value, types.Array)

    # v != v only for a NaN (a complex NaN too); v - v is NaN only for an infinity
    @register_jitable
    def one(v):
        if v != v:
            raise FloatingPointError(nan_message)
        if infs and v - v != v - v:
            raise FloatingPointError(inf_message)

    if scalar:
        def impl(value, head, tail):
            one(value)
        return impl

    def impl_array(value, head, tail):
        for v in value.flat:
            one(v)
    return impl_array


@overload(finite_check, prefer_literal=True)
def _finite_check_nb(value, head, tail):
    return _checker(value, head, tail, True)


@overload(nan_check, prefer_literal=True)
def _nan_check_nb(value, head, tail):
    return _checker(value, head, tail, False)
