"""What the helpers a function calls may change while it runs: attributes of objects, and
items of the dicts the function reads.

Reads of a namespace the function does not bind (`cfg.scale` of an object it closes
over, `CONFIG["scale"]` of a module-level dict) are bound when the function is
transformed (`object_attributes`, `dict_reads`) and re-checked at the next call
(`freshness`). A helper of the user's called in the middle of the function that changes
such a namespace (`turn_the_knob()` sets `KNOB.scale`; `bump()` does
`CONFIG["scale"] += 1`) would leave the rest of the function with the value from before
the call, where Python reads the new one. Such reads are left as written instead.

Both questions walk the same graph: `reachable` yields the functions of the user's a call
may run, transitively through the names their code reads (globals and closure cells; for
an object of the user's, its class's methods of those names). The names a function's
code reads stand for what it may call, which over-approximates.

- `may_set_attributes(fn)`: some reachable function stores or deletes an attribute (of
  any object).
- `may_change_dict(fn, mapping)`: some reachable function names `mapping` (by identity,
  through a global or a closure cell) and uses it other than by reading it: an item
  stored or deleted, a method that changes it, the dict handed to a call or bound to
  another name. A function whose source cannot be read counts as changing every dict it
  names.
"""
from __future__ import annotations

import ast
import dis
import functools
import inspect
import textwrap
import types

import numpy as np

from codegen.backends import is_library_name

from . import freshness


def is_plain_object(value) -> bool:
    """An instance of a user's class (not a module, class, function, array, number,
    container or library object)."""
    if isinstance(value, (type, types.ModuleType, types.FunctionType, types.MethodType,
                          types.BuiltinFunctionType, np.ndarray, np.generic, int, float,
                          complex, str, bytes, tuple, list, dict, set, type(None))):
        return False
    if hasattr(value, "__secant_function__") or hasattr(value, "py_func"):
        return False
    return not is_library_name(type(value).__module__) and hasattr(value, "__dict__")


def defining_namespace(klass, attr: str):
    """The namespace (`vars`) of the first class in `klass`'s MRO defining `attr`, or None."""
    return next((vars(c) for c in klass.__mro__ if attr in vars(c)), None)


def called_function(value):
    """The Python function of the user's that calling `value` runs (a function, a method
    bound to an object of the user's, an object whose class defines `__call__`), or None."""
    if isinstance(value, types.MethodType) and is_plain_object(value.__self__):
        value = value.__func__
    elif is_plain_object(value):
        namespace = defining_namespace(type(value), "__call__")
        value = namespace["__call__"] if namespace is not None else None
    if isinstance(value, types.FunctionType) and not is_library_name(value.__module__):
        return value
    return None


def reachable(fn):
    """`fn` (a value called) and each function of the user's its code may run, once each."""
    start = called_function(fn)
    todo, seen = ([start] if start is not None else []), set()
    while todo:
        func = todo.pop()
        if id(func) in seen:
            continue
        seen.add(id(func))
        yield func
        names = names_read(func.__code__)
        for value in named_values(func).values():
            found = called_function(value)
            if found is not None:
                todo.append(found)
            if is_plain_object(value):          # `sim.step()`: the methods it names
                todo.extend(vars(c)[n] for c in type(value).__mro__ for n in names
                            if isinstance(vars(c).get(n), types.FunctionType))


def named_values(func) -> dict:
    """The globals and closure cells `func`'s code reads, by name."""
    cells = dict(zip(func.__code__.co_freevars, func.__closure__ or ()))
    found = {}
    for name in names_read(func.__code__) | set(cells):
        if name in cells:
            found[name] = freshness.cell_contents(cells[name])
        elif name in func.__globals__:
            found[name] = func.__globals__[name]
    return found


def may_set_attributes(fn) -> bool:
    """Whether calling `fn` may store or delete an attribute of any object."""
    return any(stores_attributes(func.__code__) for func in reachable(fn))


def may_change_dict(fn, mapping: dict) -> bool:
    """Whether calling `fn` may change `mapping` (see the module docstring)."""
    for func in reachable(fn):
        names = {n for n, v in named_values(func).items() if v is mapping}
        if names and (names & _names_not_only_read(func.__code__)):
            return True
    return False


def stores_attributes(code) -> bool:
    """Whether `code` (nested code included) stores or deletes an attribute."""
    if any(i.opname in ("STORE_ATTR", "DELETE_ATTR") for i in dis.get_instructions(code)):
        return True
    return any(stores_attributes(c) for c in code.co_consts if isinstance(c, types.CodeType))


def names_read(code) -> set:
    """The global, attribute and free names `code` (nested code included) reads."""
    nested = [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return set(code.co_names).union(set(code.co_freevars), *(names_read(c) for c in nested))


# calls that only read the dict handed to them, and methods that only read it
_READING_CALLS = frozenset({"len", "sorted", "list", "tuple", "dict", "iter", "any", "all",
                            "min", "max", "sum", "print", "repr", "str", "isinstance"})
_READING_METHODS = frozenset({"get", "keys", "values", "items", "copy", "__getitem__",
                              "__contains__", "__len__"})


@functools.lru_cache(maxsize=None)
def _names_not_only_read(code) -> frozenset:
    """The names `code`'s function uses other than to read the value they hold (`d[k]`,
    `d.get(k)`, `len(d)`, `for k in d`, `k in d`); every name it reads when its source
    cannot be parsed."""
    try:
        lines, _ = inspect.findsource(code)
        source = textwrap.dedent("".join(inspect.getblock(lines[code.co_firstlineno - 1:])))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndexError):
        return frozenset(names_read(code))
    parents = {id(child): node for node in ast.walk(tree)
               for child in ast.iter_child_nodes(node)}
    declared = {n for node in ast.walk(tree) if isinstance(node, (ast.Global, ast.Nonlocal))
                for n in node.names}           # `global CONFIG; CONFIG = {...}` rebinds it
    return frozenset(node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and
                     not _only_read(node, parents, declared))


def _only_read(node: ast.Name, parents: dict, declared: set) -> bool:
    if not isinstance(node.ctx, ast.Load):
        return node.id not in declared  # a local of that name is not the dict
    parent = parents.get(id(node))
    if isinstance(parent, ast.Subscript) and parent.value is node:
        return isinstance(parent.ctx, ast.Load)
    if isinstance(parent, ast.Attribute):
        return parent.attr in _READING_METHODS
    if isinstance(parent, ast.Call) and node in parent.args:
        return isinstance(parent.func, ast.Name) and parent.func.id in _READING_CALLS
    if isinstance(parent, ast.Compare):
        return True
    if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
        return True
    return isinstance(parent, ast.Call) and parent.func is node
