"""Derivative rules as templates, and the expander that instantiates them.

A rule is a small Python function whose *body is the code to emit*; it is parsed, never run:

    @adjoint(np.sin)
    def sin(z, x):
        d[x] += d[z] * np.cos(x)

    @tangent(np.sin)
    def sin(z, x):
        d[z] = d[x] * np.cos(x)

The first parameter is the primitive's result, the others are bound to the call's arguments
as in a Python call (positional, then keywords, then the template's defaults as constants).
Rules registered with ``result=False`` (``"setitem"``) bind every parameter to an argument.

Template language (both kinds):
- ``d[p]`` is the adjoint (tangent) of parameter ``p``; ``p`` alone is its primal value.
- A parameter bound to a literal sequence (``np.concatenate((a, b))``, ``*operands``) is a
  ``gast.Tuple``; ``for k in range(len(xs)):`` over it is unrolled and ``xs[k]`` / ``d[xs[k]]``
  name one element. ``d[xs]`` read as a whole is a tuple of derivatives, zeros for inactive
  elements.
- A result unpacked as ``a, b = f(x)`` makes ``z`` and ``d[z]`` tuples of the outputs' names
  (an inactive output's adjoint reads as ``zeros_like`` of that output); ``d[z][1]`` and
  ``z[1]`` name one element.
- Other assigned names are temporaries; they are renamed ``<result>_<name>`` (or through the
  caller's ``fresh_name``) so repeated expansion never collides.
- Float literals become ``cast_like(c, ref)`` (``ref``: the first argument that is a value,
  not a ``condition``/``index``/``subscripts``) because Numba would promote
  ``float32_array * 0.5`` to float64; a literal stored whole into an element stays as is.
- Slices used outside a subscript become ``slice(lo, hi, step)`` calls.

Adjoints of ``x[index]`` use the ``"getitem:static"`` rule when the index is made of literal
ints and slices (plain indexing), ``"getitem"`` (which must allow repeated indices) otherwise.

Adjoint statements: ``d[x] += e`` / ``d[x] -= e`` becomes ``bx = bx + e``; ``d[x][i] += e``
becomes ``bx[i] = bx[i] + e`` and ``d[x][i] = e`` stays an in-place write (the caller
guarantees ``bx`` is an owned array); a call statement (``scatter_add(d[x], i, d[z])``) is
kept. A statement that writes or reads the adjoint of an inactive argument is dropped, as are
temporaries left unused; when the result's adjoint is inactive nothing is emitted.

Tangent statements: each ``d[z] = e`` is the contribution of the one argument whose tangent
``e`` reads; contributions of inactive arguments are dropped and the rest are summed into
``result_tangent``, through ``broadcast_like(.., z)`` for rules registered with
``broadcast=True`` (their result can be larger than an argument). ``d[x][i] = e`` writes the
tangent of ``x`` in place (``setitem``); there an inactive tangent reads as ``zeros_like``.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
import threading
from collections.abc import Callable, MutableMapping

import gast

from transformer import rule_sources, runtime
from transformer.primitives import registry

from .nodes import copy_tree, walk

__all__ = [
    "MissingRule",
    "adjoint",
    "describe",
    "expand_adjoint",
    "expand_tangent",
    "has_adjoint",
    "has_tangent",
    "is_nondifferentiable",
    "nondifferentiable",
    "rule_from_source",
    "tangent",
]


class MissingRule(Exception):
    """No rule for a primitive, or a call the registered rule cannot take; `hint`, when
    given, says what to write instead (shown in place of the generic hint)."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


# Python's builtins over one iterable have no rule (min and max have one for two values):
# what to write instead, given as the error's hint
_ITERABLE_BUILTINS = {
    builtin: f"Python's `{builtin.__name__}` over an iterable has no derivative rule: write "
             f"`{form}` for an array{also}"
    for builtin, form, also in (
        (sum, "np.sum(x, axis=0)", ", or `a + b + c` for a few values"),
        (min, "np.min(x)", ", or `min(a, b)` for two values"),
        (max, "np.max(x)", ", or `max(a, b)` for two values"),
        (sorted, "np.sort(x)", ""))}


def builtin_hint(key) -> str | None:
    """What to write instead of a call of `key` that has no rule, when `key` is one of
    Python's builtins over an iterable; else None."""
    try:
        return _ITERABLE_BUILTINS.get(key)
    except TypeError:           # an unhashable key is no builtin
        return None


