"""Specialize: fold static argument values into the source as constants.

`specialize(fn, {"mode": "train", "n": 8})` removes those parameters; literal values
(numbers, strings, booleans, None, tuples of them) replace every read of the parameter,
so `range(n)` gets a literal bound; other hashable values are bound in the environment.
Then constant expressions are folded and `if` statements on constants lose their dead
branch, which `secant show --static` makes visible.

Invariant of the output: no parameter named in `values`; no `if` whose test is a Constant.
"""
from __future__ import annotations

import copy
import operator

import gast

from .function import Function
from .names import assigned_names
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
    node = copy.deepcopy(fn.node)
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
            prologue.append(assign(store(param), _literal_node(value)))
        elif is_literal(value):
            literal[param] = value
        else:
            env[param] = value
    node.body = prologue + _Fold(literal).visit_block(node.body)
    if not node.body:
        node.body = [gast.Pass()]
    return fn.replace(node=node, env=env)


def fold_constants(fn: Function) -> Function:
    node = copy.deepcopy(fn.node)
    node.body = _Fold({}).visit_block(node.body) or [gast.Pass()]
    return fn.replace(node=node)


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


def _literal_node(value):
    if isinstance(value, tuple):
        return gast.Tuple(elts=[_literal_node(v) for v in value], ctx=gast.Load())
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
            return gast.copy_location(_literal_node(self.literal[node.id]), node)
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
        node.body = self.visit_block(node.body) or [gast.Pass()]
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
        if len(node.ops) != 1:
            return node
        return self._fold(node, _CMPOPS.get(type(node.ops[0])), node.left, node.comparators[0])

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        values = [_constant_value(v) for v in node.values]
        if all(ok for ok, _ in values):
            result = values[0][1]
            for _, v in values[1:]:
                result = (result and v) if isinstance(node.op, gast.And) else (result or v)
            return gast.copy_location(const(result), node)
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
        return gast.copy_location(_literal_node(value), node)
