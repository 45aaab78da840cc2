"""To-be-recorded analysis and the typed tapes the reverse sweep reads.

The reverse sweep runs the adjoint of each statement in reverse order. Just before the
adjoint of statement `S`, every primal variable the adjoint reads must hold the value it
had right after `S` ran in the forward sweep. `plan_tape` decides, per variable, how:

- *invariant*: assigned at most once and not inside a loop (or a parameter never
  reassigned): the forward value is still there; nothing to do.
- *recomputed*: assigned once, inside a loop, from invariant values, loop indices, other
  recomputed values, recorded values not reassigned after it in its block, and arrays
  never written in place, and read only inside the block of its assignment, after it (a
  read before it sees the previous trip's value). The reverse of that block starts by
  re-running the assignment, so the value is never stored (the pair loop of a
  Lennard-Jones energy pushes nothing).
- *taped*: everything else the reverse reads. Each assignment records the new value on
  the variable's tape; after the statement's adjoint the value is popped and the variable
  restored to the previous entry. Tapes are typed NumPy arrays, created at the first
  record with the capacity the enclosing `for` loop's trip count gives (so a recurrence
  `h = tanh(W @ h)` over `range(T)` fills one preallocated (T, n) array) and doubled when
  a `while` loop outgrows them.
  A taped accumulator updated in a `for` loop whose reverse never reads its value (`r2 +=
  dk * dk`: the adjoint of `+` reads only shapes) is recorded once, after the loop, and not
  at the updates nor at its assignment just before the loop (`summarize_loops`).
- arrays written in place (`y[i] = v`) whose contents the reverse reads: each write first
  records the overwritten elements in a flat buffer; the reverse writes them back.
  A write to a taped name is also recorded on its tape, like an assignment
  (`recorded_writes`): restoring the name at the reverse of its next assignment must give
  the value *after* the write (`w[0] = x; w = w * w` in a loop: the adjoint of `w * w`
  needs `w` with the write), not the entry of the assignment before the write.

Only variables the reverse sweep reads are considered at all (the *needed* set), so a
value that is overwritten but never needed costs nothing. A variable read only for its
shape (`unbroadcast(g, x)`, `zeros_like(x)`) is needed only when its shape may change
(`shape_stable`); an accumulator read that way keeps its first shape, checked by
`check_shape` at each later assignment (or, where reverse.py moves the check, at that
assignment's adjoint), instead of being recorded.

The runtime helpers below run as plain Python and, through `numba.extending.overload`,
inside compiled code.
"""
from __future__ import annotations

import dataclasses

import gast
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from . import runtime
from .errors import copy_hint

# ---------------------------------------------------------------- analysis


@dataclasses.dataclass
class TapePlan:
    """What the reverse sweep must do to see each needed value."""

    recomputed: set          # names re-assigned at the start of their block's reverse
    taped: set               # names recorded on a tape at every assignment
    saved_items: set         # arrays whose overwritten elements are recorded
    float_tapes: set         # taped names whose tape holds floats (ints promoted)
    after: dict = dataclasses.field(default_factory=dict)   # id(For) -> names recorded
                                                            # once, after the loop
    skipped: set = dataclasses.field(default_factory=set)   # (name, id(Assign)) not
                                                            # recorded (see summarize)
    anchors: set = dataclasses.field(default_factory=set)   # (name, id(Assign)) whose
                                                            # shape the skipped ones keep
    writes: set = dataclasses.field(default_factory=set)    # id(`y[i] = v`) recorded
                                                            # like an assignment


@dataclasses.dataclass
class Facts:
    """What the analysis needs to know about the function (collected by reverse.py)."""

    defs: dict               # name -> list of defining statements (Assign or For)
    loads: dict              # name -> list of statements reading it
    loops_of: dict           # id(stmt) -> tuple of enclosing loop nodes, outermost first
    block_of: dict           # id(stmt) -> id of the statement list holding it
    inside: dict             # id(block) -> set of ids of statements nested in it
    params: set
    written: set             # arrays written in place
    pure: callable           # stmt -> whether re-running it is free of side effects
    order: dict = dataclasses.field(default_factory=dict)   # id(stmt) -> position in body
    carried: set = dataclasses.field(default_factory=set)  # read before assigned in a
                                                           # loop body: the previous trip's


