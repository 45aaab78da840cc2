"""Linear maps, reductions, shape and index functions, constructors: their derivative
rules, their Numba lowering (a runtime equivalent where Numba lacks a call form), and the
roles the shape analysis and the CUDA passes give them."""
from __future__ import annotations

import math

import gast
import numpy as np

from transformer import runtime, tape

from . import registry
from .families import differentiated_only_with, linear, lowered, nondifferentiable

# ---------------------------------------------------------------- linear maps of one argument

linear(gast.UAdd, np.positive, np.copy, np.ascontiguousarray, float,
       adjoint="g", tangent="g")
# the reverse sweep's copy of a view (transformer.reverse.views): the tangent is copied too,
# since it is a view of the base's tangent, which the same later write changes
linear(tape.own_value, adjoint="g", tangent="own_value(g)")
linear(gast.USub, np.negative, adjoint="-g", tangent="-g")
linear(np.reshape, adjoint="reshape_like(g, x)", tangent="reshape(g, shape)",
       params="x, shape, order='C'", kind="shape")
linear(np.ravel, adjoint="reshape_like(g, x)", tangent="np.ravel(g)", kind="shape")

# the rules read and write in C order (another order's derivative came out in C order)
differentiated_only_with(
    np.reshape, "order", 2, ("C",),
    "np.reshape(..., order=...) is differentiated in C order only",
    "reshape in C order: x reshaped to shape in Fortran order is np.reshape(x.T, shape[::-1]).T")
# the rules are the 2-norm's and the Frobenius norm's (the 1-norm's gradient is sign(x))
differentiated_only_with(
    np.linalg.norm, "ord", 1, (None, "fro"),
    "the derivative of np.linalg.norm is that of ord=None (the 2-norm, or a matrix's "
    "Frobenius norm) only: this call passes another ord",
    "write the norm you mean from differentiable parts: np.sum(np.abs(x)) for ord=1, "
    "np.max(np.abs(x)) for ord=np.inf, np.sum(np.abs(x) ** p) ** (1 / p) for ord=p, "
    "or np.linalg.norm(x) for the 2-norm")
linear(np.expand_dims, adjoint="reshape_like(g, x)", tangent="np.expand_dims(g, axis)",
       params="x, axis", kind="shape")
linear(np.squeeze, adjoint="reshape_like(g, x)", tangent="squeeze(g, axis)",
       params="x, axis=None", kind="shape")
# the adjoint drops the axes they add; a 0-d input's adjoint is read back as a scalar
for _key in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
    linear(_key, adjoint="reshape_like(g, x)", tangent=f"np.{_key.__name__}(g)",
           kind="shape")
linear(np.transpose, adjoint="untranspose(g, axes)", tangent="transpose(g, axes)",
       params="x, axes=None", kind="shape")
linear(np.swapaxes, adjoint="np.swapaxes(g, axis1, axis2)",
       tangent="np.swapaxes(g, axis1, axis2)", params="x, axis1, axis2", kind="shape")
linear(np.moveaxis, adjoint="moveaxis(g, destination, source)",
       tangent="moveaxis(g, source, destination)", params="x, source, destination",
       kind="shape")
linear(np.flip, adjoint="flip(g, axis)", tangent="flip(g, axis)", params="x, axis=None",
       kind="shape")
linear(np.tile, adjoint="untile(g, x, reps)", tangent="tile(g, reps)", params="x, reps",
       kind="shape")
linear(np.repeat, adjoint="unrepeat(g, x, repeats, axis)", tangent="repeat(g, repeats, axis)",
       params="x, repeats, axis=None", kind="shape")
linear(np.trace, adjoint="g * cast_like(np.eye(x.shape[0], x.shape[1]), x)",
       tangent="np.trace(g)", kind="reduction")
linear(np.sum, adjoint="broadcast_reduced(g, x, axis, keepdims)",
       tangent="reduce_sum(g, axis, None, None, keepdims)",
       params="x, axis=None, dtype=None, out=None, keepdims=False", kind="reduction")
linear(np.mean, adjoint="broadcast_reduced(g, x, axis, keepdims) "
                        "/ cast_like(axis_count(x, axis), x)",
       tangent="reduce_mean(g, axis, None, None, keepdims)",
       params="x, axis=None, dtype=None, out=None, keepdims=False", kind="reduction")
linear(np.cumsum, adjoint="cumsum_adjoint(g, x, axis)", tangent="cumsum(g, axis)",
       params="x, axis=None, dtype=None, out=None", kind="reduction")
registry.record(np.negative).elementwise = registry.record(np.negative).keeps_int = True
registry.record(np.negative).scalar = "-x"
registry.record(np.negative).cuda = "elementwise"

# ---------------------------------------------------------------- no derivative

nondifferentiable(np.zeros, np.ones, np.empty, np.zeros_like, np.ones_like, np.empty_like,
                  np.eye, np.identity, kind="creation")
for _key in (np.full, np.full_like, np.arange, np.linspace):    # values from arguments:
    registry.record(_key).kind = "creation"                    # rules in transformer/rules
nondifferentiable(np.shape, np.size, np.ndim, len, range, kind="shape")
nondifferentiable(int, bool, round, np.fix, kind="elementwise")
nondifferentiable(gast.FloorDiv, np.floor_divide, gast.Not, gast.Invert, kind="operator")
nondifferentiable(np.argmax, np.argmin, np.argsort, np.nonzero, np.count_nonzero,
                  np.searchsorted, kind="index")
nondifferentiable(np.any, np.all, kind="reduction")
nondifferentiable(np.equal, np.not_equal, np.less, np.less_equal, np.greater,
                  np.greater_equal, np.logical_and, np.logical_or, np.logical_not,
                  np.heaviside, kind="comparison")

