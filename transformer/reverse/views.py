"""Values the reverse sweep reads that are views of arrays written in place later.

`u = w[:-1]; w[1:] = u * x` binds `u` to a view of `w`; the write then changes `u`, and the
adjoint of `u * x` with respect to `x`, run in the reverse sweep, would read the changed
values. The forward sweep binds such a value to a copy taken where it is read
(`u = own_value(w[:-1])`), which keeps the primal's meaning when no primal read of `u` can
follow the write. When one can (the primal itself relies on `u` being a view), the
transformation is refused with a located error, unless the forward sweep already checks at
run time that `u` is not a view (`check_not_view`, see `_views_read_across_writes`).
"""
from __future__ import annotations

import gast

from codegen import emit

from .facts import _encloses, _may_overlap, _rebound_between


def view_copies(analysis, reverse_reads: set) -> set:
    """ids of the reads `v = y[i]` whose value the forward sweep must copy: the reverse
    sweep reads `v` (`reverse_reads`) and a write to `y` that may overlap `y[i]` may run
    after the read. Raises TransformError where a copy would change the primal."""
    checked = {v for names in analysis.view_checks.values() for v in names}
    found = set()
    for read in analysis.simple:
        target, value = read.targets[0], read.value
        if not (isinstance(target, gast.Name) and isinstance(value, gast.Subscript) and
                isinstance(value.value, gast.Name)) or target.id not in reverse_reads or \
                target.id in analysis.written:
            continue
        writes = [w for w in analysis.simple if _later_overlapping_write(analysis, read, w)]
        if not writes:
            continue
        var = target.id
        if _copy_keeps_primal(analysis, read, writes):
            found.add(id(read))
        elif var not in checked:
            base = value.value.id
            raise analysis.fn.origin.error(
                writes[0], f"{var!r} is a view of {base!r}, which this statement writes in "
                f"place while {var!r} is still used; reverse mode needs the values read",
                f"read a copy: write `{var} = {emit.expression_source(value)}.copy()`")
    return found


def _later_overlapping_write(analysis, read, write) -> bool:
    """Whether `write` changes the array `read` views, elements it may share, and may run
    after `read` (later in the body, or in a loop around both)."""
    if write is read:
        return False
    site = analysis._write_site(write)
    if site is None or site[0] != read.value.value.id:
        return False
    if not _may_overlap(read.value.slice, site[1]):
        return False
    return analysis.order[id(write)] > analysis.order[id(read)] or \
        bool(_shared_loops(analysis, read, write))


def _shared_loops(analysis, a, b) -> set:
    return {id(loop) for loop in analysis.loops_of.get(id(a), ())} & \
        {id(loop) for loop in analysis.loops_of.get(id(b), ())}


def _copy_keeps_primal(analysis, read, writes) -> bool:
    """Whether no primal load of the read's value can follow one of `writes` while the
    name still holds that value: then reading a copy computes the same primal."""
    var = read.targets[0].id
    at = analysis.order[id(read)]
    for load in analysis.loads.get(var, []):
        if load is read:
            continue
        order = analysis.order.get(id(load), len(analysis.order))   # the return: last
        for write in writes:
            wrote = analysis.order[id(write)]
            if _rebound_between(analysis, var, read, write, load):
                continue
            if at < wrote < order:
                return False
            around_read = {id(lp) for lp in analysis.loops_of.get(id(read), ())}
            shared = _shared_loops(analysis, load, write)
            # a write in an earlier trip reaches the load unless each trip binds the name
            # again first: the binding is in a block around the load, and before it
            if shared and (shared - around_read or order <= at or not _encloses(
                    analysis.chain_of[id(read)], analysis.chain_of.get(id(load), ()))):
                return False
    return True
