"""Lowering of debug printing and host callbacks, the step before a module is written.

Each call of `debug.print`, `debug.callback`, `pure_callback`, `io_callback` (and the
`batched_pure_callback` vmap makes) becomes a call of `runtime.host.host_call` with a
`HostSite` bound in the module's namespace: what to call, the keyword names, the declared
result leaves and the user's location, so a result of the wrong shape or dtype is reported
at the call even when it happens at run time. The callback itself is never parsed or
compiled: it only sits inside the site.

Invariant of the output, on the cpu backend:
    with numba.objmode(y0='float64[::1]', y1='int64'):
        y_leaves = host_call(site, (a, b))
        y0 = y_leaves[0]
        y1 = y_leaves[1]
    y = (y0, y1)
(no `with` block on the python backend; an effect has no outputs and no assignments).
A call nested in a simple statement (`return np.sum(pure_callback(...))`) is lowered into
a fresh name just before it, in Python's order of evaluation; one that may not run (under
`and`/`or`, an if-expression, a lambda, a comprehension) is refused, located. Its callback
and result_shape_dtypes are values bound outside the transformed function.
"""
from __future__ import annotations

import os
import warnings

import gast
import numba

from codegen import emit

from . import callbacks, debug
from .errors import TransformError
from .function import Function, resolve
from .names import Namer
from .nodes import copy_tree, walk
from .runtime import host
from .runtime.host import HostSite, host_call
from .syntax import assign, call, const, located, name, store, subscript

_KINDS = {debug.print: "print", debug.callback: "callback", callbacks.pure_callback: "pure",
          callbacks.io_callback: "io", host.batched_pure_callback: "pure"}
# one HostSite per distinct call site and callback: equal generated text (the site is named
# in its header by address) is then loaded once per process, as for any function; a site
# holds its callback, so the callback's id stays unique while the entry lives
_SITES: dict = {}
# keywords that configure the call rather than reach the callback
_OPTIONS = ("vmap_method", "ordered")


def lower_host_calls(fn: Function, backend: str) -> Function:
    """`fn` with its host calls lowered for `backend` ("cpu" or "python")."""
    if not any(isinstance(n, gast.Call) and resolve(fn, n.func, None) in _KINDS
               for n in walk(fn.node) if _resolvable(n)):
        return fn
    # Numba cannot disk-cache object-mode code nor its callers; it says so once per
    # function, which is expected here and no news to the user.
    warnings.filterwarnings("ignore", ".*Cannot cache compiled function .* dynamic globals",
                            numba.NumbaWarning)
    lowering = _Lowering(fn, backend)
    node = lowering.visit(copy_tree(fn.node))
    return fn.replace(node=node, env=lowering.env)


def _resolvable(node) -> bool:
    return isinstance(node, gast.Call) and isinstance(node.func, (gast.Name, gast.Attribute))


