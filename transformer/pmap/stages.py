"""Split a pmapped function at its collectives into stages compiled one by one.

A shard cannot wait for the others inside compiled code, so `pmap` runs the function as a
sequence of stages with the collectives' reductions between them, done by the executor.

Input: the Function of the pmapped callable and its axis name. Output: `Stages`, whose
invariant is:
- every collective call on the axis is a *top-level* evaluation: a statement directly in
  the function body, the test of a top-level `if` or the iterable of a top-level `for`
  (each evaluated once per call). One inside a loop body, an `if` branch, a `while` test,
  a lambda, comprehension or nested function is a located TransformError;
- stage k's parameters are the names live at its start (stage 0: the function's
  parameters); every stage but the last ends with `return (outputs...)`, its outputs
  being the names it binds that are live after it, plus the operand of each collective
  at its boundary (`<kind>_in_<n>`); a live name it does not bind (a parameter, a
  container argument) keeps the value the executor holds for the shard, so containers
  never cross a stage boundary whole; the executor binds the reduced value to
  `<kind>_out_<n>`, which replaces the call in the next stage;
- `axis_index(axis)` reads the name `pmap_axis_index`, a parameter of each stage that
  reads it; it is no boundary;
- only the last stage may `return`; each stage keeps the user's line numbers, so errors
  and comments in the generated code point at the user's lines.
Collectives on another axis name, and nested collectives' order (an operand that holds a
collective is reduced first, at an earlier boundary), follow JAX.
"""
from __future__ import annotations

import dataclasses

import gast

from codegen.backends import is_user_function

from ..errors import TransformError, error_at
from ..frontend import parse
from ..function import Function, resolve
from . import collectives
from ..nodes import walk

AXIS_INDEX = "pmap_axis_index"


@dataclasses.dataclass(frozen=True)
class Boundary:
    """One collective between two stages: the reduction of `source` bound to `target`."""

    kind: str
    source: str
    target: str
    perm: tuple
    where: str          # the call's file:line:col, for errors raised at run time


@dataclasses.dataclass(frozen=True)
class Stage:
    function: Function
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]             # () for the last stage (it returns the result)
    boundaries: tuple[Boundary, ...]     # run after this stage; () for the last


@dataclasses.dataclass(frozen=True)
class Stages:
    stages: tuple[Stage, ...]
    reads_axis_index: bool


def split(fn: Function, axis_name, size: int) -> Stages:
    """The stages of `fn` under pmap over `axis_name` with `size` shards (see module doc)."""
    splitter = _Splitter(fn, axis_name, size)
    pieces = splitter.pieces()
    return Stages(_build(fn, pieces, splitter.reads_axis_index), splitter.reads_axis_index)


