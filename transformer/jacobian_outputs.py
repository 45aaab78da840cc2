"""The output structure of a function jacfwd / jacrev differentiate, known when transforming.

A function returning a tuple (`return np.sin(x), np.cos(x)`, nested tuples too) or a list
has, as in JAX, one Jacobian per output leaf, nested like the output (a list stays a
list: `ListOut` marks it in the tree). Its structure is read from the
returned literals (`pytree_returns.container_shape`); a secant Jacobian, gradient or
Hessian in a tuple `argnums` returns such a literal itself. Returned containers other than
tuples and lists, and those whose structure cannot be read, are refused where the Jacobian needs it
(`unknown_outputs`).
"""
from __future__ import annotations

import gast

from .errors import TransformError
from .function import Function
from .names import name_counts
from .nodes import copy_tree, own_returns, walk
from .pytree_returns import container_shape

LEAF_OUT = None          # one array output, a leaf of the output tree


class ListOut(tuple):
    """A node of an output tree that the function returns as a list."""


def _returned(fn: Function, has_aux: bool) -> list:
    """The returned output expressions of `fn` (each return's first entry with has_aux);
    None for one that cannot be read (`return pair` with has_aux)."""
    values, bound = [], _bound_once(fn.node)
    for node in own_returns(fn.node):
        value = node.value
        if isinstance(value, gast.Name) and value.id in bound:   # t = a, b; return t
            value = bound[value.id]
        if has_aux:
            value = value.elts[0] if isinstance(value, gast.Tuple) and len(value.elts) == 2 \
                and not any(isinstance(e, gast.Starred) for e in value.elts) else None
        values.append(value)
    return values


def _bound_once(node) -> dict:
    """Names bound once in the function `node`, by an assignment of a tuple literal, or of a
    list literal only read or written by item or returned (nothing can change its length):
    their values."""
    counts = name_counts(node, gast.Store)
    bound = {sub.targets[0].id: sub.value for sub in walk(node)
             if isinstance(sub, gast.Assign) and len(sub.targets) == 1 and
             isinstance(sub.targets[0], gast.Name) and
             isinstance(sub.value, (gast.Tuple, gast.List))
             and counts.get(sub.targets[0].id) == 1}
    lists = {key for key, value in bound.items() if isinstance(value, gast.List)}
    harmless = {id(sub.value) for sub in walk(node)
                if isinstance(sub, (gast.Return, gast.Subscript)) and
                isinstance(sub.value, gast.Name) and
                (isinstance(sub, gast.Return) or not isinstance(sub.ctx, gast.Del))}
    for sub in walk(node):
        if isinstance(sub, gast.Name) and sub.id in lists and \
                isinstance(sub.ctx, (gast.Load, gast.Del)) and id(sub) not in harmless:
            bound.pop(sub.id, None)
    return bound


def _tuple_tree(shape):
    """A container shape of tuples and lists only -> nested tuples (`ListOut` for a list)
    of LEAF_OUT; None otherwise."""
    if shape is None:
        return LEAF_OUT
    if shape[0] not in ("tuple", "list"):
        return None
    children = tuple(_tuple_tree(c) for c in shape[1])
    if any(c is None and s is not None for c, s in zip(children, shape[1])):
        return None
    return ListOut(children) if shape[0] == "list" else children


def output_tree(fn: Function, has_aux: bool, mode: str):
    """The nested-tuple structure of `fn`'s output when every return is a tuple or list
    literal of one structure (LEAF_OUT at each array), or None: one array, or not known
    here."""
    shapes = set()
    for value in _returned(fn, has_aux):
        if value is None:
            return None
        shapes.add(container_shape(fn, value))
    if len(shapes) != 1:
        return None
    shape = shapes.pop()
    if shape is None or shape[0] not in ("tuple", "list"):
        return None
    tree = _tuple_tree(shape)
    return tree if tree is not None and leaf_paths(tree) else None


def container_returned(fn: Function, has_aux: bool) -> bool:
    """Whether some return of `fn` is a container literal (a dict, list, tuple...) whose
    structure `output_tree` does not give."""
    return any(value is not None and container_shape(fn, value) is not None
               for value in _returned(fn, has_aux))


def unknown_outputs(fn: Function, mode: str) -> TransformError:
    """A TransformError at `fn`'s first container return: a Jacobian needs its structure."""
    node = next((r for r in own_returns(fn.node) if r.value is not None and
                 container_shape(fn, r.value) is not None), fn.node)
    return fn.origin.error(
        node, f"jac{mode} of {fn.name}: its returns are not tuples of arrays of one "
        "structure, which this Jacobian needs to know when it is transformed",
        f"return the same tuple literal everywhere (`return a, b`), or take each output's "
        f"Jacobian: jac{mode}(lambda *args: {fn.name}(*args)[0])")


def leaf_paths(tree) -> list[str]:
    """The index suffixes (`[0]`, `[1][0]`...) of the leaves of a nested-tuple `tree`."""
    if tree is LEAF_OUT:
        return [""]
    return [f"[{i}]{rest}" for i, child in enumerate(tree) for rest in leaf_paths(child)]


def tree_literal(tree, leaves) -> str:
    """A nested tuple (and list) literal shaped like `tree`, its leaves taken in order from
    `leaves`."""
    if tree is LEAF_OUT:
        return next(leaves)
    items = "".join(tree_literal(child, leaves) + ", " for child in tree)
    return f"[{items}]" if isinstance(tree, ListOut) else f"({items})"


def holds_list(tree) -> bool:
    """Whether the output tree has a node returned as a list."""
    return isinstance(tree, ListOut) or \
        (isinstance(tree, tuple) and any(holds_list(c) for c in tree))


def list_returns_as_tuples(fn: Function) -> Function:
    """`fn` with each returned list literal (nested in the returned literal too) a tuple:
    a Jacobian reads the derivative's output at constant indices, which compiled code can
    do for a tuple of arrays of different types but not for such a list. The Jacobian
    builds the list again (`tree_literal`)."""
    node = copy_tree(fn.node)

    def tuples(value):
        if isinstance(value, (gast.List, gast.Tuple)):
            return gast.copy_location(gast.Tuple(elts=[tuples(e) for e in value.elts],
                                                 ctx=gast.Load()), value)
        return value
    for ret in own_returns(node):
        if ret.value is not None:
            ret.value = tuples(ret.value)
    return fn.replace(node=node)
