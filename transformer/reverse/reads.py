"""What the reverse sweep reads, and the tape plan that follows from it.

Input: an `Adjoints` stage. Output (on the stage object): `value_reads` (primal names whose
values the adjoints, tests and loop bounds read), `guarded` (accumulators read only for
their shape: their first shape is kept and later assignments checked against it),
`moved_guards` (lean variant: those checks moved next to the adjoint that re-evaluates the
value), `plan` (the `tape.plan_tape` decision: which names are recorded, recomputed or
summarized after a loop), `view_copies` (reads the forward sweep must copy, `views.py`), and
the names of the tape and shape variables (`counter`, `shape_name`). Reading an array
accumulated in place for its values is refused with a located error.
"""
from __future__ import annotations


import gast
import numpy as np

from .. import runtime, tape
from ..function import resolve, resolve_in
from ..nodes import copy_tree, walk
from ..syntax import assign, call, const, name
from .adjoints import Adjoints
from .call_writes import refuse_call_writes
from .dce import pure_calls
from .facts import _names, _tape_makers
from .seeds import unit_cotangent
from .views import view_copies


class Reads(Adjoints):
    """Finds what the reverse sweep reads and plans the tape from it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.counters: dict = {}
        self.plan = tape.plan_tape(self.facts, self.needed(), set(self.env),
                                   self.promoted_names(), self.tuple_results())
        # an active variable holds floats once assigned, but its first value may be an
        # integer (a parameter given 1, a carry starting at 0): its tape holds floats
        self.plan.float_tapes |= self.plan.taped & set(self.active)
        for var, sites in sorted(self.moved_guards.items()):
            for site, expr in sites:
                self.adjoints[id(site)][:0] = self.shape_check(var, expr)
        self.plan.after, self.plan.skipped, self.plan.anchors = tape.summarize_loops(
            self.body, self.plan.taped, self.reverse_reads)
        self.plan.writes = tape.recorded_writes(self.facts, self.body, self.plan.taped,
                                                self.plan.after, self.plan.skipped)
        self.refuse_accumulator_reads()
        refuse_call_writes(self)
        self.view_copies = view_copies(self, self.value_reads | self.recomputed_reads())

    def reverse_reads(self, stmt) -> set:
        """Names whose values the reverse of `stmt` itself (not nested ones) reads: its
        adjoint, its re-run if recomputed, the test or bounds of a compound statement."""
        if isinstance(stmt, gast.Assign):
            found = _reads(self.adjoints.get(id(stmt), []), self.env)[0]
            target = stmt.targets[0]
            if isinstance(target, gast.Name) and target.id in self.plan.recomputed:
                found |= set(tape.operand_names(stmt.value))
            if isinstance(target, gast.Subscript):       # restore_items indexes again
                found |= set(_names([target.slice]))
            return found
        if isinstance(stmt, gast.If):
            return set(_names([stmt.test]))
        if isinstance(stmt, gast.For):
            last, start, step = stmt.secant_reverse
            return {last} | set(_names([start, step]))
        if isinstance(stmt, gast.While):
            return {stmt.secant_trips}
        return set(_names([stmt]))

    def tape_buffers(self) -> set:
        """Names only ever bound to a tape or element buffer (or a copy of one)."""
        makers = _tape_makers()
        found = {v for v in self.accumulators if self.defs.get(v)}
        changed = True
        while changed:
            changed = False
            for var in list(found):
                if not all(isinstance(d, gast.Assign) and (
                        isinstance(d.value, gast.Name) and d.value.id in found or
                        isinstance(d.value, gast.Call) and
                        resolve(self.fn, d.value.func, None) in makers)
                        for d in self.defs[var]):
                    found.discard(var)
                    changed = True
        return found

    def refuse_accumulator_reads(self) -> None:
        """The reverse sweep may read an accumulated array only for its shape: its values
        change in place and are not recorded."""
        read = (self.value_reads | self.recomputed_reads()) & self.accumulators
        if read:
            var = sorted(read)[0]
            raise self.fn.origin.error(
                self.defs[var][0] if self.defs.get(var) else self.fn.node,
                f"reverse mode would need the values of {var!r}, an array accumulated in "
                "place (np.add.at, or the gradient of an indexed read), which it does not "
                "record", f"use forward mode over it (jacfwd), or build {var!r} without "
                "in-place accumulation")

    def recomputed_reads(self) -> set:
        """Names recomputed in the reverse sweep and the names their recomputation reads."""
        return self.plan.recomputed | {n for v in self.plan.recomputed
                                       for n in tape.operand_names(self.defs[v][0].value)}

    # ------------------------------------------------------------ what the reverse reads
    def needed(self) -> set:
        """Primal names the reverse sweep reads; sets `self.guarded` (see shape_guards)."""
        primal = set(self.defs)
        values, shapes = set(), set(self.active)    # adjoint zeros read each active shape
        for stmts in self.adjoints.values():
            read_values, read_shapes = _reads(stmts, self.env)
            values |= read_values
            shapes |= read_shapes
        for _stmt, names in self._control_reads():
            values |= names
        self.reverse_value_reads = set(values)      # the env's arrays too (call_writes)
        values &= primal
        self.value_reads = values
        for var in [v for v in shapes if v in self.elements and self.shaped_by_items(v)]:
            shapes.discard(var)
            shapes |= set(self.element_items(var).values())
        # a tape of differentiated code is read only for its length, by the rules of its
        # helpers and by zeros: its final length serves every row, so it is not recorded
        shapes -= self.tape_buffers()
        shapes = (shapes & primal) - values
        multiple = {v for v in primal if len(self.defs[v]) > 1 or
                    (v in self.fn.params and self.defs[v])}
        self.guarded = {v for v in shapes & multiple if self.first_definition(v)}
        self.moved_guards = {}
        if self.lean:
            values |= self.lean_reads(shapes - values)
        fixed = {v for v in primal if tape.invariant(self.facts, v)} | self.guarded | \
            self.copied_into_guarded() | \
            (values & multiple) | {v for v in primal
                                   if all(isinstance(d, gast.For) for d in self.defs[v])}
        stable = tape.shape_stable(self.facts, fixed, self.env)
        return values | (shapes - fixed - stable)

    # ------------------------------------------------------------ a gradient without its
    # forward loops: when nothing the reverse sweep reads needs the forward loop's results,
    # the loop is dead (dce.py drops it). The lean variant makes that so where it can:
    # values read only for their shape are recomputed in the reverse sweep where they are
    # cheap to, and an accumulator's shape check moves next to its assignment's adjoint,
    # where the operands are at hand again, so the accumulator itself is read only for
    # its shape (weakly: its first value will do, the checks guarantee its shape).
    def lean_reads(self, shape_only: set) -> set:
        """Values the lean reverse sweep reads in addition; sets `self.moved_guards`."""
        extra = shape_only & tape.recomputable(self.facts, set(self.env))
        for var in sorted(self.guarded):
            sites = self.check_sites(var)
            if sites is not None:
                self.moved_guards[var] = sites
                extra |= {n for _, expr in sites for n in _names([expr])
                          if n != var and n in self.defs}
        return extra

    def check_sites(self, var: str):
        """[(statement, value)] whose adjoint can check each later assignment of `var`
        keeps its shape, by evaluating the value again; None where one cannot."""
        pure = pure_calls(self.env)
        sites = []
        for d in self.defs[var]:
            if d is self.first_definition(var):
                continue
            if not isinstance(d, gast.Assign):
                return None
            site = d
            if isinstance(d.value, gast.Name) and self.copy_source(d) is not None:
                site = self.copy_source(d)
            if not self.adjoints.get(id(site)) or \
                    any(isinstance(n, gast.Call) and not pure(n) or
                        isinstance(n, (gast.Dict, gast.List)) for n in walk(site.value)):
                return None
            sites.append((site, site.value))
        return sites

    def shape_check(self, var: str, expr) -> list:
        """`t = <expr>; check_shape(t, var_shape)`, `var` read in `expr` only weakly."""
        expr = copy_tree(expr)
        for node in walk(expr):
            if isinstance(node, gast.Name) and node.id == var:
                node.secant_weak = True
        checked = self.namer.fresh(var + "_checked")
        check = call(name(self.helper("check_shape", tape.check_shape)), name(checked),
                     name(self.shape_name(var)), const(self.fn.origin.where(expr)))
        return [assign(checked, expr), gast.Expr(value=check)]

    def mark_weak_reads(self, node) -> None:
        """Shape and float-type reads of guarded accumulators, where any of their values
        serves; and of values computed from them only for such reads (`out = 0.5 * e`
        read by the seed alone), whose assignments read their operands weakly in turn."""
        positions = {id(sub.args[k]) for sub in walk(node)
                     if isinstance(sub, gast.Call) and isinstance(sub.func, gast.Name)
                     for k in [_WEAK_ARGUMENTS.get(self.env.get(sub.func.id))]
                     if k is not None and k < len(sub.args) and
                     isinstance(sub.args[k], gast.Name)}
        weak = set(self.guarded)
        for stmt in reversed(node.body):
            if self._weak_definition(node, stmt, positions):
                stmt.secant_weak_definition = True
                weak.add(stmt.targets[0].id)
                positions |= {id(n) for n in walk(stmt.value) if isinstance(n, gast.Name)}
        for sub in walk(node):
            if isinstance(sub, gast.Name) and id(sub) in positions and sub.id in weak:
                sub.secant_weak = True

    def _weak_definition(self, node, stmt, positions: set) -> bool:
        """Whether top-level `t = <expr>`, assigned once, is read only in weak positions
        and `<expr>`'s shape and type follow from its operands'."""
        if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and
                _shape_follows_operands(stmt.value, self.env)):
            return False
        var = stmt.targets[0].id
        names = [n for n in walk(node) if isinstance(n, gast.Name) and n.id == var]
        return sum(not isinstance(n.ctx, gast.Load) for n in names) == 1 and \
            all(id(n) in positions for n in names if isinstance(n.ctx, gast.Load))

    def copied_into_guarded(self) -> set:
        """Names `t` copied into a guarded accumulator right after their assignment
        (`e_next = e + w; e = e_next`): the accumulator's check fixes their shape too."""
        found = set()
        for var in self.guarded:
            for d in self.defs[var]:
                if isinstance(d, gast.Assign) and isinstance(d.value, gast.Name) and \
                        self.copy_source(d) is not None:
                    found.add(d.value.id)
        return found

    def copy_source(self, copy_stmt):
        """The single assignment of the name `copy_stmt` copies, in the same block."""
        defs = self.defs.get(copy_stmt.value.id, [])
        if len(defs) == 1 and isinstance(defs[0], gast.Assign) and \
                self.block_of[id(defs[0])] == self.block_of[id(copy_stmt)] and \
                self.order[id(defs[0])] < self.order[id(copy_stmt)]:
            return defs[0]
        return None

    def first_definition(self, var: str):
        """The assignment that defines `var` before any other can run (None if unclear);
        the function entry for a parameter."""
        if var in self.fn.params:
            return self.fn.node
        defs = sorted(self.defs[var], key=lambda d: self.order[id(d)])
        first = defs[0]
        if isinstance(first, gast.Assign) and self.block_of[id(first)] == id(self.body):
            return first
        return None

    def _control_reads(self):
        for stmt in walk(gast.Module(body=self.body, type_ignores=[])):
            if isinstance(stmt, gast.If):
                yield id(stmt), set(_names([stmt.test])) & set(self.defs)
            elif isinstance(stmt, gast.For):
                last, start, step = stmt.secant_reverse
                yield id(stmt), ({last} | set(_names([start, step]))) & set(self.defs)
            elif isinstance(stmt, gast.While):
                yield id(stmt), {stmt.secant_trips}

    def promoted_names(self) -> set:
        """Names that start as an integer constant but may hold floats later: float
        tapes. Counters and indices (every assignment an integer) keep exact tapes."""
        return {var for var, defs in self.defs.items() if var not in self.integers and any(
            isinstance(d, gast.Assign) and isinstance(d.value, gast.Constant) and
            isinstance(d.value.value, int) for d in defs)}

    def counter(self, var: str, kind: str) -> tuple[str, str]:
        if (var, kind) not in self.counters:
            base = var if kind == "tape" else var + "_old"
            self.counters[(var, kind)] = (self.namer.fresh(base + "_tape"),
                                          self.namer.fresh(base + "_top"))
        return self.counters[(var, kind)]

    def shape_name(self, var: str) -> str:
        if (var, "shape") not in self.counters:
            self.counters[(var, "shape")] = (self.namer.fresh(var + "_shape"), None)
        return self.counters[(var, "shape")][0]


