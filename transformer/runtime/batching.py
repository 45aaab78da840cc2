"""Runtime helpers of batched code: how a value with a leading batch axis is aligned,
reduced, multiplied, indexed and reshaped example by example.

Generated code never knows ranks (the source is written before any argument is seen), so
rank-dependent steps go through these helpers. Each is a plain NumPy function with a
`numba.extending.overload` that picks its implementation from the Numba types, so inside
compiled code a helper whose ranks already agree costs nothing. The batching rules that
emit them live in `transformer.rules.batching`. Imports only NumPy, Numba, `math` and the
runtime package.
"""
from __future__ import annotations

import numba
import numpy as np
from numpy.lib.stride_tricks import as_strided
from numba import types
from numba.core.errors import TypingError
from numba.np.unsafe.ndarray import to_fixed_tuple
from transformer.runtime.allocation import dtype_of, empty_array, full_array, \
    large_empty_array
from transformer.runtime.numba_api import overload, register_jitable

from . import numpy_blas
from .views import contiguous
from .alignment import _ndim, align, align_batched  # noqa: F401  (align*: re-exported)
from .reductions import sum_all
from .batch_buffers import batch_empty, batch_result  # noqa: F401  (the loop strategy's)
from .identity_batches import identity_batch, identity_batch_last  # noqa: F401

# ====================================================================== runtime helpers


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
            out = empty_array((size,) + value.shape, value.dtype)
            for b in range(size):
                out[b] = value
            return out
        return impl
    dtype = numba.np.numpy_support.as_dtype(value).type
    return lambda value, size: full_array(size, value, dtype)


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
    if not -np.ndim(x) <= axis < np.ndim(x):
        raise ValueError(_out_of_range(axis, np.ndim(x)))
    return np.moveaxis(x, 0, axis)


def _out_of_range(axis: int, ndim: int) -> str:
    return (f"vmap out_axes {axis} is out of range for a result of rank {ndim} (the "
            f"mapped axis included): use an axis from {-ndim} to {ndim - 1}")


def _moved_nb(x, axis, forward: bool):
    if not isinstance(x, types.Array):
        raise TypingError("vmap: the mapped axis of a scalar")
    ndim = x.ndim
    value = axis.literal_value if isinstance(axis, types.IntegerLiteral) else None
    if value is None:
        raise TypingError("vmap: in_axes/out_axes must be constants")
    if not forward and not -ndim <= value < ndim:
        raise TypingError(_out_of_range(value, ndim))
    value %= ndim
    order = list(range(ndim))
    if forward:
        order = [value] + [a for a in order if a != value]
    else:
        order = order[1:value + 1] + [0] + order[value + 1:]
    return _static_transpose(tuple(order), "x, axis")


def _static_transpose(perm: tuple, params: str):
    """An implementation taking `params` that returns `np.transpose(x, perm)` for the
    constant permutation `perm`, as a view: `x.T`, or `as_strided` with the permuted shape
    and strides (`np.transpose` with axes compiles its checks and their messages, ~4 s in
    every function calling it)."""
    if perm == tuple(range(len(perm))):
        body = "x"
    elif perm == (1, 0):
        body = "x.T"
    else:
        shape = "".join(f"x.shape[{p}], " for p in perm)
        strides = "".join(f"x.strides[{p}], " for p in perm)
        body = f"as_strided(x, shape=({shape}), strides=({strides}))"
    scope = {"as_strided": as_strided}
    exec(f"def impl({params}):\n    return {body}\n", scope)
    return scope["impl"]


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
    if isinstance(axis, types.UniTuple) and isinstance(axis.dtype, types.Integer):
        count = axis.count

        def each(axis):             # a tuple of ints: each axis moved past the batch axis
            moved = np.empty(count, np.int64)
            for k in range(count):
                moved[k] = axis[k] + 1 if axis[k] >= 0 else axis[k]
            return to_fixed_tuple(moved, count)
        return each
    raise TypingError("vmap: a reduction axis must be an int or a tuple of ints here")


def example_axes(x):
    """Every axis of batched `x` but the batch axis (for whole-example reductions)."""
    return tuple(range(1, np.ndim(x)))


_EXTREMES = {"max_examples": (True, "zero-size array to reduction operation maximum which "
                                     "has no identity"),
             "min_examples": (False, "zero-size array to reduction operation minimum which "
                                     "has no identity")}


def _extreme_nb(larger: bool, empty: str):
    """`np.max` (`larger`) or `np.min` of each row of a matrix as Numba's own runs it (a NaN
    is the result as soon as it is met, else the first extreme value), in one loop: Numba's
    form compiles an `nditer` and `take` per type, a third of a second."""
    def impl(x):
        n = x.shape[1]
        if n == 0:
            raise ValueError(empty)
        out = empty_array(x.shape[0], x.dtype)
        for b in range(x.shape[0]):
            best = x[b, 0]
            if best == best:                            # not NaN
                for i in range(1, n):
                    v = x[b, i]
                    if v != v:
                        best = v
                        break
                    if (v > best) if larger else (v < best):
                        best = v
            out[b] = best
        return out
    return impl


def _whole_example(np_fn, name_: str, doc: str, compiled=None):
    """A reduction of each example over all its axes, e.g. `sum_examples(x)`; under Numba
    `compiled` (same results) reduces each example, if given, else `np_fn`."""
    each = compiled or np_fn

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
        if name_ in _EXTREMES and x.ndim == 2 and isinstance(x.dtype, (types.Float,
                                                                         types.Integer)):
            return _extreme_nb(*_EXTREMES[name_])

        def impl(x):
            first = each(x[0])
            out = empty_array(x.shape[0], dtype_of(first))
            out[0] = first
            for b in range(1, x.shape[0]):
                out[b] = each(x[b])
            return out
        return impl
    return python


