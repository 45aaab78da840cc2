"""Unroll short constant loops before reverse mode: `for k in range(3)` becomes three copies.

A loop over the components of a vector (`for k in range(3): dk = pos[i, k] - pos[j, k];
r2 += dk * dk`) carries `r2` from trip to trip, so inside a pair loop the reverse sweep
would record `r2` once per pair and re-run the loop again in its own sweep (a tape of one
float per pair, and a forward sweep it cannot drop). Written out as three copies, the same
statements form one straight block: every value has one assignment after renaming
(prepare.py), the reverse sweep recomputes them, and the forward loops go (the `dx, dy, dz`
form of the same energy). The copies run the same operations in the same order, so every
value is bit-for-bit the one the loop computes.

A loop is unrolled when all of these hold:
- it is `for k in range(...)` over the builtin `range` with integer literal bounds and at
  most `MAX_TRIPS` (at least one) trips, and has no `else`;
- its body is short (at most `MAX_STATEMENTS` statements, `if` blocks included) and holds
  no loop, `break`, `continue`, `return`, nested function or comprehension, never assigns
  `k`, and writes no array in place (`y[k] = v`: what reverse mode refuses about such
  writes in a loop, at transformation time, stays as it is);
- `k` is read nowhere outside the body of a loop over `k`, so its value after the loop (the
  last trip's) is never observed and the copies need not set it.
Each copy replaces the reads of `k` with its trip's integer; statements keep their source
locations, so errors still point at the user's line.

Input: a Function after `desugar` (augmented assignments expanded, loops over `range`).
Output: the same Function with those loops replaced by their copies; nothing else changes.
"""
from __future__ import annotations


import gast

from ..function import Function, resolve
from ..nodes import copy_tree, walk
from ..syntax import const

MAX_TRIPS = 4
MAX_STATEMENTS = 16

_REFUSED = (gast.For, gast.While, gast.Break, gast.Continue, gast.Return, gast.Yield,
            gast.YieldFrom, gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda,
            gast.ClassDef, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp,
            gast.Global, gast.Nonlocal, gast.Try, gast.With, gast.NamedExpr)


def unroll_short_loops(fn: Function) -> Function:
    """`fn` with each short constant `for` loop written out (see the module docstring)."""
    if not any(_trips(fn, loop) for loop in walk(fn.node) if isinstance(loop, gast.For)):
        return fn
    node = copy_tree(fn.node)
    _unroll_block(fn, node, node.body)
    return fn.replace(node=node)


def _unroll_block(fn: Function, root, stmts: list) -> None:
    index = 0
    while index < len(stmts):
        stmt = stmts[index]
        for field in ("body", "orelse"):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and not isinstance(stmt, gast.FunctionDef):
                _unroll_block(fn, root, block)
        copies = _copies(fn, root, stmt) if isinstance(stmt, gast.For) else None
        if copies is None:
            index += 1
            continue
        stmts[index:index + 1] = copies
        index += len(copies)


def _copies(fn: Function, root, loop) -> list | None:
    """The statements replacing `loop`, or None where it is not unrolled."""
    trips = _trips(fn, loop)
    if not trips or not _body_allows(loop) or _read_elsewhere(root, loop.target.id):
        return None
    return [_Substitute(loop.target.id, value).visit(copy_tree(stmt))
            for value in trips for stmt in loop.body]


def _trips(fn: Function, loop) -> list | None:
    """The values of the index of `for k in range(<literals>)` (no else), if few enough."""
    if not isinstance(loop, gast.For) or loop.orelse or \
            not isinstance(loop.target, gast.Name) or not isinstance(loop.iter, gast.Call) or \
            loop.iter.keywords or resolve(fn, loop.iter.func, None) is not range:
        return None
    bounds = [_integer(arg) for arg in loop.iter.args]
    if not 1 <= len(bounds) <= 3 or any(b is None for b in bounds) or \
            len(bounds) == 3 and bounds[2] == 0:
        return None
    values = list(range(*bounds))
    return values if 1 <= len(values) <= MAX_TRIPS else None


def _integer(node) -> int | None:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        inner = _integer(node.operand)
        return None if inner is None else -inner
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return node.value
    return None


def _body_allows(loop) -> bool:
    index = loop.target.id
    statements = 0
    for stmt in loop.body:
        for sub in walk(stmt):
            if isinstance(sub, _REFUSED):
                return False
            if isinstance(sub, gast.stmt):
                statements += 1
            if isinstance(sub, gast.Name) and sub.id == index and \
                    not isinstance(sub.ctx, gast.Load):
                return False
            if isinstance(sub, (gast.Subscript, gast.Attribute)) and \
                    not isinstance(sub.ctx, gast.Load):
                return False
    return statements <= MAX_STATEMENTS


def _read_elsewhere(root, index: str) -> bool:
    """Whether `index` is read (or bound other than as a loop index) outside loops over it."""
    inside: set = set()
    targets: set = set()
    for loop in walk(root):
        if isinstance(loop, gast.For) and isinstance(loop.target, gast.Name) and \
                loop.target.id == index:
            targets.add(id(loop.target))
            for stmt in loop.body:
                inside |= {id(sub) for sub in walk(stmt)}
    params = root.args
    for arg in params.posonlyargs + params.args + params.kwonlyargs + \
            [a for a in (params.vararg, params.kwarg) if a is not None]:
        if arg.id == index:
            return True
    return any(isinstance(sub, gast.Name) and sub.id == index and id(sub) not in inside
               and id(sub) not in targets for sub in walk(root))


class _Substitute(gast.NodeTransformer):
    """Replaces every read of the loop index with the trip's integer."""

    def __init__(self, index: str, value: int):
        self.index, self.value = index, value

    def visit_Name(self, node):
        if node.id == self.index and isinstance(node.ctx, gast.Load):
            return gast.copy_location(const(self.value), node)
        return node
