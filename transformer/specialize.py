"""Specialize: fold static argument values into the source as constants.

`specialize(fn, {"mode": "train", "n": 8})` removes those parameters; literal values
(numbers, strings, booleans, None, tuples of them) replace every read of the parameter,
so `range(n)` gets a literal bound; other hashable values are bound in the environment.
Then constant expressions are folded and `if` statements on constants lose their dead
branch, which `secant show --static` makes visible.

`fold_constants` is that folding alone; `desugar` runs it on every function a
transformation reads. Numba prunes a branch on a constant itself, and when it does so
after building SSA form (a condition name bound twice, as a generated gradient binds it
in both sweeps) it keeps the phi nodes of names bound only in the dead branch: a name
whose every binding is gone then has no type ("Type of variable ... cannot be
determined"). A branch folded here is gone before any sweep mirrors it.

Invariant of the output: no parameter named in `values`; no `if` or `while` whose test
is a Constant, but `while True`.
"""
from __future__ import annotations

import operator

import gast

from .function import Function
from .names import assigned_names, loaded_names
from .nodes import copy_tree, walk
from .syntax import assign, const, store

_LITERALS = (bool, int, float, complex, str, type(None))

_BINOPS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
           gast.Div: operator.truediv, gast.FloorDiv: operator.floordiv,
           gast.Mod: operator.mod, gast.Pow: operator.pow}
_CMPOPS = {gast.Eq: operator.eq, gast.NotEq: operator.ne, gast.Lt: operator.lt,
           gast.LtE: operator.le, gast.Gt: operator.gt, gast.GtE: operator.ge,
           gast.Is: operator.is_, gast.IsNot: operator.is_not}
_UNARY = {gast.USub: operator.neg, gast.UAdd: operator.pos, gast.Not: operator.not_}
_JUMPS = (gast.Return, gast.Raise, gast.Break, gast.Continue)


def is_literal(value) -> bool:
    if isinstance(value, tuple):
        return all(is_literal(v) for v in value)
    return isinstance(value, _LITERALS)


def specialize(fn: Function, values: dict) -> Function:
    node = copy_tree(fn.node)
    env = dict(fn.env)
    args = node.args
    _drop_params(args, set(values))
    reassigned = assigned_names(gast.Module(body=node.body, type_ignores=[]))
    prologue = []
    literal = {}
    for param, value in values.items():
        if param in reassigned:
            if not is_literal(value):
                raise fn.origin.error(fn.node, f"static argument {param!r} is reassigned "
                                      "in the body and is not a literal",
                                      "do not reassign static arguments")
            prologue.append(assign(store(param), literal_node(value)))
        elif is_literal(value):
            literal[param] = value
        else:
            env[param] = value
    node.body = prologue + _Fold(literal).visit_block(node.body)
    if not node.body:
        node.body = [gast.Pass()]
    return fn.replace(node=node, env=env)


def fold_constants(fn: Function) -> Function:
    """`fn` with constant expressions folded and its branches on constants pruned.

    A test is constant when it reads literals and names whose value is known before the
    run: a global or closure value that is a literal and that the body never binds (a
    rebinding makes the transformed function rebuild), or a local name whose one
    reaching binding is a literal (`k = 2` earlier in the block or an enclosing one,
    with no rebinding between; in a loop, none in the loop). Numba folds those alike.

    A name bound only in a dead branch and read elsewhere would be free once the branch
    is gone (Python raises UnboundLocalError at that read): such a function is kept as
    written.
    """
    node = copy_tree(fn.node)
    bound = assigned_names(node)
    frozen = {key: value for key, value in fn.env.items()
              if key not in bound and type(value) in _LITERALS}
    _StaticTests(frozen).block(node.body, {})
    node.body = _Fold({}).visit_block(node.body) or [gast.Pass()]
    if (assigned_names(fn.node) - assigned_names(node)) & loaded_names(node):
        return fn
    return fn.replace(node=node)


class _StaticTests:
    """Replaces each `if` and `while` test whose value is known before the run by it."""

    def __init__(self, frozen: dict):
        self.frozen = frozen

    def block(self, stmts: list, known: dict) -> None:
        known = dict(known)
        for stmt in stmts:
            self.statement(stmt, known)
            for bound in assigned_names(stmt):
                known.pop(bound, None)
            if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], gast.Name):
                ok, value = _constant_value(self.value(stmt.value, known))
                if ok:
                    known[stmt.targets[0].id] = value

    def statement(self, stmt, known: dict) -> None:
        if isinstance(stmt, gast.If):
            stmt.test = self.value(stmt.test, known)
            self.block(stmt.body, known)
            self.block(stmt.orelse, known)
        elif isinstance(stmt, (gast.For, gast.While)):
            rebound = assigned_names(stmt)       # at every trip, what the loop binds
            inner = {key: v for key, v in known.items() if key not in rebound}
            if isinstance(stmt, gast.While):
                stmt.test = self.value(stmt.test, inner)
            self.block(stmt.body, inner)
            self.block(stmt.orelse, inner)

    def value(self, expr, known: dict):
        """`expr` folded to a Constant if the known names make it one, else as it was."""
        folded = _Substituted({**self.frozen, **known}).visit(copy_tree(expr))
        if isinstance(folded, gast.Constant) or \
                not any(getattr(sub, "secant_substituted", False) for sub in walk(folded)):
            return folded
        return expr                   # a known name feeds a value that is not constant


