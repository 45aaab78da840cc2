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


# ---------------------------------------------------------------- paths, as in JAX
class _PathKey:
    """One step of a path; `str()` renders it as JAX's keystr does."""

    _format = ""

    def __str__(self):
        return self._format.format(*dataclasses.astuple(self))


@dataclasses.dataclass(frozen=True)
class DictKey(_PathKey):
    key: Any
    _format = "[{!r}]"


@dataclasses.dataclass(frozen=True)
class SequenceKey(_PathKey):
    idx: int
    _format = "[{}]"


@dataclasses.dataclass(frozen=True)
class GetAttrKey(_PathKey):
    name: str
    _format = ".{}"


@dataclasses.dataclass(frozen=True)
class FlattenedIndexKey(_PathKey):
    key: int
    _format = "[<flat index {}>]"


def _path_key(entry):
    """JAX's key object for one optree accessor entry."""
    if isinstance(entry, optree.GetAttrEntry):          # dataclass fields
        return GetAttrKey(entry.name)
    if isinstance(entry, optree.NamedTupleEntry):
        return GetAttrKey(entry.field)
    if isinstance(entry, optree.MappingEntry):
        return DictKey(entry.key)
    if isinstance(entry, optree.SequenceEntry):
        return SequenceKey(entry.index)
    return FlattenedIndexKey(entry.entry)


def tree_flatten_with_path(tree, is_leaf: Callable | None = None):
    """([(path, leaf), ...], treedef); a path is a tuple of DictKey, SequenceKey,
    GetAttrKey (namedtuple and dataclass fields) and FlattenedIndexKey, as in JAX."""
    accessors, leaves, treedef = optree.tree_flatten_with_accessor(tree, is_leaf=is_leaf,
                                                                   **_OPTS)
    paths = [tuple(_path_key(entry) for entry in accessor) for accessor in accessors]
    return list(zip(paths, leaves)), treedef


def keystr(path: tuple) -> str:
    """`['W'][0].bias`-style rendering of a path from tree_flatten_with_path."""
    return "".join(str(key) for key in path)


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable):
    """JAX's signature: flatten(x) -> (children, aux); unflatten(aux, children) -> x."""
    return optree.register_pytree_node(
        nodetype, flatten_func, lambda aux, children: unflatten_func(aux, children),
        namespace=NAMESPACE)


def register_dataclass(cls: type) -> type:
    """Make a dataclass a pytree node whose fields are its children; returns the class."""
    names = tuple(f.name for f in dataclasses.fields(cls))
    optree.register_pytree_node(
        cls, lambda obj: ([getattr(obj, n) for n in names], None, names),
        lambda _aux, children: cls(*children), path_entry_type=optree.GetAttrEntry,
        namespace=NAMESPACE)
    return cls


def treedef_is_leaf(treedef) -> bool:
    return treedef.num_nodes == 1 and treedef.num_leaves == 1


def all_leaves(trees: Any) -> bool:
    return all(treedef_is_leaf(tree_structure(t)) for t in trees)
