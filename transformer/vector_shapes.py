"""Shape classes of a function's variables, for scalarizing short vectors under jit.

A *shape class* is what the generated code may rely on about a value:

    Scalar(dtype)              a number
    Array(ndim, last, dtype)   an array of `ndim` axes whose last axis has length `last`
                               (None: not known at compile time)
    SHAPE                      `x.shape` of a local array (its items are integers)
    UNKNOWN                    anything else (tuples, strings, 0-d arrays, unknown calls)

`dtype` is 'int', 'bool', 'f64' (float64) or 'other' (float32, complex, or not known).
Only an 'int' scalar indexes a row (`x[True]` would add an axis).
A short vector is `Array(1, k, ...)`.

`argument_key` records, per call, what a jit specialization keeps of each argument and
`describe_key` turns that into a class; `Shapes` propagates the classes of the parameters
through the function, flow-insensitively: a variable's class is the join of
the classes of every value ever assigned to it, so a variable that is a 3-vector in one
place and anything else in another is UNKNOWN. The rules below understand a small set
of forms (arithmetic, NumPy ufuncs, reductions, rows of arrays, the reverse-mode runtime
helpers); every other form is UNKNOWN, which makes the analysis safe to act on.
"""
from __future__ import annotations

import builtins
from typing import NamedTuple

import gast
import numba
import numpy as np

from . import runtime
from .function import Function, resolve
from .nodes import walk
from .primitives import registry

MAX_LENGTH = 4   # longest trailing axis recorded in a specialization


class Scalar(NamedTuple):
    dtype: str


class Array(NamedTuple):
    ndim: int
    last: int | None
    dtype: str


UNKNOWN = "unknown"   # top of the lattice; None is bottom (no value seen yet)
SHAPE = "shape"       # the shape tuple of a local array: its items are integers

# ---------------------------------------------------------------------------- arguments

_SCALAR_TYPES = {bool: Scalar("bool"), int: Scalar("int"), float: Scalar("f64"),
                 np.bool_: Scalar("bool"), np.int64: Scalar("int"), np.int32: Scalar("int"),
                 np.float64: Scalar("f64"), np.float32: Scalar("other"),
                 complex: Scalar("other"), np.complex128: Scalar("other")}
_NDARRAY = np.ndarray


def argument_key(args) -> tuple:
    """What a specialization keeps of each argument: for an array its dtype, ndim and
    short last axis, for anything else its type. Cheap: it runs on every jit call."""
    # a last axis of length 0 is not short: there are no elements to make scalars of
    return tuple([(a.dtype.char, a.ndim, a.shape[-1] if a.ndim and 0 < a.shape[-1] <= MAX_LENGTH
                   else None) if type(a) is _NDARRAY else type(a) for a in args])


def describe_key(item):
    """The shape class of one item of `argument_key`."""
    if not isinstance(item, tuple):
        return _SCALAR_TYPES.get(item, UNKNOWN)
    char, ndim, last = item
    if ndim == 0:
        return UNKNOWN
    return Array(ndim, last, _dtype_class(np.dtype(char)))


def describe_argument(value):
    """The shape class of a call argument."""
    return describe_key(argument_key([value])[0])


def _dtype_class(dtype: np.dtype) -> str:
    if dtype.kind in "iu":
        return "int"
    if dtype.kind == "b":
        return "bool"
    return "f64" if dtype == np.float64 else "other"


def _constant(value):
    if isinstance(value, np.ndarray):
        return describe_argument(value)
    if isinstance(value, (bool, np.bool_)):
        return Scalar("bool")
    if isinstance(value, (int, np.integer)):
        return Scalar("int")
    if isinstance(value, (float, np.float64)):
        return Scalar("f64")
    if isinstance(value, (np.floating, complex, np.complexfloating)):
        return Scalar("other")
    return UNKNOWN


# ---------------------------------------------------------------------------- lattice


def join(a, b):
    if a is None:
        return b
    if b is None or a == b:
        return a
    if isinstance(a, Scalar) and isinstance(b, Scalar):
        return Scalar(_join_dtype(a.dtype, b.dtype))
    if isinstance(a, Array) and isinstance(b, Array) and a.ndim == b.ndim:
        return Array(a.ndim, a.last if a.last == b.last else None,
                     _join_dtype(a.dtype, b.dtype))
    return UNKNOWN


