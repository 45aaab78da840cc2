"""Index checks that generated code calls where `transformer.bounds` cannot prove an index
in bounds; each runs as plain Python and inside Numba nopython mode.

`checked(x, index, axis, where)` returns `index` unchanged when indexing `x` with it,
starting at axis `axis` (counted from the end when negative: a part after an `...`), stays
inside `x` under Python's rules, and otherwise raises
`IndexError`: an integer must lie in `-n <= i < n` for the axis length `n`, every element
of an integer array too, and a boolean mask must have the shape of the axes it covers;
slices clamp and are never checked. `where` is a string constant, the user's
`file:line:col`. Compiled code raises `IndexError(where, index, axis, size)`;
`with_source_line`, called where the error leaves compiled code, turns that into the
message plain Python raises ("where: index 5 is out of bounds for axis 0 with size 3")
followed by the user's line with a caret.
Anything that is not an array (a tuple, a list) is returned as it is: Numba checks those.

`checked_item(x, index, where)` is `getitem_mask(x, checked(x, index, 0, where))` for an
`x` that is a computed expression rather than a name.

`checked_range(x, axis, start, stop, step, offset, where)` checks once, before a loop,
every index `k + offset` for `k` in `range(start, stop, step)` against axis `axis` of `x`.

Inside a `prange` loop, where Numba drops exceptions, `transformer.prange_checks` calls
the `*_rec` forms instead: they take two more arguments, an `index_errors()` array and the
check's site number, and write `site, index, axis, size` (size -1 for a boolean mask)
into it before raising; `raise_recorded(err, wheres)` after the loop raises the recorded
failure as the serial check would (`wheres`: the sites' locations, one a line).
"""
from __future__ import annotations

import linecache
import re

import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import register_jitable
from transformer.runtime.numba_api import overload

from .error_flags import where_of
from .runtime import getitem_mask

__all__ = ["checked", "checked_item", "checked_range", "checked_rec", "checked_item_rec",
           "checked_range_rec", "index_errors", "raise_flagged", "raise_recorded",
           "trips_done"]


_LOCATION = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+): ")


def _message(where: str, index, axis: int, n: int) -> str:
    return f"{where}: index {index} is out of bounds for axis {axis} with size {n}"


def _mask_message(where: str, axis: int) -> str:
    return (f"{where}: boolean index does not match the shape of the array's axes from "
            f"axis {axis}")


def with_source_line(exc: IndexError) -> IndexError:
    """`exc` with the user's line and a caret added when it comes from a failed check.

    Compiled checks raise `IndexError(where, index, axis, size)` (formatting a message in
    compiled code would slow the loop that holds the check); the message is made here.
    """
    if len(exc.args) == 4 and isinstance(exc.args[0], int) and where_of(exc.args[0]):
        exc = IndexError(where_of(exc.args[0]), *exc.args[1:])   # a site of error_flags
    if len(exc.args) == 4 and isinstance(exc.args[0], str) and exc.args[3] < 0:
        text = _mask_message(exc.args[0], exc.args[2])
    elif len(exc.args) == 4 and isinstance(exc.args[0], str):
        text = _message(*exc.args)
    else:
        text = str(exc.args[0]) if len(exc.args) == 1 else ""
    match = _LOCATION.match(text)
    if not match or "\n" in text:
        return exc
    line = linecache.getline(match["file"], int(match["line"])).rstrip()
    if not line:
        return IndexError(text) if text != str(exc) else exc
    caret = " " * (int(match["col"]) - 1) + "^"
    return IndexError(f"{text}\n    {line}\n    {caret}")


# ---------------------------------------------------------------- plain Python

def checked(x, index, axis, where):
    """`index`, after checking that `x[..., index]` from axis `axis` stays in bounds."""
    if not isinstance(x, np.ndarray):
        return index
    parts = index if isinstance(index, tuple) else (index,)
    _check_parts(x, parts, axis + x.ndim if axis < 0 else axis, where)
    return index


def _check_parts(x, parts, axis, where):
    for k, part in enumerate(parts):
        if part is Ellipsis:
            axis = x.ndim - sum(p is not None for p in parts[k + 1:])
            continue
        if part is None or not 0 <= axis < x.ndim:
            continue
        _check_one(x, part, axis, where)
        axis += np.ndim(part) if _is_mask(part) else 1


def _is_mask(part) -> bool:
    return isinstance(part, (np.ndarray, np.bool_, bool)) and np.asarray(part).dtype == bool


def _check_one(x, part, axis, where):
    if isinstance(part, slice):
        return
    if _is_mask(part):
        covered = x.shape[axis:axis + np.ndim(part)]
        if np.shape(part) != covered and np.ndim(part) > 0:
            raise IndexError(_mask_message(where, axis))
        return
    n = x.shape[axis]
    values = np.asarray(part)
    if values.size and (values.min() < -n or values.max() >= n):
        bad = values.flat[np.argmax((values < -n) | (values >= n))]
        raise IndexError(_message(where, int(bad), axis, n))


