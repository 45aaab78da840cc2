"""What each value of a per-thread function is: dtype and shape, inferred statically.

`infer(fn, specs, float_dtype)` walks a Function in A-normal form in statement order and
returns a `Spec` for every local it can describe: scalars (shape `()`) and arrays whose
shape is fixed (parameters whose shape the call fixed, views of them, local arrays of a
constant size). A name assigned values of different shapes gets no entry. Python
constants are *weak* like NumPy 2's scalars: `x32 * 0.5` stays float32, and a float
constant is read as `float_dtype` (the working precision of the kernel).

The CUDA passes also share from here `Binder` (library objects bound in the environment),
`local_array` and `StatementRewriter` (the statement-by-statement walk of their rewrites).
"""
from __future__ import annotations

import builtins
import dataclasses

import gast
import numpy as np

from transformer import reverse, runtime, tape
from transformer.function import Function, resolve
from transformer.names import Namer
from transformer.primitives import registry
from transformer.syntax import dotted

from ..nodes import walk


@dataclasses.dataclass(frozen=True)
class Spec:
    """A value's dtype and shape (`()` for a scalar); `weak` marks Python constants."""

    dtype: np.dtype
    shape: tuple = ()
    weak: bool = False

    @property
    def is_array(self) -> bool:
        return self.shape != ()

    @property
    def is_float(self) -> bool:
        return self.dtype.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.dtype.kind in "iub"


BOOL = Spec(np.dtype(np.bool_))


def spec_of_value(value, float_dtype) -> Spec | None:
    """The Spec of a concrete argument or constant."""
    if isinstance(value, bool):
        return Spec(np.dtype(np.bool_), (), True)
    if isinstance(value, int):
        return Spec(np.dtype(np.int64), (), True)
    if isinstance(value, float):
        return Spec(np.dtype(float_dtype), (), True)
    if isinstance(value, type):
        return None
    if isinstance(value, (np.ndarray, np.generic)) or hasattr(value, "copy_to_host"):
        return Spec(np.dtype(value.dtype), tuple(getattr(value, "shape", ())))
    interface = getattr(value, "__cuda_array_interface__", None)
    if interface is not None:            # CuPy, PyTorch: dtype and shape from the interface
        return Spec(np.dtype(interface["typestr"]), tuple(interface["shape"]))
    return None


def result_dtype(*specs: Spec) -> np.dtype:
    """NumPy 2 promotion, with weak Python constants not widening the other operand."""
    strong = [s.dtype for s in specs if not s.weak]
    weak = [s.dtype.type(0).item() for s in specs if s.weak]
    return np.result_type(*strong, *weak)


# NumPy and math functions that act element by element on their arguments (read from the
# primitive registry, `transformer.primitives`)
ELEMENTWISE = registry.Members(lambda r: r.cuda in ("elementwise", "predicate") and
                               not registry.reason(r.key, "cuda"))
_PREDICATES = registry.Members(lambda r: r.cuda == "predicate")
_FLOAT_RESULT = registry.Members(lambda r: r.float_result)
_TAPES = {tape.float_tape, tape.exact_tape, tape.items_buffer, tape.push, tape.reserve}
REDUCTIONS = registry.Members(lambda r: r.cuda == "reduction")
PRODUCTS = registry.Members(lambda r: r.cuda == "product")
ALLOCATIONS = registry.Members(lambda r: r.cuda in ("allocation", "like_allocation"))

def infer(fn: Function, specs: dict, float_dtype) -> dict:
    """Name -> Spec for the parameters and every local with one consistent Spec."""
    walker = Inference(fn, dict(specs), np.dtype(float_dtype))
    walker.block(fn.node.body)
    return {k: v for k, v in walker.info.items() if isinstance(v, Spec)}


@dataclasses.dataclass(frozen=True, eq=False)
class Callee:
    """A called function, to become a device function for the argument Specs of its call."""

    function: Function
    specs: tuple            # a Spec, or None where unknown, per positional argument

    def param_specs(self) -> dict:
        return {p: s for p, s in zip(self.function.params, self.specs) if isinstance(s, Spec)}


