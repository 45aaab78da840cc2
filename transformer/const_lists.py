"""Lists that are only read like tuples, compiled as tuples (the cpu backend).

Numba gives a list one item type. A list literal that mixes kinds - a float and an array,
arrays of different rank or dtype - is a `LiteralList`, which compiled code can neither
index with a computed index, unpack, iterate nor return. A tuple holds items of different
types, and reading it at a constant index or unpacking it compiles. `lists_as_tuples`
therefore writes a list as a tuple wherever Python could not tell the two apart.

Invariant of the output: a name `n` bound in the function (not in a nested scope)
- exactly once, by `n = [e0, ..., ek]` (a list literal without starred items; `n` is no
  parameter, is not declared `global`/`nonlocal`, and appears in no lambda, nested
  function or comprehension), and
- read only as `n[c]` for an int constant `c` with `-k-1 <= c <= k`, as `len(n)`, as
  the value of an unpacking assignment with k+1 targets and no starred one (`a, b = n`),
  or, when `returns` is set, as a returned value or an item of a tuple, list or dict
  literal returned (`return n`, `return y, n`)
is bound by `n = (e0, ..., ek)` instead, and each returned read of `n` is the list
literal `[n[0], ..., n[k]]`, so that the caller still gets a list
(`pytree_returns.returned_containers`, which runs after, returns it as a tuple and
rebuilds the list). Every other list is left as it was.

Why this cannot change a result: such a list object is reachable only through those
reads. Nothing mutates it (no method call, item write, augmented assignment or `del`),
nothing aliases it (`m = n`) or receives it (a call, a `for`), so neither its identity
nor its mutability can be observed; a read at a constant index, unpacking and `len` give
the same objects from a tuple of the same items (items are shared, not copied: a write
into an array item reaches the same array either way). A list that is not converted and
mixes kinds is refused by Numba, told at the user's line by `numba_errors`.
"""
from __future__ import annotations

import builtins

import gast

from .function import Function, resolve
from .nodes import copy_tree, walk
from .syntax import const, int_constant, name, subscript

_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef,
           gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def lists_as_tuples(fn: Function, returns: bool = False) -> Function:
    """`fn` in the output form above; `fn` itself when it has no list to convert.
    `returns`: returned lists may be rewritten too (only where `returned_containers` runs
    next, at a jit's top function; a callee returns to compiled code, which needs the
    list)."""
    if not any(isinstance(sub, gast.List) for sub in walk(fn.node)):
        return fn               # most functions: one walk, nothing else
    node = copy_tree(fn.node)
    lists = _convertible(fn, node, returns)
    if not lists:
        return fn
    parents = _parents(node)
    for literal in lists.values():
        _replace(parents, literal, gast.copy_location(
            gast.Tuple(elts=literal.elts, ctx=gast.Load()), literal))
    for sub in list(walk(node)):
        if isinstance(sub, gast.Name) and sub.id in lists and _returned(parents, sub):
            count = len(lists[sub.id].elts)
            items = [subscript(name(sub.id), const(k)) for k in range(count)]
            _replace(parents, sub, gast.copy_location(gast.List(elts=items,
                                                                ctx=gast.Load()), sub))
    return fn.replace(node=node)


# ---------------------------------------------------------------- analysis


def _convertible(fn: Function, node, returns: bool) -> dict[str, gast.List]:
    """Name -> its list literal, for the names of the invariant."""
    candidates: dict[str, gast.List] = {}
    bindings: dict[str, int] = {}
    declared, nested = set(), set()
    for sub in walk(node):
        if isinstance(sub, (gast.Global, gast.Nonlocal)):
            declared.update(sub.names)
        elif isinstance(sub, _SCOPES) and sub is not node:
            nested.update(n.id for n in walk(sub) if isinstance(n, gast.Name))
        elif isinstance(sub, gast.Name) and not isinstance(sub.ctx, gast.Load):
            bindings[sub.id] = bindings.get(sub.id, 0) + 1
        elif isinstance(sub, gast.Assign) and len(sub.targets) == 1 and \
                isinstance(sub.targets[0], gast.Name) and isinstance(sub.value, gast.List) \
                and not any(isinstance(e, gast.Starred) for e in sub.value.elts):
            candidates[sub.targets[0].id] = sub.value
    candidates = {k: v for k, v in candidates.items() if bindings.get(k) == 1 and
                  k not in declared and k not in nested}
    if not candidates:
        return {}
    parents = _parents(node)
    for sub in walk(node):
        if isinstance(sub, gast.Name) and sub.id in candidates and \
                isinstance(sub.ctx, gast.Load) and \
                not _read_as_tuple(fn, parents, sub, len(candidates[sub.id].elts), returns):
            del candidates[sub.id]
    return candidates


def _read_as_tuple(fn: Function, parents: dict, read: gast.Name, count: int,
                   returns: bool) -> bool:
    """Whether `read`, a load of a list of `count` items, reads it as a tuple would be."""
    parent = parents.get(id(read))
    if isinstance(parent, gast.Subscript) and parent.value is read:
        index = int_constant(parent.slice)
        return isinstance(parent.ctx, gast.Load) and index is not None and \
            -count <= index < count
    if isinstance(parent, gast.Call) and parent.args == [read] and not parent.keywords:
        return resolve(fn, parent.func, None) is builtins.len
    if isinstance(parent, gast.Assign) and parent.value is read:
        return len(parent.targets) == 1 and _unpacks(parent.targets[0], count)
    return returns and _returned(parents, read)


def _unpacks(target, count: int) -> bool:
    return isinstance(target, (gast.Tuple, gast.List)) and len(target.elts) == count and \
        not any(isinstance(e, gast.Starred) for e in target.elts)


def _returned(parents: dict, read) -> bool:
    """Whether `read` is the value of a return, or an item (nested) of a tuple, list or
    dict literal that is."""
    child, parent = read, parents.get(id(read))
    while isinstance(parent, (gast.Tuple, gast.List)) or \
            (isinstance(parent, gast.Dict) and any(v is child for v in parent.values)):
        child, parent = parent, parents.get(id(parent))
    return isinstance(parent, gast.Return) and parent.value is child


# ---------------------------------------------------------------- tree surgery


def _parents(node) -> dict[int, gast.AST]:
    """id(child) -> its parent node, for every node under `node`."""
    return {id(child): sub for sub in walk(node) for child in gast.iter_child_nodes(sub)}


def _replace(parents: dict, old, new) -> None:
    """Put `new` where `old` is in its parent (a field or an item of a list field)."""
    parent = parents[id(old)]
    for field in parent._fields:
        value = getattr(parent, field, None)
        if value is old:
            setattr(parent, field, new)
        elif isinstance(value, list):
            value[:] = [new if item is old else item for item in value]
    parents[id(new)] = parent
