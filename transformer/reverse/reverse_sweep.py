"""The reverse sweep: every statement's adjoint, last statement first, and the return.

Input: a `ForwardSweep` stage. Output: `reverse_block(body, top=True)`, the adjoint
statements of each block in reverse order (a `# grad of: <source line>` comment on each
group), values the plan recomputes re-run at the top of their block, recorded values popped
back from their tapes after their statement's adjoint, loops run backwards (`for` over the
reversed range, `while` over its counted trips), adjoints zeroed in their home block and
seeded from the output (`unit_cotangent`, or the vjp's cotangent parameters); and
`final_return()`, the gradients (dict or tuple for a container parameter) shaped by mode.
"""
from __future__ import annotations


import gast
import numpy as np

from codegen import emit

from .. import runtime, tape
from ..nan_checks import ADJOINT
from ..nodes import copy_tree, walk
from ..syntax import assign, call, const, located, name, store, subscript
from .classify import GRAD, VALUE_AND_GRAD, VJP
from .forward_sweep import ForwardSweep
from .seeds import float_zeros, unit_cotangent


class ReverseSweep(ForwardSweep):
    """Emits the reverse sweep and the final return."""

    # positions of the vjp's cotangent parameters its reverse sweep writes into in place:
    # seeded with a copy (`reverse_function` sets it when the first build writes into them)
    copied_cotangents: frozenset = frozenset()

    # ------------------------------------------------------------ emission: reverse
    def reverse_block(self, stmts, top: bool = False) -> list:
        body = []
        comment = [None]
        for stmt in reversed(stmts):
            body.extend(self.reverse_statement(stmt, comment))
        if not body and not top:
            return []
        prefix = [copy_tree(s) for s in stmts if isinstance(s, gast.Assign) and
                  isinstance(s.targets[0], gast.Name) and s.targets[0].id in
                  self.plan.recomputed]
        inits = self.inits(id(stmts), top)
        if top:
            seeds = self.seeds()
            inits += seeds
            if seeds and body and emit.comment_of(body[0]) == emit.comment_of(seeds[0]):
                emit.annotate(body[0], "")      # the seed's comment above says it
        return prefix + inits + body

    def reverse_statement(self, stmt, comment) -> list:
        if isinstance(stmt, gast.Assign):
            out = [copy_tree(s) for s in self.adjoints[id(stmt)]]
            text = self.fn.origin.source_line(getattr(stmt, "lineno", None))
            if out and text and text.strip() != comment[0]:
                comment[0] = text.strip()
                emit.annotate(out[0], "grad of: " + comment[0])
            target = stmt.targets[0]
            if isinstance(target, gast.Subscript):
                if target.value.id in self.plan.saved_items:
                    out += self.restore_items(stmt)
                if id(stmt) in self.plan.writes:
                    out += self.restore(target.value.id)
            else:
                out += self.reset(target.id, stmt)
                if target.id in self.plan.taped and \
                        (target.id, id(stmt)) not in self.plan.skipped and \
                        not getattr(stmt, "secant_late_restore", False):
                    out += self.restore(target.id)
            for s in out:       # debug_nans reports these as the reverse sweep's
                setattr(s, ADJOINT, True)
            return [located(s, stmt) for s in out]
        if isinstance(stmt, gast.If):
            body, orelse = self.reverse_block(stmt.body), self.reverse_block(stmt.orelse)
            if not body and not orelse:
                return []
            comment[0] = None
            return [located(gast.If(test=copy_tree(stmt.test), body=body or [gast.Pass()],
                                    orelse=orelse), stmt)]
        if isinstance(stmt, gast.For):
            restores = [located(s, stmt) for var in sorted(self.plan.after.get(id(stmt), ()))
                        for s in self.restore(var)]
            return self.reverse_for(stmt, comment) + restores
        if isinstance(stmt, gast.While):
            return self.reverse_while(stmt, comment)
        return []

    def reverse_for(self, loop, comment) -> list:
        body = self.reverse_block(loop.body)
        if not body:
            return []
        comment[0] = None
        last, start, step = loop.secant_reverse
        if isinstance(start, gast.Constant) and isinstance(step, gast.Constant):
            stop = const(start.value - step.value)
        else:
            stop = gast.BinOp(left=copy_tree(start), op=gast.Sub(),
                              right=copy_tree(step))
        back = const(-step.value) if isinstance(step, gast.Constant) else \
            gast.UnaryOp(op=gast.USub(), operand=copy_tree(step))
        header = call(name(self.helper("range", range)), name(last), stop, back)
        rev = gast.For(target=copy_tree(loop.target), iter=header, body=body, orelse=[],
                       type_comment=None)
        return [located(rev, loop)]

    def reverse_while(self, loop, comment) -> list:
        body = self.reverse_block(loop.body)
        trips = loop.secant_trips
        out = []
        if body:
            comment[0] = None
            index = self.namer.fresh("trip")
            out.append(located(gast.For(target=store(index), iter=call(
                name(self.helper("range", range)), name(trips)), body=body, orelse=[],
                type_comment=None), loop))
        if trips in self.plan.taped:
            out += [located(s, loop) for s in self.restore(trips)]
        return out

    def restore(self, var: str) -> list:
        tape_name, top = self.counter(var, "tape")
        value = subscript(name(tape_name), gast.BinOp(left=name(top), op=gast.Sub(),
                                                       right=const(1)))
        if var in self.written:
            value = call(name(self.helper("copy_array", np.copy)), value)
        pop = assign(top, gast.BinOp(left=name(top), op=gast.Sub(), right=const(1)))
        back = gast.If(test=gast.Compare(left=name(top), ops=[gast.Gt()],
                                         comparators=[const(0)]),
                       body=[assign(var, value)], orelse=[])
        return [pop, back]

    def restore_items(self, stmt) -> list:
        target = stmt.targets[0]
        var = target.value.id
        buf, top = self.counter(var, "items")
        old = self.namer.fresh(var + "_old")
        pop = assign(gast.Tuple(elts=[store(old), store(top)], ctx=gast.Store()),
                     call(name(self.helper("pop_items", tape.pop_items)), name(buf), name(top),
                          subscript(name(var), copy_tree(target.slice))))
        write = assign(subscript(name(var), copy_tree(target.slice), gast.Store()),
                       name(old))
        return [pop, write]

    def inits(self, block_id, top) -> list:
        out = []
        first = {v: min((self.order.get(id(d), -1) for d in self.defs.get(v, [])),
                        default=-1) for v in self.active}
        for var in sorted((v for v, b in self.home_blocks().items() if b == block_id),
                          key=lambda v: (first[v], v)):
            if self.rule_result(name(var)) is not None or var in self.branch_defined():
                continue                  # its items carry the adjoints, or it is zeroed
                                          # where assigned
            if var in self.wrt and top and var not in self.elements:
                check = self.helper("float_zeros", float_zeros)
                out.append(assign(self.adjoint[var], call(name(check), name(var),
                                                          self.seed_label(var))))
            else:
                out.extend(self.zero_adjoints(var, by_items=True))
        return out

    def param_gradient(self, var: str):
        """The returned gradient of parameter `var`: a dict (or tuple) for a container."""
        if self.call_result(name(var)):
            keys = self.container_keys(var)
            zeros = self.helper("zeros_like", runtime.zeros_like)
            items = [name(self.elements[var][k]) if k in self.elements.get(var, {}) else
                     call(name(zeros), subscript(name(var), const(k))) for k in keys]
            if all(isinstance(k, str) for k in keys):
                return gast.Dict(keys=[const(k) for k in keys], values=items)
            if sorted(keys) == list(range(len(keys))):
                return gast.Tuple(elts=[items[keys.index(k)] for k in range(len(keys))],
                                  ctx=gast.Load())
            raise self.fn.origin.error(self.fn.node, f"the gradient of container argument "
                                       f"{var!r} needs every item read with one kind of key",
                                       "read all items as p[0], p[1], ... or p['a'], ...")
        if var in self.active:
            return name(self.adjoint[var])
        return call(name(self.helper("float_zeros", float_zeros)), name(var),
                    self.seed_label(var))

    def seed_label(self, var: str):
        """`float_zeros`' label: the parameter's name, which a refusal of an integer argument
        names; None in a vjp, whose callers may hand it an int (`reverse.float_zeros`) -
        a user's own vjp refuses one at the API boundary first (`input_dtypes`)."""
        return const(None if self.mode == VJP else var)

    def seeds(self) -> list:
        out = []
        atoms = self.out_elements if self.out_elements is not None else [self.out_atom]
        self.cotangent_params = []
        for k, atom in enumerate(atoms):
            if self.mode == VJP:
                base = "b_" + atom.id if isinstance(atom, gast.Name) else f"b_out{k}"
                cot = self.namer.fresh(base)
                self.cotangent_params.append(cot)
                seed = name(cot)
                if k in self.copied_cotangents:   # accumulated into in place: the
                    seed = call(name(self.helper("copy_array", np.copy)), seed)  # caller's stays
            else:
                seed = call(name(self.helper("unit_cotangent", unit_cotangent)),
                            copy_tree(atom))
            if isinstance(atom, gast.Name) and atom.id in self.active:
                out.append(self.accumulate(atom.id, seed))
        line = self.seed_line() if out else None
        if line:        # a refusal of the seed (a non-scalar output) is located there
            emit.annotate(out[0], "grad of: " + line)
        return out

    def seed_line(self) -> str | None:
        """The text of the function's one `return` line (else its `def` line), if known."""
        returns = [n for n in walk(self.fn.node) if isinstance(n, gast.Return)
                   and getattr(n, "lineno", None)]
        node = returns[0] if len(returns) == 1 else self.fn.node
        return self.fn.origin.statement_text(getattr(node, "lineno", None))

    def keep_returned_values(self) -> list:
        """Copies of the returned value and aux taken at the end of the forward sweep."""
        kept = []
        if self.mode == VALUE_AND_GRAD and isinstance(self.out_atom, gast.Name):
            value = self.namer.fresh(f"{self.out_atom.id}_value")
            kept.append(assign(store(value), self.out_atom))
            self.out_atom = name(value)
        if self.has_aux and isinstance(self.aux, gast.Name):
            aux = self.namer.fresh(f"{self.aux.id}_aux")
            kept.append(assign(store(aux), self.aux))
            self.aux = name(aux)
        return kept

    def final_return(self) -> gast.Return:
        grads = [self.param_gradient(v) for v in self.wrt]
        if self.mode == VJP:
            return gast.Return(value=gast.Tuple(elts=grads, ctx=gast.Load()))
        value = grads[0] if len(grads) == 1 and not self.tuple_grads else \
            gast.Tuple(elts=grads, ctx=gast.Load())
        if self.has_aux:
            aux = copy_tree(self.aux)
            if self.mode == GRAD:
                return gast.Return(value=gast.Tuple(elts=[value, aux], ctx=gast.Load()))
            out = gast.Tuple(elts=[copy_tree(self.out_atom), aux], ctx=gast.Load())
            return gast.Return(value=gast.Tuple(elts=[out, value], ctx=gast.Load()))
        if self.mode == GRAD:
            return gast.Return(value=value)
        return gast.Return(value=gast.Tuple(elts=[copy_tree(self.out_atom), value],
                                            ctx=gast.Load()))
