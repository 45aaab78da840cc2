"""Batching rules: how each primitive runs over a leading batch axis.

A batching rule takes one primitive application whose arguments are each *batched*
(a leading axis of length `size` holds one value per example) or not, and returns the
expression that computes all examples at once, plus whether that result is batched.
Registry keys are the Python object called (`np.sin`, `math.exp`, `min`), gast operator
classes (`gast.Add`, `gast.USub`, `gast.Lt`, `gast.MatMult`) and "getitem"/"setitem".
A rule returns `None` when it cannot handle a particular call (e.g. a batched `axis`);
the vmap pass then falls back to its loop strategy and says why.

Family helpers register whole families in one line each: `elementwise` (n-ary,
broadcasting), `reduction`, `preserving` (shape-preserving functions such as `np.copy`),
and the dot/matmul/outer products.

Generated code never knows ranks (the source is written before any argument is seen), so
rank-dependent steps go through the runtime helpers at the top of this file. Each is a
plain NumPy function with a `numba.extending.overload` that picks its implementation from
the Numba types, so inside compiled code a helper whose ranks already agree costs nothing.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import MutableMapping
from typing import Any, Callable

import gast
import numba
import numpy as np
from numba import types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable

from transformer.primitives import registry
from transformer.syntax import call, const, subscript

# ====================================================================== runtime helpers


def _ndim(ty) -> int:
    return ty.ndim if isinstance(ty, types.Array) else 0


def _pad(x, rank: int):
    """Batched `x` with ones inserted after the batch axis so it has `rank` example axes."""
    extra = rank - (np.ndim(x) - 1)
    if extra <= 0:
        return x
    return np.reshape(x, np.shape(x)[:1] + (1,) * extra + np.shape(x)[1:])


def _pad_nb(x, rank: int):
    extra = rank - (_ndim(x) - 1)
    if extra <= 0:
        return lambda x, ref: x
    # The new shape is written out with literal ones: inlined, Numba's parfor pass
    # (`jit(parallel=True)`) then sees the padded axes have length 1 and accepts the
    # broadcast; a shape built by tuple concatenation reads as unknown sizes, and the
    # (B, 1) - (B, k) broadcast failed its size assertion.
    dims = ["x.shape[0]"] + ["1"] * extra + [f"x.shape[{i}]" for i in range(1, _ndim(x))]
    namespace = {"np": np}
    exec(f"def impl(x, ref):\n"
         f"    return np.ascontiguousarray(x).reshape(({', '.join(dims)},))\n", namespace)
    return namespace["impl"]


def align(x, ref):
    """Batched `x` shaped to broadcast against the unbatched `ref` example by example."""
    return _pad(x, np.ndim(ref))


@overload(align, inline="always")
def _align_nb(x, ref):
    return _pad_nb(x, _ndim(ref))


def align_batched(x, ref):
    """Batched `x` shaped to broadcast against the batched `ref` example by example."""
    return _pad(x, np.ndim(ref) - 1)


@overload(align_batched, inline="always")
def _align_batched_nb(x, ref):
    return _pad_nb(x, _ndim(ref) - 1)


def broadcast_batch(value, size):
    """`size` copies of an unbatched value stacked on a new leading axis (writable)."""
    value = np.asarray(value)
    out = np.empty((size,) + value.shape, value.dtype)
    out[...] = value
    return out


@overload(broadcast_batch)
def _broadcast_batch_nb(value, size):
    if isinstance(value, types.Array):
        def impl(value, size):
            out = np.empty((size,) + value.shape, value.dtype)
            for b in range(size):
                out[b] = value
            return out
        return impl
    return lambda value, size: np.full(size, value)


def batch_size_of(value):
    """The length of the batch axis of a batched argument (its first leaf for containers)."""
    while isinstance(value, (tuple, list, dict)):
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
    return np.shape(value)[0]


@overload(batch_size_of)
def _batch_size_of_nb(value):
    if isinstance(value, types.BaseTuple):
        return lambda value: batch_size_of(value[0])
    return lambda value: value.shape[0]


def check_size(size, other, first: str, second: str):
    """Raise when two mapped arguments disagree on the batch size."""
    if size != other:
        raise ValueError(f"vmap got inconsistent sizes for the mapped axis: argument "
                         f"{first!r} has size {size} but {second!r} has size {other}")


@overload(check_size)
def _check_size_nb(size, other, first, second):
    def impl(size, other, first, second):
        if size != other:
            raise ValueError("vmap got inconsistent sizes for the mapped axis "
                             "(first argument, its size, other argument, its size):",
                             first, size, second, other)
    return impl


def check_examples(size):
    """The loop strategy computes the first example to size its results: it needs one."""
    if size == 0:
        raise ValueError("vmap over an empty batch: this function is batched with the loop "
                         "strategy, which needs at least one example")


@overload(check_examples)
def _check_examples_nb(size):
    def impl(size):
        if size == 0:
            raise ValueError("vmap over an empty batch: this function is batched with the "
                             "loop strategy, which needs at least one example")
    return impl


def to_front(x, axis):
    """`x` with its mapped axis `axis` moved to the front (axis 0)."""
    return np.moveaxis(x, axis, 0)


def from_front(x, axis):
    """The batch axis of `x` moved from the front to position `axis` (out_axes)."""
    return np.moveaxis(x, 0, axis)


def _moved_nb(x, axis, forward: bool):
    if not isinstance(x, types.Array):
        raise TypingError("vmap: the mapped axis of a scalar")
    ndim = x.ndim
    value = axis.literal_value if isinstance(axis, types.IntegerLiteral) else None
    if value is None:
        raise TypingError("vmap: in_axes/out_axes must be constants")
    value %= ndim
    order = list(range(ndim))
    if forward:
        order = [value] + [a for a in order if a != value]
    else:
        order = order[1:value + 1] + [0] + order[value + 1:]
    perm = tuple(order)
    return lambda x, axis: np.transpose(x, perm)


@overload(to_front)
def _to_front_nb(x, axis):
    return _moved_nb(x, axis, True)


@overload(from_front)
def _from_front_nb(x, axis):
    return _moved_nb(x, axis, False)


def batch_axis(axis):
    """An example axis number as an axis of the batched array."""
    if isinstance(axis, tuple):
        return tuple(batch_axis(a) for a in axis)
    return axis + 1 if axis >= 0 else axis


@overload(batch_axis)
def _batch_axis_nb(axis):
    if isinstance(axis, types.Integer):
        return lambda axis: axis + 1 if axis >= 0 else axis
    raise TypingError("vmap: a reduction axis must be an int here")


def example_axes(x):
    """Every axis of batched `x` but the batch axis (for whole-example reductions)."""
    return tuple(range(1, np.ndim(x)))


def _whole_example(np_fn, name_: str, doc: str):
    """A reduction of each example over all its axes, e.g. `sum_examples(x)`."""
    def python(x):
        return np_fn(x, axis=tuple(range(1, np.ndim(x))))
    python.__name__ = python.__qualname__ = name_
    python.__doc__ = doc

    @overload(python)
    def _nb(x):
        if x.ndim == 1:                 # scalar examples: the reduction of one value
            if name_ in ("any_examples", "all_examples"):
                return lambda x: x != 0
            return lambda x: x.copy()

        def impl(x):
            first = np_fn(x[0])
            out = np.empty(x.shape[0], np.asarray(first).dtype)
            out[0] = first
            for b in range(1, x.shape[0]):
                out[b] = np_fn(x[b])
            return out
        return impl
    return python


sum_examples = _whole_example(np.sum, "sum_examples", "np.sum of each example.")
mean_examples = _whole_example(np.mean, "mean_examples", "np.mean of each example.")
prod_examples = _whole_example(np.prod, "prod_examples", "np.prod of each example.")
max_examples = _whole_example(np.max, "max_examples", "np.max of each example.")
min_examples = _whole_example(np.min, "min_examples", "np.min of each example.")
any_examples = _whole_example(np.any, "any_examples", "np.any of each example.")
all_examples = _whole_example(np.all, "all_examples", "np.all of each example.")


def _arg_nb(np_fn):
    def impl(x):
        out = np.empty(x.shape[0], np.int64)
        for b in range(x.shape[0]):
            out[b] = np_fn(x[b])
        return out
    return impl


def _index_of_example(np_fn, name_: str):
    """`np.argmax`-like of each flattened example."""
    def python(x):
        return np_fn(np.reshape(x, (np.shape(x)[0], -1)), axis=1)
    python.__name__ = python.__qualname__ = name_
    python.__doc__ = f"np.{np_fn.__name__} of each flattened example."

    @overload(python)
    def _nb(x):
        return _arg_nb(np_fn)
    return python


argmax_examples = _index_of_example(np.argmax, "argmax_examples")
argmin_examples = _index_of_example(np.argmin, "argmin_examples")


# ---------------------------------------------------------------- products

def _matmul_right(m, x):
    """Per example `m @ x[b]`, `m` unbatched."""
    if np.ndim(x) == 2:               # vectors: one matrix-matrix product
        return x @ np.transpose(m) if np.ndim(m) == 2 else x @ m
    return np.matmul(m, x)


def _matmul_both(a, x):
    """Per example `a[b] @ x[b]`."""
    if np.ndim(a) == 2 and np.ndim(x) == 2:
        return np.sum(a * x, axis=1)
    if np.ndim(x) == 2:
        return np.matmul(a, x[..., None])[..., 0]
    if np.ndim(a) == 2:
        return np.matmul(a[:, None, :], x)[:, 0]
    return np.matmul(a, x)


def dot_left(a, b):
    """Per example `np.dot(a[k], b)`: only the left operand is batched."""
    if np.ndim(b) == 0 or np.ndim(a) == 1:
        return align(a, b) * b
    return np.matmul(a, b)


def dot_right(a, b):
    """Per example `np.dot(a, b[k])`: only the right operand is batched."""
    if np.ndim(a) == 0 or np.ndim(b) == 1:
        return a * align(b, a)
    return _matmul_right(a, b)


def dot_both(a, b):
    """Per example `np.dot(a[k], b[k])`: both operands are batched."""
    if np.ndim(a) == 1 or np.ndim(b) == 1:
        return align_batched(a, b) * align_batched(b, a)
    return _matmul_both(a, b)


@register_jitable
def _contig(a):
    return np.ascontiguousarray(a)


@overload(dot_left)
def _dot_left_nb(a, b):
    if _ndim(b) == 0 or _ndim(a) == 1:
        return lambda a, b: align(a, b) * b
    if _ndim(a) == 2 and _ndim(b) == 2 and _numpy_product(a, b) is not None:
        product = _numpy_product(a, b)                 # vectors times a matrix
        return lambda a, b: product(a, b)
    if _ndim(a) == 2:
        return lambda a, b: np.dot(_contig(a), _contig(b))
    if _ndim(a) == 3 and _ndim(b) in (1, 2):
        def impl(a, b):
            first = np.dot(_contig(a[0]), _contig(b))
            out = np.empty((a.shape[0],) + np.shape(first), first.dtype)
            for k in range(a.shape[0]):
                out[k] = np.dot(_contig(a[k]), _contig(b))
            return out
        return impl
    raise TypingError("batched np.dot: examples of rank 0, 1 or 2 only")


@overload(dot_right)
def _dot_right_nb(a, b):
    if _ndim(a) == 0 or _ndim(b) == 1:
        return lambda a, b: a * align(b, a)
    if _ndim(b) == 2 and _ndim(a) == 2 and _numpy_product(b, a) is not None:
        product = _numpy_product(b, a)                 # matrix times vectors: one product
        return lambda a, b: product(b, a.T)
    if _ndim(b) == 2 and _ndim(a) == 2:
        return lambda a, b: np.dot(_contig(b), a.T)
    if _ndim(b) == 2 and _ndim(a) == 1:
        return lambda a, b: np.dot(_contig(b), _contig(a))
    if _ndim(b) == 3 and _ndim(a) in (1, 2):
        def impl(a, b):
            first = np.dot(_contig(a), _contig(b[0]))
            out = np.empty((b.shape[0],) + np.shape(first), first.dtype)
            for k in range(b.shape[0]):
                out[k] = np.dot(_contig(a), _contig(b[k]))
            return out
        return impl
    raise TypingError("batched np.dot: examples of rank 0, 1 or 2 only")


@overload(dot_both)
def _dot_both_nb(a, b):
    if _ndim(a) == 1 or _ndim(b) == 1:
        return lambda a, b: align_batched(a, b) * align_batched(b, a)
    if _ndim(a) == 2 and _ndim(b) == 2:
        return lambda a, b: np.sum(a * b, axis=1)
    if _ndim(a) in (2, 3) and _ndim(b) in (2, 3):
        def impl(a, b):
            first = np.dot(_contig(a[0]), _contig(b[0]))
            out = np.empty((a.shape[0],) + np.shape(first), first.dtype)
            for k in range(a.shape[0]):
                out[k] = np.dot(_contig(a[k]), _contig(b[k]))
            return out
        return impl
    raise TypingError("batched np.dot: examples of rank 0, 1 or 2 only")


def outer_left(a, b):
    """Per example `np.outer(a[k], b)`."""
    flat = np.reshape(a, (np.shape(a)[0], -1))
    return flat[:, :, None] * np.ravel(b)[None, None, :]


def outer_right(a, b):
    """Per example `np.outer(a, b[k])`."""
    flat = np.reshape(b, (np.shape(b)[0], -1))
    return np.ravel(a)[None, :, None] * flat[:, None, :]


def outer_both(a, b):
    """Per example `np.outer(a[k], b[k])`."""
    fa = np.reshape(a, (np.shape(a)[0], -1))
    fb = np.reshape(b, (np.shape(b)[0], -1))
    return fa[:, :, None] * fb[:, None, :]


# For outputs of many megabytes NumPy's allocator (transparent huge pages) spares most of
# the page faults Numba's own allocator takes, which makes writing a batch of outer
# products several times faster; large products run NumPy's matmul, the BLAS a batched
# NumPy program uses (Numba links SciPy's, with its own thread pool). Both are
# module-level functions so that code calling them stays cacheable. No `cache=True`:
# secant's backend gives them a sealed disk cache inside its cache directory
# (codegen/cache_numba.py), so nothing is written into the installed package.

@numba.njit
def _empty3_float64(shape):
    with numba.objmode(out="float64[:, :, ::1]"):
        out = np.empty(shape, np.float64)
    return out


@numba.njit
def _empty3_float32(shape):
    with numba.objmode(out="float32[:, :, ::1]"):
        out = np.empty(shape, np.float32)
    return out


@numba.njit
def _product_float64(a, b):
    with numba.objmode(out="float64[:, ::1]"):
        out = np.ascontiguousarray(a @ b)
    return out


@numba.njit
def _product_float32(a, b):
    with numba.objmode(out="float32[:, ::1]"):
        out = np.ascontiguousarray(a @ b)
    return out


def _numpy_empty(dtype):
    """The 3-d allocator for `dtype`: through NumPy for float32/float64."""
    return {np.dtype(np.float64): _empty3_float64,
            np.dtype(np.float32): _empty3_float32}.get(np.dtype(dtype))


def _numpy_product(a, b):
    """`a @ b` of two matrices through NumPy when both have one float dtype, else None."""
    if a.dtype != b.dtype:
        return None
    return {types.float64: _product_float64, types.float32: _product_float32}.get(a.dtype)


def _outer_nb(a, b, left_batched: bool, right_batched: bool):
    dtype = np.result_type(numba.np.numpy_support.as_dtype(a.dtype),
                           numba.np.numpy_support.as_dtype(b.dtype))
    allocate = _numpy_empty(dtype) or _generic_empty(dtype)

    def impl(a, b):
        size = a.shape[0] if left_batched else b.shape[0]
        fa = np.ascontiguousarray(a).reshape((size, -1)) if left_batched else \
            np.ascontiguousarray(a).reshape((1, -1))
        fb = np.ascontiguousarray(b).reshape((size, -1)) if right_batched else \
            np.ascontiguousarray(b).reshape((1, -1))
        out = allocate((size, fa.shape[1], fb.shape[1]))
        for k in range(size):
            ka = k if left_batched else 0
            row_b = fb[k if right_batched else 0]
            for i in range(fa.shape[1]):
                left = fa[ka, i]
                row = out[k, i]
                for j in range(row_b.shape[0]):
                    row[j] = left * row_b[j]
        return out
    return impl


def _generic_empty(dtype):
    def allocate(shape):
        return np.empty(shape, dtype)
    return register_jitable(allocate)


@overload(outer_left)
def _outer_left_nb(a, b):
    return _outer_nb(a, b, True, False)


@overload(outer_right)
def _outer_right_nb(a, b):
    return _outer_nb(a, b, False, True)


@overload(outer_both)
def _outer_both_nb(a, b):
    return _outer_nb(a, b, True, True)


# ---------------------------------------------------------------- indexing and shapes

def take_batched(x, index):
    """Per example `x[k][index[k]]`: a gather with a batched index."""
    rows = np.arange(np.shape(x)[0]).reshape((-1,) + (1,) * (np.ndim(index) - 1))
    return x[rows, index]


@overload(take_batched)
def _take_batched_nb(x, index):
    if not isinstance(index, types.Array) or index.ndim != 1:
        raise TypingError("batched indexing: one scalar index per example under Numba")
    if x.ndim == 1 + 1:
        def impl(x, index):
            out = np.empty(x.shape[0], x.dtype)
            for k in range(x.shape[0]):
                out[k] = x[k, index[k]]
            return out
        return impl

    def impl_rows(x, index):
        out = np.empty((x.shape[0],) + x.shape[2:], x.dtype)
        for k in range(x.shape[0]):
            out[k] = x[k, index[k]]
        return out
    return impl_rows


def index_examples(x, index):
    """Per example `x[k][index]` with an unbatched index (an int, slice, array or tuple)."""
    if isinstance(index, tuple):
        return x[(slice(None),) + index]
    return x[:, index]


@overload(index_examples)
def _index_examples_nb(x, index):
    if isinstance(index, types.BaseTuple):
        return lambda x, index: x[(slice(None),) + index]
    return lambda x, index: x[:, index]


def transpose_examples(x):
    """Per example `np.transpose(x[k])`: the example axes reversed."""
    return np.transpose(x, (0,) + tuple(range(np.ndim(x) - 1, 0, -1)))


@overload(transpose_examples)
def _transpose_examples_nb(x):
    perm = (0,) + tuple(range(x.ndim - 1, 0, -1))
    return lambda x: np.transpose(x, perm)


def reshape_examples(x, shape):
    """Per example `np.reshape(x[k], shape)`."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    return np.reshape(x, (np.shape(x)[0],) + shape)


