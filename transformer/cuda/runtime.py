"""Runtime helpers of generated code, rewritten for a CUDA thread.

Derivative code calls helpers such as `cast_like(1.0, x)`, `broadcast_like(t, z)` and
`unbroadcast(g, x)`, which Numba's CPU target compiles through `overload`. A GPU thread
cannot call those, but once shapes are known each call is a plain NumPy statement:
`cast_like(1.0, x32)` is `np.float32(1.0)`, `unbroadcast(g, x)` of a scalar `x` is
`np.float64(np.sum(g))`, and `z = update_in_place(a, v)` (`a += v` where another name
may hold `a`) is `z = v` for a number, `a[:] = v` for an array. This pass rewrites them
so; the array lowering then turns those statements into loops.

Tapes of reverse mode become `cuda.local.array`s declared at the top of the function,
sized by counting, for each tape, its pushes times the trip counts of the loops around
them (constant after shape folding): `push(t, n, v)` is `t[n] = v`, `reserve` and the
tape constructors disappear. A tape filled inside a `while` loop, or a loop whose trip
count is not constant, has no compile-time size: a TransformError names its variable.

Invariant of the output: no call to a helper in `LOWERINGS`; a helper call whose
shapes do not allow a per-thread form is a TransformError at the user's line.
"""
from __future__ import annotations


import gast
import numpy as np

from transformer import reverse, runtime, tape
from transformer.api_reverse import stop_gradient
from transformer.function import Function, hashable, resolve
from transformer.runtime.errors import copy_hint
from transformer.syntax import assign, call, const, located, name, store, subscript

from ..nodes import copy_tree, walk
from .refusals import missing_form_error
from .types import Spec, StatementRewriter, infer, local_array


def lower_runtime(fn: Function, specs: dict, float_dtype, binder) -> Function:
    """Rewrite every call to a runtime helper into per-thread NumPy statements."""
    info = infer(fn, specs, float_dtype)
    rewriter = _Runtime(fn, info, binder, np.dtype(float_dtype))
    node = copy_tree(fn.node)
    tapes = plan_tapes(rewriter, node.body)
    node.body = [local_array(binder, t, spec) for t, spec in tapes.items()] + \
        rewriter.block(node.body)
    return fn.replace(node=node, env=binder.env)


class _Runtime(StatementRewriter):
    def __init__(self, fn, info, binder, float_dtype):
        self.fn, self.info, self.binder, self.float_dtype = fn, info, binder, float_dtype
        self.tapes: dict = {}

    def statement(self, stmt) -> list:
        value = getattr(stmt, "value", None)
        helper = resolve(self.fn, value.func, None) if isinstance(value, gast.Call) else None
        lowering = LOWERINGS.get(helper) if hashable(helper) else None
        if lowering is None:
            return [stmt]
        target = stmt.targets[0].id if isinstance(stmt, gast.Assign) else None
        return [located(s, stmt) for s in lowering(self, stmt, target, value.args)]

    # -- helpers for the lowerings
    def spec(self, atom) -> Spec | None:
        if isinstance(atom, gast.Name):
            return self.info.get(atom.id, self.tapes.get(atom.id))
        if isinstance(atom, gast.Constant):       # a float constant is read in the working
            if isinstance(atom.value, float):       # precision, as .types reads it
                return Spec(np.dtype(self.float_dtype), (), True)
            return Spec(np.dtype(type(atom.value)) if atom.value is not None
                        else np.dtype(np.float64), (), True)
        return None

    def float_of(self, atom) -> np.dtype:
        spec = self.spec(atom)
        return spec.dtype if spec is not None and spec.is_float else self.float_dtype

    def cast(self, dtype, value):
        return call(name(self.binder.bind(np.dtype(dtype).type, np.dtype(dtype).name)), value)

    def numpy(self, attr):
        return self.binder.ref(np, "np", attr)

    def refuse(self, stmt, helper: str, why: str):
        raise self.fn.origin.error(stmt, f"{helper} {why}, which has no per-thread form in a "
                                   "CUDA kernel", "keep shapes fixed per element, or use "
                                   "backend='cpu'")

    def is_array(self, atom) -> bool:
        spec = self.spec(atom)
        return spec is not None and spec.is_array

    def same_shape(self, a, b) -> bool:
        sa, sb = self.spec(a), self.spec(b)
        return sa is not None and sb is not None and sa.shape == sb.shape


