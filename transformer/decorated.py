"""Decorated functions: the wrapper a decorator returns is transformed as a whole.

A caller of a decorated function gets the wrapper's value, so secant parses the wrapper
(a `functools.wraps` function marks itself with `__wrapped__`); its closure holds the
wrapped function, which it calls like any other helper. Transforming the function under
the wrapper instead would silently drop what the decorator does.

A wrapper that forwards `*args` / `**kwargs` takes, after its own named parameters, the
wrapped function's parameters those fill (its defaults and keyword-only ones included):
all but the ones the forwarding call passes before `*args` (`fn(x + 0.25, *args,
**kwargs)` fills the first) or names by keyword. `*args` in a call becomes the positional
parameters, `**kwargs` the keyword-only ones (every parameter when the wrapper takes only
`**kwargs`). For every call Python accepts, the wrapper then receives the same values.
Refused with a located error saying how to write it: a wrapper that uses `args` or
`kwargs` in another way, forwards them in calls that fill different parameters, or whose
parameters no `def` can state (a default of its own before a required forwarded one).
"""
from __future__ import annotations

import inspect

import gast

from .defaults import default_node, take_defaults
from .function import signature as function_signature
from .names import Namer
from .nodes import walk
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


def forward_parameters(fn, node: gast.FunctionDef, origin, namer: Namer, parse):
    """Give wrapper `node` the parameters it forwards `*args` / `**kwargs` to: returns the
    env entries its non-literal defaults need and the functions whose defaults they are;
    None for a wrapper that forwards neither. `parse` is the frontend's (which imports
    this module), for a wrapper around a wrapper."""
    args = node.args
    if args.vararg is None and args.kwarg is None:
        return None
    star = args.vararg or args.kwarg
    varargs = args.vararg.id if args.vararg is not None else None
    varkw = args.kwarg.id if args.kwarg is not None else None
    _check_only_forwarded(node, varargs, varkw, origin, fn)
    offset, passed = _forwarding_call(node, varargs, varkw, origin, fn)
    params, owners = _wrapped_parameters(fn, star, origin, parse)
    params = _remaining(params, offset, passed, star, origin, fn)
    own = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}
    clash = sorted({p.name for p in params} & ((namer.taken | own) - {varargs, varkw}))
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
    env = take_defaults(fn, node, namer)        # the wrapper's own parameters' defaults
    forwarded = _arguments(by_position + by_keyword, kinds, star, namer, env)
    node.args = _merged(args, forwarded, star, origin, fn)
    _expand_calls(node, varargs, varkw, [p.name for p in by_position],
                  [p.name for p in by_keyword])
    return env, (fn,) + owners


def _forwarding_call(node, varargs, varkw, origin, fn) -> tuple[int, set]:
    """How many positional arguments the calls that forward `*args` / `**kwargs` pass
    before them, and the keywords they name: the same in every such call, or refused
    (the wrapped function's parameters the forwarded ones fill must be decidable)."""
    shapes = set()
    for call in walk(node):
        if not isinstance(call, gast.Call):
            continue
        stars = [i for i, a in enumerate(call.args) if isinstance(a, gast.Starred)
                 and _is_name(a.value, varargs)]
        if not stars and not any(k.arg is None and _is_name(k.value, varkw)
                                 for k in call.keywords):
            continue
        offset = stars[0] if stars else len(call.args)
        spread = [k.value for k in call.keywords if k.arg is None]
        if len(stars) > 1 or offset < len(call.args) - 1 or len(spread) > 1 or \
                any(not _is_name(v, varkw) for v in spread) or \
                any(isinstance(a, gast.Starred) and not _is_name(a.value, varargs)
                    for a in call.args):
            raise origin.error(call, "a call that forwards *args / **kwargs must pass them "
                               "once each, after its other positional arguments, and no "
                               "other * / ** argument", hint(fn))
        shapes.add((offset, frozenset(k.arg for k in call.keywords if k.arg is not None)))
    if len(shapes) > 1:
        raise origin.error(node, "this decorator wrapper forwards *args / **kwargs in calls "
                           "that pass different arguments before them, so which parameters "
                           "of the wrapped function they fill differs from call to call",
                           hint(fn))
    return next(iter(shapes)) if shapes else (0, frozenset())