@overload(reshape_examples)
def _reshape_examples_nb(x, shape):
    if isinstance(shape, types.BaseTuple):
        return lambda x, shape: np.ascontiguousarray(x).reshape((x.shape[0],) + shape)
    return lambda x, shape: np.ascontiguousarray(x).reshape((x.shape[0], shape))


def ravel_examples(x):
    """Per example `np.ravel(x[k])`."""
    return np.reshape(x, (np.shape(x)[0], -1))


@overload(ravel_examples)
def _ravel_examples_nb(x):
    return lambda x: np.ascontiguousarray(x).reshape((x.shape[0], -1))


def as_float(x):
    """Per example `float(x[k])`."""
    return np.asarray(x, dtype=np.float64)


@overload(as_float)
def _as_float_nb(x):
    return lambda x: x.astype(np.float64)


def as_int(x):
    """Per example `int(x[k])` (truncation toward zero, as `int` does)."""
    return np.trunc(x).astype(np.int64)


@overload(as_int)
def _as_int_nb(x):
    return lambda x: np.trunc(x).astype(np.int64) if isinstance(x, types.Array) else x


# ---------------------------------------------------------------- loop strategy

def batch_empty(size, example):
    """An uninitialized batch of `size` values shaped like `example`."""
    example = np.asarray(example)
    return np.empty((size,) + example.shape, example.dtype)


