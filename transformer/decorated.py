"""Decorated functions: the wrapper a decorator returns is transformed as a whole.

A caller of a decorated function gets the wrapper's value, so secant parses the wrapper
(a `functools.wraps` function marks itself with `__wrapped__`); its closure holds the
wrapped function, which it calls like any other helper. Transforming the function under
the wrapper instead would silently drop what the decorator does.

A wrapper that forwards `*args` / `**kwargs` takes the wrapped function's parameters
instead (its defaults included): `*args` in a call becomes the positional parameters,
`**kwargs` the keyword-only ones (every parameter when the wrapper takes only
`**kwargs`). For every call Python accepts, the wrapper then receives the same values.
A wrapper that uses `args` or `kwargs` in another way, or mixes named parameters with
them, is refused with a located error saying how to write it.
"""
from __future__ import annotations

import inspect

import gast

from .defaults import default_node
from .names import Namer
from .syntax import name

_KIND = inspect.Parameter
_HINT = ("write the wrapper with the wrapped function's parameters (`def wrapper(x): "
         "return 2.0 * fn(x)`) or forward them unchanged (`return 2.0 * fn(*args, "
         "**kwargs)`); or, if the decorator does not change any value, transform the "
         "undecorated function (`{name}.__wrapped__`)")


def is_decorated(fn) -> bool:
    """Whether Python function `fn` is a wrapper put around another function."""
    return inspect.isfunction(fn) and hasattr(fn, "__wrapped__")


def hint(fn) -> str:
    return _HINT.format(name=fn.__name__)


def forward_parameters(fn, node: gast.FunctionDef, origin, namer: Namer):
    """Give wrapper `node` the parameters of the function it wraps when it forwards
    `*args` / `**kwargs`: returns the env entries its non-literal defaults need and the
    function whose defaults they are; None for a wrapper with parameters of its own."""
    args = node.args
    if args.vararg is None and args.kwarg is None:
        return None
    star = args.vararg or args.kwarg
    if args.posonlyargs or args.args or args.kwonlyargs:
        raise origin.error(star, "a decorator wrapper that mixes named parameters with "
                           "*args / **kwargs is not supported by secant", hint(fn))
    varargs = args.vararg.id if args.vararg is not None else None
    varkw = args.kwarg.id if args.kwarg is not None else None
    _check_only_forwarded(node, varargs, varkw, origin, fn)
    params, owner = _wrapped_parameters(fn, star, origin)
    clash = sorted({p.name for p in params} & (namer.taken - {varargs, varkw}))
    if clash:       # as a parameter of the wrapper it would hide the wrapper's own name
        raise origin.error(star, f"the wrapped function's parameter {clash[0]!r} has the "
                           "name of a variable of this decorator wrapper", hint(fn))
    positional = [p for p in params if p.kind in (_KIND.POSITIONAL_ONLY,
                                                  _KIND.POSITIONAL_OR_KEYWORD)]
    keyword_only = [p for p in params if p.kind is _KIND.KEYWORD_ONLY]
    if varkw is None:           # only *args: what cannot be passed positionally keeps
        by_position, by_keyword = positional, []        # its default in the wrapped def
        kinds = {p.name: _KIND.POSITIONAL_ONLY for p in positional}
    elif varargs is None:       # only **kwargs: every parameter is passed by keyword
        if any(p.kind is _KIND.POSITIONAL_ONLY for p in params):
            raise origin.error(star, "this wrapper forwards only **kwargs, but the wrapped "
                               "function has positional-only parameters", hint(fn))
        by_position, by_keyword = [], params
        kinds = {p.name: _KIND.KEYWORD_ONLY for p in params}
    else:
        by_position, by_keyword = positional, keyword_only
        kinds = {p.name: p.kind for p in params}
    env: dict = {}
    node.args = _arguments(by_position + by_keyword, kinds, star, namer, env)
    _expand_calls(node, varargs, varkw, [p.name for p in by_position],
                  [p.name for p in by_keyword])
    return env, owner


