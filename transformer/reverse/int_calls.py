"""Which names of a function hold integers, also when a user helper hands them back.

Counters, indices and flags are seen syntactically (`tape.integer_value`: constants,
`len`, `x.shape[0]`, integer arithmetic); a user helper's result (`i, x = step(i, x)`,
`k = bump(k, x)`) is followed into the helper's source: given which arguments are
integers, which items it returns are integers (`return i + 1, x * 2.0` gives
`(True, False)` for an integer `i`). Any other call's result may be a float.

The reverse pass uses the answer twice. Integer names carry no derivative, so they are
never active (otherwise `step`'s vjp would be asked for the gradient of its integer
argument); and their tapes keep the exact type (a float tape would hand `k` back as a
float, and `x[k]` would not index); a name that starts as `0` and may later hold a float
(`s = 0; s = s + x`) gets a float tape instead. The analysis is an optimistic fixed point:
every assigned name starts as an integer and loses it at an assignment that may give
anything else, until nothing changes (so `i = 0; i = i + 2` stays one). Anything it cannot follow (a
nested def, a star argument, a helper without source) counts as not an integer.
"""
from __future__ import annotations

import gast

from codegen.backends import is_user_function

from .. import tape
from ..errors import TransformError
from ..function import resolve_in
from ..nodes import walk
from ..templates import has_adjoint, is_nondifferentiable

_OPS = (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)
_DEPTH = 8          # helpers calling helpers: deeper chains count as not integers


def integer_names(facts, env: dict) -> set:
    """Names every assignment of which gives an integer or a bool (see the module doc)."""
    analysis = _Analysis(env, {}, 0)
    defs = {n: [_definition(d) for d in ds] for n, ds in facts.defs.items()
            if n not in facts.params}
    return analysis.fixed_point(defs, set())


def _definition(stmt):
    """What a statement of the prepared body assigns: its value node, or `range` marker."""
    if isinstance(stmt, gast.For):
        return ("for", stmt)
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
            isinstance(stmt.targets[0], gast.Name):
        return stmt.value
    return None


class _Analysis:
    """Integer-ness of values in one function (`env` resolves its names)."""

    def __init__(self, env: dict, cache: dict, depth: int):
        self.env, self.cache, self.depth = env, cache, depth
        self.defs: dict = {}
        self.ints: set = set()
        self.visiting: set = set()

    def fixed_point(self, defs: dict, int_params: set) -> set:
        self.defs = defs
        self.ints = set(defs) | set(int_params)
        changed = True
        while changed:
            changed = False
            for var in sorted(set(defs) - set(int_params)):
                if var in self.ints and not all(self.integer(d) for d in defs[var]):
                    self.ints.discard(var)
                    changed = True
        return self.ints - set(int_params)

    def integer(self, value) -> bool:
        if value is None:
            return False
        if isinstance(value, tuple):                      # ("for", loop)
            return tape.integer_range(value[1], self.env)
        if isinstance(value, gast.BinOp) and isinstance(value.op, _OPS):
            return self.integer(value.left) and self.integer(value.right)
        if isinstance(value, gast.UnaryOp) and isinstance(value.op, (gast.USub, gast.UAdd)):
            return self.integer(value.operand)
        if isinstance(value, gast.IfExp):
            return self.integer(value.body) and self.integer(value.orelse)
        if isinstance(value, gast.Call):
            items = self.call_items(value)
            if isinstance(items, bool):
                return items
        if isinstance(value, gast.Subscript) and isinstance(value.slice, gast.Constant) \
                and isinstance(value.slice.value, int):
            found = self.item(value.value, value.slice.value)
            if found is not None:
                return found
        return tape.integer_value(value, self.ints, self.env)

    def item(self, value, k: int):
        """Whether item `k` of tuple `value` (a helper's result, or a name every
        assignment of which is one) is an integer; None when `value` is no such tuple."""
        if isinstance(value, gast.Call):
            items = self.call_items(value)
            if isinstance(items, tuple) and -len(items) <= k < len(items):
                return items[k]
            return None
        if isinstance(value, gast.Tuple) and -len(value.elts) <= k < len(value.elts):
            return self.integer(value.elts[k])
        if isinstance(value, gast.Name) and self.defs.get(value.id) and \
                value.id not in self.visiting:
            self.visiting.add(value.id)          # `c = c` cycles: not followed twice
            try:
                found = [self.item(d, k) if not isinstance(d, tuple) and d is not None
                         else None for d in self.defs[value.id]]
            finally:
                self.visiting.discard(value.id)
            if any(f is None for f in found):
                return None
            return all(found)
        return None

    def call_items(self, call):
        """A user helper's result: bool (one value) or tuple of bools (a tuple), or None
        when the callee is not a user helper this analysis can read."""
        if call.keywords or any(isinstance(a, gast.Starred) for a in call.args) or \
                self.depth >= _DEPTH:
            return None
        obj = resolve_in(self.env, call.func, None)
        fn = _helper_function(obj)
        if fn is None:
            return None
        flags = tuple(self.integer(a) for a in call.args)
        key = (fn.node, flags)
        if key not in self.cache:
            self.cache[key] = None            # recursion: unknown while being analysed
            self.cache[key] = _returned(fn, flags, self.cache, self.depth + 1)
        return self.cache[key]