def callee_function(value) -> Function | None:
    """The Function behind a called user function or generated helper, else None."""
    from codegen.backends import is_user_function
    from transformer.frontend import parse
    if isinstance(value, Callee):
        return value.function
    if isinstance(value, Function):
        return value
    if hasattr(value, "__secant_function__"):
        return value.__secant_function__()
    if hasattr(value, "py_func") and is_user_function(value.py_func):
        return parse(value.py_func)
    if is_user_function(value):
        return parse(value)
    return None


_calls_in_progress: set = set()


def call_result(callee: Function, args: list, float_dtype):
    """The Spec (or tuple of Specs) `callee` returns for arguments of Specs `args`."""
    from transformer.anf import anf
    from transformer.desugar import desugar
    if id(callee) in _calls_in_progress:          # recursion: not typed here
        return None
    _calls_in_progress.add(id(callee))
    try:
        fn = anf(desugar(callee))
        walker = Inference(fn, {p: a for p, a in zip(fn.params, args) if a is not None},
                           np.dtype(float_dtype))
        walker.block(fn.node.body)
        results = [walker.atom(stmt.value) for stmt in walk(fn.node)
                   if isinstance(stmt, gast.Return) and stmt.value is not None]
    finally:
        _calls_in_progress.discard(id(callee))
    if not results or any(r != results[0] for r in results[1:]):
        return None
    return results[0]


