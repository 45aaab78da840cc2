"""The output structure of a function jacfwd / jacrev differentiate, known when transforming.

A function returning a tuple (`return np.sin(x), np.cos(x)`, nested tuples too) has, as in
JAX, one Jacobian per output leaf, nested like the output. Its structure is read from the
returned literals (`pytree_returns.container_shape`); a secant Jacobian, gradient or
Hessian in a tuple `argnums` returns such a literal itself. Returned containers other than
tuples, and tuples whose structure cannot be read, are refused where the Jacobian needs it
(`unknown_outputs`).
"""
from __future__ import annotations

import gast

from .errors import TransformError
from .function import Function
from .names import name_counts
from .nodes import own_returns, walk
from .pytree_returns import container_shape

LEAF_OUT = None          # one array output, a leaf of the output tree


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
    """Names bound once in the function `node`, by an assignment of a tuple literal: their
    values."""
    counts = name_counts(node, gast.Store)
    return {sub.targets[0].id: sub.value for sub in walk(node)
            if isinstance(sub, gast.Assign) and len(sub.targets) == 1 and
            isinstance(sub.targets[0], gast.Name) and isinstance(sub.value, gast.Tuple)
            and counts.get(sub.targets[0].id) == 1}


def _tuple_tree(shape):
    """A container shape of tuples only -> nested tuples of LEAF_OUT; None otherwise."""
    if shape is None:
        return LEAF_OUT
    if shape[0] != "tuple":
        return None
    children = tuple(_tuple_tree(c) for c in shape[1])
    return None if any(c is None and s is not None for c, s in zip(children, shape[1])) \
        else children


def output_tree(fn: Function, has_aux: bool, mode: str):
    """The nested-tuple structure of `fn`'s output when every return is a tuple literal of
    one structure (LEAF_OUT at each array), or None: one array, or not known here."""
    shapes = set()
    for value in _returned(fn, has_aux):
        if value is None:
            return None
        shapes.add(container_shape(fn, value))
    if len(shapes) != 1:
        return None
    shape = shapes.pop()
    if shape is None or shape[0] != "tuple":
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
    """A nested tuple literal shaped like `tree`, its leaves taken in order from `leaves`."""
    if tree is LEAF_OUT:
        return next(leaves)
    return "(" + "".join(tree_literal(child, leaves) + ", " for child in tree) + ")"