def operand_names(value) -> list[str]:
    return [n.id for n in gast.walk(value) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Load)]


def invariant(facts: Facts, name: str) -> bool:
    defs = facts.defs.get(name, [])
    if not defs:
        return True
    return len(defs) == 1 and name not in facts.params and \
        isinstance(defs[0], gast.Assign) and not facts.loops_of[id(defs[0])]


def _loop_index(facts: Facts, name: str, stmt) -> bool:
    defs = facts.defs.get(name, [])
    return len(defs) == 1 and isinstance(defs[0], gast.For) and \
        any(loop is defs[0] for loop in facts.loops_of[id(stmt)])


def recomputable(facts: Facts, globals_: set, recorded: set = frozenset()) -> set:
    """Names whose single in-loop assignment can be re-run in the reverse sweep; it may
    read names of `recorded`, which are restored from their records (see `_settled`)."""
    found: set = set()
    changed = True
    while changed:
        changed = False
        for name, defs in facts.defs.items():
            if name in found or name in facts.params or len(defs) != 1 or \
                    name in facts.carried:
                continue
            stmt = defs[0]
            if not isinstance(stmt, gast.Assign) or not facts.loops_of[id(stmt)]:
                continue
            if not facts.pure(stmt) or not _reads_local_to(facts, name, stmt) or \
                    getattr(stmt, "secant_late_restore", False):
                continue
            if all(n in globals_ or n in found or invariant(facts, n) or
                   _loop_index(facts, n, stmt) or
                   (n in recorded and _settled(facts, n, stmt))
                   for n in operand_names(stmt.value)) and \
                    not _reads_written_array(facts, stmt):
                found.add(name)
                changed = True
    return found


def _settled(facts: Facts, name: str, stmt) -> bool:
    """Whether `name`, assigned (and so recorded) elsewhere, holds at the start of the
    reverse of `stmt`'s block the value `stmt` read: the reverse sweep has undone every
    later assignment by then, so none may follow `stmt` in its own block
    (`r2` after its accumulation loop, read by `s6 = (sigma2 / r2) ** 3`)."""
    defs = facts.defs.get(name, [])
    if not facts.order or not defs or not all(isinstance(d, gast.Assign) for d in defs) or \
            any(_reads_written_array(facts, d) for d in defs):   # a view sees later writes
        return False
    block, at = facts.inside[facts.block_of[id(stmt)]], facts.order[id(stmt)]
    return not any(id(d) in block and facts.order[id(d)] > at for d in defs)


def _reads_local_to(facts: Facts, name: str, stmt) -> bool:
    inside = facts.inside[facts.block_of[id(stmt)]]
    return all(id(use) in inside for use in facts.loads.get(name, []))


def _reads_written_array(facts: Facts, stmt) -> bool:
    """Whether `stmt` reads the contents of an array written in place: re-run at the start
    of its block's reverse, it would see the writes made after it (`v = np.sin(a)`
    before `a[i] = ...`). Its shape cannot change."""
    value = stmt.value
    if isinstance(value, gast.Attribute):
        return False
    return any(n in facts.written for n in operand_names(value))


def plan_tape(facts: Facts, needed: set, globals_: set, float_names: set) -> TapePlan:
    """Decide recompute / tape / save-items for every name in `needed` (closed here)."""
    # names the reverse reads anyway are recorded unless recomputed: reading them costs
    # nothing more; those recorded as floats (promoted ints) cannot stand for their ints
    candidates = recomputable(facts, globals_, needed - float_names)
    needed = set(needed)
    work = list(needed)
    while work:
        name = work.pop()
        if name in candidates:
            for operand in operand_names(facts.defs[name][0].value):
                if operand not in needed and operand not in globals_:
                    needed.add(operand)
                    work.append(operand)
    recomputed = needed & candidates
    taped = {n for n in needed - recomputed - globals_
             if not invariant(facts, n) and not all(isinstance(d, gast.For)
                                                     for d in facts.defs.get(n, []))}
    saved = needed & facts.written
    return TapePlan(recomputed, taped, saved, taped & float_names)