class Inference:
    """The walk behind `infer`; `value(node)` gives the Spec of one right-hand side."""

    def __init__(self, fn, info, float_dtype):
        self.fn, self.info, self.float_dtype = fn, info, float_dtype

    def block(self, stmts):
        for stmt in stmts:
            if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
                self.bind(stmt.targets[0].id, self.value(stmt.value))
            elif isinstance(stmt, gast.For):
                self.bind(stmt.target.id, Spec(np.dtype(np.int64)))
                self.block(stmt.body)
            elif isinstance(stmt, (gast.If, gast.While)):
                self.block(stmt.body)
                self.block(stmt.orelse)

    def bind(self, name, spec):
        if name not in self.info:
            self.info[name] = spec
            return
        old = self.info[name]
        if isinstance(old, tuple) or isinstance(spec, tuple):
            self.info[name] = old if old == spec else None
        elif old is None or spec is None or old.shape != spec.shape:
            self.info[name] = None
        elif old.dtype != spec.dtype:     # e.g. e = 0 then e = e + x: the wider wins
            self.info[name] = Spec(result_dtype(old, spec), old.shape, old.weak and spec.weak)

    def value(self, node) -> Spec | None:
        method = getattr(self, "value_" + type(node).__name__, None)
        return method(node) if method else None

    def atom(self, node) -> Spec | None:
        if isinstance(node, gast.Name):
            if node.id in self.info:
                return self.info[node.id]
            return spec_of_value(self.fn.env.get(node.id), self.float_dtype)
        if isinstance(node, gast.Constant):
            return spec_of_value(node.value, self.float_dtype)
        if isinstance(node, gast.Attribute):
            return spec_of_value(resolve(self.fn, node, None), self.float_dtype)
        return None

    value_Name = value_Constant = value_Attribute = atom

    def value_BinOp(self, node):
        left, right = self.atom(node.left), self.atom(node.right)
        if left is None or right is None:
            return None
        dtype = result_dtype(left, right)
        if isinstance(node.op, gast.MatMult):
            shape = matmul_shape(left.shape, right.shape)
            return None if shape is None else Spec(dtype, shape)
        if isinstance(node.op, gast.Div) and dtype.kind in "iub":
            dtype = np.dtype(np.float64)
        shape = broadcast(left.shape, right.shape)
        return None if shape is None else Spec(dtype, shape, left.weak and right.weak)

    def value_UnaryOp(self, node):
        operand = self.atom(node.operand)
        if operand is None or not isinstance(node.op, gast.Not):
            return operand
        return BOOL

    def value_Compare(self, node):
        left, right = self.atom(node.left), self.atom(node.comparators[0])
        if left is None or right is None:
            return None
        shape = broadcast(left.shape, right.shape)
        return None if shape is None else Spec(BOOL.dtype, shape)

    def value_Tuple(self, node):
        items = tuple(self.atom(e) for e in node.elts)
        return None if None in items else items

    value_List = value_Tuple

    def value_Subscript(self, node):
        base = self.atom(node.value)
        if isinstance(base, tuple) and isinstance(node.slice, gast.Constant) and \
                isinstance(node.slice.value, int) and -len(base) <= node.slice.value < len(base):
            return base[node.slice.value]
        if not isinstance(base, Spec) or not base.is_array:
            return None
        shape = indexed_shape(base.shape, node.slice)
        return None if shape is None else Spec(base.dtype, shape)

    def value_Call(self, node):
        target = resolve(self.fn, node.func, None)
        args = [self.atom(a) for a in node.args]
        if target in (float, np.float64, np.float32, int, np.int64, np.int32, bool):
            dtype = np.dtype(self.float_dtype if target is float else target)
            return Spec(dtype, args[0].shape if args and args[0] else ())
        if target is len:
            return Spec(np.dtype(np.int64))
        if target in (abs, max, min, builtins.round) and args and None not in args:
            return Spec(result_dtype(*args))
        if target in _PREDICATES:
            return Spec(BOOL.dtype, args[0].shape if args and args[0] else ())
        if getattr(target, "__module__", None) == "math" or target in ELEMENTWISE:
            return self._elementwise(target, args)
        if target in REDUCTIONS:
            return self._reduction(target, args)
        if target in PRODUCTS and len(args) == 2 and None not in args:
            shape = (args[0].shape + args[1].shape if target is np.outer
                     else matmul_shape(args[0].shape, args[1].shape))
            return None if shape is None else Spec(result_dtype(*args), shape)
        if target in ALLOCATIONS:
            return self._allocation(node, target, args)
        if target in (np.array, np.asarray) and len(node.args) == 1 and \
                isinstance(args[0], tuple) and all(not a.is_array for a in args[0]):
            dtype = allocation_dtype_node(node, np.zeros)
            dtype = dtype_of(self.fn, dtype) if dtype is not None else result_dtype(*args[0])
            return Spec(np.dtype(dtype), (len(args[0]),))
        if target in _TAPES and args and args[0] is not None:
            return self._tape(target, args[0])
        if target is runtime.update_tangent and len(args) == 3 and args[0] is not None:
            return args[1] if args[0].is_array else args[2]      # like update_in_place
        if target is runtime.matmul_grad_right and len(args) == 3 and None not in args:
            return Spec(result_dtype(*args), args[2].shape)
        if target in _HELPERS and args and args[0] is not None:
            second = args[1] if len(args) > 1 else None
            try:
                return _HELPERS[target](self, args[0], second)
            except AttributeError:        # the second argument's Spec is unknown
                return None
        callee = callee_function(target) if target is not None else None
        if callee is not None:
            return call_result(callee, args, self.float_dtype)
        if is_local_array(self.fn, node.func):
            shape = constant_shape(node.args[0]) if node.args else None
            dtype = dtype_of(self.fn, node.args[1]) if len(node.args) > 1 else None
            return Spec(dtype, shape) if shape and dtype is not None else None
        return None

    def float_like(self, spec: Spec, shape=None) -> Spec:
        dtype = spec.dtype if spec.is_float else self.float_dtype
        return Spec(dtype, spec.shape if shape is None else shape)

    def _tape(self, target, value: Spec) -> Spec:
        """A reverse-mode tape: its entries are like `value` (its length is planned later)."""
        if target in (tape.push, tape.reserve):
            return value
        dtype = value.dtype
        if target is tape.float_tape and dtype.kind != "f":
            dtype = self.float_dtype
        if target is tape.items_buffer:
            return Spec(dtype, (1,))
        return Spec(dtype, (1,) + value.shape)

    def _elementwise(self, target, args):
        known = [a for a in args if a is not None]
        if not known or len(known) != len(args):
            return None
        if target is np.where:
            known = known[1:]
        shape = ()
        for a in known:
            shape = broadcast(shape, a.shape)
            if shape is None:
                return None
        dtype = result_dtype(*known)
        if (target in _FLOAT_RESULT or getattr(target, "__module__", None) == "math") \
                and dtype.kind != "f":
            dtype = self.float_dtype
        return Spec(dtype, shape)

    def _reduction(self, target, args):
        if not args or None in args:
            return None
        if target is np.dot:
            if len(args) == 2 and len(args[0].shape) == 1 and len(args[1].shape) == 1:
                return Spec(result_dtype(*args))
            return None
        return Spec(args[0].dtype)

    def _allocation(self, node, target, args):
        like = target in LIKE_ALLOCATIONS
        if like:
            if not args or args[0] is None or not args[0].is_array:
                return None
            shape, dtype = args[0].shape, args[0].dtype
        else:
            shape = constant_shape(node.args[0]) if node.args else None
            dtype = self.float_dtype
            fill = args[1] if target is np.full and len(args) > 1 else None
            if fill is not None and not (fill.weak and fill.is_float):
                dtype = fill.dtype
        explicit = allocation_dtype_node(node, target)
        if explicit is not None:
            dtype = dtype_of(self.fn, explicit)
        if not shape or dtype is None:
            return None
        return Spec(np.dtype(dtype), shape)


