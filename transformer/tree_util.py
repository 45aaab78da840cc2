"""Pytrees with JAX's names, on optree.

Containers (tuples, lists, dicts, namedtuples, None, registered classes, dataclasses
registered with `register_dataclass`) are nodes; everything else is a leaf. `None` is
an empty node, as in JAX. All functions share one namespace, "secant".
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import optree

NAMESPACE = "secant"

_OPTS = dict(none_is_leaf=False, namespace=NAMESPACE)


def tree_flatten(tree, is_leaf: Callable | None = None):
    return optree.tree_flatten(tree, is_leaf=is_leaf, **_OPTS)


def tree_unflatten(treedef, leaves):
    return optree.tree_unflatten(treedef, leaves)


def tree_leaves(tree, is_leaf: Callable | None = None) -> list:
    return optree.tree_leaves(tree, is_leaf=is_leaf, **_OPTS)


def tree_structure(tree, is_leaf: Callable | None = None):
    return optree.tree_structure(tree, is_leaf=is_leaf, **_OPTS)


def tree_map(f: Callable, tree, *rest, is_leaf: Callable | None = None):
    return optree.tree_map(f, tree, *rest, is_leaf=is_leaf, **_OPTS)


def tree_flatten_with_path(tree, is_leaf: Callable | None = None):
    """([(path, leaf), ...], treedef); a path is a tuple of keys as in JAX."""
    paths, leaves, treedef = optree.tree_flatten_with_path(tree, is_leaf=is_leaf, **_OPTS)
    return list(zip(paths, leaves)), treedef


def keystr(path: tuple) -> str:
    """`['W'][0]`-style rendering of a path from tree_flatten_with_path."""
    return "".join(f"[{key!r}]" for key in path)


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable):
    """JAX's signature: flatten(x) -> (children, aux); unflatten(aux, children) -> x."""
    return optree.register_pytree_node(
        nodetype, flatten_func, lambda aux, children: unflatten_func(aux, children),
        namespace=NAMESPACE)


def register_dataclass(cls: type) -> type:
    """Make a dataclass a pytree node whose fields are its children; returns the class."""
    names = [f.name for f in dataclasses.fields(cls)]
    register_pytree_node(cls, lambda obj: ([getattr(obj, n) for n in names], None),
                         lambda _aux, children: cls(*children))
    return cls


def treedef_is_leaf(treedef) -> bool:
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def all_leaves(trees: Any) -> bool:
    return all(treedef_is_leaf(tree_structure(t)) for t in trees)
