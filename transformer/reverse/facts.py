"""Facts about the body of a prepared function, the first stage of the reverse pass.

Input: a Function normalized by `prepare.prepare` (ANF, exits lowered to flags, loops
instrumented with `secant_reverse` / `secant_trips`), ending with a `return`.
Output (on the stage object): for every statement its order, block, enclosing loops and
block chain; for every name its definitions and the statements that load it; the arrays
written in place (`written`, aliases closed over), the in-place accumulators, the views read
across a write (`view_checks`), and the `tape.Facts` the tape planner reads. It refuses
aliasing it cannot give one adjoint per name, with a located error.
"""
from __future__ import annotations

import gast
import numpy as np

from .. import tape
from ..desugar import view_sources
from ..errors import TransformError, copy_hint
from ..function import Function, resolve
from ..names import Namer
from ..nodes import walk
from ..spelling import spelled, user_names
from ..syntax import is_mask
from .dce import pure_calls


def _names(nodes) -> tuple:
    found = []
    for node in nodes:
        for sub in walk(node):
            if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Load):
                found.append(sub.id)
    return tuple(found)


def _ancestors(parents: dict, name: str) -> set:
    """`name` and every array it may be a view of, through `parents` (view -> bases)."""
    found, todo = set(), [name]
    while todo:
        current = todo.pop()
        if current not in found:
            found.add(current)
            todo.extend(parents.get(current, ()))
    return found