@overload(batch_empty)
def _batch_empty_nb(size, example):
    if isinstance(example, types.Array):
        return lambda size, example: np.empty((size,) + example.shape, example.dtype)
    dtype = numba.np.numpy_support.as_dtype(example)
    return lambda size, example: np.empty(size, dtype)


def take_example(value, k):
    """Example `k` of a batched argument (containers: example `k` of every leaf)."""
    if isinstance(value, dict):
        return {key: take_example(v, k) for key, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(take_example(v, k) for v in value)
    return value[k]


@overload(take_example)
def _take_example_nb(value, k):
    if isinstance(value, types.BaseTuple):
        n = len(value)
        parts = ", ".join(f"take_example(value[{i}], k)" for i in range(n))
        scope = {"take_example": take_example}
        exec(f"def impl(value, k):\n    return ({parts},)\n", scope)
        return scope["impl"]
    return lambda value, k: value[k]


# ---------------------------------------------------------------- identity batches
# jacfwd pushes the identity basis of an argument through vmap. An *identity-batched*
# value is held as one unbatched array `d`: example k is the k-th unit vector shaped like
# the basis times `d` (broadcasting), so a chain of linear elementwise steps costs one
# example's work instead of a batch's. These helpers turn it into an ordinary batch.


def identity_batch(d, basis):
    """The batch `e_k * d` for every unit vector `e_k` shaped like `basis`, on axis 0."""
    d = np.asarray(d)
    n = int(np.size(basis))
    pad = (1,) * (d.ndim - np.ndim(basis))
    return np.eye(n, dtype=d.dtype).reshape((n,) + pad + np.shape(basis)) * d


def identity_batch_last(d, basis):
    """`identity_batch(d, basis)` with the batch axis last (jacfwd's column layout)."""
    return np.ascontiguousarray(np.moveaxis(identity_batch(d, basis), 0, -1))


@register_jitable
def _fill_diagonal(out, d, n):
    """`out` viewed `(n, n)` gets `d` on its diagonal (`d` has the basis's size)."""
    flat = out.reshape((n, n))
    values = np.ascontiguousarray(d).ravel()
    for k in range(n):
        flat[k, k] = values[k]


def _identity_nb(d, basis, last: bool):
    if not isinstance(basis, types.Array):          # one basis vector: the scalar 1
        if isinstance(d, types.Array):
            if last:
                return lambda d, basis: np.ascontiguousarray(d).copy().reshape(d.shape + (1,))
            return lambda d, basis: np.ascontiguousarray(d).copy().reshape((1,) + d.shape)
        return lambda d, basis: np.full(1, d)
    if not isinstance(d, types.Array):
        dtype = d

        def scalar(d, basis):
            n = basis.size
            out = np.zeros(basis.shape + (n,) if last else (n,) + basis.shape, dtype)
            _fill_diagonal(out, np.full(n, d), n)
            return out
        return scalar

    def impl(d, basis):
        n = basis.size
        out = np.zeros(d.shape + (n,) if last else (n,) + d.shape, d.dtype)
        if d.size == n:                             # d is shaped like the basis: diagonal
            _fill_diagonal(out, d, n)
            return out
        columns = out.reshape((d.size, n)) if last else out.reshape((n, d.size))
        e = np.zeros(n, d.dtype)
        for k in range(n):
            e[k] = 1.0
            column = (e.reshape(basis.shape) * d).ravel()
            e[k] = 0.0
            if last:
                columns[:, k] = column
            else:
                columns[k] = column
        return out
    return impl


@overload(identity_batch)
def _identity_batch_nb(d, basis):
    return _identity_nb(d, basis, False)


@overload(identity_batch_last)
def _identity_batch_last_nb(d, basis):
    return _identity_nb(d, basis, True)


# ====================================================================== registry


@dataclasses.dataclass
class Site:
    """One primitive application being batched.

    `args` are atoms (gast Names/Constants) and `batched` says which carry a batch axis;
    `keywords`/`kw_batched` likewise. `ref(obj)` returns an expression naming `obj` in the
    generated module (binding it in the environment when needed); `size` names the
    batch size variable.
    """

    key: Any
    args: list
    batched: list
    keywords: dict
    kw_batched: dict
    ref: Callable[[Any], gast.expr]
    size: gast.expr
    statement: bool = False       # called for its effect (`scatter_add(bx, i, g)`)

    @property
    def any_batched(self) -> bool:
        return any(self.batched) or any(self.kw_batched.values())

    def helper(self, fn, *args, **keywords) -> gast.Call:
        return call(self.ref(fn), *args, **keywords)

    def keyword(self, key: str, position: int | None = None):
        """The atom passed for parameter `key` (by keyword or at `position`), or None."""
        if key in self.keywords:
            return self.keywords[key], self.kw_batched[key]
        if position is not None and position < len(self.args):
            return self.args[position], self.batched[position]
        return None, False


Rule = Callable[[Site], "tuple[gast.expr, bool] | None"]
# Views of the primitive registry (`transformer.primitives.registry`): key -> batching rule
BATCHERS: MutableMapping[Any, Rule] = registry.Field("batcher")
# helpers that write into an argument: key -> position of the argument written
MUTATES: MutableMapping[Any, int] = registry.Field("mutates")
# keys whose result is not batched just because an argument is: flags of the positional
# arguments -> whether the result is batched (`len(x)` is the same for every example)
RESULT_FLAGS: MutableMapping[Any, Callable[[list], bool]] = registry.Field("result_flags")
for _key in (len, np.shape, np.ndim):
    RESULT_FLAGS[_key] = lambda flags: False
# keys that keep identity-batched values identity-batched (see `identity_batch`), by how:
# "product": one identity-batched argument, the others unbatched (e_k * d * u);
# "first": the first argument identity-batched, the others unbatched (e_k * d / u);
# "all": every argument identity-batched (e_k * d1 + e_k * d2 = e_k * (d1 + d2))
LINEAR: MutableMapping[Any, str] = registry.Field("linear")
LINEAR.update({
    gast.Mult: "product", np.multiply: "product",
    gast.Div: "first", np.divide: "first",
    gast.Add: "all", gast.Sub: "all", np.add: "all", np.subtract: "all",
    gast.USub: "all", gast.UAdd: "all", np.negative: "all", np.positive: "all",
})


def batcher(*keys):
    """Register a batching rule for each key: `@batcher(np.linalg.det) def rule(site): ...`."""
    def register(rule: Rule) -> Rule:
        for key in keys:
            BATCHERS[key] = rule
        return rule
    return register


def has_batcher(key) -> bool:
    return key in BATCHERS


def describe(key) -> str:
    """A readable name for a registry key (`np.linalg.qr`, `operator +`), with the
    registry's reason when it states why vmap has no rule for it."""
    why = registry.reason(key, "vmap")
    return f"{_label(key)} ({why})" if why else _label(key)


def _label(key) -> str:
    if isinstance(key, type) and issubclass(key, gast.AST):
        return f"the operator {key.__name__}"
    if isinstance(key, str):
        return key
    module = getattr(key, "__module__", None) or ""
    label = getattr(key, "__name__", repr(key))
    if module.startswith("numpy") or isinstance(key, np.ufunc):
        path = {"numpy.linalg": "np.linalg", "numpy.fft": "np.fft",
                "numpy.random": "np.random"}.get(module.replace("._linalg", ".linalg"), "np")
        return f"{path}.{label}"
    if module == "math":
        return f"math.{label}"
    return label


# ====================================================================== families


def _operator_node(key, args):
    if issubclass(key, gast.operator):
        return gast.BinOp(left=args[0], op=key(), right=args[1])
    if issubclass(key, gast.unaryop):
        return gast.UnaryOp(op=key(), operand=args[0])
    return gast.Compare(left=args[0], ops=[key()], comparators=[args[1]])


def aligned(site: Site) -> list:
    """Each batched argument padded so that examples broadcast against every other one."""
    out = []
    for i, (arg, batched) in enumerate(zip(site.args, site.batched)):
        if batched:
            for j, (other, other_batched) in enumerate(zip(site.args, site.batched)):
                same = isinstance(other, gast.Name) and isinstance(arg, gast.Name) and \
                    other.id == arg.id
                if j != i and not same and not isinstance(other, gast.Constant):
                    arg = site.helper(align_batched if other_batched else align, arg, other)
        out.append(arg)
    return out


def elementwise_rule(target=None) -> Rule:
    """The rule of functions and operators applied elementwise with broadcasting (any
    arity). `target` replaces the callee when the original does not take arrays
    (`math.exp` -> `np.exp`, builtin `min` -> `np.minimum`)."""
    def rule(site: Site):
        if any(site.kw_batched.values()) or (site.keywords and target is not None):
            return None
        args = aligned(site)
        if isinstance(site.key, type) and issubclass(site.key, gast.AST):
            if site.key is gast.Not:
                return site.helper(np.logical_not, *args), True
            return _operator_node(site.key, args), True
        callee = site.ref(target if target is not None else site.key)
        keywords = [gast.keyword(arg=k, value=v) for k, v in site.keywords.items()]
        return gast.Call(func=callee, args=args, keywords=keywords), True
    return rule


def elementwise(*keys, target=None):
    """Register `elementwise_rule(target)` for each key."""
    rule = elementwise_rule(target)
    for key in keys:
        BATCHERS[key] = rule


def preserving(*keys):
    """Functions whose single (first) argument's leading axis passes straight through."""
    def rule(site: Site):
        if any(site.batched[1:]) or any(site.kw_batched.values()):
            return None
        keywords = [gast.keyword(arg=k, value=v) for k, v in site.keywords.items()]
        return gast.Call(func=site.ref(site.key), args=list(site.args), keywords=keywords), True
    for key in keys:
        BATCHERS[key] = rule


def reduction(key, whole_example):
    """`np.sum(x, axis=None)`-like: no axis reduces every example; an axis shifts by one."""
    def rule(site: Site):
        axis, axis_batched = site.keyword("axis", 1)
        others = {k: v for k, v in site.kw_batched.items() if k != "axis"}
        if axis_batched or any(others.values()) or any(site.batched[2:]):
            return None
        defaults = all(isinstance(v, gast.Constant) and v.value in (None, False)
                       for v in site.args[2:] + list(others and site.keywords.values()))
        if axis is None or (isinstance(axis, gast.Constant) and axis.value is None):
            if not defaults:
                return None
            return site.helper(whole_example, site.args[0]), True
        if isinstance(axis, gast.Constant) and isinstance(axis.value, int):
            shifted = const(axis.value + 1 if axis.value >= 0 else axis.value)
        else:
            shifted = site.helper(batch_axis, axis)
        keywords = {k: v for k, v in site.keywords.items() if k != "axis"}
        if "axis" in site.keywords:
            return call(site.ref(key), *site.args, axis=shifted, **keywords), True
        # a positional axis (`reduce_sum(g, axis, None, None, keepdims)`) keeps its place
        return call(site.ref(key), site.args[0], shifted, *site.args[2:], **keywords), True
    BATCHERS[key] = rule


def _product(left, right, both):
    def rule(site: Site):
        if len(site.args) != 2 or site.keywords:
            return None
        a, b = site.batched
        helper = both if a and b else (left if a else right)
        return site.helper(helper, *site.args), True
    return rule


# ---------------------------------------------------------------- registrations

_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow,
               gast.BitAnd, gast.BitOr, gast.BitXor, gast.LShift, gast.RShift,
               gast.USub, gast.UAdd, gast.Invert, gast.Not,
               gast.Eq, gast.NotEq, gast.Lt, gast.LtE, gast.Gt, gast.GtE)