def summarize_loops(body: list, taped: set, reads) -> tuple[dict, set, set]:
    """({id(loop): names recorded after it}, {(name, id(assignment)) left unrecorded},
    {(name, id(d0))}: the assignments whose shape the updates in their loop keep).

    The reverse sweep sees a taped name hold the value of its latest *recorded* assignment
    (each record is popped after its adjoint, restoring the entry below). So a value read
    is right as long as the latest assignment before the reading point is recorded. For a
    `for` loop `L` assigning `v`, preceded in its block by an assignment `d0 = v = ...`
    (the nearest one), with no reverse read of `v`'s value (`reads(stmt)`: the names the
    reverse of `stmt` itself reads, recomputations included) anywhere in `L`, the
    updates in `L` are never read: `v` is recorded once after `L` and restored after
    `L`'s reverse. `d0` is not recorded either when neither its adjoint nor the reverse
    of the statements between it and `L` reads `v`. Shapes are still read, so reverse.py
    checks each skipped value keeps `d0`'s shape.
    """
    after, skipped, anchors, covered = {}, set(), set(), set()

    def visit(block):
        for index, stmt in enumerate(block):
            if isinstance(stmt, gast.For):
                for var in sorted(taped & _assigned(stmt)):
                    if (var, id(stmt)) not in covered:
                        _summarize(block, index, var, reads, after, skipped, covered)
                        anchors.update((v, id(d)) for v, d in _firsts(block, index, var,
                                                                      after))
            for inner in _blocks(stmt):
                visit(inner)
    visit(body)
    return after, skipped, anchors


def recorded_writes(facts: Facts, body: list, taped: set, after: dict,
                    skipped: set) -> set:
    """ids of the in-place writes `y[...] = v` recorded on `y`'s tape (`TapePlan.writes`).

    A taped name is restored, at the reverse of an assignment, to the latest record before
    it; a write between that record and the assignment would be missing from the restored
    value. So a write to a taped name that a recorded assignment of the name (or a record
    after a loop) can follow - later in the body, or anywhere in a loop around the write -
    records the written array, and its reverse pops that record, restoring the value before
    the write. Not recorded: a write no record follows (no restore loads an entry across
    it), or one inside a `for` loop whose updates of the name `summarize_loops` leaves
    unrecorded (no reverse read of the value happens there; the record after the loop
    holds the writes)."""
    found: set = set()

    def visit(block, summarized):
        for stmt in block:
            if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Subscript):
                base = stmt.targets[0].value
                if isinstance(base, gast.Name) and base.id in taped and \
                        base.id not in summarized and \
                        _record_follows(facts, stmt, base.id, after, skipped):
                    found.add(id(stmt))
            inner = summarized | after.get(id(stmt), set()) \
                if isinstance(stmt, gast.For) else summarized
            for nested in _blocks(stmt):
                visit(nested, inner)
    visit(body, frozenset())
    return found


def _record_follows(facts: Facts, write, var: str, after: dict, skipped: set) -> bool:
    sites = [d for d in facts.defs.get(var, []) if isinstance(d, gast.Assign) and
             (var, id(d)) not in skipped]
    sites += [loop for loops in facts.loops_of.values() for loop in loops
              if isinstance(loop, gast.For) and var in after.get(id(loop), ())]
    at = facts.order[id(write)]
    return any(facts.order[id(s)] > at or any(id(s) in facts.inside[id(loop.body)]
                                              for loop in facts.loops_of[id(write)])
               for s in sites)


def _firsts(block, index, var, after):
    if var in after.get(id(block[index]), ()):
        yield var, block[_nearest(block, index, var)]


def _nearest(block, index, var):
    return next((i for i in range(index - 1, -1, -1) if var in _assigned(block[i])), None)


