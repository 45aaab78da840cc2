"""Names known to hold a Python int wherever they are read: the index of `for i in
range(...)`, and names every binding of which is int arithmetic of such names.

`int_names(fn, node)` reads the user's tree as parsed (before desugaring) and returns the
local names of `node` (a FunctionDef, nested scopes included) of which *every* binding is
- `for n in range(...)`, or the first target of `for n, v in enumerate(...)` (also in a
  comprehension);
- `n = e`, `n: T = e`, `(n := e)`, or `n op= e` with `op` one of `+ - * // %`, where
  `e` is an *int expression*: an int constant (not a bool, which NumPy reads as a mask),
  a name of this set or a free name whose value in the env is an int, `+ - * // %` and
  unary `- + ~` of int expressions, `a if c else b` of two, `len(...)`, `int(...)`,
  `min`/`max`/`abs` of int expressions, `x.shape[k]` with an int constant `k`, `x.ndim`
  and `x.size`.
A parameter, a name declared `global` or `nonlocal`, or one with any other binding
(unpacking, `with ... as`, `del`, ...) is not in the set. The set is the greatest fixed
point (`i = 0` and `i = i + 1` together keep `i`): every binding of a name of the set
stores an int given that the names of the set hold ints, and Python reads a local name only
after a binding, so by induction each read gives an int.
`is_int_expression(fn, node, ints)` says whether `node` is an int expression given `ints`.
"""
from __future__ import annotations

import gast
import numpy as np

from .function import resolve

_INT_OPS = (gast.Add, gast.Sub, gast.Mult, gast.FloorDiv, gast.Mod)
_INT_UNARY = (gast.USub, gast.UAdd, gast.Invert)
_INT_ATTRIBUTES = ("ndim", "size")


def int_names(fn, node) -> frozenset:
    """The names of `node` that hold a Python int wherever read (module docstring)."""
    bindings: dict[str, list] = {}
    refused = {a.id for a in gast.walk(node.args) if isinstance(a, gast.Name)}
    counted = set()
    for sub in gast.walk(node):
        if isinstance(sub, (gast.Global, gast.Nonlocal)):
            refused.update(sub.names)
        for target, value in _bindings(fn, sub):
            bindings.setdefault(target.id, []).append(value)
            counted.add(id(target))
    for sub in gast.walk(node):                   # a store none of those forms accounts for
        if isinstance(sub, gast.Name) and isinstance(sub.ctx, (gast.Store, gast.Del)) and \
                id(sub) not in counted:
            refused.add(sub.id)
    ints = set(bindings) - refused
    changed = True
    while changed:
        changed = False
        for n in sorted(ints):
            if not all(value is _INT or is_int_expression(fn, value, ints)
                       for value in bindings[n]):
                ints.discard(n)
                changed = True
    return frozenset(ints)


def is_int_expression(fn, node, ints) -> bool:
    """`node` evaluates to a Python int where the names `ints` hold ints (module doc)."""
    if isinstance(node, gast.Constant):
        return type(node.value) is int
    if isinstance(node, gast.Name):
        if node.id in ints:
            return True
        value = resolve(fn, node, None)
        return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if isinstance(node, gast.BinOp):
        return isinstance(node.op, _INT_OPS) and is_int_expression(fn, node.left, ints) and \
            is_int_expression(fn, node.right, ints)
    if isinstance(node, gast.UnaryOp):
        return isinstance(node.op, _INT_UNARY) and is_int_expression(fn, node.operand, ints)
    if isinstance(node, gast.IfExp):
        return is_int_expression(fn, node.body, ints) and \
            is_int_expression(fn, node.orelse, ints)
    if isinstance(node, gast.Call):
        return _int_call(fn, node, ints)
    if isinstance(node, gast.Attribute):
        return node.attr in _INT_ATTRIBUTES
    if isinstance(node, gast.Subscript):           # x.shape[0]
        return isinstance(node.value, gast.Attribute) and node.value.attr == "shape" and \
            isinstance(node.slice, gast.Constant) and type(node.slice.value) is int
    return False


def _int_call(fn, node, ints) -> bool:
    function = resolve(fn, node.func, None)
    if node.keywords or any(isinstance(a, gast.Starred) for a in node.args):
        return False
    if function is len or function is int:
        return True
    return function in (min, max, abs) and bool(node.args) and \
        all(is_int_expression(fn, a, ints) for a in node.args)


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
    elif isinstance(sub, (gast.For, gast.comprehension)):
        index = _loop_index(fn, sub)
        if index is not None:
            yield index, _INT


def _loop_index(fn, loop):
    iterated = loop.iter
    if not isinstance(iterated, gast.Call):
        return None
    function = resolve(fn, iterated.func, None)
    if function is range and isinstance(loop.target, gast.Name):
        return loop.target
    if function is enumerate and isinstance(loop.target, gast.Tuple) and \
            loop.target.elts and isinstance(loop.target.elts[0], gast.Name):
        return loop.target.elts[0]
    return None
