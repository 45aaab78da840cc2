"""Checkpointed `for` statements: `for t in checkpoint_range(lower, upper, snapshots=s)`.

`checkpoint_range` (transformer/checkpoint.py) is `range` when called, outside any
transformation. When secant parses a function, `lower_checkpoint_loops` rewrites each
such statement in place into one call of the function's `__secant_loop__`
(`checkpoint_loop`), whose reverse mode keeps a bounded
number of carry states (the Revolve schedule by default):

    for t in checkpoint_range(lo, hi, snapshots=s):      c1, ..., cn = loop(lo, hi,
        body                                      ->          c1, ..., cn, k1, ..., km)

with `loop = checkpoint_loop(step, snapshots=s, ...)` bound in the environment and `step`
the Function `def step(t, c1, ..., cn, k1, ..., km): body; return c1, ..., cn` (the body's
nodes keep the user's line numbers). Carries are the names the body assigns that are read
in a later iteration (before the body assigns them) or after the loop; constants are the
local names the body reads and never assigns.

A carry the body writes into in place (`h[i] = v`, `h += v`, through a view it made, or
`out=h`) is copied at the top of the step (`own_value`): a stored state is the carry
itself and must not change. Before the copy the step checks, at run time, that no other
carry or constant shares the carry's array (the plain loop's write would change that one
too). Unlike the plain loop, a caller's array passed in as a carry's initial value is
not written.

Refused, located: `break`, `continue`, `return` in the body, the index read after the
loop, a step other than 1, options not known at transformation time, a carry with no value
before the loop, and a write into an array the loop does not carry (a constant, a global,
a view of either).

Invariant of the output: no `for` over `checkpoint_range` is left; everything else is
unchanged.
"""
from __future__ import annotations

import types

import gast
import numpy as np

from . import tape
from .desugar import view_sources
from .errors import TransformError
from .function import Function, resolve
from .names import assigned_names, free_names, loaded_names
from .nodes import copy_tree, walk
from .syntax import assign, call, const, located, name, parsed_at, store

__all__ = ["lower_checkpoint_loops"]

_OPTIONS = {"snapshots": None, "schedule": "revolve", "levels": 1}
_HINT_OPTIONS = ("write checkpoint_range(lower, upper, snapshots=s) with s an int >= 2 "
                 "(about sqrt(T) for schedule=\"segments\"), schedule=\"revolve\" or "
                 "\"segments\", levels an int >= 1")
# functions and methods that write into their first argument
_WRITERS = (np.copyto, np.put, np.place, np.fill_diagonal, np.putmask, np.add.at)
_SCOPES = (gast.Lambda, gast.ListComp, gast.DictComp, gast.SetComp, gast.GeneratorExp)
_WRITING_METHODS = {"fill", "sort", "put", "itemset", "resize", "partition", "setflags"}


class LoopBody:
    """The body of a checkpointed `for` statement as a function of (index, *carries,
    *constants): transformed through its Function, called through that Function's code."""

    def __init__(self, fn: Function, module: str) -> None:
        self.fn = fn
        self.__name__ = fn.name
        self.__qualname__ = f"{fn.origin.name}.<for at line {fn.node.lineno}>"
        self.__module__ = module
        self.__doc__ = None
        self._compiled = None

    def __secant_function__(self) -> Function:
        return self.fn.replace(node=copy_tree(self.fn.node))

    def __call__(self, *args):
        if self._compiled is None:
            tree = gast.gast_to_ast(gast.Module(body=[copy_tree(self.fn.node)],
                                                type_ignores=[]))
            space = dict(self.fn.env)
            exec(compile(tree, self.fn.origin.filename, "exec"), space)
            self._compiled = space[self.fn.name]
        return self._compiled(*args)


def lower_checkpoint_loops(node: gast.FunctionDef, env: dict, origin, namer,
                           module: str) -> dict:
    """Rewrite, in place, each `for` over `checkpoint_range` in `node` (innermost first);
    the env with the loops bound to fresh names."""
    env = dict(env)
    lowering = _Lowering(Function(node, env, origin), env, namer, module)
    node.body = lowering.block(node.body, [])
    return env