elementwise(*_ARITHMETIC)
# (the elementwise families of `transformer.primitives` register their own)
elementwise(
    np.true_divide, np.floor_divide, np.where, np.clip, np.heaviside, np.copysign,
    np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal,
    np.logical_and, np.logical_or, np.logical_xor, np.logical_not, np.negative, np.positive,
    np.sign, np.floor, np.ceil, np.trunc, np.fix, np.rint, np.round, np.around, np.isnan,
    np.isinf, np.isfinite, np.conj, np.real, np.imag,
)
for _math, _np in [(math.floor, np.floor), (math.ceil, np.ceil), (math.trunc, np.trunc),
                   (math.isnan, np.isnan),
                   (math.isinf, np.isinf), (math.isfinite, np.isfinite)]:
    elementwise(_math, target=_np)
elementwise(min, target=np.minimum)
elementwise(max, target=np.maximum)
elementwise(float, target=as_float)
elementwise(int, target=as_int)

preserving(np.copy, np.ascontiguousarray, np.asarray, np.array, np.zeros_like,
           np.ones_like, np.empty_like, np.full_like, np.sort)

for _key, _whole in [(np.sum, sum_examples), (np.mean, mean_examples),
                     (np.prod, prod_examples), (np.max, max_examples), (np.amax, max_examples),
                     (np.min, min_examples), (np.amin, min_examples), (np.any, any_examples),
                     (np.all, all_examples), (np.argmax, argmax_examples),
                     (np.argmin, argmin_examples)]:
    reduction(_key, _whole)

