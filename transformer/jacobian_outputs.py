"""The output structure of a function jacfwd / jacrev differentiate, known when transforming.

A function returning a tuple (`return np.sin(x), np.cos(x)`, nested tuples too), a list
or a dict with constant keys has, as in JAX, one Jacobian per output leaf, nested like the
output (a list stays a list, a dict a dict: `ListOut` and `DictOut` mark them in the
tree). Its structure is read from the returned literals
(`pytree_returns.container_shape`); a secant Jacobian, gradient or Hessian in a tuple
`argnums` returns such a literal itself. Other returned containers (a dataclass, a
namedtuple), and those whose structure cannot be read, are refused where the Jacobian needs
it (`unknown_outputs`).
"""
from __future__ import annotations

import gast

from .errors import TransformError
from .function import Function
from .names import name_counts
from .nodes import copy_tree, literal_nodes, own_returns, walk
from .pytree_returns import container_shape

LEAF_OUT = None          # one array output, a leaf of the output tree


class ListOut(tuple):
    """A node of an output tree that the function returns as a list."""


class DictOut(tuple):
    """A node of an output tree that the function returns as a dict: its children in the
    order of `keys` (`dict_order`). Compared as a tuple: compare shapes, not trees."""

    def __new__(cls, keys: tuple, children):
        node = super().__new__(cls, children)
        node.keys = keys
        return node

    def __getnewargs__(self):
        return self.keys, tuple(self)


def returned(fn: Function, has_aux: bool) -> list:
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
    """A container shape of tuples, lists and dicts only (dicts in `dict_order`) -> nested
    tuples (`ListOut` for a list, `DictOut` for a dict) of LEAF_OUT; None otherwise."""
    if shape is None:
        return LEAF_OUT
    if shape[0] not in _NODES:
        return None
    children = tuple(_tuple_tree(c) for c in shape[-1])
    if any(c is None and s is not None for c, s in zip(children, shape[-1])):
        return None
    if shape[0] == "dict":
        return DictOut(shape[1], children)
    return ListOut(children) if shape[0] == "list" else children


_NODES = ("tuple", "list", "dict")


def dict_order(keys) -> list[int]:
    """The positions of a returned dict's `keys` in the order its Jacobian holds them:
    sorted, as JAX orders a dict's leaves, so returns listing the keys in other orders have
    one structure (keys of mixed types stay in the literal's order)."""
    try:
        return sorted(range(len(keys)), key=lambda i: keys[i])
    except TypeError:
        return list(range(len(keys)))


def output_tree(fn: Function, has_aux: bool, mode: str):
    """The nested-tuple structure of `fn`'s output when every return is a tuple or list
    literal of one structure (LEAF_OUT at each array), or None: one array, or not known
    here."""
    shapes = set()
    for value in returned(fn, has_aux):
        if value is None or _unreadable(value):
            return None
        shapes.add(_sorted_dicts(container_shape(fn, value)))
    if len(shapes) != 1:
        return None
    shape = shapes.pop()
    if shape is None or shape[0] not in _NODES:
        return None
    tree = _tuple_tree(shape)
    return tree if tree is not None and leaf_paths(tree) else None


def _sorted_dicts(shape):
    """A container shape with each dict's entries in `dict_order`."""
    if shape is None or shape[0] not in _NODES:
        return shape
    children = tuple(_sorted_dicts(c) for c in shape[-1])
    if shape[0] != "dict":
        return (shape[0], children)
    order = dict_order(shape[1])
    return ("dict", tuple(shape[1][i] for i in order), tuple(children[i] for i in order))


def container_returned(fn: Function, has_aux: bool) -> bool:
    """Whether some return of `fn` is a container literal (a dict, list, tuple...) whose
    structure `output_tree` does not give."""
    return any(value is not None and (container_shape(fn, value) is not None or
                                      _unreadable(value))
               for value in returned(fn, has_aux))


def unreadable_returns(fn: Function, has_aux: bool) -> bool:
    """Whether a returned literal holds a container whose structure cannot be read when
    transforming (`{key: v}` with a key that is not a constant, `(*xs, y)`): its leaves
    would be taken for arrays."""
    return any(value is not None and _unreadable(value) for value in returned(fn, has_aux))


def _unreadable(node) -> bool:
    return any(isinstance(sub, gast.Dict) and
               not all(isinstance(k, gast.Constant) for k in sub.keys) or
               isinstance(sub, (gast.List, gast.Tuple)) and
               any(isinstance(e, gast.Starred) for e in sub.elts)
               for sub in literal_nodes(node))


