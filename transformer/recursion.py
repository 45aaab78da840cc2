"""Refuse recursive user functions before compiling: a located error, not a RecursionError.

secant compiles each user function a compiled function calls as its own module, callees
first, so a function that calls itself (directly or through others) would be compiled
forever. `refuse_recursion` walks the calls to user functions (plain functions with source
and `numba.njit` kernels read through their source) from a Function and raises a
`TransformError` at the call that closes a cycle.
"""
from __future__ import annotations

import gast
import numba

from codegen.backends import is_user_function

from .errors import TransformError
from .function import Function, resolve
from .nodes import walk


def refuse_recursion(fn: Function) -> None:
    """Raise a TransformError at the first call in `fn`'s call tree that closes a cycle."""
    _visit(fn, [(None, fn.name)], set())


def _visit(fn: Function, stack: list, done: set) -> None:
    """`stack`: (function object, name) of the user functions being visited, `fn`'s last
    (generated Functions share their user function's origin, so the objects tell functions
    apart, and one decorator's wrapper code around two functions is two; the root,
    possibly generated, has None)."""
    for call, code, callee in user_calls(fn):
        keys = [k for k, _ in stack]
        if code in keys:
            names = [n for _, n in stack[keys.index(code):]] + [callee.name]
            raise fn.origin.error(call, f"{callee.name} calls itself (recursion: "
                                  f"{' -> '.join(names)}); secant compiles each called "
                                  "function separately and cannot compile a recursive one",
                                  "rewrite the recursion as a loop (with an explicit stack "
                                  "array if needed)")
        if code not in done:
            done.add(code)
            _visit(callee, stack + [(code, callee.name)], done)


def user_calls(fn: Function):
    """(call node, callee Function) for each call of a user function in `fn`."""
    from .frontend import parse_callee
    for node in walk(fn.node):
        if not isinstance(node, gast.Call):
            continue
        target = resolve(fn, node.func, None)
        if isinstance(target, numba.core.dispatcher.Dispatcher):
            target = target.py_func
        if not is_user_function(target):
            continue
        try:
            yield node, target, parse_callee(target)
        except TransformError:
            continue                      # no source: compiled as it is, not by secant