class Template:
    """One rule template. Its source is parsed on first use, not when the rule is
    registered, so importing secant does not parse hundreds of rules it may never expand.

    `source` is the text of the ``def``, or a function whose source it is; `globals` is
    where the names its body uses are looked up. `name`, `signature`, `params` (the
    parameter names, the result first when `has_result`) and `body` come from the parse.
    """

    def __init__(self, source: str | Callable, globals: dict, has_result: bool = True,
                 broadcast: bool = False):
        self._source = source
        self._stamp = rule_sources.stamp(source) if callable(source) else None
        self.globals = globals
        self.has_result = has_result
        self.broadcast = broadcast
        self._parse_lock = threading.Lock()
        self._parsed: tuple | None = None

    def _parse(self) -> tuple:
        """(name, signature, params, body), parsed once (a lock: threads share rules)."""
        if self._parsed is None:
            with self._parse_lock:
                if self._parsed is None:
                    self._parsed = _parse_template(self.source_text(), self.has_result)
        return self._parsed

    def source_text(self) -> str:
        """The text of the ``def`` (`rule_sources.read`)."""
        return rule_sources.read(self._source, self._stamp)

    name = property(lambda self: self._parse()[0])
    signature = property(lambda self: self._parse()[1])
    params = property(lambda self: self._parse()[2])
    body = property(lambda self: self._parse()[3])

    def __repr__(self):
        return f"<rule template {self.name}>"


# Views of the primitive registry (`transformer.primitives.registry`): the rules live in
# its records, one per primitive.
ADJOINTS: MutableMapping[object, Template] = registry.Field("adjoint")
TANGENTS: MutableMapping[object, Template] = registry.Field("tangent")
NONDIFFERENTIABLE = registry.Members(lambda r: r.nondifferentiable)
# key -> check(call_args, call_keywords) raising MissingRule for a call its rules cannot
# take (e.g. einsum subscripts), so the error is raised while transforming, at the call
CALL_CHECKS: MutableMapping[object, Callable] = registry.Field("call_check")


# ---------------------------------------------------------------- registration


def describe(key) -> str:
    """A readable name for a primitive key (``numpy.linalg.qr``, ``operator Mult``), with
    the registry's reason when it states why a derivative is missing."""
    if isinstance(key, str):
        return key
    if isinstance(key, type) and issubclass(key, gast.AST):
        return f"operator {key.__name__}"
    why = registry.reason(key, "grad") or registry.reason(key, "jvp")
    label = registry.user_name(key)
    return f"{label} ({why})" if why else label


def rule_from_source(source: str, glb: dict, *, has_result=True, broadcast=False) -> Template:
    """A template from the source of a ``def`` (its decorators are ignored); the names its
    body uses are looked up in ``glb``. Decorators and family helpers both build rules here.
    The source is parsed when the rule is first used (`Template`)."""
    return Template(source, glb, has_result, broadcast)


def _template_from_function(fn, has_result, broadcast) -> Template:
    template = Template(fn, fn.__globals__, has_result, broadcast)
    if not (fn.__module__ or "").startswith("transformer."):
        template._parse()       # a user's rule (defadjoint) is refused where it is defined
    return template


def _parse_template(source: str, has_result: bool) -> tuple:
    """(name, signature, params, body) of a template ``def``'s text."""
    fdef = gast.parse(textwrap.dedent(source)).body[0]
    for node in walk(fdef):    # emitted code takes the user's line, not the rule's
        for attr in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            if hasattr(node, attr):
                setattr(node, attr, None)
    signature = _signature(fdef)
    params = list(signature.parameters)
    if has_result and not params:
        raise ValueError(f"template {fdef.name} needs a result parameter")
    return fdef.name, signature, params, fdef.body


def _signature(fdef: gast.FunctionDef) -> inspect.Signature:
    """The signature of a template ``def`` whose defaults are literals."""
    args = fdef.args
    P = inspect.Parameter
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + args.defaults
    params = [P(a.id, P.POSITIONAL_OR_KEYWORD, default=P.empty if d is None else _literal(d))
              for a, d in zip(positional, defaults)]
    if args.vararg is not None:
        params.append(P(args.vararg.id, P.VAR_POSITIONAL))
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        params.append(P(a.id, P.KEYWORD_ONLY, default=P.empty if d is None else _literal(d)))
    return inspect.Signature(params)


def _literal(node):
    return ast.literal_eval(gast.gast_to_ast(gast.Expression(body=node)))


def _register(table, keys, template):
    for key in keys:
        table[key] = template