def _join_dtype(a: str, b: str) -> str:
    return a if a == b else "other"


def _arith_dtype(a: str, b: str, op) -> str:
    """Result dtype class of `a op b` (NumPy and Numba agree on these)."""
    if {a, b} <= {"int", "bool"}:
        return "f64" if isinstance(op, gast.Div) else "int"
    if {a, b} <= {"int", "f64"}:
        return "f64"
    return "other"


def is_vector(shape, length=None) -> bool:
    return (isinstance(shape, Array) and shape.ndim == 1 and shape.last is not None
            and (length is None or shape.last == length))


def is_int(shape) -> bool:
    return isinstance(shape, Scalar) and shape.dtype == "int"


# ---------------------------------------------------------------------------- known calls

# Classes of known calls, read from the primitive registry (`transformer.primitives`)
_ELEMENTWISE = registry.Members(lambda r: r.elementwise)
_KEEPS_INT = registry.Members(lambda r: r.keeps_int)
_ONE_ARGUMENT = registry.Members(lambda r: r.unary_only)  # Numba's round(x, n) is float64
SUMS = registry.Members(lambda r: r.role == "sum")
ALLOCATIONS = registry.Members(lambda r: r.role == "allocation")   # shaped like arg 0
DOTS = registry.Members(lambda r: r.role == "dot")
NORMS = registry.Members(lambda r: r.role == "norm")


def _scalar_result(target):
    found = registry.lookup(target)
    return found.scalar_result if found is not None else None


def helpers() -> dict:
    """The runtime helpers of generated code that the analysis understands, by role."""
    from . import reverse, tape
    return {"unbroadcast": runtime.unbroadcast, "broadcast_reduced": runtime.broadcast_reduced,
            "zeros_like": runtime.zeros_like, "float_zeros": reverse.float_zeros,
            "scatter_add": runtime.scatter_add, "range_last": tape.range_last,
            "unit_cotangent": reverse.unit_cotangent,
            "matmul_grad_left": runtime.matmul_grad_left,
            "matmul_grad_right": runtime.matmul_grad_right, "cast_like": runtime.cast_like}


def is_range(target) -> bool:
    return target is builtins.range or target is numba.prange


def is_elementwise(target) -> bool:
    return target in _ELEMENTWISE


# ---------------------------------------------------------------------------- inference