class _Lowering:
    def __init__(self, fn: Function, env: dict, namer, module: str) -> None:
        self.fn, self.env, self.namer, self.module = fn, env, namer, module
        self.origin = fn.origin

    def block(self, stmts: list, outer: list) -> list:
        """`stmts` with its checkpointed loops lowered; `outer` lists (block, index) of
        the statements enclosing it, outermost first."""
        stmts = list(stmts)
        for i, stmt in enumerate(stmts):
            for field in ("body", "orelse"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    setattr(stmt, field, self.block(inner, outer + [(stmts, i)]))
            if isinstance(stmt, gast.For) and self._loop_maker(stmt.iter) is not None:
                stmts[i] = self.lower(stmt, outer + [(stmts, i)])
        return stmts

    def _loop_maker(self, expr):
        """`checkpoint_loop` when `expr` calls `checkpoint_range`, else None."""
        if not isinstance(expr, gast.Call):
            return None
        return getattr(resolve(self.fn, expr.func, None), "__secant_loop__", None)

    # ------------------------------------------------------------ one loop
    def lower(self, loop: gast.For, path: list) -> gast.stmt:
        lower, upper, options = self._bounds_and_options(loop.iter)
        index = self._index(loop)
        _refuse_exits(self.origin, loop)
        before, after = _context(self.fn, path)
        if index in after:
            raise self.origin.error(loop.target, f"the index {index!r} of a checkpointed "
                                    "loop is read after the loop",
                                    "use another name after the loop (the last index is "
                                    "upper - 1), or rename the loop's index")
        assigned = _bound_names(loop.body) - {index}
        exposed, _ = _exposed(loop.body, set())
        carries = sorted(assigned & (exposed | after))
        if not carries:
            raise self.origin.error(loop, "this checkpointed loop assigns nothing that is "
                                    "read after it or in its next iteration",
                                    "use range(...) for a loop kept for its effects")
        for c in carries:
            if c not in before:
                raise self.origin.error(loop, f"{c!r} is carried by this checkpointed loop "
                                        "but has no value before it",
                                        f"give {c} its initial value before the loop")
        local = set(self.fn.params) | _bound_names(self.fn.node.body)
        constants = sorted((loaded_names(gast.Module(body=loop.body, type_ignores=[])) -
                            assigned - {index}) & local)
        writes = _Writes(self.fn, carries)
        writes.block(loop.body, {n: {n} for n in carries + constants})
        step = self._step(loop, index, carries, constants, writes.written)
        try:
            looped = self._loop_maker(loop.iter)(LoopBody(step, self.module), **options)
        except TransformError as exc:
            raise self.origin.error(loop.iter, exc.message, _HINT_OPTIONS) from None
        bound = self.namer.fresh(f"{self.fn.name}_loop")
        self.env[bound] = looped
        target = gast.Tuple([store(c) for c in carries], gast.Store()) \
            if len(carries) > 1 else store(carries[0])
        result = call(bound, lower, upper, *[name(n) for n in carries + constants])
        return located(assign(target, result), loop)

    def _bounds_and_options(self, iter_: gast.Call):
        args = iter_.args
        if not 1 <= len(args) <= 3 or any(isinstance(a, gast.Starred) for a in args):
            raise self.origin.error(iter_, "checkpoint_range takes (upper), (lower, upper) "
                                    "or (lower, upper, 1)", _HINT_OPTIONS)
        if len(args) == 3 and not (isinstance(args[2], gast.Constant) and
                                   args[2].value == 1 and type(args[2].value) is int):
            raise self.origin.error(args[2], "a checkpointed loop steps by 1",
                                    "loop over checkpoint_range(n) with n = len(range(lower, "
                                    "upper, step)) and compute the index lower + step * t")
        lower, upper = (const(0), args[0]) if len(args) == 1 else (args[0], args[1])
        options = dict(_OPTIONS)
        for keyword in iter_.keywords:
            if keyword.arg not in _OPTIONS:
                raise self.origin.error(keyword.value, f"checkpoint_range has no option "
                                        f"{keyword.arg!r}", _HINT_OPTIONS)
            options[keyword.arg] = self._static(keyword)
        if options["snapshots"] is None:
            raise self.origin.error(iter_, "checkpoint_range needs snapshots=s", _HINT_OPTIONS)
        return lower, upper, options

    def _static(self, keyword: gast.keyword):
        value = keyword.value
        if isinstance(value, gast.Constant):
            return value.value
        found = resolve(self.fn, value, None) if isinstance(value, (gast.Name, gast.Attribute)) \
            else None
        if found is None or isinstance(found, types.ModuleType):
            raise self.origin.error(value, f"checkpoint_range's {keyword.arg} must be known "
                                    "when secant transforms the function",
                                    "write a literal or a module-level constant")
        return found

    def _index(self, loop: gast.For) -> str:
        if not isinstance(loop.target, gast.Name):
            raise self.origin.error(loop.target, "a checkpointed loop's index is one name",
                                    "write `for t in checkpoint_range(...)`")
        return loop.target.id

    def _step(self, loop, index, carries, constants, written: dict) -> Function:
        """`def step(index, *carries, *constants)`: a carry the body writes into in place
        is first copied (a stored state must not change), after checking that no other
        argument shares its array (the plain loop's write would change that one too)."""
        params = [index] + carries + constants
        fname = self.namer.fresh(f"{self.fn.name}_step")
        node = parsed_at(f"def {fname}({', '.join(params)}):\n    pass\n", loop)
        helpers = {self.namer.fresh("check_not_shared"): tape.check_not_shared,
                   self.namer.fresh("own_value"): tape.own_value}
        check, own = helpers
        prologue = []
        for carry, stmt in written.items():
            where = self.origin.where(stmt)
            prologue += [parsed_at(f"{check}({other}, {carry}, {other!r}, {carry!r}, "
                                   f"{where!r})\n", stmt)
                         for other in params[1:] if other != carry]
            prologue.append(parsed_at(f"{carry} = {own}({carry})\n", stmt))
        returned = ", ".join(carries)
        node.body = prologue + copy_tree(loop.body) + \
            [parsed_at(f"return {returned}\n", loop)]
        env = {k: self.env[k] for k in free_names(node) if k in self.env}
        env.update(helpers)
        return Function(node, env, self.origin, ("checkpoint_range",))


def _refuse_exits(origin, loop: gast.For) -> None:
    """`return` anywhere in the body, `break`/`continue` of this loop: refused."""
    def visit(stmts, own: bool):
        for stmt in stmts:
            if isinstance(stmt, gast.Return) or own and isinstance(stmt, (gast.Break,
                                                                           gast.Continue)):
                word = type(stmt).__name__.lower()
                raise origin.error(stmt, f"`{word}` inside a checkpointed loop",
                                   "compute a flag in the carries and mask the update "
                                   "(h = np.where(done, h, new_h)), or use range(...)")
            for field in ("body", "orelse"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list):
                    visit(inner, own and not isinstance(stmt, (gast.For, gast.While)))
    visit(loop.body, True)


def _context(fn: Function, path: list) -> tuple[set, set]:
    """(names bound before the loop at the end of `path`, names read after it before being
    assigned again, or anywhere in an enclosing loop, which a later trip may read)."""
    loop = path[-1][0][path[-1][1]]
    before, after, defined = set(fn.params), set(), set()
    for stmts, i in reversed(path):
        for stmt in stmts[:i]:
            before |= assigned_names(stmt)
        exposed, defined = _exposed(stmts[i + 1:], defined)
        after |= exposed
        enclosing = stmts[i]
        if enclosing is not loop and isinstance(enclosing, (gast.For, gast.While)):
            outside = list(_walk_outside(enclosing, loop))
            after |= {n.id for n in outside if isinstance(n, gast.Name) and
                      isinstance(n.ctx, gast.Load)}
            before |= {n.id for n in outside if isinstance(n, gast.Name) and
                       isinstance(n.ctx, gast.Store)}
    return before, after


def _bound_names(stmts: list) -> set:
    """Names the statements bind in the function's own scope (not a lambda's parameters
    or a comprehension's variables)."""
    found = set()
    for node in _walk_outside(gast.Module(body=stmts, type_ignores=[]), None):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            found.add(node.id)
    return found


def _walk_outside(node, skip):
    """`node` and its descendants, without `skip`'s subtree, nor a lambda's or a
    comprehension's (their names are their own) when `skip` is None."""
    if node is skip or skip is None and isinstance(node, _SCOPES):
        return
    yield node
    for child in gast.iter_child_nodes(node):
        yield from _walk_outside(child, skip)


def _exposed(stmts: list, defined: set) -> tuple[set, set]:
    """(names the statements may read before assigning them, names surely assigned after
    them), given the names surely assigned before."""
    exposed, defined = set(), set(defined)
    for stmt in stmts:
        if isinstance(stmt, gast.If):
            exposed |= loaded_names(stmt.test) - defined
            e1, d1 = _exposed(stmt.body, defined)
            e2, d2 = _exposed(stmt.orelse, defined)
            exposed, defined = exposed | e1 | e2, d1 & d2
        elif isinstance(stmt, (gast.For, gast.While)):
            head = stmt.iter if isinstance(stmt, gast.For) else stmt.test
            exposed |= loaded_names(head) - defined
            bound = assigned_names(stmt.target) if isinstance(stmt, gast.For) else set()
            exposed |= _exposed(stmt.body, defined | bound)[0]
        else:
            exposed |= loaded_names(stmt) - defined
            if isinstance(stmt, gast.AugAssign) and isinstance(stmt.target, gast.Name):
                exposed |= {stmt.target.id} - defined
            defined |= assigned_names(stmt)
    return exposed, defined


class _Writes:
    """The carries the body writes into in place (directly or through a view it made);
    a write reaching a constant or a global array is refused (module docstring)."""

    def __init__(self, fn: Function, carries: list) -> None:
        self.fn, self.carries = fn, set(carries)
        self.written: dict = {}          # carry -> the first statement writing into it

    def block(self, stmts: list, shares: dict) -> dict:
        """Check `stmts`, given which outside names each name's array may share before
        them; that map after them (a name missing from it is outside the loop)."""
        shares = dict(shares)
        for stmt in stmts:
            self._calls(stmt, shares)
            if isinstance(stmt, gast.If):
                shares = _merged(self.block(stmt.body, shares), self.block(stmt.orelse, shares))
            elif isinstance(stmt, (gast.For, gast.While)):
                for n in assigned_names(getattr(stmt, "target", gast.Tuple([], None))):
                    shares[n] = set()
                while True:              # to a fixed point: a later trip sees earlier ones
                    after = _merged(shares, self.block(stmt.body, shares))
                    if after == shares:
                        break
                    shares = after
            elif isinstance(stmt, gast.AugAssign):
                self._written(stmt.target, shares, stmt)
            elif isinstance(stmt, (gast.Assign, gast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, gast.Assign) else [stmt.target]
                for target in targets:
                    if not isinstance(target, gast.Name):
                        self._written(target, shares, stmt)
                reached = set() if stmt.value is None else \
                    set().union(*(shares.get(s, {s}) for s in self._sources(stmt.value)))
                for target in targets:
                    for n in assigned_names(target):
                        shares[n] = reached
        return shares

    def _sources(self, value) -> set:
        """Names whose array `value` may share."""
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) and \
                not isinstance(resolve(self.fn, value.func.value, None), types.ModuleType):
            return set() if value.func.attr == "copy" else loaded_names(value.func.value)
        if isinstance(value, gast.Attribute) and \
                not isinstance(resolve(self.fn, value.value, None), types.ModuleType):
            return loaded_names(value.value)
        return view_sources(self.fn, value)

    def _written(self, target, shares: dict, stmt) -> None:
        base = target
        while isinstance(base, (gast.Subscript, gast.Attribute)):
            base = base.value
        if isinstance(base, gast.Name):
            self._into(base, shares.get(base.id, {base.id}), stmt)

    def _into(self, node, reached: set, stmt) -> None:
        for array in sorted(reached):
            if array not in self.carries:
                raise self.fn.origin.error(
                    node, f"a checkpointed loop writes into {array!r}, which it does not "
                    "carry: the reverse sweep runs the loop's steps again, which would "
                    "write again", f"rebind it in the loop body ({array} = {array}.copy() "
                    "before the write), which makes it a carry, or build a new array")
            self.written.setdefault(array, stmt)

    def _calls(self, stmt, shares: dict) -> None:
        own = [stmt] if not isinstance(stmt, (gast.If, gast.For, gast.While)) else \
            [stmt.test if not isinstance(stmt, gast.For) else stmt.iter]
        for part in own:
            for sub in walk(part):
                if not isinstance(sub, gast.Call):
                    continue
                func = resolve(self.fn, sub.func, None)
                written = [k.value for k in sub.keywords if k.arg == "out"]
                if sub.args and any(func is w for w in _WRITERS):
                    written.append(sub.args[0])
                if func is None and isinstance(sub.func, gast.Attribute) and \
                        sub.func.attr in _WRITING_METHODS:
                    written.append(sub.func.value)
                for array in written:
                    if isinstance(array, gast.Name):
                        self._into(array, shares.get(array.id, {array.id}), stmt)


def _merged(a: dict, b: dict) -> dict:
    return {n: a.get(n, set()) | b.get(n, set()) for n in set(a) | set(b)}