def adjoint(*keys, result: bool = True):
    """Register the decorated template as the adjoint rule of every key."""
    def decorate(fn):
        _register(ADJOINTS, keys, _template_from_function(fn, result, False))
        return fn
    return decorate


def tangent(*keys, result: bool = True, broadcast: bool = False):
    """Register the decorated template as the tangent rule of every key."""
    def decorate(fn):
        _register(TANGENTS, keys, _template_from_function(fn, result, broadcast))
        return fn
    return decorate


def nondifferentiable(*keys) -> None:
    """Mark primitives whose outputs carry no derivative (shapes, constructors, rounding)."""
    for key in keys:
        registry.record(key).nondifferentiable = True


def _lookup(table, key):
    """``table[key]`` (a registry view), or None; an operator node reads as its class."""
    return table.get(type(key) if isinstance(key, gast.AST) else key)


def has_adjoint(key) -> bool:
    return _lookup(ADJOINTS, key) is not None


def has_tangent(key) -> bool:
    return _lookup(TANGENTS, key) is not None


def is_nondifferentiable(key) -> bool:
    return key in NONDIFFERENTIABLE


# ---------------------------------------------------------------- expansion


_SELECTORS = {"condition", "index", "subscripts"}


def _static_index(node) -> bool:
    """An index made of literal ints and slices only: plain indexing, no repeats."""
    if isinstance(node, gast.Tuple):
        return all(_static_index(e) for e in node.elts)
    if isinstance(node, gast.Slice):
        return all(p is None or _static_index(p) for p in (node.lower, node.upper, node.step))
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        return _static_index(node.operand)
    return isinstance(node, gast.Constant) and type(node.value) is int


class _InactiveRead(Exception):
    """A statement reads the derivative of an inactive value; the statement is dropped."""


def _name(id_, ctx=None):
    return gast.Name(id=id_, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def _const(value):
    if isinstance(value, tuple):
        return gast.Tuple(elts=[_const(v) for v in value], ctx=gast.Load())
    return gast.Constant(value=value, kind=None)


def _call(func: str, *args):
    return gast.Call(func=_name(func), args=list(args), keywords=[])


def _as_value(node):
    """A bound index as an expression: slices outside a subscript become slice() calls."""
    if isinstance(node, gast.Slice):
        parts = [copy_tree(p) if p is not None else _const(None)
                 for p in (node.lower, node.upper, node.step)]
        return _call("slice", *parts)
    if isinstance(node, gast.Tuple):
        return gast.Tuple(elts=[_as_value(e) for e in node.elts], ctx=gast.Load())
    return copy_tree(node)


def _store(node):
    node = copy_tree(node)
    for sub in walk(node):
        if hasattr(sub, "ctx"):
            sub.ctx = gast.Load()
    node.ctx = gast.Store()
    if isinstance(node, gast.Tuple):
        for elt in node.elts:
            elt.ctx = gast.Store()
    return node


def _is_d(node):
    return isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) \
        and node.value.id == "d"


def _first_name(nodes):
    for node in nodes:
        for sub in walk(node):
            if isinstance(sub, gast.Name):
                return sub.id
    return None


def _bind(template, key, kind, call_args, call_keywords, result) -> dict[str, gast.expr]:
    """Template parameter -> the gast node it stands for, bound like a Python call."""
    signature = template.signature
    if template.has_result:
        signature = signature.replace(parameters=list(signature.parameters.values())[1:])
    try:
        bound = signature.bind(*call_args, **call_keywords)
    except TypeError as err:
        raise MissingRule(f"the {kind} rule for {describe(key)} cannot take this call: "
                          f"{err}", builtin_hint(key)) from None
    bound.apply_defaults()
    binding: dict[str, gast.expr] = {}
    for name, value in bound.arguments.items():
        if signature.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL:
            value = gast.Tuple(elts=list(value), ctx=gast.Load())
        elif not isinstance(value, gast.AST):
            value = _const(value)  # a default of the template
        binding[name] = value
    if template.has_result:
        binding[template.params[0]] = result
    return binding


