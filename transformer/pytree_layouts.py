"""Pytree layouts: the structure of an argument as `tree_util` flattens it, and the
transform-time picture of a container inside a function (`Tree`: its layout and a leaf
parameter's name per leaf), with the literals, slices and paths built from them.

Shared by `pytrees` (the flattening of a body) and `pytree_calls` (containers handed to
functions and transformations, and returned); nothing here rewrites a function.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import gast
import optree

from . import tree_util
from .function import Function
from .names import Namer
from .nodes import walk
from .syntax import const, name

# ---------------------------------------------------------------- layouts


@dataclasses.dataclass(frozen=True)
class Layout:
    """The structure of one argument: `kind` is "leaf", "sequence" (tuple, list), "dict",
    "attrs" (namedtuple, dataclass), "empty" (None) or "opaque" (a registered class whose
    children have no names); `keys` are the children's keys in leaf order."""

    kind: str
    keys: tuple = ()
    children: tuple = ()
    structure: Any = None           # the tree_util treedef, to rebuild values

    @property
    def leaf_count(self) -> int:
        return 1 if self.kind == "leaf" else sum(c.leaf_count for c in self.children)


LEAF = Layout("leaf")

_DICTS = (optree.PyTreeKind.DICT, optree.PyTreeKind.ORDEREDDICT, optree.PyTreeKind.DEFAULTDICT)


def layout_of(value) -> Layout:
    """The layout of `value` as `tree_util` flattens it (LEAF for arrays and numbers)."""
    if isinstance(value, _PLAIN):
        return LEAF
    return _layout(tree_util.tree_structure(value))


_PLAIN = (float, int, complex, bool)


def _layout(spec) -> Layout:
    if spec.is_leaf():
        return LEAF
    kind, children = spec.kind, tuple(_layout(c) for c in spec.children())
    if kind in _DICTS:
        return Layout("dict", tuple(spec.entries()), children, spec)
    if kind in (optree.PyTreeKind.TUPLE, optree.PyTreeKind.LIST):
        return Layout("sequence", tuple(range(len(children))), children, spec)
    if kind == optree.PyTreeKind.NAMEDTUPLE:
        return Layout("attrs", tuple(spec.type._fields), children, spec)
    if kind == optree.PyTreeKind.NONE:
        return Layout("empty", (), (), spec)
    accessors = spec.accessors()
    if accessors and all(isinstance(a[0], optree.GetAttrEntry) for a in accessors):
        return Layout("attrs", tuple(spec.entries()), children, spec)
    return Layout("opaque", tuple(range(len(children))), children, spec)


def all_leaves(layouts) -> bool:
    return all(lay is LEAF for lay in layouts)


def leaves(args) -> list:
    """The leaves of `args`, in the order of the flat Function's parameters."""
    return [leaf for a in args for leaf in tree_util.tree_leaves(a)]


def leaf_groups(layouts) -> list[list[int]]:
    """Per argument, the positions of its leaves among all the leaves."""
    groups, start = [], 0
    for lay in layouts:
        groups.append(list(range(start, start + lay.leaf_count)))
        start += lay.leaf_count
    return groups


def unflatten(layout: Layout, items):
    """The argument's tree with `items` (one per leaf, any values) in place of its leaves."""
    items = list(items)
    return items[0] if layout is LEAF else tree_util.tree_unflatten(layout.structure, items)


def leaf_axes(axes, layout: Layout) -> list:
    """vmap's per-argument axes (an int, None, or a prefix tree of them) per leaf."""
    if axes is None or isinstance(axes, int) or layout is LEAF:
        return [axes] * layout.leaf_count
    found = []
    for position, (key, child) in enumerate(zip(layout.keys, layout.children)):
        sub = axes[key] if isinstance(axes, dict) else axes[position]
        found.extend(leaf_axes(sub, child))
    return found


# ---------------------------------------------------------------- the flat protocol


@dataclasses.dataclass(frozen=True)
class Flat:
    """A Function over leaves, and how to rebuild its result (None: as it is)."""

    function: Function
    rebuild: Callable | None = None

    def __call__(self, result):
        return result if self.rebuild is None else self.rebuild(result)



@dataclasses.dataclass(frozen=True)
class Tree:
    """A container known at transformation time: its layout and, per child, a leaf's
    parameter name or a nested `Tree`."""

    layout: Layout
    children: tuple

    def child(self, key):
        return self.children[self.layout.keys.index(key)]


