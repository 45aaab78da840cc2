"""Rebound names: one name per straight-line binding, so that a name rebound to a value of
another shape (`x = np.sum(x); x = x * x`) is two variables, each of one shape.

Input: a desugared Function (every assignment has one target). Output: the same function
where each name assigned only by top-level `name = ...` statements of the body (a
parameter counts as its first binding), and more than once, gets a fresh name at each
binding after the first; every read between two bindings reads the name the first of
them binds. Names assigned inside a block (a loop, a branch) are left alone: their
readers may see either binding, so they keep one variable (reverse mode tapes them).
The rewrite changes no value: each read still reads the most recent binding.
"""
from __future__ import annotations


import gast

from .function import Function
from .names import Namer
from .nodes import copy_tree, walk


def split_rebound_names(fn: Function) -> Function:
    candidates = _straight_line_names(fn.node)
    if not candidates:
        return fn
    namer = Namer.for_function(fn)
    node = copy_tree(fn.node)
    # each statement its own nodes: earlier passes may share one Name node between
    # statements (an unrolled loop's copies), and the renames below are in place
    node.body = [copy_tree(stmt) for stmt in node.body]
    params = {a.id for a in fn.node.args.args + fn.node.args.kwonlyargs}
    current = {n: n for n in candidates}
    bound = {n for n in candidates if n in params}
    for stmt in node.body:
        targets = stmt.targets if isinstance(stmt, gast.Assign) else []
        _rename_loads(stmt, current)
        for target in targets:
            if isinstance(target, gast.Name) and target.id in candidates:
                original = target.id
                if original in bound:
                    current[original] = namer.fresh(original)
                    target.id = current[original]
                bound.add(original)
    return fn.replace(node=node)


def _straight_line_names(fn_node) -> set:
    """Names bound more than once, all by top-level single-target assignments."""
    top = {}
    for stmt in fn_node.body:
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
                isinstance(stmt.targets[0], gast.Name):
            top[stmt.targets[0].id] = top.get(stmt.targets[0].id, 0) + 1
    everywhere = {}
    for sub in walk(fn_node):
        if isinstance(sub, gast.Name) and isinstance(sub.ctx, (gast.Store, gast.Del)):
            everywhere[sub.id] = everywhere.get(sub.id, 0) + 1
    params = {a.id for a in fn_node.args.args + fn_node.args.kwonlyargs}
    return {n for n, count in top.items()
            if everywhere.get(n) == count and count + (n in params) > 1}


def _rename_loads(stmt, current: dict) -> None:
    """Point every read in `stmt` (its targets' subscripts included) at the current name."""
    for sub in walk(stmt):
        if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Load) and \
                sub.id in current:
            sub.id = current[sub.id]
