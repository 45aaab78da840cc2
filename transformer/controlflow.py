"""Lower early `return`, `break` and `continue` into flags, for the reverse sweep.

The adjoint of a loop body must undo exactly the statements that ran, so the exits are
made explicit. Input: A-normal form (`anf.py`). Output invariant, on top of ANF:

- the only `return` is the last statement of the function body;
- no `continue`;
- `break` appears only as the last statement of a loop body, in the form
  `if stop: break` where `stop` is a flag set earlier in that body;
- code after an `if` whose branches all exit is dead and dropped;
- every other statement that ran after an exit in the source is guarded by
  `if live:` (per loop iteration) or `if running:` (per call), so statements that run
  are exactly those the source ran.

A function without early exits comes back unchanged. Flags are plain booleans, assigned
with constants (`stop` as `not live`, which is True); the returned value goes through
one variable (`retval`).
"""
from __future__ import annotations

import dataclasses

import gast

from .function import Function
from .names import Namer
from .nodes import copy_tree, walk
from .syntax import assign, const, located, name


@dataclasses.dataclass
class _Loop:
    live: str
    stop: str
    uses_stop: bool = False
    has_return: bool = False


def lower_exits(fn: Function) -> Function:
    if not _has_early_exit(fn.node):
        return fn
    node = copy_tree(fn.node)
    lowering = _Lowering(Namer.for_function(fn), tuple_arity(node))
    body, _ = lowering.block(node.body, None)
    if lowering.returns:
        first = node.body[0]
        body = [located(assign(lowering.running, const(True)), first)] + body
        body.append(located(gast.Return(value=lowering.returned()), node.body[-1]))
    node.body = body
    return fn.replace(node=node)


def _has_early_exit(node) -> bool:
    for sub in walk(node):
        if isinstance(sub, (gast.Break, gast.Continue)):
            return True
    returns = [s for s in walk(node) if isinstance(s, gast.Return)]
    return len(returns) > 1 or (returns and node.body[-1] is not returns[0])


def _always_exits(stmts) -> bool:
    """Whether running `stmts` always ends in a return, break or continue (so the code
    after them is dead and is dropped: typing it could only fail, as `return x` of
    another type after an if/else that returns in both branches does in Numba)."""
    for stmt in stmts:
        if isinstance(stmt, (gast.Return, gast.Break, gast.Continue)):
            return True
        if isinstance(stmt, gast.If) and _always_exits(stmt.body) and \
                _always_exits(stmt.orelse):
            return True
    return False


def _tuple_literals(node) -> dict:
    """The tuples returned, by id of the `return` -> its items: a tuple literal, or a name
    assigned one by the statement just before (ANF writes `result = (a, b); return result`:
    nothing runs in between that could rebind `a` or `b`)."""
    found = {}
    for sub in walk(node):
        for block in (getattr(sub, f, None) for f in ("body", "orelse", "finalbody")):
            if not isinstance(block, list):
                continue
            for index, ret in enumerate(block):
                if not isinstance(ret, gast.Return):
                    continue
                value, before = ret.value, block[index - 1] if index else None
                if isinstance(value, gast.Name) and isinstance(before, gast.Assign) and \
                        len(before.targets) == 1 and isinstance(before.targets[0], gast.Name) \
                        and before.targets[0].id == value.id:
                    value = before.value
                if isinstance(value, gast.Tuple) and \
                        not any(isinstance(e, gast.Starred) for e in value.elts):
                    found[id(ret)] = value.elts
    return found


def tuple_arity(node) -> tuple[int | None, dict]:
    """(n, items) when every `return` returns a tuple of n items: each item then goes
    through its own variable, so the result stays a tuple that the reverse pass follows
    item by item (a helper's `return i + 1, x` in two branches); else (None, {})."""
    returns = [s for s in walk(node) if isinstance(s, gast.Return)]
    items = _tuple_literals(node)
    sizes = {len(items[id(r)]) if id(r) in items else None for r in returns}
    if len(sizes) != 1 or None in sizes:
        return None, {}
    return sizes.pop(), items


