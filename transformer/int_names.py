"""Names known to hold a Python int wherever they are read: the index of `for i in
range(...)`, and names every binding of which is int arithmetic of such names.

`IntNames(fn, node).names`, read from the user's tree as parsed (before desugaring), are
the local names of `node` (a FunctionDef, nested scopes included) of which *every* binding is
- `for n in range(...)` (or `numba.prange(...)`), or the first target of
  `for n, v in enumerate(...)`;
- `n = e`, `n: T = e`, `(n := e)`, or `n op= e` with `op` one of `+ - * // %`, where
  `e` is an *int expression*: an int constant (not a bool, which NumPy reads as a mask),
  a name of this set or a free name whose value in the env is an int, `+ - * // %` and
  unary `- + ~` of int expressions, `a if c else b` of two, `len(...)`, `int(...)`,
  `min`/`max`/`abs` of int expressions, `x.shape[k]` with an int constant `k`, `x.ndim`
  and `x.size`.
A parameter, a name declared `global` or `nonlocal`, a name any nested scope (function,
lambda, comprehension) binds, or one with any other binding (unpacking, `with ... as`,
`del`, `import`, ...) is not in the set. The set is the greatest fixed
point (`i = 0` and `i = i + 1` together keep `i`): every binding of a name of the set
stores an int given that the names of the set hold ints, and Python reads a local name only
after a binding, so by induction each read gives an int.
`IntNames(fn, node).holds_int(expr)` says whether `expr` is an int expression.
"""
from __future__ import annotations

import gast
import numba
import numpy as np

from .function import resolve

_INT_OPS = (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)
_INT_UNARY = (gast.USub, gast.UAdd, gast.Invert)
_INT_ATTRIBUTES = ("ndim", "size")
# scopes whose names are their own: functions, lambdas, comprehensions, classes
_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef, gast.ListComp,
           gast.SetComp, gast.DictComp, gast.GeneratorExp)


class IntNames:
    """The names of a function that hold a Python int wherever read (module docstring):
    `names`; `holds_int(expr)` says whether an expression of that function is an int
    expression. `local` holds every name the function binds, its nested scopes included:
    none of those reads the env."""

    def __init__(self, fn, node):
        self.fn = fn
        bindings: dict[str, list] = {}
        refused = {a.id for a in gast.walk(node.args) if isinstance(a, gast.Name)}
        counted = set()
        for sub in gast.walk(node):
            if isinstance(sub, (gast.Global, gast.Nonlocal)):
                refused.update(sub.names)
            if sub is not node and isinstance(sub, _SCOPES):
                refused.update(_bound_inside(sub))
            if isinstance(sub, (gast.Import, gast.ImportFrom)):
                refused.update((a.asname or a.name).split(".")[0] for a in sub.names)
            for target, value in _bindings(fn, sub):
                bindings.setdefault(target.id, []).append(value)
                counted.add(id(target))
        for sub in gast.walk(node):               # a store none of those forms accounts for
            if isinstance(sub, gast.Name) and isinstance(sub.ctx, (gast.Store, gast.Del)) \
                    and id(sub) not in counted:
                refused.add(sub.id)
        self.local = frozenset(set(bindings) | refused)
        self.names = set(bindings) - refused
        changed = True
        while changed:                             # the greatest fixed point
            changed = False
            for n in sorted(self.names):
                if not all(v is _INT or self.holds_int(v) for v in bindings[n]):
                    self.names.discard(n)
                    changed = True
        self.names = frozenset(self.names)

    def holds_int(self, node) -> bool:
        """`node` evaluates to a Python int where the names `names` hold ints."""
        if isinstance(node, gast.Constant):
            return type(node.value) is int
        if isinstance(node, gast.Name):
            if node.id in self.local:
                return node.id in self.names
            value = resolve(self.fn, node, None)
            return isinstance(value, (int, np.integer)) and \
                not isinstance(value, (bool, np.bool_))
        if isinstance(node, gast.BinOp):
            return isinstance(node.op, _INT_OPS) and self.holds_int(node.left) and \
                self.holds_int(node.right)
        if isinstance(node, gast.UnaryOp):
            return isinstance(node.op, _INT_UNARY) and self.holds_int(node.operand)
        if isinstance(node, gast.IfExp):
            return self.holds_int(node.body) and self.holds_int(node.orelse)
        if isinstance(node, gast.Call):
            return self._int_call(node)
        if isinstance(node, gast.Attribute):
            return node.attr in _INT_ATTRIBUTES
        if isinstance(node, gast.Subscript):           # x.shape[0]
            return isinstance(node.value, gast.Attribute) and node.value.attr == "shape" and \
                isinstance(node.slice, gast.Constant) and type(node.slice.value) is int
        return False

    def _int_call(self, node) -> bool:
        function = resolve(self.fn, node.func, None)
        if node.keywords or any(isinstance(a, gast.Starred) for a in node.args) or \
                isinstance(node.func, gast.Name) and node.func.id in self.local:
            return False
        if function is len or function is int:
            return True
        return function in (min, max, abs) and bool(node.args) and \
            all(self.holds_int(a) for a in node.args)


def _bound_inside(scope) -> set:
    """Every name a nested scope binds (its parameters too): its own variable there,
    which may shadow a name of this scope or stand for a global one here."""
    names = {n.id for n in gast.walk(scope) if isinstance(n, gast.Name) and
             isinstance(n.ctx, (gast.Store, gast.Del, gast.Param))}
    return names | {getattr(scope, "name", None)} - {None}


_INT = object()       # a binding that stores an int whatever the names hold (a range index)


def _bindings(fn, sub):
    """(target Name, value) of each binding `sub` makes of a form the docstring names;
    the value is `_INT` for a loop index over `range`/`enumerate`."""
    if isinstance(sub, gast.Assign):
        for target in sub.targets:
            if isinstance(target, gast.Name):
                yield target, sub.value
    elif isinstance(sub, gast.AnnAssign) and isinstance(sub.target, gast.Name) and \
            sub.value is not None:
        yield sub.target, sub.value
    elif isinstance(sub, gast.AugAssign) and isinstance(sub.target, gast.Name) and \
            isinstance(sub.op, _INT_OPS):
        yield sub.target, gast.BinOp(left=gast.Name(id=sub.target.id, ctx=gast.Load(),
                                                    annotation=None, type_comment=None),
                                     op=sub.op, right=sub.value)
    elif isinstance(sub, gast.NamedExpr) and isinstance(sub.target, gast.Name):
        yield sub.target, sub.value
    elif isinstance(sub, gast.For):
        index = _loop_index(fn, sub)
        if index is not None:
            yield index, _INT


def _loop_index(fn, loop):
    iterated = loop.iter
    if not isinstance(iterated, gast.Call):
        return None
    function = resolve(fn, iterated.func, None)
    if (function is range or function is numba.prange) and isinstance(loop.target, gast.Name):
        return loop.target
    if function is enumerate and isinstance(loop.target, gast.Tuple) and \
            loop.target.elts and isinstance(loop.target.elts[0], gast.Name):
        return loop.target.elts[0]
    return None
