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
`check_shape` at each later assignment (or, where reverse/reads.py moves the check, at that
assignment's adjoint), instead of being recorded.

The runtime helpers the generated code calls (shape guards, typed tapes, element buffers,
loop bounds) live in `runtime/tapes.py`; this module re-exports them, so passes and rules
name them `tape.<name>`.
"""
from __future__ import annotations

import dataclasses

import gast
import numpy as np

from . import runtime
from .function import resolve_in
from .nodes import walk
from .runtime.tapes import (  # noqa: F401  (re-exported: passes name them tape.<name>)
    MIN_CAPACITY, check_not_shared, check_not_view, check_shape, exact_tape, float_tape,
    items_buffer, own_value, pop_items, push, push_items, range_last, reserve, shape_of,
    trip_count,
)

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
    """What the analysis needs to know about the function (collected by reverse/facts.py)."""

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
    return [n.id for n in walk(value) if isinstance(n, gast.Name)
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


def plan_tape(facts: Facts, needed: set, globals_: set, float_names: set,
              tuples: set = frozenset()) -> TapePlan:
    """Decide recompute / tape / save-items for every name in `needed` (closed here).
    `tuples`: names holding a tuple (a user function's result read item by item), which
    a typed tape cannot hold: an item read from one is recorded, not recomputed."""
    # names the reverse reads anyway are recorded unless recomputed: reading them costs
    # nothing more; those recorded as floats (promoted ints) cannot stand for their ints
    candidates = recomputable(facts, globals_, needed - float_names - set(tuples))
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
    of the statements between it and `L` reads `v`. Shapes are still read, so the reverse pass
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
    defs = [s for s in walk(loop) if isinstance(s, (gast.Assign, gast.For))
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
    covered.update((var, id(s)) for s in walk(loop) if isinstance(s, gast.For))


def _targets(stmt) -> set:
    if isinstance(stmt, (gast.Assign, gast.For)):
        target = stmt.targets[0] if isinstance(stmt, gast.Assign) else stmt.target
        return {target.id} if isinstance(target, gast.Name) else set()
    return set()


def _assigned(stmt) -> set:
    return {n for s in walk(stmt) if isinstance(s, gast.stmt) for n in _targets(s)}


def _region_reads(stmts, reads) -> set:
    return {n for stmt in stmts for s in walk(stmt) if isinstance(s, gast.stmt)
            for n in reads(s)}


def _blocks(stmt) -> list:
    if isinstance(stmt, gast.If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, (gast.For, gast.While)):
        return [stmt.body]
    return []


_INTEGER_OPS = (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)
# calls whose result is an integer whatever their arguments (trip_count and range_last
# join below where they are defined; helper_rules adds positions in element buffers)
INTEGER_RESULTS: list = [len, int, np.argmax, np.argmin]


def integer_value(value, ints: set, env: dict) -> bool:
    """Whether expression `value` gives an integer or a bool, the names in `ints` being
    integers: constants, comparisons, integer arithmetic, `x.shape[k]`, `len`, ... (the
    syntactic part of `reverse.int_calls.integer_names`)."""
    if isinstance(value, gast.Constant):
        return isinstance(value.value, int)
    if isinstance(value, gast.Name):
        return value.id in ints
    if isinstance(value, (gast.Compare, gast.BoolOp)) or \
            isinstance(value, gast.UnaryOp) and isinstance(value.op, gast.Not):
        return True
    if isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.USub, gast.UAdd)):
        return integer_value(value.operand, ints, env)
    if isinstance(value, gast.BinOp) and isinstance(value.op, _INTEGER_OPS):
        return integer_value(value.left, ints, env) and integer_value(value.right, ints, env)
    if isinstance(value, gast.Subscript) and isinstance(value.value, gast.Attribute):
        return value.value.attr == "shape"             # x.shape[0]
    if isinstance(value, gast.Attribute):
        return value.attr in ("ndim", "size")
    if isinstance(value, gast.Call) and not value.keywords:
        func = resolve_in(env, value.func, None)
        if any(func is f for f in INTEGER_RESULTS):
            return True
        return any(func is f for f in (min, max, abs)) and \
            all(integer_value(a, ints, env) for a in value.args)
    return False


def integer_range(loop, env: dict) -> bool:
    """Whether `for` statement `loop` runs over a `range` (its index an integer)."""
    return isinstance(loop.iter, gast.Call) and resolve_in(env, loop.iter.func, None) is range


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
        func = resolve_in(env, value.func, None)
        position = SHAPE_FROM.get(func) if callable(func) else None
        if position is not None:
            return position < len(value.args) and ok(value.args[position])
        known = isinstance(func, np.ufunc) or getattr(func, "__module__", None) == "math" \
            or any(func is f for f in SHAPE_KEEPING)
        return known and all(ok(a) for a in value.args)
    return False


INTEGER_RESULTS += [trip_count, range_last]
