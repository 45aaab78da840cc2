"""Elementwise fusion for Numba: a chain of elementwise NumPy operations in one expression
becomes one call of a `runtime.fused` kernel, which runs one loop over the elements instead
of a loop and a full-size temporary per operation.

Invariant of the output: every expression that is
- built from `+`, `-`, `*`, unary `-`, comparisons, `np.where(c, a, b)` and one-argument
  calls of `np.exp`, `np.expm1`, `np.log`, `np.log1p`, `np.tanh` or `scipy.special.expit`
  (not their `math` forms, which only scalar code calls),
- over names and Python int/float literals (a name bound to a Python int or float outside
  the function counts as a literal: NumPy treats both as weak scalars),
- with every operation given at least one operand that is not a literal (so its dtype is
  the operand's), never a comparison's result as an arithmetic operand, and a `where`
  condition that is a comparison or a name,
- holding at least two operations, one of them a `where` or a call,
is a call `fused_<hash>(a0, a1, ...)` of `runtime.fused.kernel(recipe)` with the names as
arguments in their order of first evaluation. Whether the loop runs is decided by the
kernel from the argument types and shapes (`runtime.fused`); otherwise it evaluates the
original expression. Anything else is left as it was.
"""
from __future__ import annotations

import sys

import gast
import numpy as np

from .function import Function, hashable, resolve
from .names import Namer
from .nodes import copy_tree, walk
from .runtime import fused, vector_math

_BINARY = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*"}
_COMPARE = {gast.Lt: "<", gast.LtE: "<=", gast.Gt: ">", gast.GtE: ">=", gast.Eq: "==",
            gast.NotEq: "!="}
# `math` forms take numbers only: a chain with one is scalar code, with nothing to fuse
_CALLS = {np.exp: "exp", np.expm1: "expm1", np.log: "log", np.log1p: "log1p",
          np.tanh: "tanh"}
_CALLS.update({form: name for name, form in fused.CALLS.items()})


def fuse_elementwise(fn: Function, vector_form) -> Function:
    """`fn` with its elementwise chains as calls of fused kernels (see the module doc);
    `vector_form(target, call)` is None for a call that must keep its own form."""
    fuser = _Fuser(fn, vector_form)
    node = fuser.visit(copy_tree(fn.node))     # `fn` stays as it was: other backends
    return fn.replace(node=node, env=fuser.env) if fuser.changed else fn    # lower it too


class _Fuser(gast.NodeTransformer):
    def __init__(self, fn: Function, vector_form):
        self.fn, self.env = fn, dict(fn.env)
        self.vector_form = vector_form
        self.namer = Namer.for_function(fn)
        self.local = set(fn.params) | {n.id for n in walk(fn.node)
                                       if isinstance(n, gast.Name)
                                       and isinstance(n.ctx, gast.Store)}
        self.changed = False

    def generic_visit(self, node):
        if isinstance(node, gast.expr) and not isinstance(node, (gast.Name, gast.Constant)):
            fused_call = self.fuse(node)
            if fused_call is not None:
                return fused_call
        return super().generic_visit(node)

    def fuse(self, node):
        chain = _Chain(self)
        try:
            recipe, kind = chain.op(node)
        except _NotFusable:
            return None
        if kind == "weak" or chain.operations < 2 or not chain.loops:
            return None
        maker = fused.kernel(recipe, self.fn.origin.where(node))
        name = self.namer.fresh(maker.__name__[:14])
        self.env[name] = maker
        self.changed = True
        call = gast.Call(func=gast.Name(id=name, ctx=gast.Load(), annotation=None,
                                        type_comment=None),
                         args=[gast.Name(id=a, ctx=gast.Load(), annotation=None,
                                         type_comment=None) for a in chain.args],
                         keywords=[])
        return gast.copy_location(call, node)


class _NotFusable(Exception):
    pass


class _Chain:
    """The recipe of one expression: (recipe, kind) per node, kind "value" (an operand of
    the arrays' dtype), "weak" (a literal) or "bool" (a comparison or a name in a mask
    position)."""

    def __init__(self, fuser: _Fuser):
        self.fuser = fuser
        self.args: list[str] = []
        self.operations = 0
        self.loops = False          # a where or a call: what Numba's own fusion stops at

    def operand(self, node, mask: bool = False):
        if isinstance(node, gast.Constant) or (
                isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub)
                and isinstance(node.operand, gast.Constant)):
            value = node.value if isinstance(node, gast.Constant) else -node.operand.value
            if type(value) not in (int, float) or mask:
                raise _NotFusable
            return ("const", value), "weak"
        if isinstance(node, gast.Name):
            return self.name(node.id, mask)
        recipe, kind = self.op(node)
        if mask != (kind == "bool"):
            raise _NotFusable
        return recipe, kind

    def name(self, id_: str, mask: bool):
        if id_ not in self.fuser.local:
            if id_ not in self.fuser.fn.env:
                raise _NotFusable
            value = self.fuser.fn.env[id_]
            if type(value) in (int, float) and not mask:
                return ("const", value), "weak"
        if id_ not in self.args:
            self.args.append(id_)
        return ("arg", self.args.index(id_)), "bool" if mask else "value"

    def value(self, node):
        recipe, kind = self.operand(node)
        if kind == "bool":
            raise _NotFusable
        return recipe, kind

    def op(self, node):
        self.operations += 1
        if isinstance(node, gast.BinOp) and type(node.op) in _BINARY:
            (a, ka), (b, kb) = self.value(node.left), self.value(node.right)
            return ("bin", _BINARY[type(node.op)], a, b), _strong(ka, kb)
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
            a, ka = self.value(node.operand)
            return ("neg", a), _strong(ka)
        if isinstance(node, gast.Compare) and len(node.ops) == 1 \
                and type(node.ops[0]) in _COMPARE:
            (a, ka), (b, kb) = self.value(node.left), self.value(node.comparators[0])
            _strong(ka, kb)
            return ("cmp", _COMPARE[type(node.ops[0])], a, b), "bool"
        if isinstance(node, gast.Call) and not node.keywords \
                and not any(isinstance(a, gast.Starred) for a in node.args):
            return self.call(node)
        raise _NotFusable

    def call(self, node):
        target = resolve(self.fuser.fn, node.func, None) \
            if not (isinstance(node.func, gast.Name) and node.func.id in self.fuser.local) \
            else None
        if not hashable(target):
            raise _NotFusable
        self.loops = True
        if target is np.where and len(node.args) == 3:
            c, _ = self.operand(node.args[0], mask=True)
            (a, ka), (b, kb) = self.value(node.args[1]), self.value(node.args[2])
            return ("where", c, a, b), _strong(ka, kb)
        name = _CALLS.get(target) or _expit(target)
        if name is None or len(node.args) != 1 or self.fuser.vector_form(target, node) is None:
            raise _NotFusable
        a, ka = self.value(node.args[0])
        return ("call", name, a), _strong(ka)


def _strong(*kinds) -> str:
    """An operation's kind: "value" when an operand is one (a literal alone has no dtype
    to follow)."""
    if "value" not in kinds:
        raise _NotFusable
    return "value"


def _expit(target):
    special = sys.modules.get("scipy.special")
    if special is not None and target is getattr(special, "expit", None):
        return "expit"
    return "expit" if target is vector_math.vector_expit else None
