"""Containers returned under jit: returned as tuples, which Numba can box, and rebuilt.

A compiled function cannot return a dict, a namedtuple or a dataclass; `returned_containers`
rewrites the returns of such literals into tuples of their entries and gives back the
function that rebuilds them in Python (the other half of the pytree boundary in
`pytrees.py`, which flattens containers passed in).
"""
from __future__ import annotations

import copy
import dataclasses
import functools

import gast

from .function import Function, resolve


def returned_containers(fn: Function):
    """(new Function, rebuild) when every return is a container literal of one shape - a
    dict literal with constant keys, or a call of a namedtuple or dataclass class
    (`State(x, v)`) - or a tuple of one length whose items at some positions are such
    literals (`return value, {"w": bw}` from value_and_grad): the new Function returns
    tuples in their place, which Numba can box, and `rebuild(result)` makes the
    containers again. (fn, None) otherwise."""
    returns = [n for n in gast.walk(fn.node) if isinstance(n, gast.Return)]
    if not returns:
        return fn, None
    values = [r.value for r in returns]
    whole = _common_shape(fn, values)
    if whole is not None:
        return _as_tuples(fn, None), functools.partial(_rebuild, whole)
    if not all(isinstance(v, gast.Tuple) for v in values) or \
            len({len(v.elts) for v in values}) != 1:
        return fn, None
    per_item = []
    for items in zip(*(v.elts for v in values)):
        shape = _common_shape(fn, items)
        if shape is None and any(_shape(fn, item) is not None for item in items):
            return fn, None
        per_item.append(shape)
    if all(shape is None for shape in per_item):
        return fn, None
    return _as_tuples(fn, per_item), functools.partial(_rebuild_items, tuple(per_item))


def _shape(fn: Function, node):
    """("dict", keys) or ("call", class, positional count, keyword names) for a container
    literal jit can return as a tuple; None for anything else."""
    if isinstance(node, gast.Dict):
        if all(isinstance(k, gast.Constant) for k in node.keys):
            return "dict", tuple(k.value for k in node.keys)
        return None
    if not isinstance(node, gast.Call) or any(isinstance(a, gast.Starred) for a in node.args) \
            or any(k.arg is None for k in node.keywords):
        return None
    cls = resolve(fn, node.func, None)
    if not isinstance(cls, type) or not (dataclasses.is_dataclass(cls) or
                                         (issubclass(cls, tuple) and hasattr(cls, "_fields"))):
        return None
    return "call", cls, len(node.args), tuple(k.arg for k in node.keywords)


def _common_shape(fn: Function, nodes):
    shapes = {_shape(fn, node) for node in nodes}
    return shapes.pop() if len(shapes) == 1 and None not in shapes else None


def _entries(node) -> list:
    if isinstance(node, gast.Dict):
        return list(node.values)
    return list(node.args) + [k.value for k in node.keywords]


def _as_tuples(fn: Function, per_item: list | None) -> Function:
    """`fn` with each returned container literal (the whole value, or the items of the
    returned tuple marked in `per_item`) replaced by the tuple of its entries."""
    def as_tuple(node):
        return gast.copy_location(gast.Tuple(elts=_entries(node), ctx=gast.Load()), node)
    node = copy.deepcopy(fn.node)
    for r in (n for n in gast.walk(node) if isinstance(n, gast.Return)):
        if per_item is None:
            r.value = as_tuple(r.value)
        else:
            r.value.elts = [as_tuple(e) if shape is not None else e
                            for e, shape in zip(r.value.elts, per_item)]
    return fn.replace(node=node)


def _rebuild(shape: tuple, result):
    if shape[0] == "dict":
        return dict(zip(shape[1], result))
    _, cls, positional, keywords = shape
    return cls(*result[:positional], **dict(zip(keywords, result[positional:])))


def _rebuild_items(per_item: tuple, result) -> tuple:
    return tuple(item if shape is None else _rebuild(shape, item)
                 for item, shape in zip(result, per_item))
