"""Calls to the user's functions bound at transform time, for Numba.

Numba binds a keyword-only parameter as if it were positional: a call
`h(x, 1.5, k=4.0)` of `def h(x, y=0.5, *, k=2.0)` computes with `k=1.5`, and a keyword
argument naming a positional parameter fails inside Numba. So for the cpu backend every
call to a function secant compiles (the user's functions, generated Functions, secant's
wrappers) is bound here as Python binds it - keywords placed, defaults filled in with
the callee's own values - and every compiled function takes its parameters positionally.

Invariant of the output: the function's parameters are positional without defaults, and
each call to a function secant compiles passes every parameter of the callee positionally.
"""
from __future__ import annotations

import inspect

import gast

from codegen.backends import is_user_function

from .defaults import default_node
from .errors import TransformError
from .frontend import parse_callee
from .function import Function, positional_parameters, resolve, signature
from .names import Namer
from .nodes import walk

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def bind_calls(fn: Function) -> Function:
    """`fn` with positional parameters, its calls to compiled functions bound."""
    fn = positional_parameters(fn)
    node, env = fn.node, dict(fn.env)
    namer = Namer.for_function(fn)
    for call in walk(node):
        if isinstance(call, gast.Call):
            callee = compiled_callee(fn, call.func)
            if callee is not None:
                bind_arguments(fn, call, callee, namer, env)
    return fn.replace(env=env)


def compiled_callee(fn: Function, func) -> Function | None:
    """The Function secant compiles for the called object, if it compiles one."""
    value = resolve(fn, func, None)
    if isinstance(value, Function):
        return value
    if hasattr(value, "__secant_function__") or is_user_function(value):
        try:
            return parse_callee(value)
        except TransformError:          # reported where the backend compiles it
            return None
    return None


def bind_arguments(fn: Function, call: gast.Call, callee: Function, namer, env) -> None:
    """Make `call` of `callee` pass every parameter positionally, in `callee.params`
    order, as Python binds it: keywords placed, defaults filled in (a default that is not
    a literal is bound to a fresh name in `env`). A call Python refuses is a located
    TransformError."""
    sig = signature(callee)
    plain = all(p.kind in _POSITIONAL for p in sig.parameters.values())
    if plain and not call.keywords and len(call.args) == len(sig.parameters):
        return
    try:
        bound = sig.bind(*call.args, **{k.arg: k.value for k in call.keywords})
    except TypeError as exc:
        raise fn.origin.error(call, f"cannot call {callee.name} this way: {exc}",
                              "pass the arguments its definition takes") from None
    bound.apply_defaults()
    call.args = [value if isinstance(value, gast.AST) else
                 default_node(param, value, namer, env, call)
                 for param, value in bound.arguments.items()]
    call.keywords = []
