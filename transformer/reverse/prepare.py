"""Normalize a function for reverse mode: one assignment per value where possible,
no self-referencing assignments, and loops carrying what their reversal needs.

Input: any Function. `prepare` runs `desugar`, `unroll.unroll_short_loops` (`for k in
range(3)` written out as three copies), `anf`, `controlflow.lower_exits`, then:

- an augmented assignment to a name that may share its array (`z = update_in_place(a, v)`,
  see desugar.py) becomes `z = v`, preceded by `check_not_shared(b, a, "b", "a")` for every
  other name `b` that may hold `a`'s array there: reverse mode keeps one value per name
  and writes no array in place through a name, which gives NumPy's values exactly unless
  the update would change another name's array (then the check raises); a name that
  may hold the array but is not surely bound there is refused;
- redefinitions inside one block are renamed (`d = a - b; d = d - c` becomes
  `d_1 = a - b; d = d_1 - c`), so the reverse sweep can recompute each value;
- an in-place accumulation, `scatter_add(b, i, v)` (the adjoint of an indexed read in a
  generated gradient) or `np.add.at(b, i, v)`, becomes the assignment
  `b = accumulated(b, i, v)`, so the flow into `b` is an ordinary value flow;
  `accumulated` still writes `b` in place, which the reverse pass accounts for (never
  recomputed; the reverse sweep may read such arrays only for their shape);
- a tuple-valued element-buffer call of a generated gradient (`t = push_items(b, n, v)`,
  `pop_items`) is split into one call per item (`tape_items.SPLIT`);
- an assignment reading its own target is split: `x = x * y` becomes
  `x_next = x * y; x = x_next` (an adjoint reads the old and the new value apart);
- an `if` test or a `range` start/step that the body reassigns is copied first
  (`cond_entry = cond`), because the reverse sweep reads it at the statement's entry;
- a `for` loop whose body assigns its index gets an index of its own, copied into the
  user's name at the top of the body (`separate_index`);
- each `for i in range(a, b, s)` is preceded by `i_last = range_last(a, b, s)` and, if it
  breaks, sets `i_last = i` before the break; its node carries `secant_reverse =
  (i_last, a, s)`;
- each `while` counts its trips (`while_count`), copied after the loop to the variable
  named by the node's `secant_trips`; that copy carries `secant_late_restore`.

Output invariant: ANF (see anf.py) plus the above; the lowering invariant of
controlflow.py still holds.
"""
from __future__ import annotations


import gast
import numpy as np

from .. import runtime, tape
from ..anf import anf
from ..controlflow import lower_exits
from ..desugar import desugar, view_sources
from ..errors import copy_hint
from ..function import Function, resolve
from ..names import Namer, assigned_names, name_counts
from ..nodes import copy_tree, walk
from ..rebind import split_rebound_names
from ..runtime import update_in_place
from ..spelling import label, user_names
from ..syntax import assign, call, const, located, name
from .unroll import unroll_short_loops


def prepare(fn: Function) -> Function:
    # a name rebound to another shape (`x = np.sum(x)`) is one variable per binding
    fn = lower_exits(anf(split_rebound_names(unroll_short_loops(desugar(fn)))))
    namer = Namer.for_function(fn)
    node = copy_tree(fn.node)
    env = dict(fn.env)
    _Unshare(fn, env, namer).run(node.body, fn.params)
    _effects_as_assignments(fn.replace(node=node, env=env), namer, node.body)
    if fn.chain:                        # derivative code, differentiated again
        _split_reused_names(namer, node, set(fn.params))
    _Prepare(namer, env, _store_counts(node)).block(node.body)
    return fn.replace(node=node, env=env)