class _Lowering:
    def __init__(self, namer: Namer, arity: tuple = (None, {})):
        self.namer = namer
        self.running = namer.fresh("running")
        self.retval = namer.fresh("retval")
        self.items = [namer.fresh(f"retval_{k}") for k in range(arity[0] or 0)]
        self.returned_items = arity[1]
        self.returns = False

    def returned(self):
        if not self.items:
            return name(self.retval)
        return gast.Tuple(elts=[name(v) for v in self.items], ctx=gast.Load())

    def assign_returned(self, stmt) -> list:
        if not self.items:
            return [assign(self.retval, stmt.value)]
        elts = self.returned_items[id(stmt)]
        return [assign(v, copy_tree(elt)) for v, elt in zip(self.items, elts)]

    def block(self, stmts, loop: _Loop | None):
        """(lowered statements, whether they may exit early)."""
        out: list = []
        for index, stmt in enumerate(stmts):
            rest = stmts[index + 1:]
            if isinstance(stmt, (gast.Return, gast.Break, gast.Continue)):
                out.extend(located(s, stmt) for s in self.exit(stmt, loop))
                return out, True
            if isinstance(stmt, gast.If):
                body, exits = self.block(stmt.body, loop)
                orelse, exits_else = self.block(stmt.orelse, loop)
                out.append(gast.If(test=stmt.test, body=body or [gast.Pass()], orelse=orelse))
                located(out[-1], stmt)
                if _always_exits(stmt.body) and _always_exits(stmt.orelse):
                    return out, True          # what follows never runs: no code for it
                if exits or exits_else:
                    out.extend(self.guarded(rest, loop, stmt, []))
                    return out, True
                continue
            if isinstance(stmt, (gast.For, gast.While)):
                inner = self.loop(stmt, out)
                if inner.has_return:
                    if loop is not None:
                        loop.has_return = True
                    otherwise = self.break_stmts(loop) if loop else []
                    out.extend(self.guarded(rest, loop, stmt, otherwise, self.running))
                    return out, True
                continue
            out.append(stmt)
        return out, False

    def exit(self, stmt, loop):
        if isinstance(stmt, gast.Return):
            self.returns = True
            stmts = self.assign_returned(stmt) + [assign(self.running, const(False))]
            if loop is not None:
                loop.has_return = True
                stmts += self.break_stmts(loop)
            return stmts
        if loop is None:
            return [stmt]
        if isinstance(stmt, gast.Break):
            return self.break_stmts(loop)
        return [assign(loop.live, const(False))]

    def break_stmts(self, loop: _Loop):
        # `stop = not live`, not `stop = True`: Numba folds `if stop: break` after a
        # constant, and then refuses a name the loop body assigns and later code reads
        # (jit(grad) of `for ...: s = ...; break`: "Unsupported assignment ... Undefined")
        loop.uses_stop = True
        return [assign(loop.live, const(False)),
                assign(loop.stop, gast.UnaryOp(op=gast.Not(), operand=name(loop.live)))]

    def guarded(self, rest, loop, origin, otherwise, flag=None):
        lowered, _ = self.block(rest, loop)
        flag = flag or (loop.live if loop else self.running)
        if not lowered and not otherwise:
            return []
        guard = gast.If(test=name(flag), body=lowered or [gast.Pass()], orelse=otherwise)
        return [located(guard, origin)]

    def loop(self, stmt, out) -> _Loop:
        inner = _Loop(self.namer.fresh("live"), self.namer.fresh("stop"))
        body, exits = self.block(stmt.body, inner)
        if not exits:
            stmt.body = body
            out.append(stmt)
            return inner
        body = [located(assign(inner.live, const(True)), stmt)] + body
        if inner.uses_stop:
            out.append(located(assign(inner.stop, const(False)), stmt))
            body.append(located(gast.If(test=name(inner.stop), body=[gast.Break()],
                                        orelse=[]), stmt))
        stmt.body = body
        out.append(stmt)
        return inner