BATCHERS[np.dot] = BATCHERS[gast.MatMult] = BATCHERS[np.matmul] = \
    _product(dot_left, dot_right, dot_both)
BATCHERS[np.outer] = _product(outer_left, outer_right, outer_both)


@batcher(np.transpose)
def _transpose(site: Site):
    if len(site.args) != 1 or site.keywords:
        return None                      # explicit axes: rare, left to the loop strategy
    return site.helper(transpose_examples, site.args[0]), True


@batcher(np.reshape)
def _reshape(site: Site):
    if len(site.args) != 2 or site.batched[1] or site.keywords:
        return None
    return site.helper(reshape_examples, *site.args), True


@batcher(np.ravel)
def _ravel(site: Site):
    if len(site.args) != 1 or site.keywords:
        return None
    return site.helper(ravel_examples, site.args[0]), True


@batcher(len)
def _len(site: Site):
    return subscript(gast.Attribute(value=site.args[0], attr="shape", ctx=gast.Load()),
                     const(1)), False


@batcher(np.shape)
def _shape(site: Site):
    shape = gast.Attribute(value=site.args[0], attr="shape", ctx=gast.Load())
    return subscript(shape, gast.Slice(lower=const(1), upper=None, step=None)), False


# ---------------------------------------------------------------- attributes of a batched value

def batched_attribute(value: gast.expr, attr: str):
    """(expression, batched) for `value.attr` where `value` is batched, or None."""
    def attribute(node, field):
        return gast.Attribute(value=node, attr=field, ctx=gast.Load())

    shape = attribute(value, "shape")
    if attr == "shape":
        return subscript(shape, gast.Slice(lower=const(1), upper=None, step=None)), False
    if attr == "ndim":
        return gast.BinOp(left=attribute(value, "ndim"), op=gast.Sub(), right=const(1)), False
    if attr == "size":
        return gast.BinOp(left=attribute(value, "size"), op=gast.FloorDiv(),
                          right=subscript(shape, const(0))), False
    if attr in ("dtype",):
        return attribute(value, attr), False
    if attr in ("real", "imag"):
        return attribute(value, attr), True
    return None


