"""Runtime helpers of generated code (`transformer.runtime`), rewritten for a CUDA thread.

Derivative code calls helpers such as `cast_like(1.0, x)`, `broadcast_like(t, z)` and
`unbroadcast(g, x)`, which Numba's CPU target compiles through `overload`. A GPU thread
cannot call those, but once shapes are known each call is a plain NumPy statement:
`cast_like(1.0, x32)` is `np.float32(1.0)`, `unbroadcast(g, x)` of a scalar `x` is
`np.float64(np.sum(g))`. This pass rewrites them so; the array lowering then turns those
statements into loops.

Invariant of the output: no call to a helper in `LOWERINGS`; a helper call whose
shapes do not allow a per-thread form is a TransformError at the user's line.
"""
from __future__ import annotations

import copy

import gast
import numpy as np

from transformer import runtime
from transformer.function import Function, resolve
from transformer.syntax import assign, call, const, located, name, store, subscript

from .cuda_types import Spec, infer


def lower_runtime(fn: Function, specs: dict, float_dtype, binder) -> Function:
    """Rewrite every call to a runtime helper into per-thread NumPy statements."""
    info = infer(fn, specs, float_dtype)
    rewriter = _Runtime(fn, info, binder, np.dtype(float_dtype))
    node = copy.deepcopy(fn.node)
    node.body = rewriter.block(node.body)
    return fn.replace(node=node, env=binder.env)


class _Runtime:
    def __init__(self, fn, info, binder, float_dtype):
        self.fn, self.info, self.binder, self.float_dtype = fn, info, binder, float_dtype

    def block(self, stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, (gast.For, gast.While, gast.If)):
                stmt.body = self.block(stmt.body) or [gast.Pass()]
                stmt.orelse = self.block(stmt.orelse)
                out.append(stmt)
                continue
            value = getattr(stmt, "value", None)
            helper = resolve(self.fn, value.func, None) if isinstance(value, gast.Call) \
                else None
            lowering = LOWERINGS.get(helper) if _hashable(helper) else None
            if lowering is None:
                out.append(stmt)
                continue
            target = stmt.targets[0].id if isinstance(stmt, gast.Assign) else None
            out.extend(located(s, stmt) for s in lowering(self, stmt, target, value.args))
        return out

    # -- helpers for the lowerings
    def spec(self, atom) -> Spec | None:
        if isinstance(atom, gast.Name):
            return self.info.get(atom.id)
        if isinstance(atom, gast.Constant):
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


def _hashable(obj) -> bool:
    try:
        hash(obj)
    except TypeError:
        return False
    return True


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
    if not rt.is_array(g) and len(args) == 2 and rt.spec(x) is not None:
        return [assign(store(target), call(rt.numpy("full_like"), x, g))]
    rt.refuse(stmt, "broadcast_reduced", "spreads a reduction over an axis")


def _scatter_add(rt: _Runtime, stmt, target, args):
    array, index, values = args
    if rt.is_array(index):
        rt.refuse(stmt, "scatter_add", "adds at an array of indices")
    old = rt.binder.namer.fresh(f"{array.id}_item")
    new = rt.binder.namer.fresh(f"{array.id}_sum")
    return [assign(store(old), subscript(copy.deepcopy(array), copy.deepcopy(index))),
            assign(store(new), gast.BinOp(left=name(old), op=gast.Add(), right=values)),
            assign(subscript(copy.deepcopy(array), copy.deepcopy(index), gast.Store()),
                   name(new))]


def _inside(rt: _Runtime, stmt, target, args):
    x, lo, hi = args
    if rt.is_array(x):
        rt.refuse(stmt, "inside", "masks an array")
    stmts = [assign(store(target), const(True))]
    for bound, op in ((lo, gast.GtE()), (hi, gast.LtE())):
        if isinstance(bound, gast.Constant) and bound.value is None:
            continue
        test = rt.binder.namer.fresh(f"{target}_bound")
        stmts.append(assign(store(test), gast.Compare(left=copy.deepcopy(x), ops=[op],
                                                      comparators=[bound])))
        stmts.append(gast.If(test=name(test), body=[gast.Pass()],
                             orelse=[assign(store(target), const(False))]))
    return stmts


LOWERINGS = {
    runtime.cast_like: _cast_like,
    runtime.zeros_like: _zeros_like,
    runtime.broadcast_like: _broadcast_like,
    runtime.unbroadcast: _unbroadcast,
    runtime.broadcast_reduced: _broadcast_reduced,
    runtime.scatter_add: _scatter_add,
    runtime.inside: _inside,
}
