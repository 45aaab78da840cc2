"""`functools.partial` called inside a transformed function, written out at its calls:
`g = partial(energy, sigma=2.0)` then `g(x)` becomes `energy(x, sigma=2.0)`; a partial
made at module level (`G = partial(energy, W)`, `G(x)` in the function) likewise, its
function and bound values read as closed-over values are.

A partial is a call with some arguments fixed, so each call `g(a, k=b)` is the call of the
partial's function with the bound positional arguments first and the bound keywords,
overridden by the call's own (`functools.partial`'s rules). The bound arguments are
evaluated where the partial is made, as Python does: the definition becomes an assignment
of each non-literal one to a fresh name, which the calls read. A partial of a partial
(`h = partial(g, 1)`) composes the two.

Invariant: afterwards no name bound to a partial by the function is read, and every call
of one is a call of the partial's function, which the later passes see as any other call
(a local function is inlined, a module-level one parsed and differentiated).

Refused, located, with a hint: a partial made inside a block, a name bound to a partial
that is also bound elsewhere in the function or read other than as the function of a call
(passed on, returned), and a partial whose function is a name the transformed function
binds (other than a local function).
"""
from __future__ import annotations

import functools

import gast

from .function import resolve
from .function_arguments import environment_value
from .local_functions import defined_name
from .names import Namer, assigned_names, name_counts
from .nodes import copy_tree, walk
from .syntax import assign, name

_HINT = ("bind the partial once, at the top of the function, and only call it; or make it "
         "at module level and call it from the function")


def inline_partials(fn, node, env: dict):
    """`node` (the body of `fn`) with each partial it binds to a name, and each it reads
    from its environment (`env`, which receives the partials' functions and bound values),
    written out at its calls (module docstring)."""
    node = _inline_local_partials(fn, node)
    calls = _EnvironmentCalls(env, assigned_names(node),
                              lambda: Namer.for_function(fn.replace(node=node)))
    node.body = [calls.visit(stmt) for stmt in node.body]
    return node


def _inline_local_partials(fn, node):
    bindings = [stmt for stmt in walk(node) if _partial_call(fn, stmt) is not None]
    if not bindings:
        return node
    nested = [stmt for stmt in bindings if not any(stmt is top for top in node.body)]
    if nested:
        raise fn.origin.error(nested[0], "a functools.partial made inside a block (an `if`, "
                              "a loop) is not supported by secant", _HINT)
    stores = name_counts(node, gast.Store)
    parameters = {a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
    # names the function binds, but for its local functions (a partial of one is inlined)
    bound = assigned_names(node) - {defined_name(stmt) for stmt in node.body}
    namer = Namer.for_function(fn.replace(node=node))
    partials: dict = {}
    body = []
    for stmt in node.body:
        call = _partial_call(fn, stmt)
        if call is None:
            body.append(stmt)
            continue
        partial_name = stmt.targets[0].id
        if stores.get(partial_name, 0) != 1 or partial_name in parameters:
            raise fn.origin.error(stmt, f"{partial_name!r} is bound to a functools.partial "
                                  "and also bound elsewhere in the function", _HINT)
        target, args, keywords = _unpacked(fn, call, partials, bound)
        fixed = []
        for k, arg in enumerate(args):
            args[k] = _held(arg, namer, fixed, stmt)
        for keyword in keywords:
            keyword.value = _held(keyword.value, namer, fixed, stmt)
        partials[partial_name] = (target, args, keywords)
        body.extend(fixed)
    node.body = [_Calls(fn, partials).visit(stmt) for stmt in body]
    return node


def _partial_call(fn, stmt):
    """The `partial(f, ...)` call `stmt` binds to one name, or None."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and
            isinstance(stmt.targets[0], gast.Name) and isinstance(stmt.value, gast.Call)):
        return None
    call = stmt.value
    if resolve(fn, call.func, None) is not functools.partial or not call.args:
        return None
    return call


def _unpacked(fn, call, partials, bound):
    """(function, bound positional arguments, bound keywords) of the partial `call`, with a
    partial of a local partial composed."""
    target, args, keywords = call.args[0], list(call.args[1:]), list(call.keywords)
    if isinstance(target, gast.Name) and target.id in partials:
        inner, inner_args, inner_keywords = partials[target.id]
        return (copy_tree(inner), [copy_tree(a) for a in inner_args] + args,
                _merged([copy_tree(k) for k in inner_keywords], keywords))
    root = target
    while isinstance(root, gast.Attribute):
        root = root.value
    if not isinstance(root, gast.Name) or root.id in bound:
        raise fn.origin.error(target, "a functools.partial of a function the transformed "
                              "function binds itself is not supported by secant",
                              "define the function with `def` at the top of the function "
                              "or at module level, and make the partial of that")
    return target, args, keywords


def _held(value, namer, fixed, where):
    """`value`, or a fresh name bound to it by a statement added to `fixed`: a bound
    argument is evaluated once, where the partial is made."""
    if isinstance(value, gast.Constant):
        return value
    bound_name = namer.fresh("bound")
    fixed.append(gast.copy_location(assign(bound_name, value), where))
    return name(bound_name)


def _merged(first, then):
    """Keyword lists merged as `functools.partial` does: a later value for a name wins."""
    later = {k.arg for k in then if k.arg is not None}
    return [k for k in first if k.arg not in later] + list(then)


class _Calls(gast.NodeTransformer):
    """Calls of the bound partials written out; any other read of one refused."""

    def __init__(self, fn, partials):
        self.fn, self.partials = fn, partials

    def visit_Call(self, node):
        if not (isinstance(node.func, gast.Name) and node.func.id in self.partials):
            return self.generic_visit(node)
        target, args, keywords = self.partials[node.func.id]
        called = [self.visit(a) for a in node.args]
        called_keywords = [self.visit(k) for k in node.keywords]
        return gast.copy_location(gast.Call(
            func=copy_tree(target), args=[copy_tree(a) for a in args] + called,
            keywords=_merged([copy_tree(k) for k in keywords], called_keywords)), node)

    def visit_Name(self, node):
        if node.id in self.partials:
            raise self.fn.origin.error(node, f"{node.id!r} is a functools.partial made in "
                                       "the function; secant supports calling it, not "
                                       "passing it on or returning it", _HINT)
        return node


class _EnvironmentCalls(gast.NodeTransformer):
    """Calls of a partial the function reads from its environment (`G = partial(loss, W)`
    at module level, `G(x)` in the body) written out as calls of its function; the function
    and each bound value that is not a literal become names of `env`."""

    def __init__(self, env, local_names, make_namer):
        self.env, self.local_names = env, local_names
        self.make_namer, self.namer = make_namer, None    # made at the first partial

    def visit_Call(self, node):
        self.generic_visit(node)
        partial = environment_value(node.func, self.env, self.local_names)
        if not isinstance(partial, functools.partial):
            return node
        function = self._bind(getattr(partial.func, "__name__", "partial_function"),
                              partial.func)
        args = [self._value(function, v) for v in partial.args]
        keywords = [gast.keyword(arg=k, value=self._value(function, v))
                    for k, v in partial.keywords.items()]
        return gast.copy_location(gast.Call(
            func=name(function), args=args + node.args,
            keywords=_merged(keywords, node.keywords)), node)

    def _bind(self, base, value):
        if self.namer is None:
            self.namer = self.make_namer()
        bound_name = self.namer.fresh(base)
        self.env[bound_name] = value
        return bound_name

    def _value(self, function_name, value):
        if value is None or isinstance(value, (bool, int, float, str)):
            return gast.Constant(value=value, kind=None)
        return name(self._bind(f"{function_name}_bound", value))
