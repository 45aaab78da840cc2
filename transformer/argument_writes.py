"""Which statements write into the arrays a function's caller passed: a path-aware
reading of a normalized Function (desugared, ANF).

`argument_writes(fn, writes_of)` follows, statement by statement and along every path, the
names that may hold (a view of) each parameter's array as it was passed: a parameter holds
its own at entry, `a = x` or `a = x[1:]` (`desugar.view_sources`) makes `a` hold what `x`
holds, and any other binding (`a = a + v`, `a = x.copy()`) makes `a` hold a new value.
After a branch a name holds a parameter's array if it does on some path; a loop is read
until nothing changes, and after it a name holds what it holds at the end of some run of
the body, at a `break` or `continue`, or, where the loop may run zero times, before it.
`writes_of(node)` names the arrays one node writes in place (`a[i] = v`,
`update_in_place(a, v)`, a writing call).

Invariant: over-approximates on every path, as `aliases.written_alias_groups` does across
the whole function: a write left out cannot reach the caller's array, whatever path runs.
"""
from __future__ import annotations

import ast
import dataclasses
from typing import Callable

import gast

from .desugar import view_sources
from .function import Function, resolve

@dataclasses.dataclass(frozen=True)
class ArgumentWrite:
    """A statement that may write into the array passed as `param`, through `name`, bound
    to that array by `binding` (None: `name` is the parameter)."""
    param: str
    stmt: gast.stmt
    name: str
    binding: gast.stmt | None


def argument_writes(fn: Function, writes_of: Callable) -> list[ArgumentWrite]:
    """The writes into arrays the caller passed, in the order of the source lines."""
    reader = _Reader(fn, writes_of)
    reader.block(fn.node.body, frozenset((p, p, None) for p in fn.params))
    return sorted(reader.found.values(), key=lambda w: getattr(w.stmt, "lineno", 0) or 0)


class _Reader:
    """Runs the statements on states, sets of (name, parameter, the statement that bound the
    name to the parameter's array, None for the parameter itself); `block` returns the
    state after a block and the states at its `break` and `continue` statements."""

    def __init__(self, fn: Function, writes_of: Callable):
        self.fn, self.writes_of = fn, writes_of
        self.found: dict = {}

    def block(self, stmts, state: frozenset):
        breaks, continues = set(), set()
        for stmt in stmts:
            state, b, c = self.statement(stmt, state)
            breaks |= b
            continues |= c
        return state, frozenset(breaks), frozenset(continues)

    def statement(self, stmt, state: frozenset):
        none = frozenset()
        if isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            return state, none, none
        if isinstance(stmt, gast.If):
            self.note(stmt.test, stmt, state)
            body = self.block(stmt.body, state)
            orelse = self.block(stmt.orelse, state)
            return body[0] | orelse[0], body[1] | orelse[1], body[2] | orelse[2]
        if isinstance(stmt, (gast.For, gast.While)):
            return self.loop(stmt, state)
        if any(isinstance(getattr(stmt, f, None), list) and getattr(stmt, f)
               for f in ("body", "orelse", "finalbody", "handlers")):
            return self.other_block(stmt, state), none, none
        self.note(stmt, stmt, state)
        if isinstance(stmt, gast.Break):
            return none, state, none
        if isinstance(stmt, gast.Continue):
            return none, none, state
        if isinstance(stmt, (gast.Return, gast.Raise)):
            return none, none, none
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
            return _bind(state, stmt.targets[0].id, view_sources(self.fn, stmt.value), stmt), \
                none, none
        return state, none, none

    def note(self, node, stmt, state: frozenset) -> None:
        """Record the writes of `node` (a part of `stmt`) into a parameter's array."""
        for sub in gast.walk(node):
            for written in self.writes_of(sub):
                for name, param, binding in state:
                    if name == written:
                        self.found.setdefault((param, id(stmt)),
                                              ArgumentWrite(param, stmt, name, binding))

    def loop(self, stmt, entry: frozenset):
        if isinstance(stmt, gast.While):
            self.note(stmt.test, stmt, entry)
        head = entry
        while True:                  # the states at the top of the body grow to a fixpoint
            end, breaks, continues = self.block(stmt.body, self.iteration_start(stmt, head))
            back = end | continues
            if isinstance(stmt, gast.While):
                self.note(stmt.test, stmt, back)
            following = entry | back
            if following == head:
                break
            head = following
        done = back if _runs_at_least_once(self.fn, stmt) else back | entry
        # an `else` block's `break` and `continue` belong to an enclosing loop
        done, outer_breaks, outer_continues = self.block(stmt.orelse, done)
        return done | breaks, outer_breaks, outer_continues

    def iteration_start(self, stmt, state: frozenset) -> frozenset:
        """`state` with a `for` loop's target bound to this iteration's item."""
        if not isinstance(stmt, gast.For) or not isinstance(stmt.target, gast.Name):
            return state
        self.note(stmt.iter, stmt, state)
        sources = set() if _is_range(self.fn, stmt.iter) else view_sources(self.fn, stmt.iter)
        return _bind(state, stmt.target.id, sources, stmt)

    def other_block(self, stmt, entry: frozenset) -> frozenset:
        """A statement holding blocks of another kind (`with`, `try`): its blocks in any
        order, any number of times."""
        blocks = [s for f in ("body", "handlers", "orelse", "finalbody")
                  for s in getattr(stmt, f, None) or [] if isinstance(s, gast.stmt)]
        handlers = [s for h in getattr(stmt, "handlers", None) or [] for s in h.body]
        state = entry
        while True:
            end, breaks, continues = self.block(blocks + handlers, state)
            following = state | end | breaks | continues
            if following == state:
                return state
            state = following