# ====================================================================== finding collectives
class _Splitter:
    def __init__(self, fn: Function, axis_name, size: int):
        self.fn, self.axis_name, self.size = fn, axis_name, size
        self.count = 0
        self.reads_axis_index = False

    def pieces(self) -> list:
        """[(statements, boundaries)] per stage, in order; the last has no boundaries."""
        pieces, current = [], []
        for stmt in self.fn.copy_node().body:
            stmt = self._read_axis_index(stmt)
            self._refuse_nested(stmt)
            self._refuse_in_callees(stmt)
            waves = self._hoist(stmt)
            for assigns, boundaries in waves:
                current.extend(assigns)
                pieces.append((current, boundaries))
                current = []
            current.append(stmt)
        pieces.append((current, []))
        return pieces

    def _read_axis_index(self, stmt):
        splitter = self

        class AxisIndex(gast.NodeTransformer):
            def visit_Call(self, node):
                self.generic_visit(node)
                if splitter._kind(node) != "axis_index":
                    return node
                splitter.reads_axis_index = True
                return gast.copy_location(gast.Name(AXIS_INDEX, gast.Load(), None, None),
                                          node)

        return AxisIndex().visit(stmt)

    # a collective where it runs once per call: hoisted; elsewhere refused
    def _hoistable(self, stmt) -> list:
        if isinstance(stmt, gast.If):
            return [stmt, "test"]
        if isinstance(stmt, gast.For):
            return [stmt, "iter"]
        if isinstance(stmt, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr,
                             gast.Return)):
            return [stmt, None]
        return []

    def _refuse_nested(self, stmt) -> None:
        hoisted = self._hoistable(stmt)
        top = getattr(stmt, hoisted[1]) if hoisted and hoisted[1] else stmt if hoisted \
            else None
        allowed = {id(n) for n in walk(top)} if top is not None else set()
        scoped = {id(n) for s in walk(stmt) if isinstance(
            s, (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp,
                gast.FunctionDef)) for n in walk(s) if n is not s}
        for node in walk(stmt):
            kind = self._kind(node)
            if kind is None or kind == "axis_index":
                continue
            if id(node) not in allowed or id(node) in scoped:
                raise self._nested_error(stmt, node, kind)

    def _nested_error(self, stmt, node, kind):
        place = {gast.For: "a for loop", gast.While: "a while loop", gast.If: "an if",
                 gast.With: "a with block", gast.Try: "a try block"}.get(type(stmt),
                                                                          "a nested scope")
        return error_at(self.fn, node,
                        f"{kind}(..., {self.axis_name!r}) inside {place}: pmap runs the "
                        "function in compiled stages split at its collectives, which must "
                        "be evaluated once per call at the top level of the function",
                        hint=f"compute the partial result in the loop or branch and call "
                             f"{kind} on it after it, as a top-level statement")

    def _refuse_in_callees(self, stmt) -> None:
        """A user function called here that reaches a collective on this axis cannot be
        split: refused at the call, not at the generated line Numba rejects."""
        for node in walk(stmt):
            if isinstance(node, gast.Call):
                target = resolve(self.fn, node.func, None)
                kind = _collective_reached(target, self.axis_name, set())
                if kind is not None:
                    raise error_at(self.fn, node,
                                   f"{getattr(target, '__name__', 'this function')} calls "
                                   f"{kind}(..., {self.axis_name!r}): pmap splits the function "
                                   "only at collectives written in the pmapped function",
                                   hint=f"return the value to reduce from the helper and call "
                                        f"{kind} on it here, at the top level")

    def _kind(self, node) -> str | None:
        """The collective kind of a call on this pmap's axis, else None (located error for
        a collective on an axis that is not bound)."""
        if not isinstance(node, gast.Call):
            return None
        kind = collectives.kind_of(resolve(self.fn, node.func, None))
        if kind is None:
            return None
        name = _axis_name_of(node, kind)
        if name != self.axis_name:
            raise error_at(self.fn, node,
                           f"{kind} names the axis {name!r}, but this pmap's axis_name is "
                           f"{self.axis_name!r}",
                           hint=f"pass axis_name={name!r} to pmap, or use the pmap's axis "
                                "name (a vmap axis inside pmap works inside the vmapped "
                                "function)")
        return kind

    def _hoist(self, stmt) -> list:
        """Replace the collective calls of `stmt` by names; [(assigns, boundaries)] per
        wave, innermost collectives first."""
        hoisted = self._hoistable(stmt)
        if not hoisted:
            return []
        found = []                        # (depth, call, kind, replacer)
        stmt_, field = hoisted
        for name in [field] if field else list(stmt_._fields):
            self._visit(stmt_, name, found)
        waves = {}
        for depth, call, kind, replace in sorted(found, key=lambda f: f[0]):
            assigns, boundaries = waves.setdefault(depth, ([], []))
            self.count += 1
            source, target = f"{kind}_in_{self.count}", f"{kind}_out_{self.count}"
            assigns.append(_assign(source, call.args[0] if call.args else
                                   _keyword(call, "x"), call))
            boundaries.append(Boundary(kind, source, target, self._perm(call, kind),
                                       self.fn.origin.where(call)))
            replace(gast.Name(target, gast.Load(), None, None))
        return [waves[d] for d in sorted(waves) if waves[d][1]]

    def _visit(self, parent, field, found) -> int:
        """Depth of collectives nested under parent.field; records each with a replacer."""
        value = getattr(parent, field, None)
        if isinstance(value, list):
            return max([self._visit_item(value, i, found) for i in range(len(value))],
                       default=0)
        if isinstance(value, gast.AST):
            return self._visit_node(value, lambda new: setattr(parent, field, new), found)
        return 0

    def _visit_item(self, items, i, found) -> int:
        if not isinstance(items[i], gast.AST):
            return 0
        return self._visit_node(items[i], lambda new: items.__setitem__(i, new), found)

    def _visit_node(self, node, replace, found) -> int:
        inner = max([self._visit(node, f, found) for f in node._fields], default=0)
        kind = self._kind(node)
        if kind is None:
            return inner
        found.append((inner + 1, node, kind, replace))
        return inner + 1

    def _perm(self, call, kind) -> tuple:
        if kind != "ppermute":
            return ()
        expr = call.args[2] if len(call.args) > 2 else _keyword(call, "perm")
        try:
            value = _constant(self.fn, expr)
        except ValueError:
            raise error_at(self.fn, call, "ppermute's perm must be known when pmap splits "
                           "the function: a literal or a global/closure value",
                           hint="write perm=[(0, 1), (1, 0)] or bind it to a module "
                                "constant") from None
        try:
            return collectives.check_perm(value, self.size)
        except ValueError as exc:
            raise error_at(self.fn, call, str(exc)) from None


def _collective_reached(target, axis_name, seen: set) -> str | None:
    """The kind of a collective on `axis_name` that user function `target` (or one it
    calls, by name) calls, else None."""
    if not is_user_function(target) or target in seen:
        return None
    seen.add(target)
    try:
        fn = parse(target)
    except TransformError:          # no source: the compile reports it at the call
        return None
    for node in walk(fn.node):
        if isinstance(node, gast.Call):
            callee = resolve(fn, node.func, None)
            kind = collectives.kind_of(callee)
            if kind is not None and _axis_name_of(node, kind) == axis_name:
                return kind
            kind = _collective_reached(callee, axis_name, seen)
            if kind is not None:
                return kind
    return None