def _cast_like(rt: _Runtime, stmt, target, args):
    return [assign(store(target), rt.cast(rt.float_of(args[1]), args[0]))]


def _zeros_like(rt: _Runtime, stmt, target, args):
    dtype = rt.float_of(args[0])
    if not rt.is_array(args[0]):
        return [assign(store(target), rt.cast(dtype, const(0.0)))]
    dtype_name = name(rt.binder.bind(dtype.type, dtype.name))
    return [assign(store(target), call(rt.numpy("zeros_like"), args[0], dtype=dtype_name))]


def _broadcast_like(rt: _Runtime, stmt, target, args):
    t, z = args
    if not rt.is_array(z):
        return [assign(store(target), t)]
    if rt.spec(z) is None:
        rt.refuse(stmt, "broadcast_like", "broadcasts to a shape unknown at compile time")
    return [assign(store(target), call(rt.numpy("full_like"), z, t))]


def _unbroadcast(rt: _Runtime, stmt, target, args):
    g, x = args
    if not rt.is_array(x):
        if rt.is_array(g):
            total = rt.binder.namer.fresh(f"{target}_sum")
            return [assign(store(total), call(rt.numpy("sum"), g)),
                    assign(store(target), rt.cast(rt.float_of(x), name(total)))]
        return [assign(store(target), rt.cast(rt.float_of(x), g))]
    if rt.same_shape(g, x):
        return [assign(store(target), g)]
    if not rt.is_array(g) and rt.spec(g) is not None:
        return [assign(store(target), call(rt.numpy("full_like"), x, g))]
    rt.refuse(stmt, "unbroadcast", "sums a broadcast array down to another shape")


def _broadcast_reduced(rt: _Runtime, stmt, target, args):
    g, x = args[0], args[1]
    if not rt.is_array(x):
        return [assign(store(target), g)]
    whole = len(args) < 3 or (isinstance(args[2], gast.Constant) and args[2].value is None)
    if not rt.is_array(g) and whole and rt.spec(x) is not None:
        return [assign(store(target), call(rt.numpy("full_like"), x, g))]
    rt.refuse(stmt, "broadcast_reduced", "spreads a reduction over an axis")


def _scatter_add(rt: _Runtime, stmt, target, args):
    array, index, values = args
    if rt.is_array(index):
        rt.refuse(stmt, "scatter_add", "adds at an array of indices")
    old = rt.binder.namer.fresh(f"{array.id}_item")
    new = rt.binder.namer.fresh(f"{array.id}_sum")
    return [assign(store(old), subscript(copy_tree(array), copy_tree(index))),
            assign(store(new), gast.BinOp(left=name(old), op=gast.Add(), right=values)),
            assign(subscript(copy_tree(array), copy_tree(index), gast.Store()),
                   name(new))]


def _kept_writes(rt: _Runtime, stmt, target, args):
    """The cotangent that `x[index] = v` passes back when `index` may repeat positions: a
    thread's index is a number, which names one element, so its read `cotangent[index]`.
    An array of indices, or a row read whole (a copy: a thread has no allocator), is
    refused."""
    cotangent, index = args
    spec = rt.spec(cotangent)
    items = index.elts if isinstance(index, gast.Tuple) else [index]
    if any(rt.is_array(i) for i in items) or spec is None or len(spec.shape) != len(items):
        rt.refuse(stmt, "kept_writes", "reads a row or at an array of indices")
    return [assign(store(target), subscript(copy_tree(cotangent), copy_tree(index)))]


def _update_in_place(rt: _Runtime, stmt, target, args):
    """`z = update_in_place(a, v)`, desugared from `a += v` where another name may hold
    `a`: per thread, a number is rebound to `v` and an array is overwritten with `v`."""
    held, value = args
    return _overwrite(rt, stmt, target, held, held, value)


def _update_tangent(rt: _Runtime, stmt, target, args):
    """The tangent of `update_in_place(a, v)`: `a`'s tangent array overwritten with `v`'s
    tangent where `a` is an array, else the tangent of `v`."""
    held, tangent, value = args
    return _overwrite(rt, stmt, target, held, tangent, value)