def _summarize(block, index, var, reads, after, skipped, covered) -> None:
    loop = block[index]
    defs = [s for s in gast.walk(loop) if isinstance(s, (gast.Assign, gast.For))
            and var in _targets(s)]
    if any(not isinstance(d, gast.Assign) for d in defs) or var in _region_reads([loop], reads):
        return
    start = _nearest(block, index, var)
    if start is None:
        return
    first = block[start]
    if not isinstance(first, gast.Assign):
        return
    after.setdefault(id(loop), set()).add(var)
    skipped.update((var, id(d)) for d in defs)
    if not getattr(first, "secant_late_restore", False) and var not in reads(first) and \
            var not in _region_reads(block[start + 1:index], reads):
        skipped.add((var, id(first)))
    covered.update((var, id(s)) for s in gast.walk(loop) if isinstance(s, gast.For))


def _targets(stmt) -> set:
    if isinstance(stmt, (gast.Assign, gast.For)):
        target = stmt.targets[0] if isinstance(stmt, gast.Assign) else stmt.target
        return {target.id} if isinstance(target, gast.Name) else set()
    return set()


def _assigned(stmt) -> set:
    return {n for s in gast.walk(stmt) if isinstance(s, gast.stmt) for n in _targets(s)}


def _region_reads(stmts, reads) -> set:
    return {n for stmt in stmts for s in gast.walk(stmt) if isinstance(s, gast.stmt)
            for n in reads(s)}


def _blocks(stmt) -> list:
    if isinstance(stmt, gast.If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, (gast.For, gast.While)):
        return [stmt.body]
    return []


def integer_names(facts: Facts, env: dict) -> set:
    """Names every assignment of which gives an integer or a bool: counters, indices,
    flags. Their tapes keep the exact type; a name that starts as `0` and may later hold
    a float (`s = 0; s = s + x`) gets a float tape instead (see `TapePlan.float_tapes`).

    Optimistic: every assigned name starts as an integer and loses it at an assignment
    that may give anything else, until nothing changes (so `i = 0; i = i + 2` stays one).
    """
    ints = {n for n in facts.defs if n not in facts.params}
    changed = True
    while changed:
        changed = False
        for name_ in sorted(ints):
            if not all(isinstance(d, gast.For) and _integer_range(d, env) or
                       isinstance(d, gast.Assign) and _integer(d.value, ints, env)
                       for d in facts.defs[name_]):
                ints.discard(name_)
                changed = True
    return ints


_INTEGER_OPS = (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)
# calls whose result is an integer whatever their arguments (trip_count and range_last
# join below where they are defined; helper_rules adds positions in element buffers)
INTEGER_RESULTS: list = [len, int, np.argmax, np.argmin]


def _integer(value, ints: set, env: dict) -> bool:
    if isinstance(value, gast.Constant):
        return isinstance(value.value, int)
    if isinstance(value, gast.Name):
        return value.id in ints
    if isinstance(value, (gast.Compare, gast.BoolOp)) or \
            isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.Not):
        return True
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.USub, gast.UAdd)):
        return _integer(value.operand, ints, env)
    if isinstance(value, gast.BinOp) and isinstance(value.op, _INTEGER_OPS):
        return _integer(value.left, ints, env) and _integer(value.right, ints, env)
    if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Attribute):
        return value.value.attr == "shape"             # x.shape[0]
    if isinstance(value, gast.Attribute):
        return value.attr in ("ndim", "size")
    if isinstance(value, gast.Call) and not value.keywords:
        func = resolve_in(env, value.func)
        if any(func is f for f in INTEGER_RESULTS):
            return True
        return any(func is f for f in (min, max, abs)) and \
            all(_integer(a, ints, env) for a in value.args)
    return False


def _integer_range(loop, env: dict) -> bool:
    return isinstance(loop.iter, gast.Call) and resolve_in(env, loop.iter.func) is range