class Shapes:
    """The shape class of every local of `fn`, given those of its parameters."""

    def __init__(self, fn: Function, params: dict):
        self.fn = fn
        self.helpers = helpers()
        self.of: dict = {p: params.get(p, UNKNOWN) for p in fn.params}
        self.locals = set(self.of)
        self._defs = list(_definitions(fn.node, self))
        self.locals |= {target for target, _ in self._defs}
        self._solve()

    def _solve(self):
        changed = True
        while changed:
            changed = False
            for target, value in self._defs:
                shape = value if isinstance(value, (Scalar, Array, str)) else self.expr(value)
                new = join(self.of.get(target), shape)
                if new != self.of.get(target):
                    self.of[target], changed = new, True
        for target in list(self.of):
            if self.of[target] is None:
                self.of[target] = UNKNOWN

    def name(self, node: gast.Name):
        if node.id in self.locals:
            return self.of.get(node.id)
        return _constant(self.fn.env[node.id]) if node.id in self.fn.env else UNKNOWN

    def target(self, call: gast.Call):
        """The object `call` calls when it is a global; None for locals and unhashables."""
        found = resolve(self.fn, call.func, None)
        try:
            hash(found)
        except TypeError:
            return None
        return found

    def expr(self, node):
        """The shape class of expression `node`; None while an operand is still bottom."""
        method = getattr(self, "_" + type(node).__name__, None)
        return method(node) if method else UNKNOWN

    def _Name(self, node):
        return self.name(node)

    def _Constant(self, node):
        return _constant(node.value)

    def _Attribute(self, node):
        if isinstance(node.value, gast.Name) and node.value.id in self.locals:
            if node.attr == "shape":
                return SHAPE
            return Scalar("int") if node.attr in ("ndim", "size") else UNKNOWN
        return _constant(resolve(self.fn, node, None))

    def _Subscript(self, node):
        base = self.expr(node.value)
        if base == SHAPE and self.index_count(node.slice) == 1:
            return Scalar("int")
        if not isinstance(base, Array):
            return None if base is None else UNKNOWN
        count = self.index_count(node.slice)
        if count is None:
            return UNKNOWN
        if count == base.ndim:
            return Scalar(base.dtype)
        if count > base.ndim:
            return UNKNOWN
        return Array(base.ndim - count, base.last, base.dtype)

    def index_count(self, index):
        """How many integer scalars index `index` holds; None if it is anything else."""
        items = index.elts if isinstance(index, gast.Tuple) else [index]
        shapes = [self.expr(item) for item in items]
        return len(items) if all(is_int(s) for s in shapes) else None

    def _BinOp(self, node):
        left, right = self.expr(node.left), self.expr(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, gast.MatMult):
            both = is_vector(left) and left == right
            return Scalar(_arith_dtype(left.dtype, right.dtype, node.op)) if both else UNKNOWN
        if not isinstance(node.op, _ARITHMETIC):
            both = isinstance(left, Scalar) and isinstance(right, Scalar)
            return Scalar(_join_dtype(left.dtype, right.dtype)) if both else UNKNOWN
        return broadcast(left, right, node.op)

    def _UnaryOp(self, node):
        operand = self.expr(node.operand)
        if operand is None or isinstance(node.op, (gast.USub, gast.UAdd)):
            return operand
        if isinstance(node.op, gast.Not):
            return Scalar("bool") if isinstance(operand, Scalar) else UNKNOWN
        return operand if is_int(operand) else UNKNOWN

    def _Compare(self, node):
        shapes = [self.expr(node.left)] + [self.expr(c) for c in node.comparators]
        if any(s is None for s in shapes):
            return None
        return Scalar("bool") if all(isinstance(s, Scalar) for s in shapes) else UNKNOWN

    def _Call(self, node):
        target = self.target(node)
        args = [self.expr(a) for a in node.args]
        if any(a is None for a in args):
            return None
        if is_elementwise(target) and not node.keywords and args and \
                (target not in _ONE_ARGUMENT or len(args) == 1):
            result = args[0]
            for arg in args[1:]:
                result = broadcast(result, arg, gast.Add())
            return _elementwise_dtype(result, target)
        if target in SUMS or target in DOTS or target in NORMS:
            return _reduction(node, args, target)
        if target is len:
            return Scalar("int")
        if all(isinstance(a, Scalar) for a in args) and args and not node.keywords:
            scalar = _scalar_function(target, args)
            if scalar is not None:
                return scalar
        if target in ALLOCATIONS and len(args) == 1 and not node.keywords:
            return args[0]
        if (target is int or target is float) and all(isinstance(a, Scalar) for a in args):
            return Scalar(_scalar_result(target))
        return self._helper(node, target, args)

    def _helper(self, node, target, args):
        h = self.helpers
        if target in (h["unbroadcast"], h["broadcast_reduced"]) and len(args) >= 2:
            like, g = args[1], args[0]
            if isinstance(like, Scalar):
                return like
            dtype = g.dtype if isinstance(g, (Scalar, Array)) else "other"
            return like._replace(dtype=dtype) if isinstance(like, Array) else UNKNOWN
        if target in (h["zeros_like"], h["float_zeros"]) and args:
            like = args[0]
            if isinstance(like, (Scalar, Array)):
                return like._replace(dtype="f64" if like.dtype != "other" else "other")
        if target in (h["matmul_grad_left"], h["matmul_grad_right"]) and len(args) == 3:
            g, a, b = args
            if isinstance(g, Scalar) and is_vector(a) and a == b:
                return a._replace(dtype=_arith_dtype(g.dtype, a.dtype, gast.Mult()))
        if target is h["cast_like"] and len(args) == 2 and isinstance(args[1], (Scalar, Array)):
            value, like = args
            dtype = "f64" if like.dtype in ("int", "bool", "f64") else "other"
            return value._replace(dtype=dtype) if isinstance(value, (Scalar, Array)) else UNKNOWN
        if target is h["range_last"]:
            return Scalar("int")
        if target is h["unit_cotangent"] and args and isinstance(args[0], Scalar):
            return args[0]
        return UNKNOWN


