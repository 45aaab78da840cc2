"""Callees named by an expression, bound to a name: inline transformations and helpers
reached through a module.

Two call forms name their callee by an expression rather than by a plain name:

- a transformation applied inline, `grad(energy)(pos, p)` or
  `vmap(f, in_axes=(0, None))(xs, w)`, as JAX users write it;
- a helper reached through the user's module, `mymodule.energy(v)` or `pkg.sub.f(v)`,
  which Numba cannot call (a module attribute that is a plain Python function).

Both are resolved at transform time and bound to a fresh name of the Function's env, so
the call site calls that name and the callee goes through the same machinery
(`bound_calls`, `materialize`, the transformations' callee rules) as one the user bound
at module level (`g = grad(energy)`). An inline transformation is evaluated once, from
arguments that are constants: names the function reads from its module or closure,
literals, and nested inline transformations. Anything else is a located TransformError.

Invariant of the output: no call's callee is a call of a secant transformation, and no
callee is an attribute path through a user's module to a function secant compiles; the
values read stay recorded by the frontend (freshness) before the rewrite.
"""
from __future__ import annotations

import ast
import inspect
import types

import gast

from codegen.backends import is_library_module, is_user_function

from .errors import TransformError
from .function import resolve_in
from .names import Namer
from .nodes import walk

_PACKAGE = __name__.rpartition(".")[0]
# the transformations that return a callable, by defining module and name
_TRANSFORMS = {
    f"{_PACKAGE}.api_reverse": {"grad", "value_and_grad", "vjp"},
    f"{_PACKAGE}.api_forward": {"jacfwd", "jacrev", "hessian", "jvp", "linearize"},
    f"{_PACKAGE}.api_batching": {"vmap"},
    f"{_PACKAGE}.jit": {"jit"},
    f"{_PACKAGE}.checkpoint": {"checkpoint", "checkpoint_loop"},
}
_HINT = "bind it at module level: g = {call}, and call g(...) here"
# these return a closure over primal values computed at run time: no transform-time value
_PULLBACKS = {"vjp": "grad(f) or value_and_grad(f)", "linearize": "jvp(f)(*primals, *tangents)"}


def bind_callees(node: gast.FunctionDef, env: dict, origin, namer: Namer) -> dict:
    """Rewrite, in place, each call of an inline transformation or of a helper reached
    through a user's module in `node` to call a fresh name; the env with those names."""
    env = dict(env)
    for call in [n for n in walk(node) if isinstance(n, gast.Call)]:
        transform = _transform_of(call.func, env)
        if transform is not None and transform.__name__ in _PULLBACKS:
            raise origin.error(call, f"{transform.__name__} inside a transformed function is "
                               "not supported: its result closes over run-time values",
                               hint=f"use {_PULLBACKS[transform.__name__]} inside it")
        if transform is not None and transform.__name__ == "jvp" and len(call.args) == 3:
            _curry_jvp(call, env, origin, namer)
        elif isinstance(call.func, gast.Call) and _transform_of(call.func.func, env):
            value = _evaluate(call.func, env, origin)
            call.func = _bound_name(call.func, value, _label(call.func), namer, env)
        elif isinstance(call.func, gast.Attribute):
            value = _through_module(call.func, env)
            if value is not None:
                call.func = _bound_name(call.func, value, call.func.attr, namer, env)
        _bind_transformed_arguments(call, env, origin, namer)
    return env


def _bind_transformed_arguments(call: gast.Call, env: dict, origin, namer: Namer) -> None:
    """`apply(grad(energy), x)`: an inline transformation handed to a call as an argument
    is evaluated and bound to a fresh name too (a helper handed it is then specialized to
    it, `function_arguments`)."""
    def bound(arg):
        transform = _transform_of(arg.func, env) if isinstance(arg, gast.Call) else None
        if transform is None or transform.__name__ in _PULLBACKS:
            return arg
        return _bound_name(arg, _evaluate(arg, env, origin), _label(arg), namer, env)
    call.args = [bound(a) for a in call.args]
    for keyword in call.keywords:
        keyword.value = bound(keyword.value)