class _Expansion:
    """One instantiation of a template for one call."""

    def __init__(self, template, key, call_args, call_keywords, result, derivative_of,
                 fresh_name, kind):
        self.t = template
        self.result = result
        self.derivative_of = derivative_of
        self.env: dict[str, object] = {}
        self.temps: dict[str, str] = {}
        self.dropped_temps: set[str] = set()
        self.loop: dict[str, int] = {}
        self.inactive_as_zeros = False
        self.binding = _bind(template, key, kind, call_args, call_keywords, result)
        # cast_like's reference: the first argument that is a value, not a selector
        values = [self.binding[p] for p in template.params[1 if template.has_result else 0:]
                  if p in self.binding and p not in _SELECTORS]
        self.ref = _first_name(values) or _first_name([result])
        base = _first_name([result]) or "t"
        self.fresh = fresh_name or (lambda tmp: f"{base}_{tmp}")

    # -- expressions

    def use(self, name, obj):
        self.env[name] = obj

    def derivative(self, node):
        """The derivative of a bound value: a Name, a Tuple, or None when inactive."""
        if isinstance(node, gast.Name):
            d = self.derivative_of(node.id)
            return None if d is None else _name(d)
        if isinstance(node, gast.Tuple):
            elts = [self.derivative(e) for e in node.elts]
            if all(e is None for e in elts):
                return None
            zeros = [e if e is not None else self.zeros(v) for e, v in zip(elts, node.elts)]
            return gast.Tuple(elts=zeros, ctx=gast.Load())
        return None  # constants are inactive

    def zeros(self, node):
        if isinstance(node, gast.Tuple):  # a sequence of values, or a tuple result
            return gast.Tuple(elts=[self.zeros(e) for e in node.elts], ctx=gast.Load())
        self.use("zeros_like", runtime.zeros_like)
        return _call("zeros_like", _as_value(node))

    def bound(self, node):
        """The value a template expression ``p`` or ``xs[k]`` stands for, or None."""
        if isinstance(node, gast.Name):
            if node.id in self.binding:
                return self.binding[node.id]
            return None
        if isinstance(node, gast.Subscript):
            seq = self.bound(node.value)
            idx = self.expr(node.slice)
            if isinstance(seq, gast.Tuple) and isinstance(idx, gast.Constant) \
                    and isinstance(idx.value, int):
                return seq.elts[idx.value]
        return None

    def read_d(self, node):
        value = self.bound(node.slice)
        if value is None:
            raise MissingRule(f"template {self.t.name}: d[...] of a non-parameter")
        d = self.derivative(value)
        if d is None:
            if self.inactive_as_zeros:
                return self.zeros(value)
            raise _InactiveRead
        return d

    def expr(self, node):
        return _Substitute(self).visit(copy_tree(node))

    def index(self, node):
        """A subscript's index: a bound index stays a slice rather than a slice() call."""
        if isinstance(node, gast.Name) and node.id in self.binding:
            return copy_tree(self.binding[node.id])
        return self.expr(node)

    # -- statements

    def expand(self, stmts, on_statement):
        out = []
        for stmt in stmts:
            if isinstance(stmt, gast.For):
                out.extend(self.unroll(stmt, on_statement))
                continue
            try:
                out.extend(on_statement(stmt))
            except _InactiveRead:
                targets = stmt.targets if isinstance(stmt, gast.Assign) else []
                for target in targets:
                    for sub in walk(target):
                        if isinstance(sub, gast.Name):
                            self.dropped_temps.add(sub.id)
        return out

    def unroll(self, loop, on_statement):
        it = loop.iter
        ok = (isinstance(loop.target, gast.Name) and isinstance(it, gast.Call)
              and isinstance(it.func, gast.Name) and it.func.id == "range"
              and len(it.args) == 1 and isinstance(it.args[0], gast.Call)
              and isinstance(it.args[0].func, gast.Name) and it.args[0].func.id == "len")
        seq = self.bound(it.args[0].args[0]) if ok else None
        if not isinstance(seq, gast.Tuple):
            raise MissingRule(f"template {self.t.name} loops over a sequence that is not a "
                              "literal tuple; pass the arrays as a literal tuple")
        out = []
        for k in range(len(seq.elts)):
            self.loop[loop.target.id] = k
            out.extend(self.expand(loop.body, on_statement))
        del self.loop[loop.target.id]
        return out

    def temp_target(self, target):
        target = copy_tree(target)
        for sub in walk(target):
            if isinstance(sub, gast.Name):
                self.temps.setdefault(sub.id, self.fresh(sub.id))
                self.dropped_temps.discard(sub.id)
                sub.id = self.temps[sub.id]
        return _store(target)