def _effects_as_assignments(fn: Function, namer: Namer, stmts: list) -> None:
    """In every block: `scatter_add(b, i, v)` -> `b = accumulated(b, i, v)`, and a pair
    `t = push_items(...)` (or `pop_items`) -> `t_0 = items_pushed(...)`,
    `t_1 = items_end(...)`, its reads `t[0]`, `t[1]` then naming those."""
    from ..tape_items import SPLIT, accumulated
    for k in reversed(range(len(stmts))):
        stmt = stmts[k]
        for field in ("body", "orelse"):
            _effects_as_assignments(fn, namer, getattr(stmt, field, None) or [])
        value = getattr(stmt, "value", None)
        if not isinstance(value, gast.Call) or value.keywords:
            continue
        function = resolve(fn, value.func, None)
        if isinstance(stmt, gast.Expr) and _accumulates(function) and \
                len(value.args) == 3 and isinstance(value.args[0], gast.Name):
            helper = bind_helper(fn.env, namer, "accumulated", accumulated)
            stmts[k] = located(assign(value.args[0].id, call(name(helper), *value.args)),
                               stmt)
        elif isinstance(stmt, gast.Assign) and function in SPLIT and \
                isinstance(stmt.targets[0], gast.Name):
            stmts[k:k + 1] = _split_pair(fn, namer, stmt, SPLIT[function])


def _split_reused_names(namer: Namer, node, params: set) -> None:
    """A generated gradient re-runs statements of its primal in its reverse sweep under
    the same names (`d = pos[i] - pos[j]`, and the loop index `i`, in both loops). Where
    each assignment (or loop) binding a name is the only one in its block and every read
    of the name follows one of them in its block, each starts a value of its own:
    renamed, each has a single assignment and can be recomputed instead of recorded."""
    sites: dict = {}
    for block in _blocks(node.body):
        for k, stmt in enumerate(block):
            for var in _bound_name(stmt):
                sites.setdefault(var, []).append((block, k))
    reads: dict = {}
    for sub in walk(node):
        if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Load):
            reads[sub.id] = reads.get(sub.id, 0) + 1
    for var, defs in sites.items():
        if len(defs) < 2 or var in params:
            continue
        owned = [_owned_reads(var, block[k], block[k + 1:]) for block, k in defs]
        if any(o is None for o in owned) or sum(map(len, owned)) != reads.get(var, 0):
            continue
        for (block, k), loads in zip(defs[1:], owned[1:]):
            fresh = namer.fresh(var)
            stmt = block[k]
            (stmt.targets[0] if isinstance(stmt, gast.Assign) else stmt.target).id = fresh
            for load in loads:
                load.id = fresh


def _blocks(stmts):
    yield stmts
    for stmt in stmts:
        for field in ("body", "orelse"):
            yield from _blocks(getattr(stmt, field, None) or [])


def _owned_reads(var: str, binding, rest: list):
    """The reads of `var` that `binding` (an assignment or a loop) reaches: in the loop's
    body and in `rest`, the statements after it in its block, up to the next binding of
    `var` there. None if those assign `var` otherwise, or `binding` reads it."""
    cut = next((k for k, stmt in enumerate(rest) if var in _bound_name(stmt)), len(rest))
    region = (binding.body if isinstance(binding, gast.For) else []) + rest[:cut]
    source = binding.iter if isinstance(binding, gast.For) else binding.value
    later = gast.Module(body=region, type_ignores=[])
    if var in assigned_names(later) or var in tape.operand_names(source):
        return None
    return [n for n in walk(later) if isinstance(n, gast.Name) and n.id == var and
            isinstance(n.ctx, gast.Load)]


def _bound_name(stmt) -> tuple:
    target = stmt.targets[0] if isinstance(stmt, gast.Assign) else \
        getattr(stmt, "target", None) if isinstance(stmt, gast.For) else None
    return (target.id,) if isinstance(target, gast.Name) else ()


def _accumulates(function) -> bool:
    # a bound method: `np.add.at == np.add.at` holds, `is` does not
    return function is runtime.scatter_add or \
        (callable(function) and function == np.add.at)


