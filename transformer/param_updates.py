"""`p += v` on a parameter `p` written as an in-place update of the caller's array.

Desugar writes an augmented assignment in place only where another name of the function
may hold the array; a parameter's array is also held by the caller, so passes that must show
the caller the write (vmap, CUDA threads) prepare the function with `updates_in_place` first.
"""
from __future__ import annotations


import gast

from .function import Function
from .names import Namer
from .nodes import copy_tree
from .runtime import update_in_place
from .syntax import assign, call, name


def updates_in_place(fn: Function) -> Function:
    """`p += v` on a parameter as `p = update_in_place(p, p + v)`: the caller's array
    holds it too, so an array argument is written in place (a number is rebound), as a
    Python loop over the examples writes each example's array. Desugar writes in place
    only where another name of the function may hold the array."""
    params = set(fn.params)
    updates = [n for n in _own_statements(fn.node.body) if isinstance(n, gast.AugAssign)
               and isinstance(n.target, gast.Name) and n.target.id in params]
    if not updates:
        return fn
    node, env = copy_tree(fn.node), dict(fn.env)
    key = next((k for k, v in env.items() if v is update_in_place), None)
    if key is None:
        key = Namer.for_function(fn).fresh("update_in_place")
        env[key] = update_in_place
    _InPlace(params, key).visit(node)
    return fn.replace(node=node, env=env)


def _own_statements(stmts):
    """The statements of a body, nested blocks included, not those of inner functions."""
    for stmt in stmts:
        yield stmt
        if not isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                yield from _own_statements(getattr(stmt, field, None) or [])


class _InPlace(gast.NodeTransformer):
    """Rewrites `p += v` on the given parameters; inner functions and lambdas keep theirs."""

    def __init__(self, params: set, key: str):
        self.params, self.key = params, key
        self._inside = False

    def visit_FunctionDef(self, node):
        if self._inside:
            return node                 # an inner function's names are its own
        self._inside = True
        self.generic_visit(node)
        return node

    def visit_Lambda(self, node):
        return node

    def visit_AugAssign(self, node):
        target = node.target
        if not (isinstance(target, gast.Name) and target.id in self.params):
            return node
        value = gast.BinOp(left=name(target.id), op=node.op, right=node.value)
        return gast.copy_location(assign(target, call(name(self.key), name(target.id), value)),
                                  node)