class _Substitute(gast.NodeTransformer):
    def __init__(self, expansion: _Expansion):
        self.x = expansion

    def visit_Subscript(self, node):
        if _is_d(node):
            return self.x.read_d(node)
        value = self.x.bound(node)
        if value is not None:  # xs[k] naming one element of a bound tuple
            return _as_value(value)
        node.value = self.visit(node.value)
        node.slice = self.x.index(node.slice)
        if isinstance(node.value, gast.Tuple) and isinstance(node.slice, gast.Constant) \
                and isinstance(node.slice.value, int):
            return node.value.elts[node.slice.value]
        return node

    def visit_Name(self, node):
        x = self.x
        if node.id in x.loop:
            return _const(x.loop[node.id])
        if node.id in x.binding:
            return _as_value(x.binding[node.id])
        if node.id in x.dropped_temps:
            raise _InactiveRead
        if node.id in x.temps:
            return _name(x.temps[node.id])
        if node.id in x.t.globals:
            x.use(node.id, x.t.globals[node.id])
        elif hasattr(builtins, node.id):
            x.use(node.id, getattr(builtins, node.id))
        return node

    def visit_Constant(self, node):
        if type(node.value) is float and self.x.ref is not None:
            self.x.use("cast_like", runtime.cast_like)
            return _call("cast_like", node, _name(self.x.ref))
        return node


def _prune_unused_temps(stmts, temps):
    """Drop assignments to temporaries that no later statement reads."""
    live: set[str] = set()
    kept = []
    for stmt in reversed(stmts):
        if isinstance(stmt, gast.Assign) and all(
                isinstance(s, gast.Name) and s.id in temps
                for t in stmt.targets for s in walk(t) if isinstance(s, gast.Name)):
            names = {s.id for t in stmt.targets for s in walk(t)
                     if isinstance(s, gast.Name)}
            if not names & live:
                continue
        kept.append(stmt)
        live |= {s.id for s in walk(stmt) if isinstance(s, gast.Name)
                 and isinstance(s.ctx, gast.Load)}
    return kept[::-1]


def _write_target(x: _Expansion, node):
    """For ``d[p]`` (or ``d[p][i]``) as a target: (derivative Name, index or None)."""
    index = None
    if not _is_d(node):
        index = x.index(node.slice)
        node = node.value
    value = x.bound(node.slice)
    d = x.derivative(value) if value is not None else None
    if d is None:
        raise _InactiveRead
    return d, index


def _subscript(name, index, ctx):
    return gast.Subscript(value=copy_tree(name), slice=copy_tree(index), ctx=ctx)


def _check_call(key, call_args, call_keywords) -> None:
    check = _lookup(CALL_CHECKS, key)
    if check is not None:
        check(call_args, call_keywords)


def _is_d_target(node):
    return _is_d(node) or (isinstance(node, gast.Subscript) and _is_d(node.value))


def expand_adjoint(key, call_args: list[gast.expr], call_keywords: dict[str, gast.expr],
                   result: gast.expr, adjoint_of: Callable[[str], str | None], *,
                   fresh_name: Callable[[str], str] | None = None,
                   ) -> tuple[list[gast.stmt], dict[str, object]]:
    """The adjoint statements of ``result = key(*call_args, **call_keywords)``.

    Returns the statements and the environment (free name -> object) they need.
    ``fresh_name(tmp)``, if given, names the template's temporaries.
    """
    if key == "getitem" and len(call_args) == 2 and _static_index(call_args[1]):
        key = "getitem:static"  # literal ints and slices: read as plain indexing
    template = _lookup(ADJOINTS, key)
    if template is None:
        raise MissingRule(f"no adjoint rule for {describe(key)}", builtin_hint(key))
    _check_call(key, call_args, call_keywords)
    x = _Expansion(template, key, call_args, call_keywords, result, adjoint_of,
                   fresh_name, "adjoint")
    if template.has_result and x.derivative(result) is None:
        return [], {}

    def statement(stmt):
        if isinstance(stmt, gast.AugAssign) and _is_d_target(stmt.target):
            d, index = _write_target(x, stmt.target)
            value = x.expr(stmt.value)
            if index is None:
                return [gast.Assign(targets=[_store(d)], type_comment=None, value=gast.BinOp(
                    left=copy_tree(d), op=stmt.op, right=value))]
            old = _subscript(d, index, gast.Load())
            return [gast.Assign(targets=[_subscript(d, index, gast.Store())], type_comment=None,
                                value=gast.BinOp(left=old, op=stmt.op, right=value))]
        if isinstance(stmt, gast.Assign) and _is_d_target(stmt.targets[0]):
            d, index = _write_target(x, stmt.targets[0])
            target = _store(d) if index is None else _subscript(d, index, gast.Store())
            # a literal stored into an array element is converted by the store itself
            value = stmt.value if index is not None and isinstance(stmt.value, gast.Constant) \
                else x.expr(stmt.value)
            return [gast.Assign(targets=[target], value=value, type_comment=None)]
        if isinstance(stmt, gast.Assign):
            value = x.expr(stmt.value)
            return [gast.Assign(targets=[x.temp_target(t) for t in stmt.targets], value=value,
                                type_comment=None)]
        if isinstance(stmt, gast.Expr):
            return [gast.Expr(value=x.expr(stmt.value))]
        raise MissingRule(f"template {template.name}: unsupported statement "
                          f"{type(stmt).__name__}")

    stmts = _prune_unused_temps(x.expand(template.body, statement), set(x.temps.values()))
    return stmts, _used_env(stmts, x.env)


