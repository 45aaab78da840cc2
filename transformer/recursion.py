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


def refuse_recursion(fn: Function) -> None:
    """Raise a TransformError at the first call in `fn`'s call tree that closes a cycle."""
    _visit(fn, [], set())


def _key(fn: Function) -> tuple:
    return fn.origin.filename, fn.origin.lineno, fn.origin.name


def _visit(fn: Function, stack: list, done: set) -> None:
    stack.append(_key(fn))
    for call, callee in _user_calls(fn):
        key = _key(callee)
        if key in stack:
            cycle = " -> ".join(k[2] for k in stack[stack.index(key):]) + f" -> {callee.name}"
            raise fn.origin.error(call, f"{callee.name} calls itself (recursion: {cycle}); "
                                  "secant compiles each called function separately and "
                                  "cannot compile a recursive one",
                                  "rewrite the recursion as a loop (with an explicit stack "
                                  "array if needed)")
        if key not in done:
            _visit(callee, stack, done)
    stack.pop()
    done.add(_key(fn))


def _user_calls(fn: Function):
    """(call node, callee Function) for each call of a user function in `fn`."""
    from .frontend import parse
    for node in gast.walk(fn.node):
        if not isinstance(node, gast.Call):
            continue
        target = resolve(fn, node.func, None)
        if isinstance(target, numba.core.dispatcher.Dispatcher):
            target = target.py_func
        if not is_user_function(target):
            continue
        try:
            yield node, parse(target)
        except TransformError:
            continue                      # no source: compiled as it is, not by secant
