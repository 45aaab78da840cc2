"""Runtime helpers of the reverse sweep's tapes (plain Python and Numba alike).

Shape guards (`shape_of`, `check_shape`) for accumulators read only for their shape;
view checks (`own_value`, `check_not_view`, `check_not_shared`) that refuse, at run time,
an in-place write the reverse sweep cannot account for; typed value tapes (`float_tape`,
`exact_tape`, `push`, `reserve`: created at the first record with the capacity given,
doubled when outgrown); flat buffers of overwritten elements (`items_buffer`,
`push_items`, `pop_items`); and loop bounds (`trip_count`, `range_last`).
`transformer.tape` plans which values are recorded and re-exports these names.
"""
from __future__ import annotations

import linecache
import re

import numpy as np
from numba import types
from numba.core.errors import TypingError
from transformer.runtime.allocation import empty_array
from transformer.runtime.numba_api import overload, register_jitable

from .errors import TransformError, copy_hint


# ---------------------------------------------------------------- runtime: shape guards


def shape_of(value):
    """The shape of an array, `()` for a scalar."""
    return np.shape(value)


_SHAPE_HINT = ("start an array accumulator with np.zeros of its final shape (e = np.zeros(n), "
               "not e = 0.0), or give a value of another shape a name of its own")
# compiled checks raise ValueError(where, message, hint) with constant strings: joining
# strings in compiled code costs a second of compile time (`located_message` renders them)
_SHAPE_MESSAGE = ("a variable changed shape between assignments; reverse mode needs one "
                  "shape per variable")


def check_shape(value, shape, where=""):
    """Raise when an accumulator's shape drifts from its first assignment's; `where` is the
    user's `file:line:col` of the assignment (the message shows that line)."""
    if np.shape(value) != shape:
        raise ValueError(_located(where, f"a variable changed shape from {shape} to "
                                  f"{np.shape(value)} between assignments; reverse mode "
                                  "needs one shape per variable", _SHAPE_HINT))


_SITE = re.compile(r"^.+:\d+:\d+$")


def located_message(exc: ValueError) -> ValueError:
    """A compiled check's `ValueError(where, message, hint)` as one message located at
    `where` (its line, a caret and the hint, as the Python form of the check gives it); any
    other ValueError as it is."""
    if len(exc.args) == 3 and all(isinstance(a, str) for a in exc.args) and \
            (not exc.args[0] or _SITE.match(exc.args[0])):
        return ValueError(_located(*exc.args))
    return exc


def _located(where: str, message: str, hint: str) -> str:
    """`message` rendered as a TransformError at `where`: location, line, caret, hint."""
    if not where:
        return f"{message} ({hint})"
    filename, lineno, col = where.rsplit(":", 2)
    line = linecache.getline(filename, int(lineno)).rstrip("\n") or None
    return str(TransformError(message, filename=filename, lineno=int(lineno),
                              col=int(col) - 1, line=line, hint=hint))


@overload(shape_of)
def _shape_of_nb(value):
    if isinstance(value, types.Array):
        return lambda value: value.shape
    return lambda value: ()


@overload(check_shape)
def _check_shape_nb(value, shape, where=""):
    if isinstance(value, types.Array):
        def impl(value, shape, where=""):
            if value.shape != shape:
                raise ValueError(where, _SHAPE_MESSAGE, _SHAPE_HINT)
        return impl
    return lambda value, shape, where="": None


def own_value(value):
    """`value` itself, or a copy of it when it is an array (it may be a view that a later
    in-place write changes; see reverse/views.py)."""
    return np.copy(value) if isinstance(value, np.ndarray) else value


@overload(own_value)
def _own_value_nb(value):
    if isinstance(value, types.Array):
        return lambda value: np.copy(value)
    return lambda value: value