LIKE_ALLOCATIONS = registry.Members(lambda r: r.cuda == "like_allocation")
# position of the dtype argument when passed positionally
_DTYPE_POSITION = {np.zeros: 1, np.ones: 1, np.empty: 1, np.full: 2, np.zeros_like: 1,
                   np.ones_like: 1, np.empty_like: 1, np.full_like: 2}


def allocation_dtype_node(node, target):
    """The node naming the dtype of an allocation call, or None for the default."""
    for keyword in node.keywords:
        if keyword.arg == "dtype":
            return keyword.value
    position = _DTYPE_POSITION.get(target)
    if position is not None and len(node.args) > position:
        return node.args[position]
    return None


# what the runtime helpers of derivative code return, from their first arguments' Specs
_HELPERS = {
    runtime.cast_like: lambda inf, value, x=None: inf.float_like(x, value.shape),
    runtime.zeros_like: lambda inf, x, _=None: inf.float_like(x),
    reverse.float_zeros: lambda inf, x, _=None: inf.float_like(x),
    reverse.unit_cotangent: lambda inf, out, _=None: inf.float_like(out),
    runtime.unbroadcast: lambda inf, g, x: inf.float_like(x),
    runtime.broadcast_like: lambda inf, t, z: Spec(t.dtype, z.shape),
    runtime.broadcast_reduced: lambda inf, g, x: Spec(g.dtype, x.shape),
    runtime.inside: lambda inf, x, _=None: Spec(BOOL.dtype, x.shape),
    runtime.reduce_sum: lambda inf, a, _=None: Spec(a.dtype),
    runtime.matmul_grad_left: lambda inf, g, a: Spec(result_dtype(g, a), a.shape),
    # `z += v` where another name may hold `z`: an array keeps its Spec, a number is `v`
    runtime.update_in_place: lambda inf, target, value: target if target.is_array else value,
}


def matmul_shape(a: tuple, b: tuple) -> tuple | None:
    """The shape of `a @ b` for vectors and matrices, None where they do not match."""
    if not a or not b or len(a) > 2 or len(b) > 2 or a[-1] != b[0]:
        return None
    return a[:-1] + b[1:]


