"""Pytrees with JAX's names, on optree.

Containers (tuples, lists, dicts, namedtuples, None, registered classes, dataclasses
registered with `register_dataclass`) are nodes; everything else is a leaf. `None` is
an empty node, as in JAX. All functions share one namespace, "secant".
`ravel_pytree` (JAX's `flatten_util.ravel_pytree`) turns a tree of arrays into one vector
and back, for optimizers that take a vector (`scipy.optimize.minimize`).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable, Sequence

import numpy as np
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


def arrays_copied(tree):
    """`tree` with every NumPy array leaf copied (secant's, not JAX's: JAX arrays cannot be
    written). vjp and linearize keep the arguments as they were at the call, since the
    function they differentiate may write into them and they run it again later."""
    return tree_map(lambda v: np.array(v, copy=True) if isinstance(v, np.ndarray) else v, tree)


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


def register_dataclass(cls: type | None = None, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] = ()):
    """Make a dataclass a pytree node; returns the class (a decorator without `cls`).

    As JAX: `data_fields` are its children (default: every field not in `meta_fields`),
    `meta_fields` are static, kept in the tree structure (two values with different meta
    fields have different structures)."""
    if cls is None:
        return functools.partial(register_dataclass, data_fields=data_fields,
                                 meta_fields=meta_fields)
    meta = tuple(meta_fields)
    data = tuple(data_fields) if data_fields is not None else \
        tuple(f.name for f in dataclasses.fields(cls) if f.name not in meta)

    def flatten(obj):
        return [getattr(obj, n) for n in data], tuple(getattr(obj, n) for n in meta), data

    def unflatten(aux, children):
        return cls(**dict(zip(data, children)), **dict(zip(meta, aux)))
    optree.register_pytree_node(cls, flatten, unflatten, path_entry_type=optree.GetAttrEntry,
                                namespace=NAMESPACE)
    return cls


def treedef_is_leaf(treedef) -> bool:
    """True for a leaf and for None (an empty node), as in JAX."""
    return treedef.num_nodes == 1


def all_leaves(trees: Any) -> bool:
    return all(treedef_is_leaf(tree_structure(t)) for t in trees)


# ---------------------------------------------------------------- flat vectors, as in JAX
def ravel_pytree(tree) -> tuple[np.ndarray, Callable]:
    """`(flat, unravel)`, as `jax.flatten_util.ravel_pytree`: `flat` concatenates every
    leaf raveled, in `tree_leaves` order; `unravel(flat)` rebuilds the tree.

    dtypes as JAX: `flat` has the leaves' promoted dtype (`np.result_type`, Python numbers
    weak under NumPy 2); an empty tree gives an empty float32 vector. When all leaves share
    one dtype, `unravel` keeps the dtype of the vector it is given (so float64 vectors from
    SciPy stay float64); otherwise it casts each piece back to its leaf's dtype and wants a
    vector of `flat`'s dtype. Leaves come back as new arrays, never views of the vector;
    a leaf that was a number (Python or NumPy scalar) comes back as a NumPy scalar, so
    that `jit` compiles it as a number, as it did the original.
    """
    leaves, treedef = tree_flatten(tree)
    arrays = [np.asarray(leaf) for leaf in leaves]
    if not arrays:
        return np.zeros(0, np.float32), functools.partial(_unravel, treedef, (), (), None, None)
    flat_dtype = _promoted_dtype(leaves, [a.dtype for a in arrays])
    # a Python number of the vector's kind takes its dtype, as a weak type does in JAX
    dtypes = tuple(flat_dtype if type(leaf) in _PYTHON_NUMBERS and a.dtype.kind ==
                   flat_dtype.kind else a.dtype for leaf, a in zip(leaves, arrays))
    flat = np.concatenate([a.astype(flat_dtype, copy=False).ravel() for a in arrays])
    shapes = tuple(a.shape for a in arrays)
    scalars = tuple(not isinstance(leaf, np.ndarray) and a.shape == ()
                    for leaf, a in zip(leaves, arrays))
    if all(d == flat_dtype for d in dtypes):
        return flat, functools.partial(_unravel, treedef, shapes, scalars, None, None)
    return flat, functools.partial(_unravel, treedef, shapes, scalars, dtypes, flat_dtype)


_PYTHON_NUMBERS = (bool, int, float, complex)


def _promoted_dtype(leaves, dtypes) -> np.dtype:
    """`np.result_type` of the leaves, given one representative each: the distinct dtypes
    of array leaves, and one value per type of Python number (weak, as in JAX)."""
    python = {type(leaf): leaf for leaf in leaves if type(leaf) in _PYTHON_NUMBERS}
    strong = {d for leaf, d in zip(leaves, dtypes) if type(leaf) not in python}
    return np.result_type(*strong, *python.values())


def _unravel(treedef, shapes, scalars, dtypes, flat_dtype, flat):
    flat = np.asarray(flat)
    size = sum(math.prod(shape) for shape in shapes)
    if flat.shape != (size,):
        raise ValueError(f"unravel expects a vector of shape ({size},) (the raveled tree), "
                         f"got shape {flat.shape}")
    if flat_dtype is not None and flat.dtype != flat_dtype:
        raise TypeError(f"unravel was given a vector of dtype {flat.dtype} but the tree "
                        f"ravels to {flat_dtype} (its leaves have several dtypes)")
    leaves, start = [], 0
    for k, shape in enumerate(shapes):
        stop = start + math.prod(shape)
        piece = flat[start:stop].reshape(shape)
        piece = piece.astype(dtypes[k]) if dtypes is not None else piece.copy()
        leaves.append(piece[()] if scalars[k] else piece)
        start = stop
    return tree_unflatten(treedef, leaves)