_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow)


def broadcast(left, right, op):
    """The class of an elementwise operation of `left` and `right`."""
    if left is None or right is None:
        return None
    if not isinstance(left, (Scalar, Array)) or not isinstance(right, (Scalar, Array)):
        return UNKNOWN
    dtype = _arith_dtype(left.dtype, right.dtype, op)
    if isinstance(left, Scalar) and isinstance(right, Scalar):
        return Scalar(dtype)
    if isinstance(left, Scalar) or isinstance(right, Scalar):
        array = right if isinstance(left, Scalar) else left
        return array._replace(dtype=dtype)
    if left.ndim == right.ndim and left.last == right.last and left.last is not None:
        return left._replace(dtype=dtype)
    return UNKNOWN


def _elementwise_dtype(shape, target):
    if shape in (None, UNKNOWN) or target in _KEEPS_INT:
        return shape
    return shape._replace(dtype="f64" if shape.dtype in ("int", "f64") else "other")


def _scalar_function(target, args):
    """The class of a math function or abs/min/max of scalars; None for other targets."""
    dtype = "other" if any(a.dtype == "other" for a in args) else "f64"
    if getattr(target, "__module__", None) == "math" and _scalar_result(target):
        return Scalar(_scalar_result(target))
    if getattr(target, "__module__", None) == "math" and callable(target):
        return Scalar(dtype)
    if target in (abs, min, max):
        dtypes = {a.dtype for a in args}
        return Scalar(dtypes.pop() if len(dtypes) == 1 else dtype)
    return None


def _reduction(node, args, target):
    if node.keywords or not all(isinstance(a, (Scalar, Array)) for a in args):
        return UNKNOWN
    if target in NORMS and len(args) == 1 and is_vector(args[0]):
        return Scalar("f64" if args[0].dtype in ("int", "bool", "f64") else "other")
    if target in SUMS and len(args) == 1:
        return Scalar(args[0].dtype)
    if target in DOTS and len(args) == 2 and is_vector(args[0]) and args[0] == args[1]:
        return Scalar(args[0].dtype)
    return UNKNOWN


def _definitions(node, shapes: Shapes):
    """(name, value) for every binding of a name: an expression, or a fixed class."""
    for stmt in walk(node):
        if isinstance(stmt, gast.Assign):
            for target in stmt.targets:
                if isinstance(target, gast.Name):
                    yield target.id, stmt.value
                else:
                    yield from _unknown_names(target)
        elif isinstance(stmt, gast.AugAssign) and isinstance(stmt.target, gast.Name):
            yield stmt.target.id, gast.BinOp(left=gast.Name(id=stmt.target.id, ctx=gast.Load(),
                                                            annotation=None, type_comment=None),
                                             op=stmt.op, right=stmt.value)
        elif isinstance(stmt, gast.For) and isinstance(stmt.target, gast.Name):
            ranged = isinstance(stmt.iter, gast.Call) and is_range(shapes.target(stmt.iter))
            yield stmt.target.id, Scalar("int") if ranged else UNKNOWN
        elif isinstance(stmt, (gast.AnnAssign, gast.For, gast.NamedExpr, gast.comprehension)):
            yield from _unknown_names(stmt.target)
        elif isinstance(stmt, (gast.With, gast.ExceptHandler, gast.Delete)):
            yield from _unknown_names(stmt if isinstance(stmt, gast.Delete) else
                                      getattr(stmt, "name", None) or
                                      [item.optional_vars for item in stmt.items])
        elif isinstance(stmt, (gast.FunctionDef, gast.Lambda, gast.ClassDef)) \
                and stmt is not node:
            yield from _unknown_names(stmt)


def _unknown_names(node):
    nodes = node if isinstance(node, list) else [node]
    for sub in (sub for n in nodes if n is not None for sub in walk(n)):
        if isinstance(sub, gast.Name) and isinstance(sub.ctx, (gast.Store, gast.Del, gast.Param)):
            yield sub.id, UNKNOWN