def check_not_view(value, array, label, source, where=""):
    """Raise when `value` (named `label`), read from `array` (named `source`) before an
    in-place write to it and used after, is a view the write changes: its adjoint assumes
    the value read. `where` is the user's `file:line:col` of the write."""
    if isinstance(value, np.ndarray) and np.shares_memory(value, array):
        raise ValueError(_located(where, f"{label!r} is a view into {source!r}, written in "
                                  f"place while {label!r} is still used; reverse mode needs "
                                  "a copy", copy_hint(label, source)))


_VIEW_HINT = "copy the value where it is read from the array: `v = a[...].copy()`"
_SHARED_HINT = ("make one of the two names its own array where it is assigned from the "
                "other: `y = z.copy()`")
_ITEM_HINT = ("make the updated name its own array where it is taken from the list or "
              "tuple: `c = lst[i].copy()`; or rebind instead of updating in place "
              "(`c = c * ...`)")


@overload(check_not_view)
def _check_not_view_nb(value, array, label, source, where=""):
    if not isinstance(value, types.Array):
        return lambda value, array, label, source, where="": None

    def impl(value, array, label, source, where=""):
        start = array.ctypes.data
        if start <= value.ctypes.data < start + array.size * array.itemsize:
            raise ValueError(where, "a view into an array written in place is still "
                             "used; reverse mode needs a copy", _VIEW_HINT)
    return impl


def check_not_shared(other, array, label, source, where=""):
    """Raise when `other` (named `label`) holds memory of `array` (named `source`), which
    an augmented assignment updates in place: reverse mode rebinds `source` instead, so
    `other` would not change. `other` may be a list or tuple (or a dict) whose items hold
    the array (`c = lst[1]; c *= 2` changes `lst[1]`). `where` is the user's
    `file:line:col` of the update."""
    if not isinstance(array, np.ndarray):
        return
    if isinstance(other, np.ndarray) and np.shares_memory(other, array):
        raise ValueError(_located(where, f"{label!r} shares its array with {source!r}, "
                                  "updated in place (+=, -=, ...); reverse mode needs a copy",
                                  copy_hint(source, label, either=True)))
    if isinstance(other, (list, tuple, dict)) and _holds_memory_of(other, array):
        raise ValueError(_located(where, f"an item of {label!r} shares its array with "
                                  f"{source!r}, updated in place (+=, -=, ...); reverse mode "
                                  "needs a copy", _item_copy_hint(source, label)))


def _holds_memory_of(value, array) -> bool:
    """Whether `value`, an array or a (nested) list, tuple or dict of them, holds memory of
    `array`."""
    if isinstance(value, np.ndarray):
        return bool(np.shares_memory(value, array))
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_memory_of(item, array) for item in value)
    return False


def _item_copy_hint(name: str, container: str) -> str:
    return (f"make {name!r} its own array where it is taken from {container!r}: "
            f"`{name} = {container}[i].copy()`, or `{name} = {name}.copy()` right after "
            "unpacking; or rebind instead of updating in place "
            f"(`{name} = {name} * ...`)")


def overlaps(other, array):
    """Compiled code only: whether `other` (an array, or a list or tuple of them) and the
    array `array` share memory (their address ranges overlap)."""
    return _holds_memory_of(other, array)


@overload(overlaps)
def _overlaps_nb(other, array):
    if isinstance(other, types.Array):
        def impl(other, array):
            a, b = other.ctypes.data, array.ctypes.data
            return a < b + array.size * array.itemsize and b < a + other.size * other.itemsize
        return impl
    if isinstance(other, (types.UniTuple, types.List)):
        def impl(other, array):
            for item in other:
                if overlaps(item, array):
                    return True
            return False
        return impl
    if isinstance(other, types.BaseTuple):
        # items of several types: one call per item, written out
        terms = " or ".join(f"overlaps(other[{i}], array)" for i in range(len(other)))
        namespace = {"overlaps": overlaps}
        exec(f"def impl(other, array):\n    return {terms or 'False'}\n", namespace)
        return namespace["impl"]
    if isinstance(other, (types.Number, types.Boolean, types.NoneType)):
        return lambda other, array: False
    raise TypingError(f"secant cannot check whether a {other} shares an array updated in "
                      "place")