# ---------------------------------------------------------------- collectives over the batch

def _over_batch_nb(x, combine, finish):
    if x.ndim == 1:
        def scalars(x):
            out = x[0]
            for b in range(1, x.shape[0]):
                out = combine(out, x[b])
            return finish(out, x.shape[0])
        return scalars

    def impl(x):
        out = x[0].copy()
        for b in range(1, x.shape[0]):
            out = combine(out, x[b])
        return finish(out, x.shape[0])
    return impl


@register_jitable
def _plus(a, b):
    return a + b


@register_jitable
def _larger(a, b):
    return np.maximum(a, b)


@register_jitable
def _smaller(a, b):
    return np.minimum(a, b)


@register_jitable
def _total(a, n):
    return a


@register_jitable
def _average(a, n):
    return a / n


def _over_batch(np_fn, combine, finish, name_: str, doc: str):
    """A collective of batched `x`, `np_fn` over the batch axis; compiled, a fold of the
    examples with `combine`, then `finish(folded, size)`."""
    def python(x):
        return np_fn(x, axis=0)
    python.__name__ = python.__qualname__ = name_
    python.__doc__ = doc

    @overload(python)
    def _nb(x):
        return _over_batch_nb(x, combine, finish)
    return python


sum_batch = _over_batch(np.sum, _plus, _total, "sum_batch",
                        "`psum` of batched `x`: the sum over the batch axis.")
mean_batch = _over_batch(np.mean, _plus, _average, "mean_batch",
                         "`pmean` of batched `x`: the mean over the batch axis.")
max_batch = _over_batch(np.max, _larger, _total, "max_batch",
                        "`pmax` of batched `x`: the maximum over the batch axis.")
min_batch = _over_batch(np.min, _smaller, _total, "min_batch",
                        "`pmin` of batched `x`: the minimum over the batch axis.")


def gather_batch(x):
    """`all_gather` of batched `x`: the whole stack, the same for every example."""
    return np.array(x)


@overload(gather_batch)
def _gather_batch_nb(x):
    return lambda x: x.copy()


def times_size(x, size):
    """`psum` of an unbatched value: every example contributes the same `x`."""
    return x * size


def unchanged(x, size):
    """`pmean`/`pmax`/`pmin` of an unbatched value: the value itself."""
    return x


@overload(unchanged)
def _unchanged_nb(x, size):
    return lambda x, size: x


# kind -> (rule for a batched operand, rule for an unbatched operand (x, size))
COLLECTIVE_RULES = {
    "psum": (sum_batch, times_size),
    "pmean": (mean_batch, unchanged),
    "pmax": (max_batch, unchanged),
    "pmin": (min_batch, unchanged),
    "all_gather": (gather_batch, broadcast_batch),
}
# collective function (transformer.psum, ...) -> kind; filled by transformer.api_batching
COLLECTIVES: dict = {}
# The helpers batched again by an outer vmap (vmap of vmap): example by example.
for _helper in (sum_batch, mean_batch, max_batch, min_batch, gather_batch, times_size,
                unchanged, align, align_batched, broadcast_batch, dot_left, dot_right,
                dot_both, outer_left, outer_right, outer_both, take_batched, index_examples,
                transpose_examples, reshape_examples, ravel_examples, sum_examples,
                mean_examples, prod_examples, max_examples, min_examples, any_examples,
                all_examples, argmax_examples, argmin_examples, as_float, as_int,
                to_front, from_front):
    BATCHERS[_helper] = lambda site: _each_rule(site)


# ---------------------------------------------------------------- helpers of generated code

def over_examples(helper, flags: tuple, in_place: bool = False):
    """`helper` applied example by example: batched arguments (per `flags`) are indexed,
    the others passed whole, and the results stacked (`in_place`: results dropped, for
    helpers called for their writes, like `scatter_add`). The batching rule of last resort
    for the runtime helpers other transformations emit (`unbroadcast`, ...): under Numba
    it is a compiled loop."""
    key = (helper, flags, in_place)
    if key in _OVER_EXAMPLES:
        return _OVER_EXAMPLES[key]
    label = f"{helper.__name__}_each"
    source = _over_examples_source(label, flags, in_place)
    scope = {"helper": helper, "batch_empty": batch_empty}
    exec(compile(source, f"<batched {helper.__name__}>", "exec"), scope)
    python = scope[label]
    python.__doc__ = f"`{helper.__name__}` of each example (batched arguments: {flags})."
    python.__module__ = __name__
    overload(python)(scope["typer"])
    _OVER_EXAMPLES[key] = python
    return python


_OVER_EXAMPLES: dict = {}


def _over_examples_source(label: str, flags: tuple, in_place: bool) -> str:
    """The source of `over_examples`' function, and of the typer its overload needs."""
    params = ", ".join(f"a{i}" for i in range(len(flags)))
    first = next(i for i, f in enumerate(flags) if f)

    def args_at(index):
        return ", ".join(f"a{i}[{index}]" if f else f"a{i}" for i, f in enumerate(flags))

    if in_place:
        body = (f"    for k in range(a{first}.shape[0]):\n"
                f"        helper({args_at('k')})\n")
    else:
        body = (f"    first = helper({args_at(0)})\n"
                f"    out = batch_empty(a{first}.shape[0], first)\n"
                f"    out[0] = first\n"
                f"    for k in range(1, a{first}.shape[0]):\n"
                f"        out[k] = helper({args_at('k')})\n"
                f"    return out\n")
    return f"def {label}({params}):\n{body}def typer({params}):\n    return {label}\n"


def _each_rule(site: Site):
    if site.keywords:
        return None
    helper = over_examples(site.key, tuple(site.batched), in_place=site.statement)
    return site.helper(helper, *site.args), not site.statement


def _cast_like_rule(site: Site):
    if site.keywords or len(site.args) != 2:
        return None
    return call(site.ref(site.key), *site.args), site.batched[0]


def _register_runtime_rules():
    from transformer import runtime
    for helper_name in runtime.__all__:
        BATCHERS.setdefault(getattr(runtime, helper_name), _each_rule)
    BATCHERS[runtime.cast_like] = _cast_like_rule
    RESULT_FLAGS[runtime.cast_like] = lambda flags: flags[0]
    preserving(runtime.zeros_like)
    for key, whole in [(runtime.reduce_sum, sum_examples), (runtime.reduce_mean, mean_examples),
                       (runtime.reduce_max, max_examples), (runtime.reduce_min, min_examples),
                       (runtime.reduce_prod, prod_examples)]:
        reduction(key, whole)


def _grad_left(g, a, b):
    """Per example `matmul_grad_left(g[k], a, b[k])`: for a matrix times a vector, the
    outer product of each example's `g` and `b`, written once into the batch."""
    if np.ndim(a) == 2 and np.ndim(b) == 2:
        return outer_both(g, b)
    return over_examples(_runtime().matmul_grad_left, (True, False, True))(g, a, b)


