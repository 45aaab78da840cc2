"""Forwarding helpers: a call of a module-level helper that takes `*args` and returns one
expression (`def apply(*args): return helper(*args)`) is replaced by that expression.

The fence refuses `*args` parameters in a function secant transforms itself; a helper
that only forwards them is inlined instead, its `args` the tuple of the call's extra
positional arguments, so the transformations see `helper(a, b)`. A helper is inlined
only when each name its expression reads resolves, in its own module, to what the same
name means in the caller (or the caller does not use that name); otherwise the call is
left alone and is refused with the fence's message where it is parsed.
"""
from __future__ import annotations

import builtins
import inspect
import textwrap

import gast

from .function import Function, resolve
from .names import loaded_names, stored_and_loaded
from .nodes import copy_tree, walk

_MISSING = object()
_LIBRARIES = {"numpy", "scipy", "math", "numba", "transformer", "codegen", "jax"}


def inline_star_helpers(fn: Function, node, env: dict, instantiate) -> object:
    """`node` (fn's def) with calls of forwarding helpers inlined; names the inlined
    expressions read are added to `env`. `instantiate(expr, mapping)` is `expr` with its
    parameters replaced by the mapped expressions and star-arguments over tuple literals
    expanded."""
    taken = set().union(*stored_and_loaded(node), env)

    class _Inline(gast.NodeTransformer):
        depth = 0

        def visit_Call(self, call):
            self.generic_visit(call)
            if self.depth > 20:                 # a helper forwarding to itself
                return call
            target = resolve(fn, call.func, None)
            helper = _forwarding_helper(target)
            if helper is None or call.keywords or \
                    any(isinstance(a, gast.Starred) for a in call.args):
                return call
            params, rest, body = helper
            if len(call.args) < len(params):
                return call
            free = loaded_names(body) - set(params) - {rest}
            bindings = {}
            for free_name in free:
                value = target.__globals__.get(free_name, getattr(builtins, free_name,
                                                                  _MISSING))
                if value is _MISSING or (free_name in taken and
                                         env.get(free_name, _MISSING) is not value):
                    return call                 # would read another value here
                bindings[free_name] = value
            env.update(bindings)
            mapping = dict(zip(params, call.args))
            mapping[rest] = gast.Tuple(elts=list(call.args[len(params):]), ctx=gast.Load())
            inlined = instantiate(body, mapping)
            for sub in walk(inlined):
                if "lineno" in getattr(sub, "_attributes", ()):
                    gast.copy_location(sub, call)       # errors point at the call
            self.depth += 1
            try:
                return self.visit(inlined)
            finally:
                self.depth -= 1

    return _Inline().visit(node)


def _forwarding_helper(obj):
    """(named params, the *args name, the returned expression) of a plain Python function
    with a `*args` parameter and a one-`return` body; None for anything else."""
    if not inspect.isfunction(obj) or \
            (getattr(obj, "__module__", None) or "").split(".")[0] in _LIBRARIES:
        return None                     # a library's function is a primitive or a callee
    code = obj.__code__
    if not code.co_flags & inspect.CO_VARARGS or code.co_flags & inspect.CO_VARKEYWORDS or \
            code.co_kwonlyargcount or obj.__defaults__ or hasattr(obj, "__wrapped__"):
        return None
    try:
        source = textwrap.dedent(inspect.getsource(obj))
        tree = gast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return None
    if not tree.body or not isinstance(tree.body[0], gast.FunctionDef):
        return None
    fdef = tree.body[0]
    body = [s for s in fdef.body
            if not (isinstance(s, gast.Expr) and isinstance(s.value, gast.Constant))]
    if fdef.decorator_list or len(body) != 1 or not isinstance(body[0], gast.Return) or \
            body[0].value is None or fdef.args.posonlyargs:
        return None
    return [a.id for a in fdef.args.args], fdef.args.vararg.id, copy_tree(body[0].value)