def shape_stable(facts: Facts, anchors: set, env: dict) -> set:
    """Single-assignment names whose shape is the same every time their loop assigns them.

    Such a name read only for its shape (`unbroadcast(g, x)`, `zeros_like(x)`) needs no
    record: whatever value it holds has the right shape. `anchors` are names whose shape
    cannot change (invariant, or guarded by `check_shape`, or held on a typed tape).
    Shapes are followed through elementwise arithmetic, ufuncs, `math`, full reductions,
    matrix products and indexing with loop indices; slicing and other calls are unknown.
    """
    stable = set(anchors)
    changed = True
    while changed:
        changed = False
        for name, defs in facts.defs.items():
            if name in stable or len(defs) != 1 or not isinstance(defs[0], gast.Assign):
                continue
            if _keeps_shape(defs[0].value, stable, facts, env):
                stable.add(name)
                changed = True
    return stable - set(anchors)


# helpers of derivative code whose result is shaped like one argument: helper -> its
# position (helper_rules adds `accumulated(b, i, v)`, `b` after an accumulation)
SHAPE_FROM: dict = {runtime.unbroadcast: 1, runtime.broadcast_reduced: 1,
                    runtime.reshape_like: 1, runtime.zeros_like: 0}
SHAPE_KEEPING = (np.sum, np.mean, np.max, np.min, np.prod, np.dot, np.matmul, np.round,
                  np.around, np.clip, np.where, np.copy, abs, max, min, float)


def _keeps_shape(value, stable: set, facts: Facts, env: dict) -> bool:
    def ok(atom):
        return isinstance(atom, gast.Constant) or (isinstance(atom, gast.Name) and
                                                   atom.id in stable)
    if isinstance(value, (gast.Name, gast.Constant)):
        return ok(value)
    if isinstance(value, gast.BinOp):
        return ok(value.left) and ok(value.right)
    if isinstance(value, gast.UnaryOp):
        return ok(value.operand)
    if isinstance(value, (gast.Compare, gast.Attribute)):
        return True
    if isinstance(value, gast.Subscript):
        index = value.slice.elts if isinstance(value.slice, gast.Tuple) else [value.slice]
        return ok(value.value) and all(
            isinstance(i, gast.Constant) or (isinstance(i, gast.Name) and all(
                isinstance(d, gast.For) for d in facts.defs.get(i.id, [None])))
            for i in index)
    if isinstance(value, gast.Call) and not value.keywords:
        func = resolve_in(env, value.func)
        position = SHAPE_FROM.get(func) if callable(func) else None
        if position is not None:
            return position < len(value.args) and ok(value.args[position])
        known = isinstance(func, np.ufunc) or getattr(func, "__module__", None) == "math" \
            or any(func is f for f in SHAPE_KEEPING)
        return known and all(ok(a) for a in value.args)
    return False


def resolve_in(env, func):
    if isinstance(func, gast.Name):
        return env.get(func.id)
    if isinstance(func, gast.Attribute):
        base = resolve_in(env, func.value)
        return getattr(base, func.attr, None) if base is not None else None
    return None


# ---------------------------------------------------------------- runtime: shape guards


def shape_of(value):
    """The shape of an array, `()` for a scalar."""
    return np.shape(value)


def check_shape(value, shape):
    """Raise when an accumulator's shape drifts from its first assignment's."""
    if np.shape(value) != shape:
        raise ValueError(f"a variable changed shape from {shape} to {np.shape(value)} between "
                         "assignments; reverse mode needs one shape per variable (start an "
                         "array accumulator with np.zeros of its final shape)")


@overload(shape_of)
def _shape_of_nb(value):
    if isinstance(value, types.Array):
        return lambda value: value.shape
    return lambda value: ()


@overload(check_shape)
def _check_shape_nb(value, shape):
    if isinstance(value, types.Array):
        def impl(value, shape):
            if value.shape != shape:
                raise ValueError("a variable changed shape between assignments")
        return impl
    return lambda value, shape: None


def own_value(value):
    """`value` itself, or a copy of it when it is an array (it may be a view that a later
    in-place write changes; see reverse_views)."""
    return np.copy(value) if isinstance(value, np.ndarray) else value


@overload(own_value)
def _own_value_nb(value):
    if isinstance(value, types.Array):
        return lambda value: np.copy(value)
    return lambda value: value