def _axis_name_of(node: gast.Call, kind: str):
    position = 0 if kind == "axis_index" else 1
    for k in node.keywords:
        if k.arg == "axis_name":
            return _literal(k.value)
    return _literal(node.args[position]) if len(node.args) > position else None


def _literal(expr):
    return expr.value if isinstance(expr, gast.Constant) else expr


def _keyword(call: gast.Call, name: str):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return gast.Constant(None, None)


def _constant(fn: Function, expr):
    """The value of a literal, or of a name bound in `fn`'s environment; ValueError."""
    if isinstance(expr, gast.Name) and expr.id in fn.env:
        return fn.env[expr.id]
    try:
        return gast.literal_eval(expr)
    except (ValueError, TypeError, AttributeError):
        raise ValueError("not a constant") from None


def _assign(name: str, value, at) -> gast.Assign:
    node = gast.Assign([gast.Name(name, gast.Store(), None, None)], value, None)
    return gast.copy_location(node, at)


# ====================================================================== stages and liveness
def _build(fn: Function, pieces: list, reads_axis_index: bool) -> tuple:
    params = list(fn.params) + ([AXIS_INDEX] if reads_axis_index else [])
    live_after = _live_in_each(pieces, params)
    stages, inputs = [], tuple(params)
    for k, (body, boundaries) in enumerate(pieces):
        last = k == len(pieces) - 1
        if not last:
            _refuse_return(fn, body)
            stored = _stored(body)          # the rest keep the values the executor holds
            keep = tuple(n for n in live_after[k + 1] if n in stored)
            outputs = keep + tuple(b.source for b in boundaries)
            body = body + [_return(outputs, fn.node)]
        else:
            outputs = ()
        node = _function_node(fn, k, inputs, body, len(pieces))
        label = f"pmap stage {k + 1} of {len(pieces)}"
        stages.append(Stage(fn.with_transform(node, label), inputs, outputs,
                            tuple(boundaries)))
        if not last:
            inputs = live_after[k + 1]
    return tuple(stages)


def _live_in_each(pieces: list, params: list) -> list:
    """For each stage, the local names it reads before writing them (in order of first
    appearance), among the parameters and the names the stages before it may bind."""
    bound: list = list(params)
    defined_before = []
    for body, boundaries in pieces:
        defined_before.append(list(bound))
        for stmt in body:
            for n in walk(stmt):
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) \
                        and n.id not in bound:
                    bound.append(n.id)
        bound.extend(b.target for b in boundaries)
    result, live = [None] * len(pieces), set()
    for k in range(len(pieces) - 1, -1, -1):
        for stmt in reversed(pieces[k][0]):
            live = (live - _must_bind(stmt)) | _reads(stmt)
        result[k] = live
    return [tuple(n for n in (defined_before[k] if k else []) if n in result[k])
            for k in range(len(pieces))]


def _stored(body) -> set:
    return {n.id for stmt in body for n in walk(stmt)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _must_bind(stmt) -> set:
    if isinstance(stmt, gast.Assign):
        return {t.id for t in stmt.targets if isinstance(t, gast.Name)}
    if isinstance(stmt, gast.AnnAssign) and isinstance(stmt.target, gast.Name) \
            and stmt.value is not None:
        return {stmt.target.id}
    return set()


def _reads(stmt) -> set:
    simple = isinstance(stmt, (gast.Assign, gast.AnnAssign, gast.Expr, gast.Return))
    names = set()
    for n in walk(stmt):
        if isinstance(n, gast.Name) and (not simple or not isinstance(n.ctx, gast.Store)):
            names.add(n.id)
    return names


def _refuse_return(fn: Function, body) -> None:
    for stmt in body:
        for n in walk(stmt):
            if isinstance(n, gast.Return):
                raise error_at(fn, n, "return before a collective: pmap splits the "
                               "function at its collectives and only the last stage may "
                               "return", hint="return after the last collective (keep the "
                                              "early result in a variable)")


def _return(names, at) -> gast.Return:
    elts = [gast.Name(n, gast.Load(), None, None) for n in names]
    node = gast.Return(gast.Tuple(elts, gast.Load()))
    node.lineno, node.col_offset = at.lineno, at.col_offset
    return node


def _function_node(fn: Function, k: int, inputs, body, count: int) -> gast.FunctionDef:
    args = gast.arguments([gast.Name(n, gast.Param(), None, None) for n in inputs], [],
                          None, [], [], None, [])
    name = fn.name if count == 1 else f"{fn.name}_stage{k + 1}"
    node = gast.FunctionDef(name, args, body or [gast.Pass()], [], None, None)
    return gast.copy_location(node, fn.node)