class BodyFacts:
    """Walks the body once and records where every statement and name sits."""

    def __init__(self, fn: Function, wrt: tuple, mode: str, has_aux: bool,
                 tuple_grads: bool = False, lean: bool = False):
        self.fn, self.mode, self.has_aux = fn, mode, has_aux
        self.lean = lean
        self.tuple_grads = tuple_grads
        self.namer = Namer.for_function(fn)
        self.env: dict = dict(fn.env)
        params = fn.params
        for i in wrt:
            if not -len(params) <= i < len(params):
                raise TransformError(f"argnums {i} is out of range for {fn.name} with "
                                     f"parameters {params}")
        self.wrt = [params[i] for i in wrt]
        body = fn.node.body
        if not body or not isinstance(body[-1], gast.Return):
            raise fn.origin.error(fn.node, f"{fn.name} must end with a return statement to "
                                  "be differentiated", "return the value to differentiate")
        self.body, self.ret = body[:-1], body[-1]
        self.collect()

    # ------------------------------------------------------------ facts about the body
    def collect(self) -> None:
        self.defs: dict = {p: [] for p in self.fn.params}
        self.loads: dict = {}
        self.loops_of: dict = {}
        self.block_of: dict = {}
        self.chain_of: dict = {}
        self.inside: dict = {}
        self.written: set = set()
        self.simple: list = []
        self.order: dict = {}
        self.loops: list = []
        self._walk(self.body, (), (id(self.body),))
        self.accumulating = _accumulating()
        self.accumulators = self._accumulators()
        self.written |= self.accumulators
        self._refuse_item_writes()
        self._close_written_over_aliases()
        # an array of the env (a global, a closed-over array) written in place is recorded
        # as a parameter is: its items are saved before each write, and the reverse sweep
        # reads, and restores, the values from before
        for var in sorted(self.written - set(self.defs)):
            if isinstance(self.env.get(var), np.ndarray):
                self.defs[var] = []
        self.view_checks = self._views_read_across_writes()
        self.loads_add(self.ret, _names([self.ret.value]))
        self.carried = {var: loop for loop in reversed(self.loops)
                        for var in _carried(loop)}        # the outermost loop wins
        self.facts = tape.Facts(
            {k: v for k, v in self.defs.items() if v or k in self.fn.params}, self.loads,
            self.loops_of, self.block_of, self.inside, set(self.fn.params), self.written,
            self.pure, self.order, set(self.carried))
        self.loops_of[id(self.ret)] = ()

    def _accumulators(self) -> set:
        """Names of arrays that `b = accumulated(b, i, v)` (a rewritten `scatter_add`)
        changes in place: the target and the result are one array."""
        found = set()
        for stmt in self.simple:
            value = stmt.value
            if isinstance(stmt.targets[0], gast.Name) and isinstance(value, gast.Call) and \
                    resolve(self.fn, value.func, None) in self.accumulating:
                found |= {stmt.targets[0].id} | set(_names(value.args[:1]))
        return found

    def _refuse_item_writes(self) -> None:
        """Refuse `lst[1] = v` (and `lst[0] += v`) on a list built in the body: the later
        passes read `lst[1]` as the value the list was built from, so the write would be
        missed (a wrong gradient)."""
        built = {t.id for s in self.simple for t in s.targets
                 if isinstance(t, gast.Name) and isinstance(s.value, (gast.List, gast.Tuple))}
        for stmt in self.simple:
            target = stmt.targets[0]
            if isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name) \
                    and target.value.id in built:
                shown = spelled(self.fn, target.value.id, user_names(self.fn))
                item = f"'{target.value.id}[{target.slice.value!r}]'" if \
                    isinstance(target.slice, gast.Constant) and shown.startswith("'") \
                    else "an item"
                raise self.fn.origin.error(
                    stmt, f"{item} of the list {shown} built in this function is written "
                    "here: reverse mode reads the items of such a list as the values it "
                    "was built from, and would miss the write",
                    f"build a new list under another name "
                    f"(`{target.value.id}2 = [{target.value.id}[0], ...]`), or give the new "
                    "value a name of its own and read that; forward mode (jvp, jacfwd) "
                    "takes the write as it is")

    def _close_written_over_aliases(self) -> None:
        """`z = y; z[0] = v` writes `y` too. Adjoints are per name, so an array written
        through one name and read through another afterwards is refused; a copy whose
        source is not read again (a renamed value, a swap's temporary) just shares the
        record of writes."""
        copies = [s for s in self.simple
                  if isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Name)]
        views = self._views()
        through: dict = {}      # name -> the writes that change its array
        for stmt in self.simple:
            if isinstance(stmt.targets[0], gast.Subscript):
                through.setdefault(stmt.targets[0].value.id, []).append(stmt)
        changed = True
        seen: set = set()       # copies checked: each once, also where both names are
        while changed:          # written themselves (`g[1] = a; k = g; k[3] = b`)
            changed = False
            for stmt in copies:
                pair = {stmt.targets[0].id, stmt.value.id}
                if pair & self.written and id(stmt) not in seen:
                    seen.add(id(stmt))
                    self._refuse_observed_alias(stmt, through)
                    self.written |= pair
                    # a write through either name after the copy writes both: `a_1 = y;
                    # a = a_1; a[1] = v` writes y
                    after = [w for n in pair for w in through.get(n, [])
                             if self.order[id(w)] > self.order[id(stmt)]]
                    for n in pair:
                        known = set(map(id, through.setdefault(n, [])))
                        through[n].extend(w for w in after if id(w) not in known)
                    changed = True
            for stmt, view, base in views:  # `row = P[i]; row[0] = v` writes P as well
                if view not in self.written:
                    continue
                writes = [w for w in through.get(view, [])
                          if self.order[id(w)] > self.order[id(stmt)]]
                # also where `base` is written itself (on another path, say): the write
                # through the view still changes it behind its adjoint's back
                self._refuse_write_through_view(writes, view, base, stmt, views)
                known = set(map(id, through.setdefault(base, [])))
                new = [w for w in writes if id(w) not in known]
                if new or base not in self.written:
                    through[base].extend(new)
                    self.written.add(base)
                    changed = True

    def _views(self) -> list:
        """(statement, view, base) for each `view = ...` whose array may be `base`'s or a
        part of it: an item or slice (`P[i]`, not a boolean mask's copy), a reshape,
        transpose, ravel or other view (`desugar.view_sources`), or a tuple or list
        holding it (`t = (y, 2.0)`, then `t[0][1] = v` writes `y`)."""
        views = []
        for stmt in self.simple:
            target, value = stmt.targets[0], stmt.value
            if not isinstance(target, gast.Name) or isinstance(value, gast.Name) or \
                    isinstance(value, gast.Subscript) and self._selects_by_mask(value.slice):
                continue        # a copy (followed above), or a mask's selection: a new array
            views.extend((stmt, target.id, base)
                         for base in sorted(view_sources(self.fn, value)))
        return views

    def _selects_by_mask(self, index) -> bool:
        """Whether `x[index]` is a copy for sure: a boolean mask computed in the body (a
        comparison or a logical combination of them). Anything else - a slice, a number,
        a name that may hold one - may give a view of `x`."""
        if not isinstance(index, gast.Name):
            return False
        definitions = self.defs.get(index.id, [])
        return bool(definitions) and all(
            isinstance(d, gast.Assign) and is_mask(d.value, self._selects_by_mask)
            for d in definitions)

    def _refuse_write_through_view(self, writes: list, view: str, base: str, binding,
                                   views: list) -> None:
        """Refuse `writes` through `view` (bound to a view of `base` by `binding`, before
        them) when `base` is read after one: the write changes `base`, which reverse mode,
        keeping one adjoint and one record of writes per name, would not see. `views`
        is `_views()`."""
        # another view of `base` (`u = h[::-2]` beside `M = h[::-1]`) reads its memory too
        readers = [base] + sorted({v for _, v, b in views if b == base and v != view})
        for write in writes:
            at, loops = self.order[id(write)], set(map(id, self.loops_of[id(write)]))
            reader = next((name for name in readers for u in self.loads.get(name, [])
                           if self.order[id(u)] > at or
                           loops & set(map(id, self.loops_of.get(id(u), ())))), None)
            if reader is None:
                continue
            names = user_names(self.fn)
            shown, of = spelled(self.fn, view, names), spelled(self.fn, base, names)
            read = of if reader == base else \
                f"{spelled(self.fn, reader, names)}, another view of it,"
            if isinstance(binding.value, gast.Subscript):
                bound, own = f"(`{view} = {base}[...]`)", f"`{view} = {base}[...].copy()`"
            else:
                line = getattr(binding, "lineno", None)
                bound = f"(bound from {of}" + (f" at line {line})" if line else ")")
                own = f"`.copy()` where {shown} is bound from {of}"
            if not shown.startswith("'"):   # written where the user made it, inline
                bound, own = "", ""
            elif not of.startswith("'"):
                own = f"`.copy()` where {shown} is bound"
            hint = f"write into {of} itself at the same elements"
            if of.startswith("'"):
                hint += f" (`{base}[...] = ...`)"
            if own:
                hint += f", or, if {of} must not change, make {shown} its own array: {own}"
            raise self.fn.origin.error(
                write, f"{shown} is a view into {of} {bound}".rstrip() + ", written here "
                f"and {read} read afterwards: reverse mode does not follow a write into "
                f"{of} made through another name", hint)

    def _views_read_across_writes(self) -> dict:
        """id(write) -> names read from the written array before it and used after it:
        each may be a view the write changes, which the forward sweep checks."""
        checks: dict = {}
        # an item or slice `y[i]`, or a reshape, transpose, ravel, .view() of `y` (whose
        # overlap with the write is not known: checked too); not a tuple holding `y`
        views = [(stmt, base) for stmt, _, base in self._views()
                 if not isinstance(stmt.value, (gast.Tuple, gast.List))]
        # a view of a view of `y` (`f = y[None][0]`) views `y` too
        parents: dict = {}
        for stmt, base in views:
            parents.setdefault(stmt.targets[0].id, set()).add(base)
        reads = [(stmt, root, root == base) for stmt, base in views
                 for root in _ancestors(parents, base)]
        same = _copy_classes(self.simple)
        for write in self.simple:
            site = self._write_site(write)
            if site is None:
                continue
            (written, index), at = site, self.order[id(write)]
            # the written array under every name a copy gave it (`g_1 = g`, the renamed
            # `g` of `g, x = g, x`): a view of `g` sees a write through `g_1`
            arrays = same.get(written, {written})
            for read, base, direct in reads:
                var = read.targets[0].id
                overlap = not (direct and isinstance(read.value, gast.Subscript)) or \
                    _may_overlap(read.value.slice, index)
                # `var` may still be the view at the write (bound in a branch, say) and
                # a use after it may see the write: checked at run time (`var` must be
                # bound on every path to the write, for the check to read it)
                if base in arrays and self.order[id(read)] < at and overlap and \
                        self._bound_at(var, write) and \
                        any(self.order[id(u)] > at and
                            not _rebound_between(self, var, read, write, u)
                            for u in self.loads.get(var, [])):
                    checks.setdefault(id(write), []).append(var)
        return checks

    def _bound_at(self, var: str, stmt) -> bool:
        """Whether `var` is bound on every path to `stmt`: a parameter, or assigned before
        it in a block around it."""
        if var in self.fn.params:
            return True
        at, chain = self.order[id(stmt)], self.chain_of[id(stmt)]
        return any(self.order.get(id(d), at) < at and id(d) in self.chain_of and
                   _encloses(self.chain_of[id(d)], chain) for d in self.defs.get(var, []))

    def _write_site(self, stmt):
        """(array, index) an in-place write `y[i] = v` or `y = accumulated(y, i, v)`
        changes; None for other statements."""
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, gast.Subscript):
            return target.value.id, target.slice
        if isinstance(value, gast.Call) and len(value.args) > 1 and \
                isinstance(value.args[0], gast.Name) and \
                resolve(self.fn, value.func, None) in self.accumulating:
            return value.args[0].id, value.args[1]
        return None

    def _refuse_observed_alias(self, stmt, through: dict) -> None:
        """Refuse the copy `stmt` when its array is written through one of its two names
        (or a name sharing it, `through`) after it and read through the other."""
        target, source = stmt.targets[0].id, stmt.value.id
        for name_ in (target, source):
            other = source if name_ == target else target
            later = [u for u in self.loads.get(other, [])
                     if self.order[id(u)] > self.order[id(stmt)]]
            writes = sorted((u for u in through.get(name_, [])
                             if self.order[id(u)] > self.order[id(stmt)]),
                            key=lambda u: self.order[id(u)])
            if writes and later:
                names = user_names(self.fn)
                written, read = spelled(self.fn, name_, names), spelled(self.fn, other, names)
                hint = copy_hint(target, source)
                if not (spelled(self.fn, target, names) == repr(target) and
                        spelled(self.fn, source, names) == repr(source)):
                    hint = f"make {spelled(self.fn, target, names)} its own array where it " \
                        f"is assigned from {spelled(self.fn, source, names)}, with `.copy()`"
                raise self.fn.origin.error(
                    writes[0], f"{written} and {read} are the same array here, written "
                    f"through {written} and read through {read}: reverse mode keeps one "
                    "adjoint per name", hint)

    def loads_add(self, stmt, names) -> None:
        for n in names:
            self.loads.setdefault(n, []).append(stmt)

    def _walk(self, stmts, loops, chain) -> None:
        self.inside[id(stmts)] = set()
        for stmt in stmts:
            self.order[id(stmt)] = len(self.order)
            self.block_of[id(stmt)] = id(stmts)
            self.loops_of[id(stmt)] = loops
            self.chain_of[id(stmt)] = chain
            for block in chain:
                self.inside[block].add(id(stmt))
            self._walk_statement(stmt, loops, chain)

    def _walk_statement(self, stmt, loops, chain) -> None:
        if isinstance(stmt, gast.Assign):
            target = stmt.targets[0]
            self.simple.append(stmt)
            if isinstance(target, gast.Name):
                self.defs.setdefault(target.id, []).append(stmt)
                self.loads_add(stmt, _names([stmt.value]))
            else:
                self.written.add(target.value.id)
                self.loads_add(stmt, _names([target, stmt.value]))
        elif isinstance(stmt, gast.If):
            self.loads_add(stmt, _names([stmt.test]))
            for block in (stmt.body, stmt.orelse):
                self._walk(block, loops, chain + (id(block),))
        elif isinstance(stmt, gast.For):
            self.loops.append(stmt)
            self.defs.setdefault(stmt.target.id, []).append(stmt)
            last, start, step = stmt.secant_reverse
            self.loads_add(stmt, _names([stmt.iter, start, step]) + (last,))
            self._walk(stmt.body, loops + (stmt,), chain + (id(stmt.body),))
        elif isinstance(stmt, gast.While):
            self.loops.append(stmt)
            self.loads_add(stmt, _names([stmt.test]) + (stmt.secant_trips,))
            self._walk(stmt.body, loops + (stmt,), chain + (id(stmt.body),))
        elif isinstance(stmt, (gast.Expr, gast.Assert, gast.Return)):
            self.loads_add(stmt, _names([stmt]))

    def pure(self, stmt) -> bool:
        """Whether re-running `stmt` in the reverse sweep has no effect but its value."""
        value = stmt.value
        if isinstance(value, gast.Call):
            obj = resolve(self.fn, value.func, None)
            module = getattr(obj, "__module__", "") or ""
            if self.prims[id(stmt)].kind == "call":
                return _cheap_pure_function(obj)
            return obj is not None and "random" not in module and \
                obj not in self.accumulating
        return not isinstance(value, (gast.Dict, gast.List))