def leaf_names(prefix: str, layout: Layout, namer: Namer):
    if layout is LEAF:
        return namer.fresh(prefix)
    return Tree(layout, tuple(leaf_names(f"{prefix}_{k}", c, namer)
                               for k, c in zip(layout.keys, layout.children)))


def with_names(tree, names):
    """`tree`'s structure with the next of `names` at each leaf."""
    if isinstance(tree, str):
        return next(names)
    return Tree(tree.layout, tuple(with_names(c, names) for c in tree.children))


def names_in(tree) -> list[str]:
    if isinstance(tree, str):
        return [tree]
    return [n for child in tree.children for n in names_in(child)]


def sequences_only(tree) -> bool:
    return isinstance(tree, str) or (tree.layout.kind == "sequence" and
                                     all(sequences_only(c) for c in tree.children))


def as_tuple(tree, where):
    if isinstance(tree, str):
        return gast.copy_location(name(tree), where)
    return gast.copy_location(gast.Tuple(elts=[as_tuple(c, where) for c in tree.children],
                                         ctx=gast.Load()), where)


@dataclasses.dataclass(frozen=True)
class Key:
    """A key or position a loop over a container binds (a constant in the body)."""

    key: Any


NOT_CONSTANT = object()


def constant(node):
    if isinstance(node, gast.Constant):
        return node.value
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) and \
            isinstance(node.operand, gast.Constant) and isinstance(node.operand.value, int):
        return -node.operand.value
    return NOT_CONSTANT


def constant_slice(node, length: int) -> list[int] | None:
    """The positions `seq[node]` selects for a slice of int literals (`[:-1]`, `[1::2]`),
    or None for anything else."""
    if not isinstance(node, gast.Slice):
        return None
    bounds = [None if part is None else constant(part)
              for part in (node.lower, node.upper, node.step)]
    if not all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in bounds):
        return None
    if bounds[2] == 0:
        return None
    return list(range(length))[slice(*bounds)]


def sliced(layout: Layout, positions: list[int], as_list: bool = False) -> Layout:
    """The layout of the tuple or list of `layout`'s entries at `positions` (a list with
    `as_list`, as a starred name receives: `first, *rest = layers`)."""
    children = tuple(layout.children[i] for i in positions)
    kind = list if as_list else layout.structure.type
    example = kind(unflatten(c, [0] * c.leaf_count) for c in children)
    return Layout("sequence", tuple(range(len(children))), children,
                  tree_util.tree_structure(example))


class FlatResult:
    """Stands for a transformation's flat result while its rebuild runs at transform
    time: the constant reads the rebuild makes (`r[1]`, `r[0:3]`) become the paths of the
    rebuilt container's leaves. Any other use is a TypeError (the call is then refused)."""

    def __init__(self, path: tuple = ()):
        self.path = path

    def __getitem__(self, key):
        if isinstance(key, int):
            return FlatResult(self.path + (key,))
        if isinstance(key, slice) and isinstance(key.start, int) and \
                isinstance(key.stop, int) and key.step is None and key.start >= 0:
            return [FlatResult(self.path + (i,)) for i in range(key.start, key.stop)]
        raise TypeError("a flat result read at run time")


def locate(node, where):
    for sub in walk(node):
        if "lineno" in getattr(sub, "_attributes", ()):
            gast.copy_location(sub, where)


def literal_kinds(tree) -> bool:
    """Whether `tree` holds only dicts, tuples and lists (which have literals)."""
    return isinstance(tree, str) or (
        (tree.layout.kind == "dict" or (tree.layout.kind == "sequence" and
                                        tree.layout.structure.type in (tuple, list)))
        and all(literal_kinds(c) for c in tree.children))


def literal(tree, where):
    """The dict, tuple or list literal of `tree`'s leaf names."""
    if isinstance(tree, str):
        return gast.copy_location(name(tree), where)
    items = [literal(c, where) for c in tree.children]
    if tree.layout.kind == "dict":
        node = gast.Dict(keys=[const(k) for k in tree.layout.keys], values=items)
    elif tree.layout.structure.type is list:
        node = gast.List(elts=items, ctx=gast.Load())
    else:
        node = gast.Tuple(elts=items, ctx=gast.Load())
    locate(node, where)
    return node

