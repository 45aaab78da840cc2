"""`functools.partial` objects: transformed as the function they call, its bound arguments
held fixed (`grad(partial(loss, scale=2.0))`, `jit(partial(step, cfg))`), as JAX does.

A partial is parsed as its function with the parameters `inspect.signature` gives the
partial: the positional ones bound are gone, and a keyword bound becomes a keyword-only
parameter whose default is the bound value (a caller may still pass it, as Python allows).
A positional parameter bound is a name of the function's environment holding the bound
value, as a closed-over value is: a bound array is a constant of the transformed function,
and a bound dict of settings is read by constant keys when the function is transformed
(`cfg["lr"]`, `transformer.dict_reads`). Where the body also assigns that name, the value
is bound to it by a first statement instead. The result has an origin of its own (the
function's file and line, its name marked as a partial's), so it is never taken for the
function itself; two partials of one function differ by their environments, which the
compiled code's cache keys hold (a bound float, like a closed-over one).

Refused, with a hint: a partial of something that is not a Python function with source
(a builtin, a NumPy ufunc: write a `def`).
"""
from __future__ import annotations

import functools
import inspect

import gast

from .defaults import default_node
from .errors import TransformError
from .function import Function, Origin
from .names import Namer, assigned_names, stored_and_loaded
from .nodes import copy_tree
from .object_attributes import bind_object_attributes
from .syntax import assign

_KIND = inspect.Parameter


def is_partial(obj) -> bool:
    return isinstance(obj, functools.partial)


def partial_name(obj) -> str:
    """A name for a callable without `__name__` (a partial: `loss_partial`)."""
    inner = getattr(obj, "func", obj)
    return f"{getattr(inner, '__name__', type(inner).__name__)}_partial"


def parse_partial(partial: functools.partial, parse) -> Function:
    """The Function of `partial` (module docstring); `parse` parses `partial.func`."""
    inner = parse(partial.func)
    node = copy_tree(inner.node)
    args = node.args
    parameters = _partial_parameters(partial, args, inner)
    env = dict(inner.env)
    namer = Namer(set().union(*stored_and_loaded(node), env))
    where = node
    kept = {p.name for p in parameters}
    positional = args.posonlyargs + args.args
    originals = _original_defaults(args)
    assigned = assigned_names(gast.Module(body=node.body, type_ignores=[]))
    first = []
    for param, value in zip([p.id for p in positional if p.id not in kept], partial.args):
        if param in assigned:               # rebound in the body: bound by a statement
            first.append(assign(param, default_node(param, value, namer, env, where)))
        else:
            env[param] = value
    node.body[:0] = [gast.copy_location(stmt, where) for stmt in first]

    def default(p):
        if p.name in partial.keywords:
            return default_node(p.name, partial.keywords[p.name], namer, env, where)
        return originals.get(p.name)
    named = {p.id: p for p in positional + args.kwonlyargs}
    plain = (_KIND.POSITIONAL_ONLY, _KIND.POSITIONAL_OR_KEYWORD)
    args.posonlyargs = [named[p.name] for p in parameters if p.kind is _KIND.POSITIONAL_ONLY]
    args.args = [named[p.name] for p in parameters if p.kind is _KIND.POSITIONAL_OR_KEYWORD]
    args.defaults = [default(p) for p in parameters
                     if p.kind in plain and default(p) is not None]
    args.kwonlyargs = [named[p.name] for p in parameters if p.kind is _KIND.KEYWORD_ONLY]
    args.kw_defaults = [default(p) for p in parameters if p.kind is _KIND.KEYWORD_ONLY]
    gast.fix_missing_locations(node)
    origin = Origin(inner.origin.filename, f"{inner.origin.name} (partial)",
                    inner.origin.lineno)
    env = bind_object_attributes(node, env, namer)     # `self.W` of a bound method
    return Function(node, env, origin)


def _partial_parameters(partial, args, inner) -> list:
    """The parameters Python gives `partial` over the parsed function's own (what the
    function secant reads takes: for a NumPy function, its one-line wrapper's)."""
    names = [p.id for p in args.posonlyargs + args.args + args.kwonlyargs]
    required = len(args.posonlyargs + args.args) - len(args.defaults)
    text = ", ".join(
        [p.id for p in args.posonlyargs] + ["/"] * bool(args.posonlyargs) +
        [p.id + ("=None" if k >= required - len(args.posonlyargs) else "")
         for k, p in enumerate(args.args)] +
        ([f"*{args.vararg.id}"] if args.vararg else ["*"] * bool(args.kwonlyargs)) +
        [p.id + ("" if d is None else "=None") for p, d in zip(args.kwonlyargs,
                                                                args.kw_defaults)] +
        ([f"**{args.kwarg.id}"] if args.kwarg else []))
    scope: dict = {}
    exec(f"def {inner.node.name}({text}):\n    pass\n", scope)
    try:
        parameters = list(inspect.signature(functools.partial(
            scope[inner.node.name], *partial.args, **partial.keywords)).parameters.values())
    except (TypeError, ValueError) as exc:
        raise TransformError(
            f"cannot transform {partial!r}: {exc}", filename=inner.origin.filename,
            lineno=inner.node.lineno, col=0, line=inner.origin.source_line(inner.node.lineno),
            hint=f"the function secant reads takes ({', '.join(names)}); bind those, or "
                 "write a `def` that calls the function with the values bound") from None
    return parameters


def _original_defaults(args) -> dict:
    """parameter -> its default expression in the parsed function."""
    positional = args.posonlyargs + args.args
    found = {p.id: d for p, d in zip(positional[len(positional) - len(args.defaults):],
                                     args.defaults)}
    found.update({p.id: d for p, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    return found