@overload(check_not_shared)
def _check_not_shared_nb(other, array, label, source, where=""):
    if not isinstance(array, types.Array) or \
            isinstance(other, (types.Number, types.Boolean, types.NoneType)):
        return lambda other, array, label, source, where="": None
    message = ("an array updated in place (+=, -=, ...) is shared with another name; "
               "reverse mode needs a copy")
    hint = _SHARED_HINT
    if not isinstance(other, types.Array):
        message = ("an array updated in place (+=, -=, ...) is shared with an item of a "
                   "list or tuple; reverse mode needs a copy")
        hint = _ITEM_HINT

    def impl(other, array, label, source, where=""):
        if overlaps(other, array):
            raise ValueError(where, message, hint)
    return impl


# ---------------------------------------------------------------- runtime: value tapes

MIN_CAPACITY = 16


def float_tape(value, capacity):
    """An empty tape for values like `value`; integers and booleans are promoted to float64
    (a variable that starts as an integer and holds floats later), floats and complex
    numbers keep their type."""
    arr = np.asarray(value)
    dtype = arr.dtype if np.issubdtype(arr.dtype, np.inexact) else np.dtype(np.float64)
    return np.empty((max(capacity, 1),) + arr.shape, dtype)


def exact_tape(value, capacity):
    """An empty tape for values like `value`, keeping their exact type (indices, flags)."""
    arr = np.asarray(value)
    return np.empty((max(capacity, 1),) + arr.shape, arr.dtype)


_TAPE_SHAPE_HINT = ("give the variable one shape from its first assignment (start an array "
                    "accumulator with np.zeros of its final shape), or give a value of another "
                    "shape a name of its own")
_TAPE_SHAPE_MESSAGE = ("a recorded variable changed shape between assignments; reverse mode "
                       "records it on a typed tape")


def push(tape, n, value, where=""):
    """`tape` with `value` stored at position `n` (a larger copy when it is full); `where` is
    the user's `file:line:col` of the recorded assignment, for the shape error."""
    if np.shape(value) != tape.shape[1:]:
        raise ValueError(_located(where, f"a recorded variable changed shape from "
                                  f"{tape.shape[1:]} to {np.shape(value)} between assignments; "
                                  "reverse mode records it on a typed tape", _TAPE_SHAPE_HINT))
    kind = np.asarray(value).dtype
    if not np.can_cast(kind, tape.dtype, "same_kind"):
        # a variable that started as a bool or an integer holds integers or floats now:
        # storing them would truncate, so the tape takes their type (what it holds is
        # exact in it)
        tape = tape.astype(np.result_type(tape.dtype, kind))
    if n == tape.shape[0]:
        tape = _grown(tape)
    tape[n] = value
    return tape


@register_jitable
def _grown(tape):
    return _with_rows(tape, 2 * tape.shape[0])


@register_jitable
def _with_rows(tape, rows):
    """A tape of `rows` rows whose first rows are `tape`'s."""
    bigger = np.empty((rows,) + tape.shape[1:], tape.dtype)
    _copy_flat(bigger, tape)
    return bigger


@register_jitable
def _copy_flat(dst, src):
    """The first `src.size` elements of `dst` (C order) set to those of `src`.

    Flat iterators, not a reshape or a slice assignment: under Numba those pull in the
    formatting of their shape-mismatch errors, a second or more of compile time each.
    """
    out = dst.flat
    k = 0
    for v in src.flat:
        out[k] = v
        k += 1


def _tape_dtype(ty, promote):
    dtype = ty.dtype if isinstance(ty, types.Array) else ty
    if isinstance(dtype, types.Boolean):
        return types.float64 if promote else types.bool_
    if isinstance(dtype, types.Integer):
        return types.float64 if promote else types.int64
    if isinstance(dtype, types.Float):
        return dtype
    raise TypingError(f"secant cannot record values of type {ty} on a tape")


