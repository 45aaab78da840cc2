"""A dict literal a function builds and only reads: its items under names of their own.

JAX code collects results in a dict (`metrics = {"loss": l, "acc": a}`) that it reads by
key and returns. Numba types such a dict, holding values of different types, as a literal
dict: `d["loss"]` does not compile once secant checks the key (`checked(d, "loss", ...)`
is not a constant to Numba), and a compiled function cannot hand the dict back to Python.

`items_as_names` rewrites, for each name bound once to a dict literal with string keys and
otherwise only read by a constant key or returned (alone or inside a returned literal):

    d = {"a": x, "b": s}            d_a = x
                                    d_b = s
                                    d = {"a": d_a, "b": d_b}
    y = d["a"] * 2.0         ->     y = d_a * 2.0
    return d                        return {"a": d_a, "b": d_b}

Invariant: nothing can add, drop or replace an item of such a dict, and its item names are
bound at the statement that binds it and nowhere else, so `d_a` holds `d["a"]` wherever
`d` can be read (the same object: an array the dict holds, written in place, is seen
through both). A returned literal is rebuilt as a dict by `pytree_returns`. A read of a
key the literal lacks is left as written (Python raises KeyError there too).
"""
from __future__ import annotations

import gast

from .function import Function
from .names import Namer, name_counts
from .nodes import copy_tree, literal_nodes, own_returns, walk
from .syntax import assign, const, name


def items_as_names(fn: Function) -> Function:
    """`fn` with each read-only local dict's items under names of their own (see the
    module docstring)."""
    dicts = _read_only_dicts(fn.node)
    if not dicts:
        return fn
    node = copy_tree(fn.node)
    namer = Namer(n.id for n in walk(node) if isinstance(n, gast.Name))
    items = {}                       # dict name -> (key, item name) pairs

    def literal(pairs) -> gast.Dict:
        return gast.Dict(keys=[const(k) for k, _ in pairs], values=[name(n) for _, n in pairs])

    for body_owner in walk(node):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(body_owner, field, None)
            if not isinstance(body, list):
                continue
            rewritten = []
            for stmt in body:
                target = stmt.targets[0].id if isinstance(stmt, gast.Assign) and \
                    len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
                    else None
                if target in dicts and isinstance(stmt.value, gast.Dict):
                    pairs = [(k.value, namer.fresh(f"{target}_{k.value}" if k.value.isidentifier()
                                             else f"{target}_item"))
                             for k in stmt.value.keys]
                    items[target] = pairs
                    for (_, item), value in zip(pairs, stmt.value.values):
                        rewritten.append(gast.copy_location(assign(item, value), stmt))
                    stmt.value = gast.copy_location(literal(pairs), stmt.value)
                rewritten.append(stmt)
            setattr(body_owner, field, rewritten)

    class Reads(gast.NodeTransformer):
        def visit_Subscript(self, sub):
            self.generic_visit(sub)
            if isinstance(sub.ctx, gast.Load) and isinstance(sub.value, gast.Name) and \
                    sub.value.id in items and isinstance(sub.slice, gast.Constant):
                item = dict(items[sub.value.id]).get(sub.slice.value)
                if item is not None:
                    return gast.copy_location(name(item), sub)
            return sub
    Reads().visit(node)

    def written_out(value):
        if isinstance(value, gast.Name) and value.id in items:
            return gast.copy_location(literal(items[value.id]), value)
        if isinstance(value, (gast.Tuple, gast.List)):
            value.elts = [written_out(e) for e in value.elts]
        elif isinstance(value, gast.Dict):
            value.values = [written_out(v) for v in value.values]
        return value
    for ret in own_returns(node):
        if ret.value is not None:
            ret.value = written_out(ret.value)
    return fn.replace(node=node)


def _read_only_dicts(node) -> dict:
    """Names bound once in the function `node`, to a dict literal with constant keys, and
    otherwise only returned or read by a constant key: name -> the keys."""
    stores = name_counts(node, gast.Store)
    found = {}
    for sub in walk(node):
        if isinstance(sub, gast.Assign) and len(sub.targets) == 1 and \
                isinstance(sub.targets[0], gast.Name) and isinstance(sub.value, gast.Dict) \
                and stores.get(sub.targets[0].id) == 1 and sub.value.keys and \
                all(isinstance(k, gast.Constant) and isinstance(k.value, str)
                    for k in sub.value.keys):
            target, keys = sub.targets[0].id, tuple(k.value for k in sub.value.keys)
            # each key once; no value reads the dict itself (an earlier pass's dict, in
            # a loop: its item names are bound again before such a read)
            if len(set(keys)) == len(keys) and not any(
                    isinstance(n, gast.Name) and n.id == target
                    for value in sub.value.values for n in walk(value)):
                found[target] = keys
    if not found:
        return found
    allowed = set()
    for sub in walk(node):
        if isinstance(sub, gast.Return) and sub.value is not None:
            allowed |= {id(n) for n in literal_nodes(sub.value) if isinstance(n, gast.Name)}
        if isinstance(sub, gast.Subscript) and isinstance(sub.ctx, gast.Load) and \
                isinstance(sub.slice, gast.Constant) and isinstance(sub.value, gast.Name):
            allowed.add(id(sub.value))
    for sub in walk(node):
        if isinstance(sub, gast.Name) and sub.id in found and \
                isinstance(sub.ctx, (gast.Load, gast.Del)) and id(sub) not in allowed:
            found.pop(sub.id)
    return found