def _split_pair(fn: Function, namer: Namer, stmt, parts) -> list:
    pair = stmt.targets[0].id
    out, names = [], []
    for part in parts:
        helper = bind_helper(fn.env, namer, part.__name__, part)
        names.append(namer.fresh(f"{pair}_{len(names)}"))
        args = [copy_tree(a) for a in stmt.value.args]
        if part is parts[1]:
            args = args[1:]                 # the length needs no buffer
        out.append(located(assign(names[-1], call(name(helper), *args)), stmt))
    for sub in walk(fn.node):
        if isinstance(sub, gast.Assign) and isinstance(sub.value, gast.Subscript) and \
                isinstance(sub.value.value, gast.Name) and sub.value.value.id == pair and \
                isinstance(sub.value.slice, gast.Constant):
            sub.value = name(names[sub.value.slice.value])
    return out


def _store_counts(node) -> dict:
    return name_counts(node, gast.Store)


class _Prepare:
    """Rename redefinitions, split self-assignments, add loop bookkeeping."""

    def __init__(self, namer: Namer, env: dict, stores: dict):
        self.namer, self.env, self.stores = namer, env, stores

    def helper(self, key: str, obj) -> str:
        return bind_helper(self.env, self.namer, key, obj)

    def block(self, stmts: list) -> None:
        self.rename_redefinitions(stmts)
        index = 0
        while index < len(stmts):
            stmt = stmts[index]
            new = self.statement(stmt)
            stmts[index:index + 1] = new
            index += len(new)

    def statement(self, stmt) -> list:
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
            target = stmt.targets[0].id
            if target in tape.operand_names(stmt.value):
                fresh = self.namer.fresh(target + "_next")
                return [located(assign(fresh, stmt.value), stmt),
                        located(assign(target, name(fresh)), stmt)]
            return [stmt]
        if isinstance(stmt, gast.If):
            self.block(stmt.body)
            self.block(stmt.orelse)
            return self.freeze(stmt, "test", stmt.body + stmt.orelse) + [stmt]
        if isinstance(stmt, gast.For):
            self.separate_index(stmt)
            self.block(stmt.body)
            frozen = []
            if len(stmt.iter.args) > 1:
                for k in (0, 2):
                    if k < len(stmt.iter.args):
                        frozen += self.freeze(stmt.iter.args, k, stmt.body)
            return frozen + self.instrument_for(stmt)
        if isinstance(stmt, gast.While):
            self.block(stmt.body)
            return self.instrument_while(stmt)
        return [stmt]

    def separate_index(self, loop) -> None:
        """`for k in range(n): ...; k = 0; ...` -> `for k_index in range(n): k = k_index;
        ...`: the reverse sweep runs its loop over the index again, so a body that also
        assigns the index would see the loop's value where it needs the assigned one (and
        the reverse restore the assigned one where it needs the loop's). Python's value of
        `k` after the loop (the body's last assignment) is kept."""
        index = loop.target.id
        if index not in assigned_names(gast.Module(body=loop.body, type_ignores=[])):
            return
        fresh = self.namer.fresh(index + "_index")
        loop.body.insert(0, located(assign(index, name(fresh)), loop))
        loop.target.id = fresh
        self.stores[fresh] = 1

    def rename_redefinitions(self, stmts: list) -> None:
        """`d = a - b; d = d - c` -> `d_1 = a - b; d = d_1 - c` when every assignment of
        `d` is a statement of this block: each value then has one assignment, so the
        reverse sweep can recompute it instead of recording it. The last keeps the name.
        """
        positions: dict = {}
        for k, stmt in enumerate(stmts):
            if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
                positions.setdefault(stmt.targets[0].id, []).append(k)
        for var, where in positions.items():
            if len(where) < 2 or self.stores.get(var) != len(where):
                continue
            for first, second in zip(where, where[1:]):
                fresh = self.namer.fresh(var)
                stmts[first].targets[0].id = fresh
                for stmt in stmts[first + 1:second]:
                    _rename_loads(stmt, var, fresh)
                _rename_loads(stmts[second].value, var, fresh)

    def freeze(self, holder, field, body) -> list:
        """Copy a test or bound the body reassigns: the reverse sweep reads it at entry."""
        atom = holder[field] if isinstance(holder, list) else getattr(holder, field)
        if not isinstance(atom, gast.Name) or \
                atom.id not in assigned_names(gast.Module(body=body, type_ignores=[])):
            return []
        fresh = self.namer.fresh(atom.id + "_entry")
        if isinstance(holder, list):
            holder[field] = name(fresh)
        else:
            setattr(holder, field, name(fresh))
        return [located(assign(fresh, name(atom.id)), atom)]

    def instrument_for(self, loop) -> list:
        """`i_last = range_last(a, b, s)` before; `i_last = i` where a break leaves."""
        args = list(loop.iter.args)
        start, step = (const(0), const(1)) if len(args) == 1 else \
            (args[0], args[2] if len(args) == 3 else const(1))
        stop = args[0] if len(args) == 1 else args[1]
        index = loop.target.id
        last = self.namer.fresh(index + "_last")
        prelude = located(assign(last, call(name(self.helper("range_last", tape.range_last)),
                                             copy_tree(start), copy_tree(stop),
                                             copy_tree(step))), loop)
        tail = loop.body[-1] if loop.body else None
        if isinstance(tail, gast.If) and isinstance(tail.body[-1], gast.Break):
            tail.body.insert(0, located(assign(last, name(index)), tail))
        loop.secant_reverse = (last, start, step)
        return [prelude, loop]

    def instrument_while(self, loop) -> list:
        """Count the trips: the reverse sweep runs the body's adjoint that many times."""
        count = self.namer.fresh("while_count")
        trips = self.namer.fresh("while_trips")
        loop.body.insert(0, located(assign(count, gast.BinOp(
            left=name(count), op=gast.Add(), right=const(1))), loop))
        after = located(assign(trips, name(count)), loop)
        after.secant_late_restore = True
        loop.secant_trips = trips
        return [located(assign(count, const(0)), loop), loop, after]