def _overwrite(rt: _Runtime, stmt, target, held, into, value) -> list:
    """`target = value` when `held` is a number; when it is an array, `into[:] = value`
    (lowered to a loop by `.arrays`) and `target` bound to `into`, as NumPy's `+=` keeps
    the array every name holding it sees."""
    spec = rt.spec(held)
    if spec is None:
        raise rt.fn.origin.error(
            stmt, f"{held.id!r} holds values of different shapes or types, so this "
            "augmented assignment has no per-thread form in a CUDA kernel",
            f"give {held.id!r} one shape and dtype (start it with np.zeros of its final "
            "shape), or use backend='cpu'")
    if not spec.is_array:
        return [assign(store(target), value)]
    given = rt.spec(value)
    if given is not None and not np.can_cast(given.dtype, spec.dtype, casting="same_kind"):
        raise rt.fn.origin.error(
            stmt, f"cannot update the {spec.dtype} array {held.id!r} in place with values of "
            f"{given.dtype} (NumPy refuses this too)",
            f"write {held.id} = {held.id} + ... for a new array, or give {held.id!r} a "
            f"{given.dtype} dtype")
    whole = [gast.Slice(lower=None, upper=None, step=None) for _ in spec.shape]
    index = whole[0] if len(whole) == 1 else gast.Tuple(elts=whole, ctx=gast.Load())
    stmts = [assign(subscript(copy_tree(into), index, gast.Store()), value)]
    if target != into.id:
        stmts.append(assign(store(target), copy_tree(into)))
    return stmts


def _own_copy(rt: _Runtime, stmt, target, args):
    """Forward mode's copy of a written parameter's tangent: a number is a thread's own
    value already; a copy of an array has no CUDA form (a thread has no allocator)."""
    spec = rt.spec(args[0])
    if spec is not None and spec.is_array:
        raise missing_form_error(rt.fn, "own_copy", runtime.own_copy)
    return [assign(store(target), args[0])]


def _check_not_shared(rt: _Runtime, stmt, target, args):
    """Reverse mode's check that `other` does not hold the array an augmented assignment
    updates: two numbers never share, so it goes; a thread cannot raise when two arrays
    do, so that is refused when the kernel is compiled."""
    other, array, label, source = args[:4]           # args[4]: the location
    specs = [rt.spec(other), rt.spec(array)]
    if any(s is not None and not s.is_array for s in specs):
        return []
    raise rt.fn.origin.error(
        stmt, f"{label.value!r} may hold the array {source.value!r} names, which this "
        "augmented assignment updates in place; a gradient in a CUDA kernel cannot check "
        "that per thread", copy_hint(source.value, label.value, either=True))


def _inside(rt: _Runtime, stmt, target, args):
    x, lo, hi = args
    if rt.is_array(x):
        rt.refuse(stmt, "inside", "masks an array")
    stmts = [assign(store(target), const(True))]
    for bound, op in ((lo, gast.GtE()), (hi, gast.LtE())):
        if isinstance(bound, gast.Constant) and bound.value is None:
            continue
        test = rt.binder.namer.fresh(f"{target}_bound")
        stmts.append(assign(store(test), gast.Compare(left=copy_tree(x), ops=[op],
                                                      comparators=[bound])))
        stmts.append(gast.If(test=name(test), body=[gast.Pass()],
                             orelse=[assign(store(target), const(False))]))
    return stmts


# ---------------------------------------------------------------- tapes

_CREATORS = {tape.float_tape, tape.exact_tape, tape.items_buffer}


def plan_tapes(rt: _Runtime, body) -> dict:
    """Tape name -> Spec of its local array, sized for every push it can receive."""
    pushes: dict = {}
    created: dict = {}
    _count_pushes(rt, body, 1, pushes, created)
    tapes = {}
    for tape_name, (creator, stmt, value) in created.items():
        count = pushes.get(tape_name, 0)
        if count is None:
            variable = tape_name.removesuffix("_tape").removesuffix("_old")
            raise rt.fn.origin.error(
                stmt, f"the tape of {variable!r} is filled inside a while loop (or a loop "
                "whose trip count is not constant), so its size is not known when the "
                "CUDA kernel is compiled", "use a for loop over a static bound with break, "
                "or backend='cpu' for gradients through while loops")
        spec = rt.spec(value)
        if spec is None:
            raise rt.fn.origin.error(stmt, f"the type of the values on tape {tape_name!r} "
                                     "is not known when the CUDA kernel is compiled")
        dtype = spec.dtype
        if creator is tape.float_tape and dtype.kind != "f":
            dtype = rt.float_dtype
        shape = (max(count, 1),) if creator is tape.items_buffer else \
            (max(count, 1),) + spec.shape
        tapes[tape_name] = Spec(np.dtype(dtype), shape)
        rt.tapes[tape_name] = tapes[tape_name]
    return tapes