def _drop_params(args, names: set) -> None:
    positional = args.posonlyargs + args.args
    n_defaults = len(args.defaults)
    first_default = len(positional) - n_defaults
    keep, defaults = [], []
    for i, a in enumerate(positional):
        if a.id in names:
            continue
        keep.append(a)
        if i >= first_default:
            defaults.append(args.defaults[i - first_default])
    n_posonly = len([a for a in args.posonlyargs if a.id not in names])
    args.posonlyargs, args.args = keep[:n_posonly], keep[n_posonly:]
    args.defaults = defaults
    kw = [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if a.id not in names]
    args.kwonlyargs = [a for a, _ in kw]
    args.kw_defaults = [d for _, d in kw]


def literal_node(value):
    """The expression of literal `value` (`is_literal`), tuples nested."""
    if isinstance(value, tuple):
        return gast.Tuple(elts=[literal_node(v) for v in value], ctx=gast.Load())
    return const(value)


def _constant_value(node):
    """(True, value) if `node` is a literal constant or tuple of them."""
    if isinstance(node, gast.Constant):
        return True, node.value
    if isinstance(node, gast.Tuple):
        parts = [_constant_value(e) for e in node.elts]
        if all(ok for ok, _ in parts):
            return True, tuple(v for _, v in parts)
    return False, None


class _Fold(gast.NodeTransformer):
    def __init__(self, literal: dict):
        self.literal = literal

    def visit_block(self, stmts):
        out = []
        for stmt in stmts:
            result = self.visit(stmt)
            if result is None:
                continue
            out.extend(result if isinstance(result, list) else [result])
            if out and isinstance(out[-1], _JUMPS):
                break              # what follows a folded-in `return` is unreachable
        return out

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id in self.literal:
            return gast.copy_location(literal_node(self.literal[node.id]), node)
        return node

    def visit_If(self, node):
        node.test = self.visit(node.test)
        ok, value = _constant_value(node.test)
        if ok:
            kept = self.visit_block(node.body if value else node.orelse)
            return kept or None
        node.body = self.visit_block(node.body) or [gast.Pass()]
        node.orelse = self.visit_block(node.orelse)
        return node

    def visit_For(self, node):
        self.generic_visit(node)
        node.body = self.visit_block(node.body) or [gast.Pass()]
        return node

    def visit_While(self, node):
        node.test = self.visit(node.test)
        ok, value = _constant_value(node.test)
        if ok and not value:           # never entered: only its `else` runs
            return self.visit_block(node.orelse) or None
        node.body = self.visit_block(node.body) or [gast.Pass()]
        node.orelse = self.visit_block(node.orelse)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        ok, value = _constant_value(node.test)
        if ok:
            return node.body if value else node.orelse
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        return self._fold(node, _BINOPS.get(type(node.op)), node.left, node.right)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        return self._fold(node, _UNARY.get(type(node.op)), node.operand)

    def visit_Compare(self, node):
        self.generic_visit(node)
        operands = [node.left, *node.comparators]
        result = True
        for op, left, right in zip(node.ops, operands, operands[1:]):   # a < b < c
            folded = self._fold(node, _CMPOPS.get(type(op)), left, right)
            if folded is node:
                return node
            result = result and folded.value
        return gast.copy_location(const(result), node)

    def visit_BoolOp(self, node):
        """Leading constant operands go as Python evaluates them: `False and x` is False,
        `True and x` is x (`or` alike)."""
        self.generic_visit(node)
        values = list(node.values)
        while values:
            ok, value = _constant_value(values[0])
            if not ok:
                break
            if len(values) == 1 or bool(value) != isinstance(node.op, gast.And):
                return gast.copy_location(literal_node(value), node)
            values.pop(0)
        if len(values) == 1:
            return values[0]
        node.values = values
        return node

    @staticmethod
    def _fold(node, op, *operands):
        if op is None:
            return node
        parts = [_constant_value(o) for o in operands]
        if not all(ok for ok, _ in parts):
            return node
        try:
            value = op(*(v for _, v in parts))
        except Exception:  # leave e.g. 1 / 0 to fail at run time, as Python would
            return node
        if not is_literal(value):
            return node
        return gast.copy_location(literal_node(value), node)


class _Substituted(_Fold):
    """`_Fold` that marks the literals it puts for names, to tell whether all folded."""

    def visit_Name(self, node):
        new = super().visit_Name(node)
        if new is not node:
            new.secant_substituted = True
        return new
