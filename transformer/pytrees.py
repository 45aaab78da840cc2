"""Pytrees at the compiled boundary: containers in, nested tuples for Numba.

Numba has no heterogeneous dicts, so a dict (or list, or registered dataclass) argument
is passed to compiled code as a tuple of its children in pytree order, and the body's
constant-key reads (`params["W"]`, `state.x`) are rewritten to tuple indexing
(`params[2]`). A returned dict literal becomes a tuple, rebuilt into a dict on the way
out. Leaves (arrays, scalars) and plain tuples of leaves pass through unchanged.
"""
from __future__ import annotations

import copy
import dataclasses
import functools

import gast
import numpy as np

from .function import Function, resolve
from .syntax import const


@dataclasses.dataclass(frozen=True)
class Layout:
    """How one argument is laid out: `keys` maps a child's key to its tuple position."""

    kind: str                        # "leaf", "tuple", "dict", "attrs"
    keys: tuple = ()
    children: tuple = ()

    def index_of(self, key):
        return self.keys.index(key)


LEAF = Layout("leaf")


def layout_of(value) -> Layout:
    if isinstance(value, dict):
        keys = tuple(sorted(value))
        return Layout("dict", keys, tuple(layout_of(value[k]) for k in keys))
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return Layout("attrs", tuple(value._fields), tuple(layout_of(v) for v in value))
    if isinstance(value, (tuple, list)):
        return Layout("tuple", tuple(range(len(value))), tuple(layout_of(v) for v in value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = tuple(f.name for f in dataclasses.fields(value))
        return Layout("attrs", names, tuple(layout_of(getattr(value, n)) for n in names))
    return LEAF


def to_tuples(value, layout: Layout):
    """`value` as nested tuples following `layout` (what the compiled code receives)."""
    if layout.kind == "leaf":
        return value
    if layout.kind == "dict":
        return tuple(to_tuples(value[k], c) for k, c in zip(layout.keys, layout.children))
    if layout.kind == "attrs":
        return tuple(to_tuples(getattr(value, k), c)
                     for k, c in zip(layout.keys, layout.children))
    return tuple(to_tuples(v, c) for v, c in zip(value, layout.children))


def rewrite_access(fn: Function, layouts: dict[str, Layout]) -> Function:
    """Replace constant-key reads of container parameters by tuple indexing."""
    containers = {k: v for k, v in layouts.items() if v.kind in ("dict", "attrs")}
    if not containers and not _has_nested(layouts):
        return fn
    node = copy.deepcopy(fn.node)
    _Access(fn, layouts).visit(node)
    return fn.replace(node=node)


def _has_nested(layouts) -> bool:
    return any(c.kind in ("dict", "attrs") for lay in layouts.values() for c in _walk(lay))


def _walk(layout):
    yield layout
    for child in layout.children:
        yield from _walk(child)


class _Access(gast.NodeTransformer):
    def __init__(self, fn, layouts):
        self.fn, self.layouts = fn, layouts

    def layout(self, expr):
        if isinstance(expr, gast.Name):
            return self.layouts.get(expr.id)
        if isinstance(expr, gast.Subscript) and isinstance(expr.slice, gast.Constant):
            parent = self.layout(expr.value)
            if parent is not None and parent.kind != "leaf" and expr.slice.value in parent.keys:
                return parent.children[parent.index_of(expr.slice.value)]
        if isinstance(expr, gast.Attribute):
            parent = self.layout(expr.value)
            if parent is not None and parent.kind == "attrs" and expr.attr in parent.keys:
                return parent.children[parent.index_of(expr.attr)]
        return None

    def visit_Subscript(self, node):
        parent = self.layout(node.value)
        self.generic_visit(node)
        if parent is not None and parent.kind == "dict":
            if not isinstance(node.slice, gast.Constant) or node.slice.value not in parent.keys:
                raise self.fn.origin.error(node, "a dict argument can only be read with a "
                                           f"constant key (one of {list(parent.keys)})",
                                           "write params['W'] with a literal key")
            node.slice = gast.copy_location(const(parent.index_of(node.slice.value)), node)
        return node

    def visit_Call(self, node):
        container = self.layout(node.args[0]) if node.args else None
        if container is not None and container.kind in ("dict", "attrs") \
                and resolve(self.fn, node.func, None) is np.copy:     # `d.copy()`, desugared
            raise self.fn.origin.error(node, "a dict argument cannot be copied in compiled "
                                       "code: it is passed as a read-only tuple of its entries",
                                       "read the entries you need (d['a']) into variables")
        self.generic_visit(node)
        return node

    def visit_Attribute(self, node):
        parent = self.layout(node.value)
        self.generic_visit(node)
        if parent is not None and parent.kind == "attrs" and node.attr in parent.keys:
            return gast.copy_location(
                gast.Subscript(value=node.value, slice=const(parent.index_of(node.attr)),
                               ctx=node.ctx), node)
        return node


def returned_dict_keys(fn: Function):
    """(new Function, rebuild) when every return is a dict literal with the same constant
    keys, or a tuple of one length whose items at some positions are such dict literals
    (`return value, {"w": bw}` from value_and_grad): the new Function returns tuples in
    their place, which Numba can box, and `rebuild(result)` makes the dicts again.
    (fn, None) otherwise."""
    returns = [n for n in gast.walk(fn.node) if isinstance(n, gast.Return)]
    if not returns:
        return fn, None
    values = [r.value for r in returns]
    if all(isinstance(v, gast.Dict) for v in values):
        keys = _common_keys(values)
        if keys is None:
            return fn, None
        return _dicts_as_tuples(fn, None), functools.partial(_rebuild_dict, keys)
    if not all(isinstance(v, gast.Tuple) for v in values) or \
            len({len(v.elts) for v in values}) != 1:
        return fn, None
    per_item = []
    for items in zip(*(v.elts for v in values)):
        if any(isinstance(item, gast.Dict) for item in items):
            keys = _common_keys(items)
            if keys is None:
                return fn, None
            per_item.append(keys)
        else:
            per_item.append(None)
    if all(keys is None for keys in per_item):
        return fn, None
    return _dicts_as_tuples(fn, per_item), functools.partial(_rebuild_items, tuple(per_item))


def _common_keys(dicts) -> tuple | None:
    """The constant keys all of `dicts` (dict literals) share, in order; else None."""
    key_sets = set()
    for d in dicts:
        if not isinstance(d, gast.Dict) or \
                not all(isinstance(k, gast.Constant) for k in d.keys):
            return None
        key_sets.add(tuple(k.value for k in d.keys))
    return key_sets.pop() if len(key_sets) == 1 else None


def _dicts_as_tuples(fn: Function, per_item: list | None) -> Function:
    """`fn` with each returned dict literal (the whole value, or the items of the returned
    tuple marked in `per_item`) replaced by the tuple of its values."""
    def as_tuple(d):
        return gast.Tuple(elts=d.values, ctx=gast.Load())
    node = copy.deepcopy(fn.node)
    for r in (n for n in gast.walk(node) if isinstance(n, gast.Return)):
        if per_item is None:
            r.value = as_tuple(r.value)
        else:
            r.value.elts = [as_tuple(e) if keys is not None else e
                            for e, keys in zip(r.value.elts, per_item)]
    return fn.replace(node=node)


def _rebuild_dict(keys: tuple, result) -> dict:
    return dict(zip(keys, result))


def _rebuild_items(per_item: tuple, result) -> tuple:
    return tuple(item if keys is None else dict(zip(keys, item))
                 for item, keys in zip(result, per_item))