def _used_env(stmts, env):
    names = {n.id for s in stmts for n in walk(s) if isinstance(n, gast.Name)}
    return {k: v for k, v in env.items() if k in names}


def expand_tangent(key, call_args: list[gast.expr], call_keywords: dict[str, gast.expr],
                   result: gast.expr, tangent_of: Callable[[str], str | None],
                   result_tangent: str | tuple[str, ...], *,
                   fresh_name: Callable[[str], str] | None = None,
                   ) -> tuple[list[gast.stmt], dict[str, object]]:
    """The tangent statements of ``result = key(...)``, assigning ``result_tangent``.

    For a result unpacked into a tuple, ``result_tangent`` is a tuple of names.
    Returns the statements and the environment (free name -> object) they need.
    """
    template = _lookup(TANGENTS, key)
    if template is None:
        raise MissingRule(f"no tangent rule for {describe(key)}", builtin_hint(key))
    _check_call(key, call_args, call_keywords)
    x = _Expansion(template, key, call_args, call_keywords, result, tangent_of,
                   fresh_name, "tangent")
    if isinstance(result_tangent, str):
        target = _name(result_tangent, gast.Store())
    else:
        target = gast.Tuple(elts=[_name(n, gast.Store()) for n in result_tangent],
                            ctx=gast.Store())
    contributions: list[gast.expr] = []
    z = template.params[0] if template.has_result else None

    def statement(stmt):
        x.inactive_as_zeros = False
        if isinstance(stmt, gast.Assign) and _is_d(stmt.targets[0]) \
                and isinstance(stmt.targets[0].slice, gast.Name) \
                and stmt.targets[0].slice.id == z:
            contributions.append(x.expr(stmt.value))
            return []
        if isinstance(stmt, gast.Assign) and _is_d_target(stmt.targets[0]):
            return inplace(stmt.targets[0], stmt.value)
        if isinstance(stmt, gast.Assign):
            value = x.expr(stmt.value)
            return [gast.Assign(targets=[x.temp_target(t) for t in stmt.targets], value=value,
                                type_comment=None)]
        raise MissingRule(f"template {template.name}: unsupported statement "
                          f"{type(stmt).__name__}")

    def inplace(tgt, value):
        if _is_d(tgt):
            raise MissingRule(f"template {template.name}: write d[{z}] for the result")
        x.inactive_as_zeros = True
        index = x.index(tgt.slice)
        primal = x.bound(tgt.value.slice)
        d = x.derivative(primal)
        out = []
        if d is None:
            out.append(gast.Assign(targets=[copy_tree(target)], value=x.zeros(primal),
                                   type_comment=None))
            d = _name(result_tangent)
        out.append(gast.Assign(targets=[_subscript(d, index, gast.Store())],
                               value=x.expr(value), type_comment=None))
        if d.id != result_tangent:
            out.append(gast.Assign(targets=[copy_tree(target)], value=d, type_comment=None))
        return out

    stmts = x.expand(template.body, statement)
    if contributions:
        total = contributions[0]
        for c in contributions[1:]:
            total = gast.BinOp(left=total, op=gast.Add(), right=c)
        if template.broadcast:
            x.use("broadcast_like", runtime.broadcast_like)
            total = _call("broadcast_like", total, _as_value(result))
        stmts.append(gast.Assign(targets=[target], value=total, type_comment=None))
    elif template.has_result:
        stmts.append(gast.Assign(targets=[target], value=x.zeros(result), type_comment=None))
    stmts = _prune_unused_temps(stmts, set(x.temps.values()))
    return stmts, _used_env(stmts, x.env)