def _bind(state: frozenset, target: str, sources: set, stmt) -> frozenset:
    """`state` after `target = value`, `value` sharing the arrays of `sources`."""
    kept = frozenset(h for h in state if h[0] != target)
    return kept | {(target, param, stmt) for name, param, _ in state if name in sources}


def _is_range(fn: Function, node) -> bool:
    return isinstance(node, gast.Call) and resolve(fn, node.func, None) is range


def _runs_at_least_once(fn: Function, stmt) -> bool:
    """Whether loop `stmt` surely runs its body: `for` over a range of int constants that
    is not empty, or `while True`."""
    if isinstance(stmt, gast.While):
        return isinstance(stmt.test, gast.Constant) and stmt.test.value is True
    if not _is_range(fn, stmt.iter) or stmt.iter.keywords:
        return False
    bounds = [a.value if isinstance(a, gast.Constant) else None for a in stmt.iter.args]
    if not all(isinstance(b, int) and not isinstance(b, bool) for b in bounds):
        return False
    try:
        return len(range(*bounds)) > 0
    except (TypeError, ValueError):
        return False


# ------------------------------------------------------------------------ what to write instead
def write_hint(fn: Function, write: ArgumentWrite) -> str:
    """Where `write` happens and how to write it so that it does not reach the caller:
    an augmented assignment as a binding of a new value (`a = a + v`), or a copy where its
    name gets the parameter's array (`a = x.copy()`)."""
    line = _line_text(fn, write.stmt)
    where = f"`{line}` at {fn.origin.where(write.stmt)}" if line else \
        fn.origin.where(write.stmt)
    if write.binding is None:
        passed = "the caller's array"
        copied = f"copy first (`{write.param} = {write.param}.copy()`)"
    else:
        passed = f"the array passed as `{write.param}`"
        binding = _line_text(fn, write.binding)
        at = fn.origin.where(write.binding)
        copied = f"bind a copy at {at} (`{_as_copy(binding)}`)" if _as_copy(binding) else \
            f"copy the array where it is bound, at {at} (`{binding}`)"
    rebound = _as_binding(line)
    instead = f"write `{rebound}` (a new array), or {copied}" if rebound else copied
    return f"{where} writes into {passed}: {instead}"


def _line_text(fn: Function, stmt) -> str | None:
    """The user's statement at `stmt`'s line, without its comment."""
    text = fn.origin.source_line(getattr(stmt, "lineno", None))
    whole = _one_statement(text.strip() if text else None)
    return ast.unparse(whole) if whole is not None else text.strip() if text else None


def _as_binding(line: str | None) -> str | None:
    """`a += v` as `a = a + v`; None for another statement."""
    stmt = _one_statement(line)
    if not isinstance(stmt, ast.AugAssign):
        return None
    value = ast.BinOp(left=stmt.target, op=stmt.op, right=stmt.value)
    return f"{ast.unparse(stmt.target)} = {ast.unparse(value)}"


def _as_copy(line: str | None) -> str | None:
    """`a = x` as `a = x.copy()`; None for another statement."""
    stmt = _one_statement(line)
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or \
            not isinstance(stmt.targets[0], ast.Name):
        return None
    value = ast.unparse(stmt.value)
    if not isinstance(stmt.value, (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
        value = f"({value})"
    return f"{stmt.targets[0].id} = {value}.copy()"


def _one_statement(line: str | None):
    """The statement a source line holds alone, else None."""
    try:
        body = ast.parse(line or "").body
    except SyntaxError:
        return None
    return body[0] if len(body) == 1 else None