def _accumulating() -> tuple:
    """The helpers that return their first argument after writing into it in place
    (or a larger copy of it, for a tape that grows)."""
    from ..tape_items import accumulated, items_pushed
    return (accumulated, items_pushed, tape.push)


def _tape_makers() -> tuple:
    """The helpers whose result is a tape or an element buffer."""
    from ..tape_items import items_pushed
    return (tape.push, tape.reserve, tape.exact_tape, tape.float_tape, tape.items_buffer,
            items_pushed)


def _carried(loop) -> set:
    """Names the body of `loop` may read before assigning them, and assigns: a read sees
    the value of the previous trip (`if i > 0: s = s + t` then `t = x * i`)."""
    entry = {loop.target.id} if isinstance(loop, gast.For) else set()
    exposed, _ = _exposed(loop.body, entry)
    return exposed & {n.id for s in loop.body for n in walk(s)
                      if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _exposed(stmts, defined: set) -> tuple[set, set]:
    """(names `stmts` may read before assigning them when `defined` are assigned on
    entry, the names surely assigned at their end)."""
    exposed, defined = set(), set(defined)
    for stmt in stmts:
        if isinstance(stmt, gast.If):
            exposed |= set(_names([stmt.test])) - defined
            body, after_body = _exposed(stmt.body, defined)
            orelse, after_orelse = _exposed(stmt.orelse, defined)
            exposed |= body | orelse
            defined = after_body & after_orelse
        elif isinstance(stmt, (gast.For, gast.While)):    # the body may not run
            head = stmt.iter if isinstance(stmt, gast.For) else stmt.test
            exposed |= set(_names([head])) - defined
            inner = {stmt.target.id} if isinstance(stmt, gast.For) else set()
            exposed |= _exposed(stmt.body, defined | inner)[0]
        else:
            exposed |= set(_names([stmt])) - defined
            if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
                defined.add(stmt.targets[0].id)
    return exposed, defined


def _rebound_between(analysis, var, read, write, load) -> bool:
    """Whether another assignment of `var` runs after `write` and before `load` on every
    path from one to the other: it sits before the load in a block around it and after
    the write, so any path from the write enters that block, or goes on in it, through
    the assignment. (A write after the load in a loop around an assignment outside it
    reaches the load on the next trip: not counted.)"""
    order = analysis.order.get(id(load))
    chain = analysis.chain_of.get(id(load))
    if order is None or chain is None:
        return False
    wrote = analysis.order[id(write)]
    for other in analysis.defs.get(var, []):
        at = analysis.order.get(id(other))
        if other is read or at is None or id(other) not in analysis.chain_of:
            continue
        if wrote < at < order and \
                _encloses(analysis.chain_of[id(other)], chain):
            return True
    return False


def _copy_classes(simple: list) -> dict:
    """name -> the names joined to it by copies `a = b` (either way, transitively): the
    names that may hold one array. More than may: a name rebound later is joined too,
    which only adds run-time checks (`check_not_view` asks whether the memory is shared)."""
    classes: dict = {}
    for stmt in simple:
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, gast.Name) and isinstance(value, gast.Name):
            joined = classes.get(target.id, {target.id}) | classes.get(value.id, {value.id})
            for member in joined:
                classes[member] = joined
    return classes