class _Unshare:
    """Rewrite `z = update_in_place(a, v)` as `z = v` behind alias checks (see above).

    Which names may hold the same array at each update is a forward dataflow over the
    structured body: a state is a set of name pairs; `u = w` (or an item or view of `w`)
    pairs `u` with `w` and with `w`'s partners, any other assignment of `u` unpairs it,
    branches join by union and loops iterate to a fixed point. Only partners the rest of
    the function may read (live after the update) could see NumPy's in-place write.
    """

    def __init__(self, fn: Function, env: dict, namer: Namer):
        self.fn, self.env, self.namer = fn, env, namer
        self.at: dict = {}          # id(update) -> pairs that may share an array there
        self.live: dict = {}        # id(update) -> names that may be read after it

    def run(self, body: list, params) -> None:
        self.flow(body, frozenset())
        if self.at:
            self.liveness(body, frozenset())
            self.block(body, set(params))

    def liveness(self, stmts: list, after: frozenset) -> frozenset:
        """The names `stmts` may read before assigning them, `after` read after them."""
        live = after
        for stmt in reversed(stmts):
            if isinstance(stmt, gast.If):
                live = self.liveness(stmt.body, live) | self.liveness(stmt.orelse, live) | \
                    _read_names(stmt.test)
            elif isinstance(stmt, (gast.For, gast.While)):
                head = _read_names(stmt.iter if isinstance(stmt, gast.For) else stmt.test)
                exit_ = live | head
                loop = None
                while loop != exit_:
                    loop = exit_
                    exit_ = loop | self.liveness(stmt.body, loop)
                live = exit_
            elif isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
                if id(stmt) in self.at:
                    self.live[id(stmt)] = self.live.get(id(stmt), frozenset()) | live
                live = (live - {stmt.targets[0].id}) | _read_names(stmt.value)
            else:
                live = live | _read_names(stmt)
        return live

    # ------------------------------------------------------------ may-share analysis
    def flow(self, stmts: list, pairs: frozenset) -> frozenset:
        for stmt in stmts:
            if isinstance(stmt, gast.If):
                pairs = self.flow(stmt.body, pairs) | self.flow(stmt.orelse, pairs)
            elif isinstance(stmt, (gast.For, gast.While)):
                if isinstance(stmt, gast.For):
                    pairs = _unpaired(pairs, stmt.target.id)
                entry = None
                while entry != pairs:
                    entry = pairs
                    pairs = entry | self.flow(stmt.body, entry)
            elif isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
                if self.update(stmt) is not None:
                    self.at[id(stmt)] = self.at.get(id(stmt), frozenset()) | pairs
                pairs = self.assigned(stmt.targets[0].id, stmt.value, pairs)
        return pairs

    def assigned(self, target: str, value, pairs: frozenset) -> frozenset:
        sources = view_sources(self.fn, value)
        partners = {k for source in sources for k in _partners(pairs, source)} | sources
        return _unpaired(pairs, target) | {frozenset((target, k)) for k in partners
                                            if k != target}

    def update(self, stmt):
        """(held name, new value) of `z = update_in_place(a, v)`, else None."""
        value = stmt.value
        if isinstance(value, gast.Call) and len(value.args) == 2 and \
                resolve(self.fn, value.func, None) is update_in_place and \
                isinstance(value.args[0], gast.Name):
            return value.args[0].id, value.args[1]
        return None

    # ------------------------------------------------------------ rewriting
    def block(self, stmts: list, defined: set) -> set:
        """Rewrite `stmts`; returns the names surely bound after them."""
        index = 0
        while index < len(stmts):
            new = self.statement(stmts[index], defined)
            stmts[index:index + 1] = new
            index += len(new)
        return defined

    def statement(self, stmt, defined: set) -> list:
        if isinstance(stmt, gast.If):
            body = self.block(stmt.body, set(defined))
            orelse = self.block(stmt.orelse, set(defined))
            defined |= body & orelse
        elif isinstance(stmt, (gast.For, gast.While)):
            inner = {stmt.target.id} if isinstance(stmt, gast.For) else set()
            self.block(stmt.body, defined | inner)
        elif isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
            checks = self.unshare(stmt, defined)
            defined.add(stmt.targets[0].id)
            return checks + [stmt]
        return [stmt]

    def unshare(self, stmt, defined: set) -> list:
        update = self.update(stmt)
        if update is None:
            return []
        held, stmt.value = update
        checks = []
        sharers = (_partners(self.at[id(stmt)], held) & self.live[id(stmt)]) - \
            {stmt.targets[0].id}
        for other in sorted(sharers):
            if other not in defined:
                raise self.fn.origin.error(
                    stmt, f"{other!r} may hold the array {held!r} names, which this "
                    "augmented assignment updates in place; reverse mode keeps one value "
                    "per name",
                    f"{copy_hint(held, other, either=True)}; or rebind ({held} = {held} + ...)")
            check = name(bind_helper(self.env, self.namer, "check_not_shared",
                                     tape.check_not_shared))
            names = user_names(self.fn)
            checks.append(located(gast.Expr(value=call(
                check, name(other), name(held), const(label(self.fn, other, names)),
                const(label(self.fn, held, names)), const(self.fn.origin.where(stmt)))), stmt))
        return checks


def _read_names(node) -> frozenset:
    return frozenset(n.id for n in walk(node) if isinstance(n, gast.Name) and
                     isinstance(n.ctx, gast.Load))


def _partners(pairs: frozenset, var: str) -> set:
    return {k for pair in pairs if var in pair for k in pair if k != var}


def _unpaired(pairs: frozenset, var: str) -> frozenset:
    return frozenset(pair for pair in pairs if var not in pair)


def _rename_loads(node, old: str, new: str) -> None:
    for sub in walk(node):
        if isinstance(sub, gast.Name) and sub.id == old and isinstance(sub.ctx, gast.Load):
            sub.id = new


def bind_helper(env: dict, namer: Namer, key: str, obj) -> str:
    """A name bound to `obj` in `env`: `key` itself unless it holds something else."""
    if env.get(key, obj) is obj and (key in env or key not in namer.taken):
        namer.reserve(key)
        env[key] = obj
        return key
    fresh = namer.fresh(key)
    env[fresh] = obj
    return fresh