def _curry_jvp(call: gast.Call, env: dict, origin, namer: Namer) -> None:
    """`jvp(f, (x, p), (dx, dp))` -> `jvp_f(x, p, dx, dp)`, `jvp_f = jvp(f)` (the same
    `(out, dout)` and aux after them); every parameter of `f` takes a primal."""
    fun, primals, tangents = call.args
    sequences = (gast.Tuple, gast.List)
    if not (isinstance(primals, sequences) and isinstance(tangents, sequences)) or \
            len(primals.elts) != len(tangents.elts) or \
            any(isinstance(e, gast.Starred) for e in primals.elts + tangents.elts):
        raise origin.error(call, "jvp inside a transformed function needs its primals and "
                           "tangents written as tuples of equal length",
                           hint="write jvp(f, (x, y), (dx, dy)), one primal and one tangent "
                                "per parameter of f")
    curried = gast.Call(func=call.func, args=[fun], keywords=call.keywords)
    gast.copy_location(curried, call)
    value = _evaluate(curried, env, origin)
    arity = _arity(value)
    if arity is None or arity != len(primals.elts):
        count = arity if arity is not None else "variable"
        raise origin.error(call, f"jvp: {len(primals.elts)} primals for a function of "
                           f"{count} parameters", hint="pass one primal and one tangent "
                           "for every parameter of the function")
    call.func = _bound_name(call, value, _label(curried), namer, env)
    call.args = list(primals.elts) + list(tangents.elts)
    call.keywords = []


def _arity(value):
    """The number of parameters of the function a transformation was applied to (its
    signature), or None if unknown."""
    try:
        params = inspect.signature(value).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
        return None
    return len(params)


def _bound_name(expr, value, base: str, namer: Namer, env: dict) -> gast.Name:
    name = namer.fresh(base)
    env[name] = value
    return gast.copy_location(gast.Name(id=name, ctx=gast.Load(), annotation=None,
                                        type_comment=None), expr)


def _label(call: gast.Call) -> str:
    """`grad_energy` for `grad(energy)`: the fresh name says what it holds."""
    parts = [_dotted(call.func)]
    if call.args and isinstance(call.args[0], (gast.Name, gast.Attribute)):
        parts.append(_dotted(call.args[0]))
    return "_".join(p for p in parts if p) or "transformed"


def _dotted(expr) -> str:
    if isinstance(expr, gast.Name):
        return expr.id
    if isinstance(expr, gast.Attribute):
        return expr.attr
    return ""


def _transform_of(expr, env):
    """The secant transformation `expr` names, or None."""
    try:
        value = resolve_in(env, expr)
    except KeyError:
        return None
    names = _TRANSFORMS.get(getattr(value, "__module__", None), ())
    return value if getattr(value, "__name__", None) in names else None


def _through_module(expr: gast.Attribute, env):
    """The function `mod.f` / `pkg.sub.f` names when `pkg.sub` is a user's module and `f`
    something secant compiles (a user's function, a Numba kernel, a secant wrapper)."""
    try:
        base = resolve_in(env, expr.value)
    except KeyError:
        return None
    if not isinstance(base, types.ModuleType) or is_library_module(base):
        return None
    value = getattr(base, expr.attr, None)
    if is_user_function(value) or hasattr(value, "__secant_function__") or \
            hasattr(value, "py_func"):
        return value
    return None


def _evaluate(call: gast.Call, env, origin):
    """The value of the inline transformation `call`, from constant arguments."""
    transform = _transform_of(call.func, env)
    args = [_constant(a, env, origin, call) for a in call.args]
    kwargs = {k.arg: _constant(k.value, env, origin, call) for k in call.keywords}
    if any(k.arg is None for k in call.keywords):
        raise origin.error(call, "`**` arguments of an inline transformation are not "
                           "supported", hint=_HINT.format(call=_text(call)))
    try:
        return transform(*args, **kwargs)
    except TransformError:
        raise
    except (TypeError, ValueError) as exc:
        raise origin.error(call, f"cannot apply {_dotted(call.func)} here: {exc}",
                           hint="pass the arguments it takes, as in "
                                "transformer." + _dotted(call.func)) from None


def _constant(expr, env, origin, call):
    """The transform-time value of an argument of an inline transformation."""
    if isinstance(expr, gast.Starred):
        raise origin.error(expr, "`*` arguments of an inline transformation are not "
                           "supported", hint=_HINT.format(call=_text(call)))
    if isinstance(expr, gast.Call) and _transform_of(expr.func, env):
        return _evaluate(expr, env, origin)
    if isinstance(expr, (gast.Tuple, gast.List)):     # in_axes=(0, AXIS): each element
        values = [_constant(e, env, origin, call) for e in expr.elts]
        return tuple(values) if isinstance(expr, gast.Tuple) else values
    if isinstance(expr, (gast.Name, gast.Attribute)):
        try:
            return resolve_in(env, expr)
        except KeyError:
            pass
    else:
        try:
            return ast.literal_eval(gast.gast_to_ast(expr))
        except (ValueError, TypeError, SyntaxError):
            pass
    what = "a local variable" if isinstance(expr, gast.Name) else "not a constant"
    raise origin.error(expr, f"this argument of an inline {_dotted(call.func)} is {what}: "
                       "a transformation is applied once, when the function is transformed",
                       hint=_HINT.format(call=_text(call)))


def _text(call: gast.Call) -> str:
    return ast.unparse(gast.gast_to_ast(call)) if hasattr(ast, "unparse") else "..."
