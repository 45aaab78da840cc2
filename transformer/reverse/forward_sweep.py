"""The forward sweep: the function's own statements, plus what the reverse sweep needs kept.

Input: a `Reads` stage (its tape plan). Output: `tape_setup()` and `forward_block(body)`,
the primal statements in their order, each followed by its tape record where the plan asks
(`create / push / bump` of a typed tape, reserved at its final size before an outermost
`for` whose trip count is known), the shape guards of accumulators read only for their
shape, `check_not_view` before an in-place write that may change a view read across it, a
copy (`own_value`) of such a view the reverse sweep reads, and the zeroing of adjoints of
names assigned only inside a branch. Every emitted statement is located at its source line.
"""
from __future__ import annotations


import gast

from .. import tape
from ..nodes import copy_tree
from ..spelling import label, user_names
from ..syntax import assign, call, const, located, name, store, subscript
from .adjoints import fwd_rule
from .reads import Reads


class ForwardSweep(Reads):
    """Emits the forward sweep."""

    def tape_setup(self) -> list:
        out = []
        for var in sorted(self.plan.taped):
            out.append(located(assign(self.counter(var, "tape")[1], const(0)), self.fn.node))
        for var in sorted(self.plan.saved_items):
            out.append(located(assign(self.counter(var, "items")[1], const(0)), self.fn.node))
        for var in sorted(self.plan.taped & set(self.fn.params)):
            out.extend(self.record(var, None))
        for var in sorted(self.guarded & set(self.fn.params)):
            out.extend(self.shape_guard(var, self.fn.node))
        for stmt in self.simple:           # looped custom_vjp calls: residual stacks
            if self.runs_fwd(stmt) and self.loops_of.get(id(stmt)):
                for stack in self.residual_stacks(stmt.targets[0].id,
                                                  self.prims[id(stmt)].key):
                    out.append(located(assign(stack, gast.List(elts=[], ctx=gast.Load())),
                                       self.fn.node))
        return out

    def forward_block(self, stmts) -> list:
        out = []
        for stmt in stmts:
            out.extend(self.forward_statement(stmt))
            if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and \
                    stmt.targets[0].id in self.branch_defined():
                out.extend(located(s, stmt) for s in self.zero_adjoints(stmt.targets[0].id))
        return out

    def forward_statement(self, stmt) -> list:
        if isinstance(stmt, gast.Assign):
            target = stmt.targets[0]
            guards = self.view_guards(stmt)
            if isinstance(target, gast.Subscript):
                saves = self.save_items(stmt) if target.value.id in self.plan.saved_items \
                    else []
                records = self.record(target.value.id, stmt) if id(stmt) in self.plan.writes \
                    else []
                return guards + saves + [copy_tree(stmt)] + records
            skipped = (target.id, id(stmt)) in self.plan.skipped
            records = self.record(target.id, stmt) if target.id in self.plan.taped and \
                not skipped else []
            primal = copy_tree(stmt)
            if self.runs_fwd(stmt):
                pair = self.fwd_result(target.id)
                fwd = self.helper(target.id + "_fwd_rule", fwd_rule(self.prims[id(stmt)].key))
                primal = [located(assign(pair, call(name(fwd), *[copy_tree(a) for a in
                                                                  stmt.value.args])), stmt),
                          located(assign(target.id, subscript(name(pair), const(0))), stmt)]
                stacks = self.residual_stacks(target.id, self.prims[id(stmt)].key) \
                    if self.loops_of.get(id(stmt)) else []
                for k, stack in enumerate(stacks):     # pair[1:]: residuals or saved values
                    push = call(gast.Attribute(value=name(stack), attr="append",
                                               ctx=gast.Load()),
                                subscript(name(pair), const(k + 1)))
                    primal.append(located(gast.Expr(value=push), stmt))
                return guards + primal + records + self.shape_guard(target.id, stmt) + \
                    self.summary_guard(target.id, stmt)
            if id(stmt) in self.view_copies:     # a view the reverse reads after a write
                primal = located(assign(target.id, call(name(self.helper(
                    "own_value", tape.own_value)), primal.value)), stmt)
            return guards + [primal] + records + \
                self.shape_guard(target.id, stmt) + \
                self.summary_guard(target.id, stmt)
        if isinstance(stmt, gast.If):
            return [located(gast.If(test=copy_tree(stmt.test),
                                    body=self.forward_block(stmt.body) or [gast.Pass()],
                                    orelse=self.forward_block(stmt.orelse)), stmt)]
        if isinstance(stmt, gast.For):
            reserve = self.reserve_before(stmt)
            loop = gast.For(target=copy_tree(stmt.target), iter=copy_tree(stmt.iter),
                            body=self.forward_block(stmt.body) or [gast.Pass()], orelse=[],
                            type_comment=None)
            records = [r for var in sorted(self.plan.after.get(id(stmt), ()))
                       for r in self.record(var, stmt)]
            return reserve + [located(loop, stmt)] + records
        if isinstance(stmt, gast.While):
            return [located(gast.While(test=copy_tree(stmt.test),
                                       body=self.forward_block(stmt.body) or [gast.Pass()],
                                       orelse=[]), stmt)]
        return [copy_tree(stmt)]

    def view_guards(self, stmt) -> list:
        """`check_not_view(v, y, 'v', 'y')` before an in-place write to `y` (see view_checks)."""
        if id(stmt) not in self.view_checks:
            return []
        base = self._write_site(stmt)[0]
        check = self.helper("check_not_view", tape.check_not_view)
        where = const(self.fn.origin.where(stmt))
        names = user_names(self.fn)
        return [located(gast.Expr(value=call(name(check), name(var), name(base),
                                             const(label(self.fn, var, names)),
                                             const(label(self.fn, base, names)), where)), stmt)
                for var in self.view_checks[id(stmt)]]

    def shape_guard(self, var: str, stmt) -> list:
        """Accumulators read only for their shape are not recorded: their first shape is
        kept, and each later assignment is checked against it."""
        if var not in self.guarded:
            return []
        reference = self.shape_name(var)
        if var in self.moved_guards and self.first_definition(var) is not stmt:
            return []                           # checked in the reverse sweep instead
        if self.first_definition(var) is stmt:
            return [located(assign(reference, call(name(self.helper(
                "shape_of", tape.shape_of)), name(var))), stmt)]
        return [located(gast.Expr(value=call(name(self.helper("check_shape", tape.check_shape)),
                                             name(var), name(reference),
                                             const(self.fn.origin.where(stmt)))), stmt)]

    def summary_guard(self, var: str, stmt) -> list:
        """Values of `var` not recorded (tape.summarize_loops) keep the shape of the one
        before the loop, which its record after the loop checks against its tape: so a
        shape read in the loop's reverse, which sees that record, gets the right shape."""
        if (var, id(stmt)) in self.plan.anchors:
            return [located(assign(self.shape_name(var), call(name(self.helper(
                "shape_of", tape.shape_of)), name(var))), stmt)]
        if (var, id(stmt)) in self.plan.skipped:             # an update in the loop
            return [located(gast.Expr(value=call(name(self.helper(
                "check_shape", tape.check_shape)), name(var), name(self.shape_name(var)),
                const(self.fn.origin.where(stmt)))), stmt)]
        return []

    def capacity(self, stmt):
        """Tape rows to reserve at the first record: the trip count when it is known."""
        loops = self.loops_of.get(id(stmt), ()) if stmt is not None else ()
        if len(loops) == 1 and isinstance(loops[0], gast.For) and \
                self.block_of[id(stmt)] == id(loops[0].body):
            return self.trip_count(loops[0])
        return const(1 if not loops else tape.MIN_CAPACITY)

    def trip_count(self, loop):
        args = [copy_tree(a) for a in loop.iter.args]
        if len(args) == 1:
            args = [const(0)] + args
        if len(args) == 2:
            args.append(const(1))
        return call(name(self.helper("trip_count", tape.trip_count)), *args)

    def record(self, var: str, stmt) -> list:
        tape_name, top = self.counter(var, "tape")
        maker = "float_tape" if var in self.plan.float_tapes else "exact_tape"
        create = gast.If(test=gast.Compare(left=name(top), ops=[gast.Eq()],
                                           comparators=[const(0)]),
                         body=[assign(tape_name, call(
                             name(self.helper(maker, getattr(tape, maker))), name(var),
                             self.capacity(stmt)))], orelse=[])
        origin = stmt if stmt is not None else self.fn.node
        push = assign(tape_name, call(name(self.helper("push", tape.push)), name(tape_name),
                                      name(top), name(var), const(self.fn.origin.where(origin))))
        bump = assign(top, gast.BinOp(left=name(top), op=gast.Add(), right=const(1)))
        return [located(s, origin) for s in (create, push, bump)]

    def reserve_before(self, loop) -> list:
        """Grow the tapes an outermost `for` loop will fill to their final size at once."""
        if self.loops_of[id(loop)]:
            return []
        out = []
        for var in sorted(self.plan.taped):
            sites = [d for d in self.defs[var] if isinstance(d, gast.Assign) and
                     (var, id(d)) not in self.plan.skipped] + \
                [s for s in self.simple if id(s) in self.plan.writes and
                 s.targets[0].value.id == var]
            inside = [d for d in sites + [s for s in loop.body if isinstance(s, gast.For)
                                          and var in self.plan.after.get(id(s), ())]
                      if self.block_of[id(d)] == id(loop.body)]
            before = [d for d in sites if self.block_of[id(d)] == self.block_of[id(loop)]
                      and self.order[id(d)] < self.order[id(loop)]] or \
                (var in self.fn.params and not self.loops_of[id(loop)])
            if inside and before:
                tape_name, top = self.counter(var, "tape")
                rows = gast.BinOp(left=name(top), op=gast.Add(), right=gast.BinOp(
                    left=const(len(inside)), op=gast.Mult(), right=self.trip_count(loop)))
                out.append(located(assign(tape_name, call(
                    name(self.helper("reserve", tape.reserve)), name(tape_name), rows)), loop))
        return out

    def save_items(self, stmt) -> list:
        target = stmt.targets[0]
        var = target.value.id
        buf, top = self.counter(var, "items")
        old = subscript(name(var), copy_tree(target.slice))
        create = gast.If(test=gast.Compare(left=name(top), ops=[gast.Eq()],
                                           comparators=[const(0)]),
                         body=[assign(buf, call(name(self.helper("items_buffer",
                                                                 tape.items_buffer)),
                                                name(var), const(tape.MIN_CAPACITY)))],
                         orelse=[])
        push = assign(gast.Tuple(elts=[store(buf), store(top)], ctx=gast.Store()),
                      call(name(self.helper("push_items", tape.push_items)), name(buf),
                           name(top), old))
        return [located(create, stmt), located(push, stmt)]