def _count_pushes(rt: _Runtime, stmts, trips, pushes, created):
    for stmt in stmts:
        if isinstance(stmt, gast.For):
            _count_pushes(rt, stmt.body, _times(trips, _trip_count(stmt)), pushes, created)
        elif isinstance(stmt, gast.While):
            _count_pushes(rt, stmt.body, None, pushes, created)
        elif isinstance(stmt, gast.If):
            _count_pushes(rt, stmt.body, trips, pushes, created)
            _count_pushes(rt, stmt.orelse, trips, pushes, created)
        elif isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Call):
            helper = resolve(rt.fn, stmt.value.func, None)
            args = stmt.value.args
            if helper in _CREATORS:
                created.setdefault(stmt.targets[0].id, (helper, stmt, args[0]))
            elif helper in (tape.push, tape.push_items):
                spec = rt.spec(args[2])
                size = int(np.prod(spec.shape)) if spec is not None else 1
                before = pushes.get(args[0].id, 0)
                pushes[args[0].id] = None if before is None or trips is None \
                    else before + trips * size


def _times(trips, factor):
    return None if trips is None or factor is None else trips * factor


def _trip_count(loop: gast.For):
    args = loop.iter.args if isinstance(loop.iter, gast.Call) else []
    if args and all(isinstance(a, gast.Constant) and isinstance(a.value, int) for a in args):
        return len(range(*[a.value for a in args]))
    return None


def _dropped(rt: _Runtime, stmt, target, args):
    return []


def _push(rt: _Runtime, stmt, target, args):
    tape_name, top, value = args[:3]                 # args[3]: the shape error's location
    stmts = [assign(subscript(copy_tree(tape_name), copy_tree(top), gast.Store()),
                    value)]
    if target != tape_name.id:
        stmts.append(assign(store(target), copy_tree(tape_name)))
    return stmts


def _reserve(rt: _Runtime, stmt, target, args):
    return [] if target == args[0].id else [assign(store(target), args[0])]


def _push_items(rt: _Runtime, stmt, target, args):
    buffer, top, value = args
    spec = rt.spec(value)
    if spec is None:
        rt.refuse(stmt, "push_items", "records values of unknown shape")
    size = int(np.prod(spec.shape))
    index = copy_tree(top)
    if spec.is_array:
        index = gast.Slice(lower=copy_tree(top), upper=_plus(top, size), step=None)
        flat = rt.binder.namer.fresh(f"{buffer.id}_items")
        stmts = [assign(store(flat), call(rt.numpy("ravel"), value))]
        value = name(flat)
    else:
        stmts = []
    stmts.append(assign(subscript(copy_tree(buffer), index, gast.Store()), value))
    return stmts + [assign(store(target), gast.Tuple(elts=[copy_tree(buffer),
                                                           _plus(top, size)],
                                                     ctx=gast.Load()))]


def _pop_items(rt: _Runtime, stmt, target, args):
    buffer, top, like = args
    spec = rt.spec(like)
    if spec is None:
        rt.refuse(stmt, "pop_items", "restores values of unknown shape")
    if not spec.is_array:
        item = rt.binder.namer.fresh(f"{buffer.id}_item")
        return [assign(store(item), subscript(copy_tree(buffer), _plus(top, -1))),
                assign(store(target), gast.Tuple(elts=[name(item), _plus(top, -1)],
                                                 ctx=gast.Load()))]
    rt.refuse(stmt, "pop_items", "restores a whole sub-array")


def _plus(atom, amount: int):
    if amount == 0:
        return copy_tree(atom)
    op = gast.Add() if amount > 0 else gast.Sub()
    return gast.BinOp(left=copy_tree(atom), op=op, right=const(abs(amount)))


def _loop_bound(rt: _Runtime, stmt, target, args, last: bool):
    values = [a.value for a in args if isinstance(a, gast.Constant)]
    if len(values) != len(args):
        rt.refuse(stmt, "a loop bound", "depends on values known only at run time")
    trips = len(range(*values))
    return [assign(store(target), const(values[0] + (trips - 1) * values[2] if last
                                        else trips))]


def _float_zeros(rt: _Runtime, stmt, target, args):
    spec = rt.spec(args[0])
    if spec is not None and not spec.is_float:
        which = f"argument {args[1].value!r}" if args[1].value else "a vjp's argument"
        raise rt.fn.origin.error(stmt, f"grad requires real-valued inputs, but {which} is "
                                 f"an integer ({spec.dtype})",
                                 "pass floats for differentiated arguments")
    return _zeros_like(rt, stmt, target, args[:1])