def _tape_overload(promote):
    def typer(value, capacity):
        dtype = _tape_dtype(value, promote)
        if isinstance(value, types.Array):
            return lambda value, capacity: empty_array((max(capacity, 1),) + value.shape, dtype)
        return lambda value, capacity: empty_array(max(capacity, 1), dtype)
    return typer


overload(float_tape)(_tape_overload(True))
overload(exact_tape)(_tape_overload(False))


@overload(push)
def _push_nb(tape, n, value, where=""):
    if isinstance(value, types.Array):
        def rows(tape, n, value, where=""):
            if value.shape != tape.shape[1:]:
                raise ValueError(where, _TAPE_SHAPE_MESSAGE, _TAPE_SHAPE_HINT)
            if n == tape.shape[0]:
                tape = _grown(tape)
            _copy_flat(tape[n], value)
            return tape
        return rows

    def scalars(tape, n, value, where=""):
        if n == tape.shape[0]:
            tape = _grown(tape)
        tape[n] = value
        return tape
    return scalars


# ---------------------------------------------------------------- runtime: element buffers


def items_buffer(array, capacity):
    """An empty flat buffer for elements of `array` overwritten by in-place writes."""
    return np.empty(max(capacity, MIN_CAPACITY), np.asarray(array).dtype)


def push_items(buf, n, value):
    """(`buf` with the elements of `value` appended at `n`, the new length)."""
    flat = np.ravel(np.asarray(value))
    while n + flat.size > buf.shape[0]:
        buf = _grown(buf)
    buf[n:n + flat.size] = flat
    return buf, n + flat.size


def pop_items(buf, n, like):
    """(the last elements below `n` shaped like `like`, the new length)."""
    if np.ndim(like) == 0:
        return buf[n - 1], n - 1
    size = np.size(like)
    return buf[n - size:n].reshape(np.shape(like)).copy(), n - size


@overload(items_buffer)
def _items_buffer_nb(array, capacity):
    dtype = array.dtype
    return lambda array, capacity: empty_array(max(capacity, MIN_CAPACITY), dtype)


@overload(push_items)
def _push_items_nb(buf, n, value):
    if isinstance(value, types.Array):
        def impl(buf, n, value):
            flat = np.ravel(value)
            while n + flat.size > buf.shape[0]:
                buf = _grown(buf)
            for k in range(flat.size):
                buf[n + k] = flat[k]
            return buf, n + flat.size
        return impl

    def scalar(buf, n, value):
        if n + 1 > buf.shape[0]:
            buf = _grown(buf)
        buf[n] = value
        return buf, n + 1
    return scalar


@overload(pop_items)
def _pop_items_nb(buf, n, like):
    if isinstance(like, types.Array):
        def impl(buf, n, like):
            return buf[n - like.size:n].copy().reshape(like.shape), n - like.size
        return impl
    return lambda buf, n, like: (buf[n - 1], n - 1)


def reserve(tape, n):
    """`tape` with room for at least `n` entries (its first rows kept)."""
    if tape.shape[0] >= n:
        return tape
    return _with_rows(tape, n)


@overload(reserve)
def _reserve_nb(tape, n):
    def impl(tape, n):
        if tape.shape[0] >= n:
            return tape
        return _with_rows(tape, n)
    return impl


# ---------------------------------------------------------------- runtime: loop bounds


@register_jitable
def trip_count(start, stop, step):
    """How many times `for i in range(start, stop, step)` runs."""
    count = (stop - start + step - 1) // step if step > 0 else (start - stop - step - 1) // (-step)
    return count if count > 0 else 0       # not max(0, count): one compile fewer


@register_jitable
def range_last(start, stop, step):
    """The last value `range(start, stop, step)` takes (start - step when it is empty)."""
    return start + (trip_count(start, stop, step) - 1) * step
