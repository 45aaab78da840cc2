"""Containers returned under jit: returned as tuples, which Numba can box, and rebuilt.

A compiled function cannot return a dict, a namedtuple or a dataclass, nor a list of arrays
of different types; `returned_containers` rewrites the returns of such literals (nested in
one another and in tuples) into tuples of their entries and gives back the function that
rebuilds them in Python (the other half of the pytree boundary in
`pytrees.py`, which flattens containers passed in).
"""
from __future__ import annotations

import dataclasses
import functools

import gast

from .function import Function, resolve
from .local_dicts import items_as_names
from .nodes import copy_tree, walk


def returned_containers(fn: Function):
    """(new Function, rebuild) when every return is a literal of one container shape: a
    dict literal with constant keys, a list or tuple literal, or a call of a namedtuple or
    dataclass class (`State(x, v)`), nested (`return value, [{"W": w, "b": b}]`), holding
    at least one that is not a plain tuple. The new Function returns nested tuples in
    their place, which Numba can box, and `rebuild(result)` makes the containers again.
    (fn, None) otherwise."""
    fn = items_as_names(fn)        # `d = {...}; return d`: a literal in the return
    returns = [n for n in walk(fn.node) if isinstance(n, gast.Return)]
    if not returns:
        return fn, None
    shapes = {container_shape(fn, r.value) for r in returns}
    if len(shapes) != 1:
        return fn, None
    shape = shapes.pop()
    if not _rebuilds(shape):
        return fn, None
    node = copy_tree(fn.node)
    for r in (n for n in walk(node) if isinstance(n, gast.Return)):
        r.value = _as_tuples(r.value, shape)
    return fn.replace(node=node), functools.partial(_rebuild, shape)


def container_shape(fn: Function, node):
    """The container shape of a returned literal, nested: ("dict", keys, children),
    ("list", children), ("tuple", children) or ("call", class, positional count, keyword
    names, children); None for anything else (a value returned as it is)."""
    if isinstance(node, gast.Dict):
        if all(isinstance(k, gast.Constant) for k in node.keys):
            return ("dict", tuple(k.value for k in node.keys),
                    tuple(container_shape(fn, v) for v in node.values))
        return None
    if isinstance(node, (gast.List, gast.Tuple)):
        if any(isinstance(e, gast.Starred) for e in node.elts):
            return None
        return ("list" if isinstance(node, gast.List) else "tuple",
                tuple(container_shape(fn, e) for e in node.elts))
    if not isinstance(node, gast.Call) or any(isinstance(a, gast.Starred) for a in node.args) \
            or any(k.arg is None for k in node.keywords):
        return None
    cls = resolve(fn, node.func, None)
    if not isinstance(cls, type) or not (dataclasses.is_dataclass(cls) or
                                         (issubclass(cls, tuple) and hasattr(cls, "_fields"))):
        return None
    return ("call", cls, len(node.args), tuple(k.arg for k in node.keywords),
            tuple(container_shape(fn, e) for e in literal_entries(node)))


def _rebuilds(shape) -> bool:
    """Whether `shape` holds a container Numba cannot return as it is (not only tuples)."""
    return shape is not None and (shape[0] != "tuple" or any(_rebuilds(c) for c in shape[-1]))


def literal_entries(node) -> list:
    if isinstance(node, gast.Dict):
        return list(node.values)
    if isinstance(node, (gast.List, gast.Tuple)):
        return list(node.elts)
    return list(node.args) + [k.value for k in node.keywords]


def _as_tuples(node, shape):
    """The returned literal `node` with each container of `shape` a tuple of its entries."""
    if shape is None:
        return node
    entries = [_as_tuples(e, s) for e, s in zip(literal_entries(node), shape[-1])]
    return gast.copy_location(gast.Tuple(elts=entries, ctx=gast.Load()), node)


def _rebuild(shape, result):
    if shape is None:
        return result
    items = [_rebuild(s, r) for s, r in zip(shape[-1], result)]
    kind = shape[0]
    if kind == "dict":
        return dict(zip(shape[1], items))
    if kind == "list":
        return items
    if kind == "tuple":
        return tuple(items)
    _, cls, positional, keywords, _ = shape
    return cls(*items[:positional], **dict(zip(keywords, items[positional:])))
