"""Arrays a compiled function reads from outside, passed as hidden trailing arguments.

A function that reads a global or closed-over NumPy array (`A` in `x @ A @ x`) would, bound
in the generated module's namespace, have the array frozen into the machine code as a
constant: Numba then refuses to cache the function ("uses dynamic globals") and a new
array of the same kind needs a new compile. On the cpu backend each such array instead
becomes a parameter appended after the function's own, and every call of a generated
function that takes hidden arrays passes them on, so the module text (and Numba's cache)
depends only on each array's dtype and dimensions, never on its values.

A tuple holding arrays (`LAYERS = (W1, W2)`, a namedtuple of weights, nested tuples) is
passed the same way, whole: frozen in, a write into one of its arrays (`LAYERS[1][0] = 5`)
would go unseen by the compiled code, which Python sees at the next call. Its kind
(`kind`) holds its numbers by value, since a transformation may have read them (a loop
bound), and its arrays by kind. A list of arrays, tuples and numbers (`PARAMS = [(W1, b1),
(W2, b2)]`; numbers alone too), which Numba refuses in globals, is passed the same way as a
tuple (`passed`), read afresh at each call, so an item appended or rebound is seen.

Invariant of the output of `take_hidden_arrays`: the function's parameters are its own,
then one per hidden array (the name it read the array by, or a fresh `captured` name for an
array only a callee reads); each call of a callee in `callee_arrays` passes, after its own
arguments, the caller's parameters holding the callee's hidden arrays, in the callee's
order. Arrays are told apart by identity.

The top-level caller (`transformer.jit`) reads each hidden array at call time where the
function found it - the module global or closure cell - so a rebinding is seen on the next
call, as Python would see it (`reader`).
"""
from __future__ import annotations

from typing import Callable, Sequence

import gast
import numba
import numpy as np

from .names import Namer, stored_and_loaded
from .nodes import copy_tree, walk
from .tree_util import tree_leaves
from .vector_shapes import argument_key


def is_hidden_array(value) -> bool:
    """Whether `value` is passed as a hidden argument rather than frozen in: an ndarray
    Numba can take as an argument, a tuple of them, or a list (see the module docstring)."""
    if type(value) is not np.ndarray and not _holds_arrays(value):
        return False
    try:
        numba.typeof(passed(value))
    except (ValueError, TypeError, NotImplementedError):
        return False
    return True


_LEAVES = (bool, int, float, complex, np.bool_, np.number, type(None))


def _holds_arrays(value) -> bool:
    """A tuple (or namedtuple) whose leaves, through nested tuples and lists, are arrays
    and numbers, with at least one array; or such a list, of numbers alone too (a dict
    inside is no leaf of these)."""
    if not isinstance(value, (tuple, list)):
        return False
    leaves = tree_leaves(value, is_leaf=lambda node: not isinstance(node, (tuple, list)))
    return bool(leaves) and (isinstance(value, list) or
                             any(type(leaf) is np.ndarray for leaf in leaves)) and \
        all(type(leaf) is np.ndarray or isinstance(leaf, _LEAVES) for leaf in leaves)


def passed(value):
    """`value` as the compiled code takes it: a list (`LAYERS = [W1, W2]`, mutable, so
    never frozen in) as a tuple, read afresh at each call; anything else as it is."""
    if isinstance(value, list):
        return tuple(passed(item) for item in value)
    if type(value) is tuple:
        return tuple(passed(item) for item in value) if \
            any(isinstance(item, (list, tuple)) for item in value) else value
    return value


def kind(value):
    """What compiled code depends on of a hidden value: an array's `argument_key`; for a
    tuple (a list is passed as one), its type and its items' kinds, numbers by value."""
    if isinstance(value, list):
        value = passed(value)
    if isinstance(value, tuple):
        return type(value), tuple(kind(item) for item in value)
    if type(value) is np.ndarray:
        return argument_key([value])[0]
    if isinstance(value, _LEAVES):
        return type(value), value if value == value else "nan"
    return type(value)


def not_called_only(node: gast.FunctionDef) -> set[str]:
    """The names read in `node` other than as the callee of a call (`name(...)`) without
    starred arguments or keywords: every other name's calls can take appended arguments."""
    calls = set()
    names = []
    for sub in walk(node):
        if isinstance(sub, gast.Call) and not sub.keywords and \
                not any(isinstance(a, gast.Starred) for a in sub.args):
            calls.add(id(sub.func))
        elif isinstance(sub, gast.Name):
            names.append(sub)
    return {sub.id for sub in names if id(sub) not in calls}


def take_hidden_arrays(node: gast.FunctionDef, env, own: Sequence[str],
                       callee_arrays: dict[str, tuple]) -> tuple[gast.FunctionDef, list[str],
                                                                 tuple]:
    """(new node, the hidden parameter names, the arrays they hold, in order).

    `own`: the free names of `node` bound to hidden arrays in `env`; `callee_arrays`:
    callee name -> the arrays that callee takes hidden (none in `not_called_only`).
    `node` is not changed.
    """
    node = copy_tree(node)
    namer = Namer(set().union(*stored_and_loaded(node), env))
    names: list[str] = []
    arrays: list = []
    by_id: dict[int, str] = {}
    for name in own:
        by_id.setdefault(id(env[name]), name)
        names.append(name)
        arrays.append(env[name])
    for callee in sorted(callee_arrays):
        for array in callee_arrays[callee]:
            if id(array) not in by_id:
                by_id[id(array)] = namer.fresh("captured")
                names.append(by_id[id(array)])
                arrays.append(array)
    for call in walk(node):
        if isinstance(call, gast.Call) and isinstance(call.func, gast.Name) \
                and call.func.id in callee_arrays:
            call.args = call.args + [_load(by_id[id(a)]) for a in callee_arrays[call.func.id]]
    node.args.args = node.args.args + [gast.Name(id=n, ctx=gast.Param(), annotation=None,
                                                 type_comment=None) for n in names]
    return node, names, tuple(arrays)


def _load(name: str) -> gast.Name:
    return gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None)


def describe(value) -> str:
    """What the compiled code depends on: the header line's text for one hidden value."""
    if isinstance(value, (tuple, list)):
        return f"hidden argument, {numba.typeof(passed(value))}"
    return f"hidden argument, array {value.dtype} {value.ndim}-d"


def reader(array, bindings) -> Callable[[], object]:
    """A function reading, at call time, the binding `array` was read from (a module
    global or a closure cell recorded in `bindings`, a `freshness.Bindings`); for an
    array found elsewhere (a default, a value a transformation made), the array itself."""
    found = bindings.binding_of(array)
    return found if found is not None else (lambda: array)
