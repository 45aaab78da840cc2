"""Functions passed to the user's helpers, bound at transform time.

`apply(np.sin, x)`, `layer(x, act=np.tanh)`, or `layer(x)` of `def layer(x, act=np.tanh)`:
a helper that calls a function it is handed. Numba cannot pass a function as a value, and
a transformation must know which function the helper calls to differentiate or batch it.
So each call of a user's function that passes (or leaves to its default) a function known
at transform time - a NumPy, SciPy or math function, a function of the user's modules, a
secant transformation - calls a copy of the helper specialized to it instead
(`specialize`: the parameter gone, its reads bound to that function), under a fresh name.
The copy's own calls are bound the same way, so the function can be handed down.

Invariant of the output: no call of a user's function passes, or leaves to a default, an
argument whose value is a function known at transform time, except through recursion
deeper than `_DEPTH`.
"""
from __future__ import annotations

import inspect
import threading

import gast
import numpy as np

from codegen.backends import is_user_function

from . import freshness
from .errors import TransformError
from .function import Function, resolve_in, signature
from .library_functions import is_library_primitive
from .names import Namer, assigned_names
from .nodes import walk
from .primitives import registry
from .specialize import specialize

_DEPTH = 8
_state = threading.local()


def bind_function_arguments(node: gast.FunctionDef, env: dict, namer: Namer, parse) -> dict:
    """Rewrite, in place, each call in `node` of a user's function handed a known function
    to call a specialized copy bound to a fresh name; the env with those names. `parse`
    reads a callee (the frontend's, passed in: the frontend calls this)."""
    env = dict(env)
    local = assigned_names(node)             # the parameters among them
    for call in [n for n in walk(node) if isinstance(n, gast.Call)]:
        target = environment_value(call.func, env, local)
        if not is_user_function(target):
            continue
        bound = _bound_functions(call, target, env, local, parse)
        if bound is None:
            continue
        callee, sig, arguments, functions = bound
        copy = _specialized(target, callee, functions, parse)
        fresh = namer.fresh(copy.name)
        env[fresh] = copy
        call.func = gast.copy_location(gast.Name(fresh, gast.Load(), None, None), call.func)
        # what is left is passed by keyword: bound_calls places it for Numba
        call.args = []
        call.keywords = [gast.keyword(arg=name, value=value) for name, value in arguments.items()
                         if name not in functions]
    return env


def _bound_functions(call, target, env, local, parse):
    """(callee Function, its signature, the call's bound arguments, {parameter: function})
    for a call that hands `target` a known function; None for any other call."""
    if getattr(_state, "depth", 0) >= _DEPTH or not _hands_function(call, target, env, local):
        return None
    try:
        callee = parse(target)
    except TransformError:          # reported where the call is compiled or transformed
        return None
    sig = signature(callee)
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in sig.parameters.values()) or \
            any(isinstance(a, gast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return None
    try:
        arguments = sig.bind(*call.args, **{k.arg: k.value for k in call.keywords}).arguments
    except TypeError:               # reported, located, by bound_calls
        return None
    functions = {}
    for param in sig.parameters.values():
        value = environment_value(arguments[param.name], env, local) if param.name in arguments \
            else param.default
        if is_function(value):
            functions[param.name] = value
    return (callee, sig, dict(arguments), functions) if functions else None


def _hands_function(call, target, env, local) -> bool:
    """Whether the call passes a known function, or `target` has one as a default (read
    before parsing the callee: most calls hand none, and a recursive one calls itself)."""
    passed = [a.value if isinstance(a, gast.Starred) else a for a in call.args] + \
        [k.value for k in call.keywords]
    defaults = list(target.__defaults__ or ()) + list((target.__kwdefaults__ or {}).values())
    return any(is_function(environment_value(a, env, local)) for a in passed) or \
        any(is_function(d) for d in defaults)


def _specialized(target, callee: Function, functions: dict, parse) -> Function:
    """The copy of `callee` (parsed from `target`) bound to `functions`, made once per
    build for that function, those functions and the depth (a copy made deeper binds
    fewer of its own calls)."""
    depth = f"depth {getattr(_state, 'depth', 0)}"
    key = ("specialized", depth, target) + tuple(functions) + tuple(functions.values())
    return freshness.once_per_build(key, lambda: _specialize(callee, functions, parse))


def _specialize(callee: Function, functions: dict, parse) -> Function:
    copy = specialize(callee, functions)
    node = copy.node
    node.name = f"{callee.name}_with_" + "_".join(
        f"{param}_{_label(value)}" for param, value in functions.items())
    namer = Namer(assigned_names(node) | set(copy.env) | {node.name})
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        env = bind_function_arguments(node, copy.env, namer, parse)
    finally:
        _state.depth -= 1
    return copy.replace(node=node, env=env)


def is_function(value) -> bool:
    """A function a helper can be specialized to: a Python function, a C builtin, a ufunc,
    a secant transformation, a library function secant has rules for (`np.sum`, `np.dot`,
    whatever type a NumPy version gives them), or another routine the primitive registry
    says users call from NumPy, SciPy or math (its missing rule is then named where the
    helper calls it). Not a class, an array, a number or a callable object."""
    if value is None or isinstance(value, (type, np.ndarray, np.generic)):
        return False
    return inspect.isfunction(value) or inspect.isbuiltin(value) or \
        isinstance(value, np.ufunc) or hasattr(value, "__secant_function__") or \
        is_library_primitive(value) or \
        inspect.isroutine(value) and registry.is_user_facing(value)


def environment_value(expr, env: dict, local: set):
    """The transform-time value of a name or dotted attribute the function reads from its
    module or closure (None for a local name, an attribute of one, or any other
    expression)."""
    root = expr
    while isinstance(root, gast.Attribute):
        root = root.value
    if isinstance(root, gast.Name) and root.id in local:
        return None
    return resolve_in(env, expr, None)


def _label(value) -> str:
    name = getattr(value, "__name__", None) or type(value).__name__
    return "".join(c if c.isalnum() else "_" for c in name)


def refuse_parameter_call(fn: Function, stmt, func) -> None:
    """A located TransformError if `func`, the callee of a call in `fn` being
    differentiated, is one of `fn`'s parameters: which function it holds is known only
    when `fn` is called, after the derivative was built."""
    if not isinstance(func, gast.Name) or func.id not in fn.params:
        return
    raise fn.origin.error(
        stmt, f"{fn.name} calls its parameter {func.id!r}: which function it holds is not "
        "known when the derivative is built",
        f"call {fn.name} from a function that passes the function by name, and transform "
        f"that one: grad(lambda x: {fn.name}(x, np.tanh)) (a helper called with a function "
        "is specialized to it), or read the function from the module")