def broadcast(a: tuple, b: tuple) -> tuple | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def constant_shape(node) -> tuple | None:
    """The shape a Constant int or a Tuple of Constant ints stands for."""
    if isinstance(node, gast.Constant) and isinstance(node.value, int) \
            and not isinstance(node.value, bool):
        return (node.value,)
    if isinstance(node, gast.Tuple) and all(isinstance(e, gast.Constant) and
                                            isinstance(e.value, int) for e in node.elts):
        return tuple(e.value for e in node.elts)
    return None


def dtype_of(fn: Function, node) -> np.dtype | None:
    """The dtype a `dtype=` argument names (np.float32, float, 'float32')."""
    if isinstance(node, gast.Constant) and isinstance(node.value, str):
        return np.dtype(node.value)
    value = resolve(fn, node, None)
    if value is float:
        return np.dtype(np.float64)
    if value is int:
        return np.dtype(np.int64)
    if value is bool:
        return np.dtype(np.bool_)
    try:
        return np.dtype(value) if value is not None else None
    except TypeError:
        return None


def indexed_shape(shape: tuple, index) -> tuple | None:
    """The shape of `x[index]` for `x` of `shape`, when the index fixes it."""
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    if len(parts) > len(shape):
        return None
    out = []
    for dim, part in zip(shape, parts):
        if isinstance(part, gast.Slice):
            bounds = [_slice_bound(p) for p in (part.lower, part.upper, part.step)]
            if any(b is False for b in bounds):
                return None
            out.append(len(range(*slice(*bounds).indices(dim))))
        elif not isinstance(part, (gast.Name, gast.Constant)):
            return None
    return tuple(out) + tuple(shape[len(parts):])


def _slice_bound(node):
    if node is None:
        return None
    if isinstance(node, gast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub) and \
            isinstance(node.operand, gast.Constant):
        return -node.operand.value
    return False


def is_local_array(fn: Function, func) -> bool:
    """`cuda.local.array` as emitted by the CUDA rewrite."""
    return isinstance(func, gast.Attribute) and func.attr == "array" and \
        isinstance(func.value, gast.Attribute) and func.value.attr == "local"


def local_array(binder, target: str, spec: Spec):
    """`target = cuda.local.array(SHAPE, DTYPE)` for a Spec of constant shape."""
    from numba import cuda

    from transformer.syntax import assign, call, const, name, store
    shape = const(spec.shape[0]) if len(spec.shape) == 1 else \
        gast.Tuple(elts=[const(d) for d in spec.shape], ctx=gast.Load())
    dtype = name(binder.bind(spec.dtype.type, spec.dtype.name))
    return assign(store(target), call(binder.ref(cuda, "cuda", "local.array"), shape, dtype))


class StatementRewriter:
    """A pass that rewrites a body statement by statement: a loop or branch keeps its place
    with its bodies rewritten (an emptied body becomes `pass`), and every other statement
    becomes the list of statements the subclass's `statement(stmt)` returns."""

    def block(self, stmts) -> list:
        out = []
        for stmt in stmts:
            if isinstance(stmt, (gast.For, gast.While, gast.If)):
                stmt.body = self.block(stmt.body) or [gast.Pass()]
                stmt.orelse = self.block(stmt.orelse)
                out.append(stmt)
            else:
                out.extend(self.statement(stmt))
        return out


class Binder:
    """Binds library objects (math, cuda, abs) in a Function's environment under a name.

    The rewrites of the CUDA dialect emit references to these objects; each is bound under
    a name no local uses (`math`, else `math_1`), or under the name it already has.
    """

    def __init__(self, fn: Function):
        self.env = dict(fn.env)
        self.namer = Namer.for_function(fn)

    def bind(self, obj, preferred: str) -> str:
        for key, value in self.env.items():
            if value is obj:
                return key
        key = preferred if preferred not in self.namer.taken else self.namer.fresh(preferred)
        self.namer.reserve(key)
        self.env[key] = obj
        return key

    def ref(self, obj, preferred: str, attr: str | None = None):
        base = self.bind(obj, preferred)
        return dotted(f"{base}.{attr}" if attr else base)