class _Lowering(gast.NodeTransformer):
    def __init__(self, fn: Function, backend: str):
        self.fn, self.backend, self.env = fn, backend, dict(fn.env)
        self.namer = Namer.for_function(fn)
        self.bound: dict[int, str] = {}

    def ref(self, obj, base: str) -> gast.Name:
        if id(obj) not in self.bound:
            self.bound[id(obj)] = self.namer.fresh(base)
            self.env[self.bound[id(obj)]] = obj
        return name(self.bound[id(obj)])

    def generic_visit(self, node):
        node = super().generic_visit(node)
        if self.is_host(node):
            raise self.fn.origin.error(node, "a host callback or debug print that may not "
                                       "run (under and/or, an if-expression, a lambda or "
                                       "a comprehension) is not supported",
                                       "call it in a statement of its own, under an `if`")
        return node

    def visit_Expr(self, node):
        return self._lowered(node, node.value, None) or self._hoisting(node)

    def visit_Assign(self, node):
        if len(node.targets) == 1 and isinstance(node.targets[0], gast.Name):
            return self._lowered(node, node.value, node.targets[0].id) or \
                self._hoisting(node)
        return self._hoisting(node)                     # `a, b = pure_callback(...)`

    def visit_Return(self, node):
        return self._hoisting(node)

    def visit_AugAssign(self, node):
        return self._hoisting(node)

    def _hoisting(self, stmt) -> list:
        """`stmt` after its host calls, each lowered into a fresh name first (in the
        order Python evaluates them); one under `and`/`or`/`if`-expressions, lambdas or
        comprehensions, which may not run, stays and is refused."""
        pulled: list = []
        lowering = self

        class Pull(gast.NodeTransformer):
            def generic_visit(self, node):
                if isinstance(node, (gast.BoolOp, gast.IfExp, gast.Lambda, gast.ListComp,
                                     gast.SetComp, gast.DictComp, gast.GeneratorExp)):
                    return node
                node = super().generic_visit(node)
                if not lowering.is_host(node):
                    return node
                pulled.append((node, lowering.namer.fresh("callback_result")))
                return name(pulled[-1][1])

        stmt = Pull().visit(stmt)
        out = []
        for call_node, target in pulled:
            out += self._lowered(call_node, call_node, target)
        return out + [self.generic_visit(stmt)]

    def is_host(self, node) -> bool:
        return _resolvable(node) and resolve(self.fn, node.func, None) in _KINDS

    def _lowered(self, stmt, value, target: str | None):
        if not self.is_host(value):
            return None
        site, args = self.site(stmt, value)
        # at the call's line: debug_nans reports a callback's non-finite result there
        lowered = [located(s, stmt) for s in self._calling(site, args, value, target)]
        filename, lineno, _, line = site.where
        note = f"host call ({os.path.basename(filename or '?')}:{lineno}): " + \
            (line or "").strip()
        emit.annotate(lowered[0], emit.comment_of(stmt) or note)
        return lowered

    def _calling(self, site: HostSite, args: list, value, target: str | None) -> list:
        values = gast.Tuple(elts=args, ctx=gast.Load())
        hosted = call(self.ref(host_call, "host_call"), self.ref(site, "host_site"), values)
        if target is None or not site.leaves:
            body = [gast.Expr(value=hosted)]
            after = [] if target is None else [assign(store(target), const(None))]
            return self.wrapped(body, {}) + after
        leaves = self.namer.fresh(f"{target}_leaves")
        outs = [self.namer.fresh(f"{target}_{i}") for i in range(len(site.leaves))]
        body = [assign(store(leaves), hosted)]
        body += [assign(store(o), subscript(name(leaves), const(i))) for i, o in enumerate(outs)]
        result = name(outs[0]) if self._single(value) else \
            gast.Tuple(elts=[name(o) for o in outs], ctx=gast.Load())
        return self.wrapped(body, dict(zip(outs, site.numba_types()))) + \
            [assign(store(target), result)]

    def _single(self, value) -> bool:
        spec = resolve(self.fn, value.args[1], None)
        return not isinstance(spec, (tuple, list))

    def wrapped(self, body: list, outputs: dict) -> list:
        """`body` inside a `numba.objmode` block declaring `outputs` (cpu backend)."""
        if self.backend != "cpu":
            return body
        block = call(gast.Attribute(value=self.ref(numba, "numba"), attr="objmode",
                                    ctx=gast.Load()),
                     **{k: const(v) for k, v in outputs.items()})
        return [gast.With(items=[gast.withitem(context_expr=block, optional_vars=None)],
                          body=body, type_comment=None)]

    def site(self, stmt, value) -> tuple[HostSite, list]:
        """The HostSite of the call `value` and the atoms it passes to the callback."""
        key = resolve(self.fn, value.func)
        kind = _KINDS[key]
        args = list(value.args)
        keywords = [k for k in value.keywords if k.arg not in _OPTIONS]
        if any(k.arg is None for k in keywords) or \
                any(isinstance(a, gast.Starred) for a in args):
            raise self.error(value, "*args and **kwargs are not supported in this call",
                             "pass each argument by itself")
        if not args:
            raise self.error(value, f"{kind} needs its first argument", None)
        target = self.target(kind, args.pop(0))
        leaves = ()
        if kind in ("pure", "io"):
            if not args:
                raise self.error(value, "result_shape_dtypes is missing", None)
            leaves = self.leaves(args.pop(0))
            if key is host.batched_pure_callback:
                args.pop(0)                             # the batch size: shapes say None
                leaves = tuple(((None,) + shape, dtype) for shape, dtype in leaves)
        where = self.where(stmt)
        names = tuple(k.arg for k in keywords)
        key = (kind, target if kind == "print" else id(target), names, leaves, where)
        site = _SITES.setdefault(key, HostSite(kind, target, names, leaves, where))
        return site, args + [k.value for k in keywords]

    def target(self, kind: str, node):
        if kind == "print":
            if not (isinstance(node, gast.Constant) and isinstance(node.value, str)):
                raise self.error(node, "debug.print's format must be a string literal",
                                 'write debug.print("x = {x}", x=x)')
            return node.value
        fun = resolve(self.fn, node, None)
        if not callable(fun):
            raise self.error(node, "the callback must be a function defined outside the "
                             "transformed function",
                             "define it at module level (or close over it) and pass its name")
        return fun

    def leaves(self, node) -> tuple:
        spec = resolve(self.fn, node, None)
        if isinstance(node, gast.Constant) and node.value is None:
            return ()
        flat = isinstance(spec, (tuple, list)) and len(spec) > 0 and \
            all(callbacks.is_spec(s) for s in spec)
        if not (callbacks.is_spec(spec) or flat):            # the result is rebuilt as such
            raise self.error(node, "result_shape_dtypes must be a value bound outside the "
                             "transformed function: one ShapeDtypeStruct or a flat tuple of them",
                             "define spec = transformer.ShapeDtypeStruct(shape, dtype) at "
                             "module level and pass spec")
        return tuple(callbacks.declared_leaves(spec)[0])

    def where(self, node) -> tuple:
        located = self.fn.origin.error(node, "")
        return located.filename, located.lineno, located.col, located.line

    def error(self, node, message: str, hint: str | None):
        return self.fn.origin.error(node, message, hint)


def reaches_host(obj, depth: int = 6) -> bool:
    """Whether calling `obj` may call back into the host (`pure_callback`, `io_callback`,
    `debug.callback`, `debug.print`), through user functions and custom rules' `fwd` up to
    `depth` calls deep. Reverse mode keeps a looped custom_vjp's residuals only for such
    rules, so the callback runs once per evaluation; False when unsure (source unread)."""
    from .frontend import parse_callee
    if obj in _KINDS:
        return True
    if depth <= 0 or not callable(obj):
        return False
    inner = [getattr(obj, attr) for attr in ("fun", "fwd") if hasattr(obj, "__secant_vjp__")
             and getattr(obj, attr, None) is not None]
    if inner:
        return any(reaches_host(f, depth - 1) for f in inner)
    try:
        fn = parse_callee(obj)
    except (TransformError, SyntaxError, OSError, TypeError):   # no source: not followed
        return False
    return any(reaches_host(resolve(fn, node.func, None), depth - 1)
               for node in walk(fn.node) if _resolvable(node))