def _unit_cotangent(rt: _Runtime, stmt, target, args):
    if rt.is_array(args[0]):
        rt.refuse(stmt, "grad", "has an array output")
    return [assign(store(target), rt.cast(rt.float_of(args[0]), const(1.0)))]


def _matmul_grad_left(rt: _Runtime, stmt, target, args):
    g, a, b = args
    sa, sb = rt.spec(a), rt.spec(b)
    if sa is None or sb is None or len(sa.shape) != 2 or len(sb.shape) != 1:
        rt.refuse(stmt, "the gradient of a matrix product", "is not a matrix-vector product")
    return [assign(store(target), call(rt.numpy("outer"), g, b))]


def _matmul_grad_right(rt: _Runtime, stmt, target, args):
    g, a, b = args
    sa, sb = rt.spec(a), rt.spec(b)
    if sa is None or sb is None or len(sa.shape) != 2 or len(sb.shape) != 1:
        rt.refuse(stmt, "the gradient of a matrix product", "is not a matrix-vector product")
    return [assign(store(target), gast.BinOp(left=g, op=gast.MatMult(), right=a))]


def _reduce_sum(rt: _Runtime, stmt, target, args):
    if any(not (isinstance(a, gast.Constant) and a.value in (None, False)) for a in args[1:]):
        rt.refuse(stmt, "a sum", "runs over an axis")
    return [assign(store(target), call(rt.numpy("sum"), args[0]))]


def _shape_of(rt: _Runtime, stmt, target, args):
    spec = rt.spec(args[0])
    if spec is None:
        rt.refuse(stmt, "shape_of", "reads a shape unknown at compile time")
    return [assign(store(target), gast.Tuple(elts=[const(d) for d in spec.shape],
                                             ctx=gast.Load()))]


def _check_shape(rt: _Runtime, stmt, target, args):
    """Shapes are fixed per variable in a kernel: check once, when it is compiled."""
    spec = rt.spec(args[0])
    expected = args[1]
    if isinstance(expected, gast.Name):
        expected = next((s.value for s in _assignments(rt.fn, expected.id)), None)
    if spec is not None and isinstance(expected, gast.Tuple) and \
            all(isinstance(e, gast.Constant) for e in expected.elts) and \
            tuple(e.value for e in expected.elts) != spec.shape:
        raise rt.fn.origin.error(stmt, f"{args[0].id!r} changes shape between assignments "
                                 f"({tuple(e.value for e in expected.elts)} then {spec.shape})",
                                 "start an array accumulator with np.zeros of its final shape")
    return []


def _assignments(fn: Function, name_: str):
    return [s for s in walk(fn.node) if isinstance(s, gast.Assign) and
            isinstance(s.targets[0], gast.Name) and s.targets[0].id == name_]


LOWERINGS = {
    tape.shape_of: _shape_of,
    tape.check_shape: _check_shape,
    runtime.matmul_grad_left: _matmul_grad_left,
    runtime.matmul_grad_right: _matmul_grad_right,
    runtime.reduce_sum: _reduce_sum,
    tape.float_tape: _dropped,
    tape.exact_tape: _dropped,
    tape.items_buffer: _dropped,
    tape.push: _push,
    tape.reserve: _reserve,
    tape.push_items: _push_items,
    tape.pop_items: _pop_items,
    tape.trip_count: lambda rt, stmt, target, args: _loop_bound(rt, stmt, target, args, False),
    tape.range_last: lambda rt, stmt, target, args: _loop_bound(rt, stmt, target, args, True),
    reverse.float_zeros: _float_zeros,
    reverse.unit_cotangent: _unit_cotangent,
    runtime.cast_like: _cast_like,
    runtime.zeros_like: _zeros_like,
    runtime.broadcast_like: _broadcast_like,
    runtime.unbroadcast: _unbroadcast,
    runtime.broadcast_reduced: _broadcast_reduced,
    runtime.scatter_add: _scatter_add,
    runtime.kept_writes: _kept_writes,
    runtime.inside: _inside,
    runtime.update_in_place: _update_in_place,
    runtime.update_tangent: _update_tangent,
    tape.check_not_shared: _check_not_shared,
    stop_gradient: lambda rt, stmt, target, args: [assign(store(target), args[0])],
    runtime.own_copy: _own_copy,
}