def returns_tuple(obj):
    """Whether plain user helper `obj` returns a tuple literal at every `return` (so its
    vjp takes one cotangent per item), False when one returns something else, None when
    `obj` is not a helper whose source is read here (a custom_vjp, a secant function)."""
    from ..controlflow import tuple_arity
    fn = _helper_function(obj)
    if fn is None:
        return None
    return tuple_arity(fn.node)[0] is not None


def _helper_function(obj):
    """The parsed Function of a plain user helper, or None for anything else."""
    from ..frontend import parse_callee, unwrap
    if obj is None or not callable(obj) or has_adjoint(obj) or is_nondifferentiable(obj):
        return None
    if hasattr(obj, "__secant_vjp__") or hasattr(obj, "__secant_function__"):
        return None
    plain = unwrap(obj)
    if not is_user_function(plain):
        return None
    try:
        return parse_callee(plain)
    except (TransformError, SyntaxError, OSError, TypeError):
        return None


def _returned(fn, flags: tuple, cache: dict, depth: int):
    """Integer-ness of what `fn` returns when its parameters' integer-ness is `flags`."""
    params = list(fn.params)
    if len(flags) != len(params):
        return None
    defs: dict = {}
    returns: list = []
    _collect(fn.node.body, defs, returns)
    if not returns:
        return None
    analysis = _Analysis(fn.env, cache, depth)
    int_params = {p for p, flag in zip(params, flags) if flag}
    for p in params:        # the entry value: an integer stays one unless reassigned
        defs.setdefault(p, []).append(None if p not in int_params else _load(p))
    analysis.fixed_point(defs, set())
    shapes = {len(r.elts) if isinstance(r, gast.Tuple) else None for r in returns}
    if len(shapes) != 1:
        return None
    (size,) = shapes
    if size is None:
        return all(analysis.integer(r) for r in returns)
    return tuple(all(analysis.integer(r.elts[k]) for r in returns) for k in range(size))


def _collect(body: list, defs: dict, returns: list) -> None:
    """Every name assignment and returned value of a function body (nested defs apart)."""
    for stmt in body:
        if isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            defs.setdefault(stmt.name, []).append(None)
            continue
        if isinstance(stmt, gast.Return):
            returns.append(stmt.value)
        elif isinstance(stmt, gast.Assign):
            for target in stmt.targets:
                _bind(target, stmt.value, defs)
        elif isinstance(stmt, gast.AugAssign) and isinstance(stmt.target, gast.Name):
            defs.setdefault(stmt.target.id, []).append(gast.BinOp(
                left=_load(stmt.target.id), op=stmt.op, right=stmt.value))
        elif isinstance(stmt, gast.AnnAssign) and isinstance(stmt.target, gast.Name):
            defs.setdefault(stmt.target.id, []).append(stmt.value)
        elif isinstance(stmt, gast.For):
            if isinstance(stmt.target, gast.Name):
                defs.setdefault(stmt.target.id, []).append(("for", stmt))
            else:
                _bind(stmt.target, None, defs)
        for node in _other_targets(stmt):
            defs.setdefault(node, []).append(None)
        for field in ("body", "orelse", "finalbody"):
            _collect(getattr(stmt, field, None) or [], defs, returns)
        for handler in getattr(stmt, "handlers", None) or []:
            _collect(handler.body, defs, returns)


def _bind(target, value, defs: dict) -> None:
    if isinstance(target, gast.Name):
        defs.setdefault(target.id, []).append(value)
    elif isinstance(target, (gast.Tuple, gast.List)):
        for k, elt in enumerate(target.elts):
            if isinstance(elt, gast.Starred):
                _bind(elt.value, None, defs)
            elif isinstance(value, gast.Tuple) and len(value.elts) == len(target.elts):
                _bind(elt, value.elts[k], defs)
            elif value is None:
                _bind(elt, None, defs)
            else:
                _bind(elt, gast.Subscript(value=value, slice=gast.Constant(
                    value=k, kind=None), ctx=gast.Load()), defs)


def _other_targets(stmt) -> list:
    """Names bound by statements `_collect` does not follow (with, walrus, except as,
    imports): never integers here."""
    if isinstance(stmt, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For)):
        found = []
        for node in walk(stmt):
            if isinstance(node, gast.NamedExpr) and isinstance(node.target, gast.Name):
                found.append(node.target.id)
        return found
    found = []
    for node in walk(stmt) if not isinstance(stmt, (gast.If, gast.While, gast.Try))\
            else []:
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            found.append(node.id)
        elif isinstance(node, gast.ExceptHandler) and isinstance(node.name, gast.Name):
            found.append(node.name.id)
    return found


def _load(var: str):
    return gast.Name(id=var, ctx=gast.Load(), annotation=None, type_comment=None)