def _wrapped_parameters(fn, star, origin) -> tuple[list, object]:
    """The parameters the wrapped object binds, and the object whose defaults they hold:
    the first along the `__wrapped__` chain that is not a forwarding wrapper itself."""
    inner = fn.__wrapped__
    while is_decorated(inner) and _forwards_only(inner):
        inner = inner.__wrapped__
    try:
        signature = inspect.signature(inner, follow_wrapped=not inspect.isfunction(inner))
    except (TypeError, ValueError) as exc:
        raise origin.error(star, f"cannot read the parameters of the function this wrapper "
                           f"forwards *args / **kwargs to ({exc})", hint(fn)) from None
    params = list(signature.parameters.values())
    if any(p.kind in (_KIND.VAR_POSITIONAL, _KIND.VAR_KEYWORD) for p in params):
        raise origin.error(star, "the wrapped function takes *args / **kwargs itself",
                           "name each parameter of the wrapped function")
    return params, inner


def _forwards_only(fn) -> bool:
    """Whether function `fn` takes nothing but `*args` and/or `**kwargs`."""
    code = fn.__code__
    return code.co_argcount == code.co_posonlyargcount == code.co_kwonlyargcount == 0 \
        and bool(code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS))


def _check_only_forwarded(node, varargs, varkw, origin, fn) -> None:
    """Refuse any use of `args` / `kwargs` other than `f(*args, **kwargs)`."""
    forwarded = set()
    for call in gast.walk(node):
        if not isinstance(call, gast.Call):
            continue
        for arg in call.args:
            if isinstance(arg, gast.Starred) and _is_name(arg.value, varargs):
                forwarded.add(id(arg.value))
        for keyword in call.keywords:
            if keyword.arg is None and _is_name(keyword.value, varkw):
                forwarded.add(id(keyword.value))
    for sub in gast.walk(gast.Module(body=node.body, type_ignores=[])):
        if isinstance(sub, gast.Name) and sub.id in (varargs, varkw) and \
                id(sub) not in forwarded:
            raise origin.error(sub, f"this decorator wrapper uses {sub.id!r} other than to "
                               f"forward it (f(*{varargs or 'args'}, **{varkw or 'kwargs'}))",
                               hint(fn))


def _is_name(node, wanted) -> bool:
    return wanted is not None and isinstance(node, gast.Name) and node.id == wanted


def _arguments(params, kinds, where, namer, env) -> gast.arguments:
    groups = {_KIND.POSITIONAL_ONLY: [], _KIND.POSITIONAL_OR_KEYWORD: [],
              _KIND.KEYWORD_ONLY: []}
    defaults, kw_defaults = [], []
    for p in params:
        kind = kinds[p.name]
        groups[kind].append(gast.copy_location(name(p.name, gast.Param()), where))
        value = default_node(p.name, p.default, namer, env, where)
        if kind is _KIND.KEYWORD_ONLY:
            kw_defaults.append(value)
        elif value is not None:
            defaults.append(value)
    return gast.arguments(posonlyargs=groups[_KIND.POSITIONAL_ONLY],
                          args=groups[_KIND.POSITIONAL_OR_KEYWORD], vararg=None,
                          kwonlyargs=groups[_KIND.KEYWORD_ONLY], kw_defaults=kw_defaults,
                          kwarg=None, defaults=defaults)


def _expand_calls(node, varargs, varkw, by_position, by_keyword) -> None:
    for call in gast.walk(node):
        if not isinstance(call, gast.Call):
            continue
        args = []
        for arg in call.args:
            if isinstance(arg, gast.Starred) and _is_name(arg.value, varargs):
                args += [gast.copy_location(name(p), arg) for p in by_position]
            else:
                args.append(arg)
        keywords = []
        for keyword in call.keywords:
            if keyword.arg is None and _is_name(keyword.value, varkw):
                keywords += [gast.keyword(arg=p, value=gast.copy_location(name(p), keyword.value))
                             for p in by_keyword]
            else:
                keywords.append(keyword)
        call.args, call.keywords = args, keywords