def _encloses(outer: tuple, inner: tuple) -> bool:
    return inner[:len(outer)] == outer


def _may_overlap(read_index, write_index) -> bool:
    """Whether a read and a write of one array may touch the same elements: they do unless
    their first indices are different names or constants (`X[i]` and `X[i_plus_1]`)."""
    def first(index):
        return index.elts[0] if isinstance(index, gast.Tuple) and index.elts else index
    a, b = first(read_index), first(write_index)
    if isinstance(a, gast.Slice) or isinstance(b, gast.Slice):
        return True
    if isinstance(a, gast.Name) and isinstance(b, gast.Name):
        return a.id == b.id
    if isinstance(a, gast.Constant) and isinstance(b, gast.Constant):
        return a.value == b.value
    return False


def _custom_vjp_only(obj) -> bool:
    """A custom_vjp object (a vjp rule, no jvp rule): its forward code is the user's fwd,
    not its body, so it is never re-run in the reverse sweep."""
    return hasattr(obj, "__secant_vjp__") and not hasattr(obj, "__secant_jvp__")


def _cheap_pure_function(obj, depth: int = 0) -> bool:
    """Whether a user function computes its result from its arguments alone and without
    loops: running it again in the reverse sweep costs about what recording it would
    (`minimum_image(d, box)` in a pair loop)."""
    from ..frontend import parse_callee
    if _custom_vjp_only(obj) or depth > 3:
        return False
    try:
        fn = parse_callee(obj)
    except TransformError:
        return False
    pure = pure_calls(fn.env, lambda callee: _cheap_pure_function(callee, depth + 1))
    for node in walk(gast.Module(body=fn.node.body, type_ignores=[])):
        if isinstance(node, (gast.For, gast.While, gast.Global, gast.Nonlocal, gast.Raise,
                             gast.Assert, gast.FunctionDef, gast.Lambda, gast.Try,
                             gast.With)) or \
                isinstance(node, (gast.Subscript, gast.Attribute)) and \
                isinstance(node.ctx, gast.Store) or \
                isinstance(node, gast.Call) and not pure(node):
            return False
    return True