def _remaining(params, offset, passed, star, origin, fn) -> list:
    """The wrapped function's parameters left to the forwarded `*args` / `**kwargs`: all
    but the first `offset` positional ones and the keyword-only ones named in the call."""
    positional = [p for p in params if p.kind is not _KIND.KEYWORD_ONLY]
    if offset > len(positional):
        raise origin.error(star, f"the wrapper passes {offset} positional arguments before "
                           f"*args, but the wrapped function takes {len(positional)}", hint(fn))
    by_name = {p.name: p for p in params}
    for keyword in sorted(passed):
        if by_name.get(keyword) is None or by_name[keyword].kind is not _KIND.KEYWORD_ONLY:
            raise origin.error(star, f"the wrapper passes {keyword!r} by keyword next to "
                               "*args / **kwargs, but it is not a keyword-only parameter "
                               "of the wrapped function", hint(fn))
    return positional[offset:] + [p for p in params if p.kind is _KIND.KEYWORD_ONLY
                                  and p.name not in passed]


def _merged(own: gast.arguments, forwarded: gast.arguments, star, origin, fn):
    """The wrapper's named parameters followed by the forwarded ones. A forwarded
    positional-only parameter makes the wrapper's positional ones positional-only too
    (a `def` cannot put it after them otherwise): a call passing those by keyword is
    refused with Python's TypeError, never bound differently."""
    own_positional = own.posonlyargs + own.args
    if own.defaults and forwarded.posonlyargs + forwarded.args and \
            len(forwarded.defaults) < len(forwarded.posonlyargs + forwarded.args):
        raise origin.error(star, "a parameter of this wrapper has a default, but a parameter "
                           "of the wrapped function that *args fills after it has none",
                           hint(fn))
    if forwarded.posonlyargs:
        posonly, plain = own_positional + forwarded.posonlyargs, forwarded.args
    else:
        posonly, plain = own.posonlyargs, own.args + forwarded.args
    return gast.arguments(posonlyargs=posonly, args=plain, vararg=None,
                          kwonlyargs=own.kwonlyargs + forwarded.kwonlyargs,
                          kw_defaults=own.kw_defaults + forwarded.kw_defaults, kwarg=None,
                          defaults=own.defaults + forwarded.defaults)


def _wrapped_parameters(fn, star, origin, parse) -> tuple[list, tuple]:
    """The parameters the wrapped object binds, and the functions whose defaults they
    hold. A wrapped wrapper that forwards `*args` / `**kwargs` itself binds what secant
    makes of it (its named parameters and the ones it forwards)."""
    inner = fn.__wrapped__
    owners = []
    link = inner
    while inspect.isfunction(link) and link not in owners:
        owners.append(link)
        link = getattr(link, "__wrapped__", None)
    if is_decorated(inner) and inner.__code__.co_flags & (inspect.CO_VARARGS |
                                                          inspect.CO_VARKEYWORDS):
        return list(function_signature(parse(inner)).parameters.values()), tuple(owners)
    try:
        signature = inspect.signature(inner, follow_wrapped=not inspect.isfunction(inner))
    except (TypeError, ValueError) as exc:
        raise origin.error(star, f"cannot read the parameters of the function this wrapper "
                           f"forwards *args / **kwargs to ({exc})", hint(fn)) from None
    params = list(signature.parameters.values())
    if any(p.kind in (_KIND.VAR_POSITIONAL, _KIND.VAR_KEYWORD) for p in params):
        raise origin.error(star, "the wrapped function takes *args / **kwargs itself",
                           "name each parameter of the wrapped function")
    return params, tuple(owners) or (inner,)


def _check_only_forwarded(node, varargs, varkw, origin, fn) -> None:
    """Refuse any use of `args` / `kwargs` other than `f(*args, **kwargs)`."""
    forwarded = set()
    for call in walk(node):
        if not isinstance(call, gast.Call):
            continue
        for arg in call.args:
            if isinstance(arg, gast.Starred) and _is_name(arg.value, varargs):
                forwarded.add(id(arg.value))
        for keyword in call.keywords:
            if keyword.arg is None and _is_name(keyword.value, varkw):
                forwarded.add(id(keyword.value))
    for sub in walk(gast.Module(body=node.body, type_ignores=[])):
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
    for call in walk(node):
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