def checked_item(x, index, where):
    """`x[index]` for an `x` computed in place (not a name), its index checked first."""
    return getitem_mask(x, checked(x, index, 0, where))


def checked_range(x, axis, start, stop, step, offset, where):
    """Check every `k + offset`, `k` in `range(start, stop, step)`, against `x.shape[axis]`;
    a failure names the first index out of bounds in the loop's order, as the loop would."""
    if not isinstance(x, np.ndarray) or axis >= x.ndim:
        return
    n = x.shape[axis]
    bad = first_out_of_bounds(start + offset, step, len(range(start, stop, step)), n)
    if bad is not None:
        raise IndexError(_message(where, bad, axis, n))


@register_jitable
def first_out_of_bounds(first, step, trips, n):
    """The first of `first, first + step, ...` (`trips` values) outside `-n <= i < n`, or
    None. The values move one way, so only an end can fail: the first value, or the
    first one to cross the bound the values move towards."""
    if trips <= 0:
        return None
    if first < -n or first >= n:
        return first
    last = first + (trips - 1) * step
    if last >= n:                                   # rising past n - 1
        return first + (n - first + step - 1) // step * step
    if last < -n:                                   # falling below -n
        return first + (first + n + 1 - step - 1) // -step * step
    return None


def checked_rec(x, index, axis, where, err, site):
    """`checked`, recording a failure into `err` as site `site` (see the module doc)."""
    return checked(x, index, axis, where)


def checked_item_rec(x, index, where, err, site):
    """`checked_item`, recording a failure into `err` as site `site`."""
    return checked_item(x, index, where)


def checked_range_rec(x, axis, start, stop, step, offset, where, err, site):
    """`checked_range`, recording a failure into `err` as site `site`."""
    return checked_range(x, axis, start, stop, step, offset, where)


def index_errors():
    """The record of a failed check in a `prange` loop: `site, index, axis, size`."""
    return np.full(4, -1, np.int64)


def trips_done(stop):
    """One flag per trip of a `prange(start, stop)` loop (indexed by the loop variable)."""
    return np.zeros(max(stop, 0), np.bool_)


def raise_recorded(err, wheres):
    """Raise the failure recorded in `err`, if any; `wheres` names the sites, one a line.
    A site past them is an `error_flags.site_number`, recorded by a called function."""
    sites = wheres.split("\n")
    if 0 <= err[0] < len(sites):
        raise IndexError(sites[err[0]], int(err[1]), int(err[2]), int(err[3]))
    if err[0] >= 0:
        raise IndexError(int(err[0]), int(err[1]), int(err[2]), int(err[3]))


def raise_flagged(flag) -> None:
    """Raise the located `IndexError` recorded in `flag`, an `error_flags` flag of a CUDA
    launch (a device or host array), if any."""
    record = flag.copy_to_host() if hasattr(flag, "copy_to_host") else np.asarray(flag)
    site, index, axis, size = (int(v) for v in record)
    if site < 0:
        return
    where = where_of(site) or "<unknown location>"
    raise with_source_line(IndexError(where, index, axis, size))


# ---------------------------------------------------------------- Numba

def _where(where_ty) -> str:
    if not isinstance(where_ty, types.StringLiteral):
        raise TypingError("checked: the location must be a string constant")
    return where_ty.literal_value


def _part_check(part_ty, ref: str, axis: int, k: int, scope: dict,
                record: bool = False) -> list[str]:
    """Source lines checking index part `ref` of type `part_ty` at `axis`.

    The comparisons are written out here, and a failure raises with constant or integer
    arguments only, so that the check inlines into the caller's loop: a call, or a message
    formatted in compiled code, costs several times the read it guards.
    """
    fail = f"raise IndexError(WHERE, i{k}, {axis}, n{k})"
    mask_fail = f"raise IndexError(MASK{k})"
    if record:      # the writes precede the raise that Numba drops in a prange loop
        fail = f"err[1] = i{k}; err[2] = {axis}; err[3] = n{k}; err[0] = site; " + fail
        mask_fail = f"err[1] = 0; err[2] = {axis}; err[3] = -1; err[0] = site; " + mask_fail
    if isinstance(part_ty, types.Integer):
        return [f"    n{k} = x.shape[{axis}]", f"    i{k} = {ref}",
                f"    if i{k} < -n{k} or i{k} >= n{k}:", f"        {fail}"]
    if isinstance(part_ty, types.Array) and isinstance(part_ty.dtype, types.Integer):
        return [f"    n{k} = x.shape[{axis}]", f"    for i{k} in {ref}.flat:",
                f"        if i{k} < -n{k} or i{k} >= n{k}:", f"            {fail}"]
    if isinstance(part_ty, types.Array) and isinstance(part_ty.dtype, types.Boolean):
        scope[f"MASK{k}"] = _mask_message(scope["WHERE"], axis)
        return [f"    for d{k} in range({part_ty.ndim}):",
                f"        if {ref}.shape[d{k}] != x.shape[{axis} + d{k}]:",
                f"            {mask_fail}"]
    return []