# arguments that only carry a float type or a shape: reading a variable there does not
# make the reverse sweep need its value at that point (tape.py decides whether its shape
# needs anything)
_DTYPE_ARGUMENTS = {runtime.cast_like: 1}


_SHAPE_ARGUMENTS = {runtime.unbroadcast: 1, runtime.zeros_like: 0,
                    runtime.broadcast_reduced: 1, runtime.reshape_like: 1}


def _shape_follows_operands(value, env) -> bool:
    """Elementwise arithmetic or a shape-keeping call of atoms (`0.5 * e`, `np.sum(e)`)."""
    def atom(node):
        return isinstance(node, (gast.Name, gast.Constant))
    if isinstance(value, gast.BinOp) and not isinstance(value.op, gast.MatMult):
        return atom(value.left) and atom(value.right)
    if isinstance(value, gast.UnaryOp):
        return atom(value.operand)
    if isinstance(value, gast.Call) and not value.keywords:
        func = resolve_in(env, value.func, None)
        return (isinstance(func, np.ufunc) or any(func is f for f in tape.SHAPE_KEEPING)) \
            and all(atom(a) for a in value.args)
    return False


# the argument a helper reads only for its shape and float type
_WEAK_ARGUMENTS = {runtime.unbroadcast: 1, runtime.zeros_like: 0, runtime.cast_like: 1,
                   runtime.broadcast_reduced: 1, runtime.reshape_like: 1}


def shape_argument(helper, position: int) -> None:
    """Declare that `helper` reads argument `position` only for its shape."""
    _SHAPE_ARGUMENTS[helper] = position
    _WEAK_ARGUMENTS[helper] = position


def _reads(stmts, env) -> tuple[set, set]:
    """(names whose values the statements read, names read only for their shape)."""
    skipped, shape_reads = set(), {}
    for stmt in stmts:
        for sub in walk(stmt):
            if isinstance(sub, gast.Call) and isinstance(sub.func, gast.Name):
                helper = env.get(sub.func.id)
                for table, shape in ((_DTYPE_ARGUMENTS, False), (_SHAPE_ARGUMENTS, True)):
                    position = table.get(helper)
                    if position is not None and position < len(sub.args) and \
                            isinstance(sub.args[position], gast.Name):
                        skipped.add(id(sub.args[position]))
                        if shape:
                            shape_reads[id(sub.args[position])] = sub.args[position].id
    loads = [sub for stmt in stmts for sub in walk(stmt)
             if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Load)]
    return {n.id for n in loads if id(n) not in skipped}, set(shape_reads.values())


_WEAK_ARGUMENTS[unit_cotangent] = 0