def _grad_left_fixed(g, a, b):
    """Per example `matmul_grad_left(g[k], a, b)` with `b` shared."""
    if np.ndim(a) == 2 and np.ndim(b) == 1:
        return outer_left(g, b)
    return over_examples(_runtime().matmul_grad_left, (True, False, False))(g, a, b)


def _grad_right(g, a, b):
    """Per example `matmul_grad_right(g[k], a, b[k])`: `a.T @ g[k]` for every example is
    one matrix product `g @ a`."""
    if np.ndim(a) == 2 and np.ndim(g) == 2:
        return g @ a
    return over_examples(_runtime().matmul_grad_right, (True, False, True))(g, a, b)


@overload(_grad_left)
def _grad_left_nb(g, a, b):
    if _ndim(a) == 2 and _ndim(b) == 2:
        return lambda g, a, b: outer_both(g, b)
    fallback = over_examples(_runtime().matmul_grad_left, (True, False, True))
    return lambda g, a, b: fallback(g, a, b)


@overload(_grad_left_fixed)
def _grad_left_fixed_nb(g, a, b):
    if _ndim(a) == 2 and _ndim(b) == 1:
        return lambda g, a, b: outer_left(g, b)
    fallback = over_examples(_runtime().matmul_grad_left, (True, False, False))
    return lambda g, a, b: fallback(g, a, b)


@overload(_grad_right)
def _grad_right_nb(g, a, b):
    if _ndim(a) == 2 and _ndim(g) == 2 and _numpy_product(g, a) is not None:
        product = _numpy_product(g, a)
        return lambda g, a, b: product(g, a)
    if _ndim(a) == 2 and _ndim(g) == 2:
        return lambda g, a, b: np.dot(_contig(g), _contig(a))
    fallback = over_examples(_runtime().matmul_grad_right, (True, False, True))
    return lambda g, a, b: fallback(g, a, b)


def _runtime():
    from transformer import runtime
    return runtime


def unbroadcast_examples(g, x):
    """Per example `unbroadcast(g[k], x[k])`; `g` itself when the shapes already agree."""
    if np.shape(g) == np.shape(x):
        return g
    return over_examples(_runtime().unbroadcast, (True, True))(g, x)


def unbroadcast_to_shared(g, x):
    """Per example `unbroadcast(g[k], x)` for an unbatched `x`."""
    if np.shape(g)[1:] == np.shape(x):
        return g
    return over_examples(_runtime().unbroadcast, (True, False))(g, x)


def _unbroadcast_nb(g, x, batched_x: bool):
    fallback = over_examples(_runtime().unbroadcast, (True, batched_x))
    rank = _ndim(x) if batched_x else _ndim(x) + 1
    same_dtype = isinstance(g, types.Array) and isinstance(x, types.Array) and \
        g.dtype == x.dtype
    if not (isinstance(g, types.Array) and g.ndim == rank and same_dtype and g.layout == "C"):
        return lambda g, x: fallback(g, x)
    skip = 0 if batched_x else 1

    def impl(g, x):
        if g.shape[skip:] == x.shape:
            return g
        return fallback(g, x)
    return impl


@overload(unbroadcast_examples)
def _unbroadcast_examples_nb(g, x):
    return _unbroadcast_nb(g, x, True)


@overload(unbroadcast_to_shared)
def _unbroadcast_to_shared_nb(g, x):
    return _unbroadcast_nb(g, x, False)


def _unbroadcast_rule(site: Site):
    if site.keywords or len(site.args) != 2 or site.batched[1] and not site.batched[0]:
        return _each_rule(site)
    helper = unbroadcast_examples if site.batched[1] else unbroadcast_to_shared
    return site.helper(helper, *site.args), True


def _matmul_grad_rule(special: dict):
    def rule(site: Site):
        helper = special.get(tuple(site.batched))
        if helper is None or site.keywords:
            return _each_rule(site)
        return site.helper(helper, *site.args), True
    return rule


def update_examples_in_place(target, value):
    """`update_in_place` of every example: an example that is an array (the batched
    `target` has more than the batch axis) is written in place, a number is rebound."""
    if np.ndim(target) <= 1:
        return value
    target[...] = value
    return target


@overload(update_examples_in_place)
def _update_examples_in_place_nb(target, value):
    if target.ndim <= 1:
        return lambda target, value: value

    def impl(target, value):
        target[...] = value
        return target
    return impl


def _update_in_place_rule(site: Site):
    """`z += v` with `z` batched: each example updated as NumPy would; an unbatched array
    cannot take batched values in place."""
    target, value = site.args
    if not site.batched[0]:
        return None
    if not site.batched[1]:
        value = site.helper(broadcast_batch, value, site.size)
    return site.helper(update_examples_in_place, target, value), True


def _register_reverse_rules():
    runtime = _runtime()
    MUTATES[runtime.scatter_add] = 0
    BATCHERS[runtime.update_in_place] = _update_in_place_rule
    BATCHERS[runtime.unbroadcast] = _unbroadcast_rule
    BATCHERS[runtime.matmul_grad_left] = _matmul_grad_rule(
        {(True, False, True): _grad_left, (True, False, False): _grad_left_fixed})
    BATCHERS[runtime.matmul_grad_right] = _matmul_grad_rule(
        {(True, False, True): _grad_right})
    try:
        from transformer import reverse
    except ImportError:          # reverse mode not installed in a partial checkout
        return
    BATCHERS[reverse.unit_cotangent] = lambda site: (
        site.helper(runtime.cast_like, const(1.0), site.args[0]), False)
    RESULT_FLAGS[reverse.unit_cotangent] = lambda flags: False
    preserving(reverse.float_zeros)


_register_runtime_rules()
_register_reverse_rules()


# ====================================================================== derivatives
# Adjoint and tangent templates for the helpers above, so that generated batched code can
# itself be differentiated: grad of a function that calls a vmapped function, jvp of a
# vmap. (Template language: `transformer.templates`.)

def spread_examples(g, x):
    """Each example's scalar `g[k]` repeated over the shape of example `x[k]`."""
    return np.broadcast_to(align_batched(g, x), np.shape(x)).copy()


@overload(spread_examples)
def _spread_examples_nb(g, x):
    def impl(g, x):
        out = np.empty(x.shape, g.dtype)
        for k in range(x.shape[0]):
            out[k] = g[k]
        return out
    return impl


def spread_mean(g, x):
    """The adjoint of `mean_examples`: `g[k]` spread over example `k`, divided by its size."""
    count = np.size(x) // np.shape(x)[0]
    return spread_examples(g, x) / np.asarray(count, dtype=np.asarray(g).dtype)


