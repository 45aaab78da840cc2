"""What the helpers a function calls may change while it runs: attributes of objects, and
the dicts and arrays of the function's env.

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
- `may_change(fn, mapping)`: some reachable function names `mapping` (by identity,
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


def changed_arrays(fn) -> list[str]:
    """The names (as the functions name them) of the global or closed-over arrays that
    calling `fn` may change (`may_change`'s reading), for a refusal's message."""
    found = []
    for func in reachable(fn):
        changed = _names_not_only_read(func, False)
        found += [n for n, v in named_values(func).items()
                  if n in changed and isinstance(v, np.ndarray)]
    return found


def may_change(fn, value) -> bool:
    """Whether calling `fn` may change `value`, a dict or an array of the caller's env:
    some function it may run names `value` (through a global or a closure cell) and uses
    it other than by reading it (`_names_not_only_read`)."""
    for func in reachable(fn):
        names = {n for n, v in named_values(func).items() if v is value}
        if names and (names & _names_not_only_read(func, isinstance(value, dict))):
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


# calls that only read what is handed to them, besides NumPy's (`_reads_argument`)
_READING_CALLS = frozenset({"len", "sorted", "list", "tuple", "dict", "iter", "any", "all",
                            "min", "max", "sum", "print", "repr", "str", "isinstance",
                            "float", "int", "bool", "abs", "enumerate", "zip", "range"})
# attributes and methods that give a new value (not a view that a write could go through)
_NEW_VALUES = frozenset({"get", "keys", "values", "items", "copy", "__getitem__",
                         "__contains__", "__len__", "shape", "ndim", "size", "dtype",
                         "nbytes", "itemsize", "sum", "mean", "max", "min", "prod", "std",
                         "var", "any", "all", "argmax", "argmin", "astype", "tolist", "item",
                         "dot", "cumsum", "cumprod", "nonzero", "round", "clip"})
# methods that change what they are called on
_CHANGING_METHODS = frozenset({"update", "pop", "popitem", "setdefault", "clear", "fill",
                               "sort", "put", "itemset", "resize", "partition", "setfield",
                               "append", "extend", "insert", "remove", "__setitem__",
                               "__delitem__", "__ior__", "__iadd__", "__isub__", "__imul__",
                               "__itruediv__"})
# NumPy functions that write into their first argument
WRITING_FUNCTIONS = (np.copyto, np.put, np.place, np.putmask, np.fill_diagonal)


@functools.lru_cache(maxsize=1024)
def _names_not_only_read(func, items_are_new: bool) -> frozenset:
    """The names `func` uses other than to read the value they hold (`d[k]`, `d.get(k)`,
    `W[i] * 2.0`, `W.shape`, `np.sum(W)`, `len(d)`, `k in d`): stored into, changed by a
    method, bound or handed on (a view of it too: `row = W[0]`, `helper(W)`, `out=W`),
    iterated over; every name it reads when its source cannot be parsed. `items_are_new`:
    the names hold dicts, so an item read (`d["W"]`, then bound or handed on) is a read."""
    code = func.__code__
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
                     not _only_read(node, parents, declared, func.__globals__,
                                    items_are_new))


def _only_read(node: ast.Name, parents: dict, declared: set, namespace: dict,
               items_are_new: bool) -> bool:
    if not isinstance(node.ctx, ast.Load):
        return node.id not in declared  # a local of that name is not the global
    expr = node
    while True:                         # up through items, attributes and method calls
        parent = parents.get(id(expr))
        if isinstance(parent, ast.Subscript) and parent.value is expr:
            if not isinstance(parent.ctx, ast.Load):
                return False
            if items_are_new:           # a dict's item is not the dict
                return True
        elif isinstance(parent, ast.Attribute):
            if parent.attr in _CHANGING_METHODS or not isinstance(parent.ctx, ast.Load):
                return False
            if parent.attr in _NEW_VALUES:
                return True
        elif isinstance(parent, ast.Call) and parent.func is expr:
            pass                        # `W.reshape(4)`: may be a view of it
        elif not (isinstance(parent, ast.IfExp) and expr is not parent.test):
            break                       # `W if c else V` may be it
        expr = parent
    if isinstance(parent, ast.Call):
        if any(k.value is expr for k in parent.keywords) or \
                any(isinstance(a, ast.Starred) and a.value is expr for a in parent.args):
            return False
        return _reads_argument(parent.func, namespace)
    return isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Expr,
                               ast.Assert, ast.If, ast.While, ast.FormattedValue)) or \
        isinstance(parent, ast.Subscript) and parent.slice is expr


def _reads_argument(func, namespace: dict) -> bool:
    """Whether a call of `func` (an expression in a module `namespace`) only reads the
    arrays and dicts handed to it: a builtin that reads, or a NumPy function or ufunc
    (not one that writes into its argument, nor a ufunc's `.at`)."""
    if isinstance(func, ast.Name) and func.id in _READING_CALLS and func.id not in namespace:
        return True
    path = []
    while isinstance(func, ast.Attribute):
        path.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id not in namespace:
        return False
    value = namespace[func.id]
    for attr in reversed(path):
        value = getattr(value, attr, None)
    module = getattr(value, "__module__", None) or ""
    return (isinstance(value, np.ufunc) or module.partition(".")[0] == "numpy") and \
        not any(value is w for w in WRITING_FUNCTIONS) and path[-1:] != ["at"]