def unknown_outputs(fn: Function, mode: str) -> TransformError:
    """A TransformError at `fn`'s first container return: a Jacobian needs its structure."""
    node = next((r for r in own_returns(fn.node) if r.value is not None and
                 (container_shape(fn, r.value) is not None or _unreadable(r.value))),
                fn.node)
    value = getattr(node, "value", None)
    if value is not None and _unreadable(value):
        hint = ("write the returned literal out, with constant keys and no `*` "
                "(`return {'a': a, 'b': b}`, `return a, b`)")
    else:
        params = ", ".join(fn.params)
        hint = (f"return the same literal everywhere (`return a, b`, `return {{'a': a}}`), "
                f"or take each output's Jacobian: jac{mode}(lambda {params}: "
                f"{fn.name}({params})[{first_entry(value)}])")
    return fn.origin.error(
        node, f"jac{mode} of {fn.name}: its returns are not tuples, lists or dicts (with "
        "constant keys) of arrays of one structure, which this Jacobian needs to know when "
        "it is transformed", hint)


def first_entry(value) -> str:
    """The index of a returned literal's first entry, as source: `'a'` for a dict with
    constant keys, `0` otherwise."""
    if isinstance(value, gast.Dict) and value.keys and isinstance(value.keys[0], gast.Constant):
        return repr(value.keys[0].value)
    return "0"


def leaf_paths(tree) -> list[str]:
    """The index suffixes (`[0]`, `[1][0]`...) of the leaves of a nested-tuple `tree`."""
    if tree is LEAF_OUT:
        return [""]
    return [f"[{i}]{rest}" for i, child in enumerate(tree) for rest in leaf_paths(child)]


def tree_literal(tree, leaves) -> str:
    """A nested tuple (list, dict) literal shaped like `tree`, its leaves taken in order
    from `leaves`."""
    if tree is LEAF_OUT:
        return next(leaves)
    if isinstance(tree, DictOut):
        return "{" + "".join(f"{key!r}: {tree_literal(child, leaves)}, "
                             for key, child in zip(tree.keys, tree)) + "}"
    items = "".join(tree_literal(child, leaves) + ", " for child in tree)
    return f"[{items}]" if isinstance(tree, ListOut) else f"({items})"


def rebuilt(tree, items: tuple):
    """`items`, the children of the node `tree`, in that node's container."""
    if isinstance(tree, DictOut):
        return dict(zip(tree.keys, items))
    return list(items) if isinstance(tree, ListOut) else items


def children(tree, value) -> tuple:
    """The entries of `value`, a container built as the node `tree`, in the tree's order."""
    if isinstance(tree, DictOut):
        return tuple(value[key] for key in tree.keys)
    return tuple(value)


def holds_list(tree) -> bool:
    """Whether the output tree has a node returned as a list or a dict."""
    return isinstance(tree, (ListOut, DictOut)) or \
        (isinstance(tree, tuple) and any(holds_list(c) for c in tree))


def list_returns_as_tuples(fn: Function, has_aux: bool = False) -> Function:
    """`fn` with each returned list or dict literal (nested in the returned literal too;
    with `has_aux`, in the output's entry only) a tuple (a dict's values in `dict_order`):
    a Jacobian reads the derivative's output at constant indices, which compiled code can
    do for a tuple of arrays of different types but not for such a list or dict. The
    Jacobian builds the container again (`tree_literal`, `rebuilt`)."""
    node = copy_tree(fn.node)

    def tuples(value):
        if isinstance(value, (gast.List, gast.Tuple, gast.Dict)) and not _unreadable(value):
            items = value.elts if not isinstance(value, gast.Dict) else \
                [value.values[i] for i in dict_order([k.value for k in value.keys])]
            return gast.copy_location(gast.Tuple(elts=[tuples(e) for e in items],
                                                 ctx=gast.Load()), value)
        return value
    for ret in own_returns(node):
        if ret.value is None:
            continue
        if not has_aux:
            ret.value = tuples(ret.value)
        elif isinstance(ret.value, gast.Tuple) and len(ret.value.elts) == 2:
            ret.value.elts[0] = tuples(ret.value.elts[0])
    return fn.replace(node=node)


def nested(tree) -> bool:
    """Whether an output tree has a container inside its top container."""
    return isinstance(tree, tuple) and any(child is not LEAF_OUT for child in tree)


def flat_returns(fn: Function, has_aux: bool = False) -> Function:
    """`fn` (its returned lists and dicts already tuples: `list_returns_as_tuples`) with
    each returned literal (with `has_aux`, the output's entry) one flat tuple of its
    leaves, in order: reverse mode pulls back one flat tuple of arrays; the Jacobian nests
    the rows again (`tree_literal`), `vjp` takes the cotangent's leaves."""
    node = copy_tree(fn.node)

    def flat(value):
        if not isinstance(value, gast.Tuple):
            return value
        return gast.copy_location(gast.Tuple(elts=leaves(value), ctx=gast.Load()), value)

    def leaves(value):
        if isinstance(value, gast.Tuple):
            return [leaf for item in value.elts for leaf in leaves(item)]
        return [value]
    for ret in own_returns(node):
        if not has_aux:
            ret.value = flat(ret.value)
        elif isinstance(ret.value, gast.Tuple) and len(ret.value.elts) == 2:
            ret.value.elts[0] = flat(ret.value.elts[0])
    return fn.replace(node=node)
