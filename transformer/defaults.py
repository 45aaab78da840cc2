"""Default values as Python binds them: from the function object, not its source text.

Python evaluates a default once, when `def` runs, and keeps the value in `__defaults__`
and `__kwdefaults__` (which the program may rebind later). Re-reading the source text at
transform time would evaluate it again, in a different world: a module constant changed
since, an expression with a side effect. So a parsed function's default expressions are
replaced by the values themselves: a literal as a constant, any other value as a fresh
name bound to it in the environment.
"""
from __future__ import annotations

import inspect
import math

import gast

from .names import Namer
from .syntax import const, name


def take_defaults(fn, node: gast.FunctionDef, namer: Namer) -> dict:
    """Set `node`'s defaults to `fn.__defaults__` / `fn.__kwdefaults__`; returns the env
    entries for the defaults that are not literals."""
    args, env = node.args, {}
    positional = args.posonlyargs + args.args
    values = tuple(fn.__defaults__ or ())[-len(positional):] if positional else ()
    with_default = positional[len(positional) - len(values):]
    args.defaults = [default_node(p.id, v, namer, env, p) for p, v in zip(with_default, values)]
    kwdefaults = fn.__kwdefaults__ or {}
    args.kw_defaults = [default_node(p.id, kwdefaults[p.id], namer, env, p)
                        if p.id in kwdefaults else None for p in args.kwonlyargs]
    return env


def default_node(param: str, value, namer: Namer, env: dict, where) -> gast.expr:
    """The expression for default `value` of `param`, located at node `where`."""
    if value is inspect.Parameter.empty:
        return None
    if _is_plain_literal(value):
        node = const(value)
    else:
        fresh = namer.fresh(f"default_{param}")
        env[fresh] = value
        node = name(fresh)
    return gast.copy_location(node, where)


def _is_plain_literal(value) -> bool:
    """A value that reads back as itself when emitted as a Python literal."""
    if value is None or type(value) in (bool, int, str):
        return True
    if type(value) is float:
        return math.isfinite(value)
    if type(value) is complex:
        return math.isfinite(value.real) and math.isfinite(value.imag)
    return False