sum_examples = _whole_example(np.sum, "sum_examples", "np.sum of each example.", sum_all)
mean_examples = _whole_example(np.mean, "mean_examples", "np.mean of each example.")
prod_examples = _whole_example(np.prod, "prod_examples", "np.prod of each example.")
max_examples = _whole_example(np.max, "max_examples", "np.max of each example.")
min_examples = _whole_example(np.min, "min_examples", "np.min of each example.")
any_examples = _whole_example(np.any, "any_examples", "np.any of each example.")
all_examples = _whole_example(np.all, "all_examples", "np.all of each example.")


def _arg_nb(np_fn):
    def impl(x):
        out = empty_array(x.shape[0], np.int64)
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


@overload(dot_left)
def _dot_left_nb(a, b):
    if _ndim(b) == 0 or _ndim(a) == 1:
        return lambda a, b: align(a, b) * b
    if _ndim(a) == 2 and _ndim(b) == 2 and _numpy_product(a, b) is not None:
        product = _numpy_product(a, b)                 # vectors times a matrix
        return lambda a, b: product(contiguous(a), contiguous(b), np.bool_(False))
    if _ndim(a) == 2:
        return lambda a, b: np.dot(contiguous(a), contiguous(b))
    if _ndim(a) == 3 and _ndim(b) in (1, 2):
        def impl(a, b):
            first = np.dot(contiguous(a[0]), contiguous(b))
            out = empty_array((a.shape[0],) + np.shape(first), first.dtype)
            for k in range(a.shape[0]):
                out[k] = np.dot(contiguous(a[k]), contiguous(b))
            return out
        return impl
    raise TypingError("batched np.dot: examples of rank 0, 1 or 2 only")


@overload(dot_right)
def _dot_right_nb(a, b):
    if _ndim(a) == 0 or _ndim(b) == 1:
        return lambda a, b: a * align(b, a)
    if _ndim(b) == 2 and _ndim(a) == 2 and _numpy_product(b, a) is not None:
        product = _numpy_product(b, a)                 # matrix times vectors: one product
        return lambda a, b: product(contiguous(b), contiguous(a), np.bool_(True))
    if _ndim(b) == 2 and _ndim(a) == 2:
        return lambda a, b: np.dot(contiguous(b), a.T)
    if _ndim(b) == 2 and _ndim(a) == 1:
        return lambda a, b: np.dot(contiguous(b), contiguous(a))
    if _ndim(b) == 3 and _ndim(a) in (1, 2):
        def impl(a, b):
            first = np.dot(contiguous(a), contiguous(b[0]))
            out = empty_array((b.shape[0],) + np.shape(first), first.dtype)
            for k in range(b.shape[0]):
                out[k] = np.dot(contiguous(a), contiguous(b[k]))
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
            first = np.dot(contiguous(a[0]), contiguous(b[0]))
            out = empty_array((a.shape[0],) + np.shape(first), first.dtype)
            for k in range(a.shape[0]):
                out[k] = np.dot(contiguous(a[k]), contiguous(b[k]))
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


def _numpy_product(a, b):
    """`numpy_blas.product(a, b, transpose_b)`, `a @ b` (or `a @ b.T`) of two C-contiguous
    matrices by NumPy's BLAS, when `a` and `b` have one float dtype (float32, float64);
    else None. Callers pass C-contiguous matrices (`contiguous`) and ask for `b`'s transpose
    by a flag (an `np.bool_`: a literal True and False would be two signatures), so that
    each dtype has one compiled form, whatever the layout of the arguments."""
    if a.dtype != b.dtype or a.dtype not in (types.float32, types.float64):
        return None
    return numpy_blas.for_compiled_code()


def _outer_nb(a, b, left_batched: bool, right_batched: bool):
    dtype = np.result_type(numba.np.numpy_support.as_dtype(a.dtype),
                           numba.np.numpy_support.as_dtype(b.dtype))
    allocate = _large_empty(dtype)
    if left_batched and right_batched and _ndim(a) == 2 and _ndim(b) == 2:
        return _outer_of_rows(allocate)         # no reshapes or copies to compile

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


def _outer_of_rows(allocate):
    """`outer_both` of two batches of vectors: `out[k] = np.outer(a[k], b[k])`."""
    def rows(a, b):
        size, n, m = a.shape[0], a.shape[1], b.shape[1]
        out = allocate((size, n, m))
        for k in range(size):
            row_b = b[k]
            for i in range(n):
                left = a[k, i]
                row = out[k, i]
                for j in range(m):
                    row[j] = left * row_b[j]
        return out
    return rows


def _large_empty(dtype):
    """The allocator of a batch of outer products: huge pages for many megabytes, as
    NumPy's (`large_empty_array`)."""
    def allocate(shape):
        return large_empty_array(shape, dtype)
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
            out = empty_array(x.shape[0], x.dtype)
            for k in range(x.shape[0]):
                out[k] = x[k, index[k]]
            return out
        return impl

    def impl_rows(x, index):
        out = empty_array((x.shape[0],) + x.shape[2:], x.dtype)
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
    return _static_transpose((0,) + tuple(range(x.ndim - 1, 0, -1)), "x")


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