# ---------------------------------------------------------------- scalar results, roles

for _key in (np.logical_and, np.logical_or, np.logical_not, np.logical_xor, np.isnan,
             np.isinf, np.isfinite, np.greater, np.greater_equal, np.less, np.less_equal,
             np.equal, np.not_equal):
    registry.record(_key).role = "mask"          # a boolean array from arrays
registry.record(np.logical_xor).kind = "comparison"

for _key, _class in [(int, "int"), (float, "f64"), (math.floor, "int"), (math.ceil, "int"),
                     (math.trunc, "int"), (math.isnan, "bool"), (math.isinf, "bool"),
                     (math.isfinite, "bool")]:
    registry.record(_key).scalar_result = _class
for _key in (np.zeros_like, np.ones_like, np.empty_like, np.full_like, np.copy):
    registry.record(_key).cuda = "like_allocation"
for _key in (np.zeros, np.ones, np.empty, np.full):
    registry.record(_key).cuda = "allocation"
for _key in (np.sum, np.max, np.min, np.amax, np.amin, np.prod, np.dot):
    registry.record(_key).cuda = "reduction"
for _key in (np.outer, np.matmul):
    registry.record(_key).cuda = "product"
registry.record(np.copysign).elementwise = True
registry.record(np.copysign).kind = "binary elementwise"
for _key in (float, int, bool):
    registry.record(_key).cuda = "cast"
for _key in (np.where, np.clip):
    registry.record(_key).cuda = "elementwise"
    registry.record(_key).kind = "selection"

# ---------------------------------------------------------------- Numba lowering

for _key, _equivalent in [
        (np.sum, runtime.reduce_sum), (np.mean, runtime.reduce_mean),
        (np.max, runtime.reduce_max), (np.amax, runtime.reduce_max),
        (np.min, runtime.reduce_min), (np.amin, runtime.reduce_min),
        (np.prod, runtime.reduce_prod), (np.var, runtime.reduce_var),
        (np.std, runtime.reduce_std), (np.cumsum, runtime.cumsum),
        (np.cumprod, runtime.cumprod), (np.linalg.norm, runtime.norm),
        (np.all, runtime.reduce_all), (np.any, runtime.reduce_any),
        (np.average, runtime.average)]:
    lowered(_key, _equivalent, plain_form_ok=True)
for _key, _equivalent in [
        (np.squeeze, runtime.squeeze), (np.moveaxis, runtime.moveaxis),
        (np.reshape, runtime.reshape), (np.ravel, runtime.ravel),
        (np.flip, runtime.flip), (np.tile, runtime.tile),
        (np.repeat, runtime.repeat), (np.matmul, runtime.matmul),
        (gast.MatMult, runtime.matmul),  # Numba's ``@`` stops at rank 2
        (np.inner, runtime.inner),
        (np.stack, runtime.stack),       # Numba's takes a tuple only
        (np.concatenate, runtime.concatenate),      # likewise
        (np.hstack, runtime.hstack), (np.vstack, runtime.vstack),
        (np.column_stack, runtime.column_stack),
        (np.add.at, runtime.scatter_add),
        (np.clip, runtime.clip)]:        # Numba's clips arrays only
    lowered(_key, _equivalent)
# plain NumPy equivalents that do not compile under Numba yet (``np.einsum`` with constant
# subscripts is lowered to generated loops by ``transformer.lowering`` instead)
lowered(np.einsum, runtime.einsum, python_only=True,
        reason="compiled only with constant subscripts (lowered to loops)")
lowered(np.tensordot, runtime.tensordot, python_only=True,
        reason="Numba has no np.tensordot; under jit it runs in Python mode only")

# the reverse and forward passes differentiate `np.add.at(y, i, v)` as a statement: the
# adjoint gathers `v`'s cotangent from `y`'s, the tangent is `np.add.at(dy, i, dv)`
registry.record(np.add.at).statement_rules = frozenset({"grad", "jvp"})

# ---------------------------------------------------------------- what the shape analysis splits

for _key, _role in [(np.sum, "sum"), (np.dot, "dot"), (np.vdot, "dot"), (np.inner, "dot"),
                    (np.linalg.norm, "norm"), (np.zeros_like, "allocation"),
                    (np.ones_like, "allocation"), (np.empty_like, "allocation"),
                    (np.copy, "allocation")]:
    registry.record(_key).role = _role

# ---------------------------------------------------------------- stated gaps

registry.unsupported(np.broadcast_to, "cuda", "a kernel allocates nothing; index instead")

# ---------------------------------------------------------------- kinds of the hand-written rules

for _kind, _keys in [
        ("reduction", (np.max, np.amax, np.min, np.amin, np.prod, np.var, np.std, np.cumprod,
                       np.linalg.norm, np.average)),
        ("linear algebra", (np.dot, np.matmul, np.inner, np.outer, np.vdot, np.einsum,
                            np.tensordot, np.linalg.det, np.linalg.inv, np.linalg.slogdet,
                            np.linalg.solve)),
        ("structural", (np.concatenate, np.stack, np.hstack, np.vstack, np.column_stack,
                        np.broadcast_to, np.sort, np.add.at)),
        ("elementwise", (np.real, np.imag, np.conj))]:
    for _key in _keys:
        registry.record(_key).kind = _kind
for _key, _form in [(max, "max(x, y)"), (min, "min(x, y)")]:
    registry.record(_key).kind = "binary elementwise"
    registry.record(_key).scalar = _form           # builtins CUDA kernels take as they are