def _advance(part_ty) -> int:
    if isinstance(part_ty, (types.NoneType, types.Omitted)):
        return 0
    if isinstance(part_ty, types.Array) and isinstance(part_ty.dtype, types.Boolean):
        return part_ty.ndim
    return 1


@overload(checked, prefer_literal=True)
def _checked_nb(x, index, axis, where):
    return _checked_impl(x, index, axis, where, record=False)


@overload(checked_rec, prefer_literal=True)
def _checked_rec_nb(x, index, axis, where, err, site):
    return _checked_impl(x, index, axis, where, record=True)


def _checked_impl(x, index, axis, where, record: bool):
    params = "x, index, axis, where, err, site" if record else "x, index, axis, where"
    if not isinstance(x, types.Array):
        scope = {}
        exec(f"def impl({params}):\n    return index", scope)
        return scope["impl"]
    if not isinstance(axis, types.IntegerLiteral):
        raise TypingError("checked: the axis must be an integer constant")
    location = _where(where)
    is_tuple = isinstance(index, types.BaseTuple)
    parts = list(index.types) if is_tuple else [index]
    lines, at = [], axis.literal_value
    at += x.ndim if at < 0 else 0       # counted from the end: a part after an `...`
    scope = {"WHERE": location}
    for k, part_ty in enumerate(parts):
        if isinstance(part_ty, types.EllipsisType):
            at = x.ndim - sum(_advance(p) for p in parts[k + 1:])
            continue
        if 0 <= at < x.ndim:
            ref = f"index[{k}]" if is_tuple else "index"
            lines += _part_check(part_ty, ref, at, k, scope, record)
        at += _advance(part_ty)
    source = f"def impl({params}):\n" + "\n".join(lines + ["    return index"])
    exec(source, scope)
    return scope["impl"]


@overload(checked_range, inline="always", prefer_literal=True)
def _checked_range_nb(x, axis, start, stop, step, offset, where):
    if not isinstance(x, types.Array) or not isinstance(axis, types.IntegerLiteral) \
            or axis.literal_value >= x.ndim:
        return lambda x, axis, start, stop, step, offset, where: None
    location = _where(where)
    at = axis.literal_value

    def impl(x, axis, start, stop, step, offset, where):
        n = x.shape[at]
        bad = first_out_of_bounds(start + offset, step, len(range(start, stop, step)), n)
        if bad is not None:
            raise IndexError(location, bad, at, n)
    return impl


@overload(checked_item, inline="always", prefer_literal=True)
def _checked_item_nb(x, index, where):
    _where(where)
    return lambda x, index, where: getitem_mask(x, checked(x, index, 0, where))


@overload(checked_range_rec, inline="always", prefer_literal=True)
def _checked_range_rec_nb(x, axis, start, stop, step, offset, where, err, site):
    if not isinstance(x, types.Array) or not isinstance(axis, types.IntegerLiteral) \
            or axis.literal_value >= x.ndim:
        return lambda x, axis, start, stop, step, offset, where, err, site: None
    location = _where(where)
    at = axis.literal_value

    def impl(x, axis, start, stop, step, offset, where, err, site):
        n = x.shape[at]
        bad = first_out_of_bounds(start + offset, step, len(range(start, stop, step)), n)
        if bad is not None:
            err[1] = bad
            err[2] = at
            err[3] = n
            err[0] = site
            raise IndexError(location, bad, at, n)
    return impl


@overload(checked_item_rec, inline="always", prefer_literal=True)
def _checked_item_rec_nb(x, index, where, err, site):
    _where(where)
    return lambda x, index, where, err, site: getitem_mask(
        x, checked_rec(x, index, 0, where, err, site))


@overload(index_errors)
def _index_errors_nb():
    return lambda: np.full(4, -1, np.int64)


@overload(trips_done)
def _trips_done_nb(stop):
    return lambda stop: np.zeros(max(stop, 0), np.bool_)


@overload(raise_recorded, prefer_literal=True)
def _raise_recorded_nb(err, wheres):
    sites = _where(wheres).split("\n")
    lines = ["def impl(err, wheres):", "    site = err[0]"]
    for k in range(len(sites)):
        lines += [f"    if site == {k}:",
                  f"        raise IndexError(W{k}, err[1], err[2], err[3])"]
    lines += [f"    if site >= {len(sites)}:",     # a called function's site_number
              "        raise IndexError(site, err[1], err[2], err[3])"]
    scope = {f"W{k}": where for k, where in enumerate(sites)}
    exec("\n".join(lines), scope)
    return scope["impl"]