def check_not_view(value, array, label, source):
    """Raise when `value` (named `label`), read from `array` (named `source`) before an
    in-place write to it and used after, is a view the write changes: its adjoint assumes
    the value read."""
    if isinstance(value, np.ndarray) and np.shares_memory(value, array):
        raise ValueError(f"{label!r} is a view into {source!r}, written in place while "
                         f"{label!r} is still used; reverse mode needs a copy: "
                         f"{copy_hint(label, source)}")


@overload(check_not_view)
def _check_not_view_nb(value, array, label, source):
    if not isinstance(value, types.Array):
        return lambda value, array, label, source: None

    def impl(value, array, label, source):
        start = array.ctypes.data
        if start <= value.ctypes.data < start + array.size * array.itemsize:
            raise ValueError("a view into an array written in place is still used; "
                             "reverse mode needs a copy (.copy())")
    return impl


def check_not_shared(other, array, label, source):
    """Raise when `other` (named `label`) holds memory of `array` (named `source`), which
    an augmented assignment updates in place: reverse mode rebinds `source` instead, so
    `other` would not change."""
    if isinstance(other, np.ndarray) and isinstance(array, np.ndarray) and \
            np.shares_memory(other, array):
        raise ValueError(f"{label!r} shares its array with {source!r}, updated in place "
                         f"(+=, -=, ...); reverse mode needs a copy: "
                         f"{copy_hint(source, label, either=True)}")


@overload(check_not_shared)
def _check_not_shared_nb(other, array, label, source):
    if not (isinstance(other, types.Array) and isinstance(array, types.Array)):
        return lambda other, array, label, source: None

    def impl(other, array, label, source):
        a, b = other.ctypes.data, array.ctypes.data
        if a < b + array.size * array.itemsize and b < a + other.size * other.itemsize:
            raise ValueError("an array updated in place (+=, -=, ...) is shared with "
                             "another name; reverse mode needs a copy (.copy())")
    return impl


# ---------------------------------------------------------------- runtime: value tapes

MIN_CAPACITY = 16


def float_tape(value, capacity):
    """An empty tape for values like `value`; integers are promoted to float64."""
    arr = np.asarray(value)
    dtype = arr.dtype if np.issubdtype(arr.dtype, np.floating) else np.dtype(np.float64)
    return np.empty((max(capacity, 1),) + arr.shape, dtype)


def exact_tape(value, capacity):
    """An empty tape for values like `value`, keeping their exact type (indices, flags)."""
    arr = np.asarray(value)
    return np.empty((max(capacity, 1),) + arr.shape, arr.dtype)


def push(tape, n, value):
    """`tape` with `value` stored at position `n` (a larger copy when it is full)."""
    if np.shape(value) != tape.shape[1:]:
        raise ValueError(f"a recorded variable changed shape from {tape.shape[1:]} to "
                         f"{np.shape(value)} between assignments; reverse mode records it on "
                         "a typed tape, so give it one shape from its first assignment "
                         "(e.g. start an array accumulator with np.zeros)")
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
            return lambda value, capacity: np.empty((max(capacity, 1),) + value.shape, dtype)
        return lambda value, capacity: np.empty(max(capacity, 1), dtype)
    return typer


overload(float_tape)(_tape_overload(True))
overload(exact_tape)(_tape_overload(False))


@overload(push)
def _push_nb(tape, n, value):
    if isinstance(value, types.Array):
        def rows(tape, n, value):
            if value.shape != tape.shape[1:]:
                raise ValueError("a recorded variable changed shape between assignments; "
                                 "reverse mode records it on a typed tape, so give it one "
                                 "shape from its first assignment")
            if n == tape.shape[0]:
                tape = _grown(tape)
            _copy_flat(tape[n], value)
            return tape
        return rows

    def scalars(tape, n, value):
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
    return lambda array, capacity: np.empty(max(capacity, MIN_CAPACITY), dtype)


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
    if step > 0:
        return max(0, (stop - start + step - 1) // step)
    return max(0, (start - stop - step - 1) // (-step))


@register_jitable
def range_last(start, stop, step):
    """The last value `range(start, stop, step)` takes (start - step when it is empty)."""
    return start + (trip_count(start, stop, step) - 1) * step


INTEGER_RESULTS += [trip_count, range_last]