@overload(spread_mean)
def _spread_mean_nb(g, x):
    def impl(g, x):
        return spread_examples(g, x) / (x.size // x.shape[0])
    return impl


def spread_batch_mean(g, x):
    """The adjoint of `pmean` (`mean_batch`): `g / size` for every example."""
    return broadcast_batch(g, np.shape(x)[0]) / np.shape(x)[0]


@overload(spread_batch_mean)
def _spread_batch_mean_nb(g, x):
    return lambda g, x: broadcast_batch(g, x.shape[0]) / x.shape[0]


@register_jitable
def _shared_index(index, k):
    return index


@register_jitable
def _own_index(index, k):
    return index[k]


def _scatter_examples(index_of, name_: str, doc: str):
    """`g[k]` added into zeros shaped like `x` at `index_of(index, k)`, for each example
    `k`: the adjoint of a gather from each example."""
    def python(g, x, index):
        out = np.zeros(np.shape(x), np.asarray(g).dtype)
        for k in range(np.shape(x)[0]):
            np.add.at(out[k], index_of(index, k), g[k])
        return out
    python.__name__ = python.__qualname__ = name_
    python.__doc__ = doc

    @overload(python)
    def _nb(g, x, index):
        scatter = _runtime().scatter_add

        def impl(g, x, index):
            out = np.zeros(x.shape, g.dtype)
            for k in range(x.shape[0]):
                scatter(out[k], index_of(index, k), g[k])
            return out
        return impl
    return python


index_examples_grad = _scatter_examples(
    _shared_index, "index_examples_grad",
    "The adjoint of `index_examples(x, index)`: `g` added into zeros shaped like `x`.")
take_batched_grad = _scatter_examples(
    _own_index, "take_batched_grad",
    "The adjoint of `take_batched(x, index)`: each example's `g` added at its index.")


_ADJOINT_RULES = {
    (align, align_batched): "def rule(z, x, ref):\n    d[x] += reshape_like(d[z], x)",
    (sum_examples,): "def rule(z, x):\n    d[x] += spread_examples(d[z], x)",
    (mean_examples,): "def rule(z, x):\n    d[x] += spread_mean(d[z], x)",
    (dot_right,): "def rule(z, a, b):\n    d[a] += sum_batch(left_of_right(d[z], a, b))\n"
                  "    d[b] += _grad_right(d[z], a, b)",
    (dot_left,): "def rule(z, a, b):\n    d[a] += left_of_left(d[z], a, b)\n"
                 "    d[b] += sum_batch(right_of_left(d[z], a, b))",
    (dot_both,): "def rule(z, a, b):\n    d[a] += left_of_both(d[z], a, b)\n"
                 "    d[b] += right_of_both(d[z], a, b)",
    (broadcast_batch,): "def rule(z, v, size):\n    d[v] += sum_batch(d[z])",
    (to_front,): "def rule(z, x, axis):\n    d[x] += from_front(d[z], axis)",
    (from_front,): "def rule(z, x, axis):\n    d[x] += to_front(d[z], axis)",
    (index_examples,): "def rule(z, x, index):\n"
                       "    d[x] += index_examples_grad(d[z], x, index)",
    (take_batched,): "def rule(z, x, index):\n    d[x] += take_batched_grad(d[z], x, index)",
    (transpose_examples,): "def rule(z, x):\n    d[x] += transpose_examples(d[z])",
    (reshape_examples,): "def rule(z, x, shape):\n    d[x] += reshape_like(d[z], x)",
    (ravel_examples,): "def rule(z, x):\n    d[x] += reshape_like(d[z], x)",
    (as_float, gather_batch): "def rule(z, x):\n    d[x] += d[z]",
    (sum_batch,): "def rule(z, x):\n    d[x] += broadcast_batch(d[z], x.shape[0])",
    (mean_batch,): "def rule(z, x):\n    d[x] += spread_batch_mean(d[z], x)",
    (times_size,): "def rule(z, x, size):\n    d[x] += times_size(d[z], size)",
    (unchanged,): "def rule(z, x, size):\n    d[x] += d[z]",
}
_TANGENT_RULES = {
    (align,): "def rule(z, x, ref):\n    d[z] = align(d[x], ref)",
    (align_batched,): "def rule(z, x, ref):\n    d[z] = align_batched(d[x], ref)",
    (dot_right,): "def rule(z, a, b):\n    d[z] = dot_right(d[a], b)\n"
                  "    d[z] = dot_right(a, d[b])",
    (dot_left,): "def rule(z, a, b):\n    d[z] = dot_left(d[a], b)\n"
                 "    d[z] = dot_left(a, d[b])",
    (dot_both,): "def rule(z, a, b):\n    d[z] = dot_both(d[a], b)\n"
                 "    d[z] = dot_both(a, d[b])",
    (outer_left,): "def rule(z, a, b):\n    d[z] = outer_left(d[a], b)\n"
                   "    d[z] = outer_left(a, d[b])",
    (outer_right,): "def rule(z, a, b):\n    d[z] = outer_right(d[a], b)\n"
                    "    d[z] = outer_right(a, d[b])",
    (outer_both,): "def rule(z, a, b):\n    d[z] = outer_both(d[a], b)\n"
                   "    d[z] = outer_both(a, d[b])",
    (broadcast_batch,): "def rule(z, v, size):\n    d[z] = broadcast_batch(d[v], size)",
    (times_size,): "def rule(z, x, size):\n    d[z] = times_size(d[x], size)",
    (unchanged,): "def rule(z, x, size):\n    d[z] = d[x]",
    (to_front,): "def rule(z, x, axis):\n    d[z] = to_front(d[x], axis)",
    (from_front,): "def rule(z, x, axis):\n    d[z] = from_front(d[x], axis)",
    (index_examples,): "def rule(z, x, index):\n    d[z] = index_examples(d[x], index)",
    (take_batched,): "def rule(z, x, index):\n    d[z] = take_batched(d[x], index)",
    (reshape_examples,): "def rule(z, x, shape):\n    d[z] = reshape_examples(d[x], shape)",
}


def _register_derivatives():
    from transformer import templates
    runtime = _runtime()
    each = {name_: over_examples(getattr(runtime, f), flags) for name_, f, flags in [
        ("left_of_left", "matmul_grad_left", (True, True, False)),
        ("right_of_left", "matmul_grad_right", (True, True, False)),
        ("left_of_right", "matmul_grad_left", (True, False, True)),
        ("left_of_both", "matmul_grad_left", (True, True, True)),
        ("right_of_both", "matmul_grad_right", (True, True, True))]}
    scope = dict(globals(), reshape_like=runtime.reshape_like, **each)
    for helper in (sum_examples, mean_examples, transpose_examples, ravel_examples, as_float,
                   sum_batch, mean_batch, gather_batch):
        _TANGENT_RULES[(helper,)] = f"def rule(z, x):\n    d[z] = {helper.__name__}(d[x])"
    for keys, source in _ADJOINT_RULES.items():
        rule = templates.rule_from_source(source, scope)
        for key in keys:
            templates.ADJOINTS[key] = rule
    for keys, source in _TANGENT_RULES.items():
        rule = templates.rule_from_source(source, scope)
        for key in keys:
            templates.TANGENTS[key] = rule
    templates.nondifferentiable(check_size, check_examples, batch_size_of, batch_empty,
                                argmax_examples, argmin_examples, any_examples, all_examples,
                                as_int)


_register_derivatives()
