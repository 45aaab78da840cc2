"""Shape operations and their adjoints: reshape, transpose, moveaxis, squeeze, flip, tile,
repeat, concatenate / hstack / vstack / column_stack of a list, and the parts of
concatenate / stack / hstack / vstack a gradient is split into.
"""
from __future__ import annotations

import numpy as np
from numba import literal_unroll, literally, types
from numba.core.errors import TypingError
from numba.core.imputils import impl_ret_borrowed
from numba.np.numpy_support import as_dtype
from transformer.runtime.allocation import empty_array, zeros_array
from transformer.runtime.numba_api import intrinsic, overload, register_jitable
from numba.np.unsafe.ndarray import to_fixed_tuple

from .broadcasting import unbroadcast
from .casts import _is_none, _is_scalar, cast_like
from .kernels import _c_strides, _gather, _reduce_into, _removed, axis_mask
from .views import reshape_strides, resolved_dims, strided_view


def reshape(a, shape):
    """np.reshape that also accepts non-contiguous arrays under Numba: a view where NumPy
    makes one (`views`), else a copy."""
    return np.reshape(a, shape)


@overload(reshape)
def _reshape_nb(a, shape):
    if not isinstance(a, types.Array) or a.layout == "C":
        return lambda a, shape: np.ascontiguousarray(a).reshape(shape)   # a view
    if isinstance(shape, types.Integer):
        return lambda a, shape: reshape(a, (shape,))
    rank = len(shape)

    def impl(a, shape):
        dims, strides = np.empty(rank, np.int64), np.empty(rank, np.int64)
        if resolved_dims(a.size, shape, dims):
            if reshape_strides(a.shape, a.strides, a.itemsize, dims, strides):
                return strided_view(a, to_fixed_tuple(dims, rank),
                                    to_fixed_tuple(strides, rank), 0)
        return np.ascontiguousarray(a).reshape(shape)       # NumPy copies too (or raises)
    return impl


def reshape_like(g, x):
    """``g`` reshaped to the shape of ``x`` (a scalar for a scalar ``x``)."""
    if _is_scalar(x):
        return cast_like(np.sum(g), x)
    return np.reshape(g, np.shape(x))


@overload(reshape_like)
def _reshape_like_nb(g, x):
    if not isinstance(x, types.Array):
        return lambda g, x: unbroadcast(g, x)
    return lambda g, x: np.ascontiguousarray(g).reshape(x.shape)


def transpose(a, axes=None):
    """np.transpose, also under Numba with axes=None."""
    return np.transpose(a, axes)


@overload(transpose)
def _transpose_nb(a, axes=None):
    if _is_none(axes):
        return lambda a, axes=None: np.transpose(a)
    return lambda a, axes=None: np.transpose(a, axes)


def untranspose(g, axes=None):
    """The adjoint of ``np.transpose(x, axes)``: the inverse permutation applied to ``g``."""
    return np.transpose(g, None if axes is None else np.argsort(axes))


@overload(untranspose)
def _untranspose_nb(g, axes=None):
    if _is_none(axes):
        return lambda g, axes=None: np.transpose(g)
    n = len(axes)

    def impl(g, axes=None):
        inverse = np.argsort(np.asarray(axes) % n)
        return np.transpose(g, to_fixed_tuple(inverse, n))
    return impl


def moveaxis(a, source, destination):
    """np.moveaxis for int axes, or tuples of as many of them."""
    return np.moveaxis(a, source, destination)


@overload(moveaxis)
def _moveaxis_nb(a, source, destination):
    n = a.ndim
    if isinstance(source, types.BaseTuple) or isinstance(destination, types.BaseTuple):
        if not (isinstance(source, types.UniTuple) and isinstance(destination, types.UniTuple)
                and source.count == destination.count):
            return None       # Numba retries literal tuples as UniTuples of ints
        return _moveaxes(n)

    def impl(a, source, destination):
        order = empty_array(n, np.int64)
        src, dst = source % n, destination % n
        k = 0
        for axis in range(n):
            if axis != src:
                if k == dst:
                    k += 1
                order[k] = axis
                k += 1
        order[dst] = src
        return np.transpose(a, to_fixed_tuple(order, n))
    return impl


def _moveaxes(n: int):
    """np.moveaxis of a rank-`n` array with tuples of axes: each source axis at its
    destination, the other axes in their order in the places left (NumPy's result)."""
    def impl(a, source, destination):
        order = np.full(n, -1, np.int64)
        moved = np.zeros(n, np.bool_)
        for j in range(len(source)):
            order[destination[j] % n] = source[j] % n
            moved[source[j] % n] = True
        k = 0
        for axis in range(n):
            if not moved[axis]:
                while order[k] != -1:
                    k += 1
                order[k] = axis
        return np.transpose(a, to_fixed_tuple(order, n))
    return impl


def squeeze(a, axis=None):
    """np.squeeze (under Numba the axis must be given)."""
    return np.squeeze(a, axis)


@overload(squeeze)
def _squeeze_nb(a, axis=None):
    if _is_none(axis):
        raise TypingError("squeeze under Numba: give the axis (the result rank must be known)")
    rank = a.ndim - _removed(a.ndim, axis)

    def impl(a, axis=None):          # a view, as NumPy's: the kept axes and their strides
        removed = axis_mask(a.ndim, axis)
        shape, strides = np.asarray(a.shape), np.asarray(a.strides)
        if np.any(shape[removed] != 1):
            raise ValueError("cannot select an axis to squeeze out which has size not "
                             "equal to one")
        kept = ~removed
        return strided_view(a, to_fixed_tuple(shape[kept], rank),
                            to_fixed_tuple(strides[kept], rank), 0)
    return impl


def ravel(a):
    """np.ravel; under Numba a view of an array contiguous at run time, as NumPy's (Numba's
    own copies any array it types as not contiguous, a column block `w[:, 0:n]` too)."""
    return np.ravel(a)


@overload(ravel)
def _ravel_nb(a):
    if not isinstance(a, types.Array) or a.layout == "C":
        return lambda a: np.ravel(a)

    def impl(a):
        if a.flags.c_contiguous:
            return strided_view(a, (a.size,), (a.itemsize,), 0)
        return a.flatten()
    return impl


def flip(a, axis=None):
    """np.flip."""
    return np.flip(a, axis)


@overload(flip)
def _flip_nb(a, axis=None):
    def impl(a, axis=None):          # a view, as NumPy's: flipped axes step backwards
        mask = axis_mask(a.ndim, axis)
        shape, strides = np.asarray(a.shape), np.asarray(a.strides)
        start = 0
        for k in range(a.ndim):
            if mask[k]:
                start += max(shape[k] - 1, 0) * strides[k]
                strides[k] = -strides[k]
        return strided_view(a, a.shape, to_fixed_tuple(strides, a.ndim), start)
    return impl


def tile(a, reps):
    """np.tile."""
    return np.tile(a, reps)


@register_jitable
def _tile_shapes(shape, reps):
    """(padded shape of x, shape of the tiled result) as int arrays."""
    ndim = max(shape.shape[0], reps.shape[0])
    padded = np.ones(ndim, np.int64)
    padded[ndim - shape.shape[0]:] = shape
    full = np.ones(ndim, np.int64)
    full[ndim - reps.shape[0]:] = reps
    return padded, padded * full


def _reps_rank(a, reps):
    return max(a.ndim, 1 if isinstance(reps, types.Integer) else len(reps))


@overload(tile)
def _tile_nb(a, reps):
    rank = _reps_rank(a, reps)

    def impl(a, reps):
        padded, full = _tile_shapes(np.asarray(a.shape), np.asarray(reps).reshape(-1))
        out = empty_array(np.prod(full), a.dtype)
        _gather(np.ascontiguousarray(a).ravel(), padded, out, full)
        return out.reshape(to_fixed_tuple(full, rank))
    return impl


def untile(g, x, reps):
    """The adjoint of ``np.tile(x, reps)``: the tiles of ``g`` summed, shaped like ``x``."""
    shape = np.shape(x)
    reps = (reps,) if np.ndim(reps) == 0 else tuple(reps)
    ndim = max(len(shape), len(reps))
    shape = (1,) * (ndim - len(shape)) + shape
    reps = (1,) * (ndim - len(reps)) + reps
    split = [n for pair in zip(reps, shape) for n in pair]
    total = np.reshape(g, split).sum(axis=tuple(range(0, 2 * ndim, 2)))
    return reshape_like(total, x)


@overload(untile)
def _untile_nb(g, x, reps):
    def impl(g, x, reps):
        padded, full = _tile_shapes(np.asarray(x.shape), np.asarray(reps).reshape(-1))
        out = zeros_array(x.size, g.dtype)
        _reduce_into(np.ascontiguousarray(g).ravel(), full, out, padded, 0)
        return out.reshape(x.shape)
    return impl


def repeat(a, repeats, axis=None):
    """np.repeat."""
    return np.repeat(a, repeats, axis)


def unrepeat(g, x, repeats, axis=None):
    """The adjoint of ``np.repeat(x, repeats, axis)``: each element's copies summed."""
    if np.ndim(repeats) != 0:       # a count per element (or per slice along `axis`)
        g, x = np.asarray(g), np.asarray(x)
        flat = axis is None
        moved_g = g if flat else np.moveaxis(g, axis, 0)
        moved_x = x.reshape(-1) if flat else np.moveaxis(x, axis, 0)
        out = np.zeros(moved_x.shape, np.result_type(g.dtype, x.dtype))
        np.add.at(out, np.repeat(np.arange(moved_x.shape[0]), repeats), moved_g)
        return out.reshape(x.shape) if flat else np.moveaxis(out, 0, axis)
    if axis is None:
        return reshape_like(np.reshape(g, (-1, repeats)).sum(axis=1), x)
    shape = np.shape(x)
    axis %= len(shape)
    split = shape[:axis + 1] + (repeats,) + shape[axis + 1:]
    return np.reshape(g, split).sum(axis=axis + 1)


@register_jitable
def _repeat_source(i, full, fstrides, sstrides, axis, repeats):
    """The flat source index of element ``i`` of ``np.repeat(a, repeats, axis)``."""
    j = 0
    for k in range(full.shape[0]):
        index = (i // fstrides[k]) % full[k]
        j += (index // repeats if k == axis else index) * sstrides[k]
    return j


@register_jitable
def _repeat_shapes(shape, repeats, axis):
    full = shape.copy()
    full[axis] *= repeats
    return full, _c_strides(full), _c_strides(shape)


@overload(repeat)
def _repeat_nb(a, repeats, axis=None):
    if not isinstance(repeats, types.Integer):
        raise TypingError("repeat under Numba: the count must be an int")
    flat = _is_none(axis)
    rank = 1 if flat else a.ndim

    def impl(a, repeats, axis=None):
        src = np.ascontiguousarray(a).ravel()
        shape = np.asarray(src.shape) if flat else np.asarray(a.shape)
        ax = 0 if flat else axis % a.ndim
        full, fstrides, sstrides = _repeat_shapes(shape, repeats, ax)
        out = empty_array(np.prod(full), a.dtype)
        for i in range(out.shape[0]):
            out[i] = src[_repeat_source(i, full, fstrides, sstrides, ax, repeats)]
        return out.reshape(to_fixed_tuple(full, rank))
    return impl


@overload(unrepeat)
def _unrepeat_nb(g, x, repeats, axis=None):
    flat = _is_none(axis)

    def impl(g, x, repeats, axis=None):
        src = np.ascontiguousarray(g).ravel()
        shape = np.asarray((x.size,)) if flat else np.asarray(x.shape)
        ax = 0 if flat else axis % x.ndim
        full, fstrides, sstrides = _repeat_shapes(shape, repeats, ax)
        out = zeros_array(x.size, g.dtype)
        for i in range(src.shape[0]):
            out[_repeat_source(i, full, fstrides, sstrides, ax, repeats)] += src[i]
        return out.reshape(x.shape)
    return impl


def concatenate(arrays, axis=0):
    """np.concatenate of a tuple or a list of arrays (Numba's takes a tuple only)."""
    return np.concatenate(arrays, axis)


@intrinsic
def items_tuple(typingctx, items):
    """The tuple of the items of a list literal whose items Numba cannot give one type
    (`[x, x[0]]`, `[a_float, b_int]`: a `LiteralList`, which has no element type and
    cannot be indexed by a variable), for the tuple forms of the functions below."""
    if not isinstance(items, types.LiteralList):
        raise TypingError(f"items_tuple: expected a list literal, got {items}")
    tuple_type = types.BaseTuple.from_types(items.types)

    def codegen(context, builder, sig, args):
        values = [builder.extract_value(args[0], k) for k in range(len(items.types))]
        return impl_ret_borrowed(context, builder, tuple_type,
                                 context.make_tuple(builder, tuple_type, values))
    return tuple_type(items), codegen


def same_ranks(arrays, name: str, least: int = 0) -> None:
    """Refuse at typing (a located error) a tuple or list literal of arrays of several
    ranks (each raised to at least `least`, as np.hstack and np.vstack do first), which
    NumPy's `name` refuses with a ValueError."""
    ranks = sorted({max(t.ndim, least) for t in getattr(arrays, "types", ())
                    if isinstance(t, types.Array)})
    if len(ranks) > 1:
        raise TypingError(f"{name}: all the input arrays must have the same number of "
                          f"dimensions, got arrays of rank {' and '.join(map(str, ranks))} "
                          f"(NumPy raises ValueError)")


@overload(concatenate)
def _concatenate_nb(arrays, axis=0):
    same_ranks(arrays, "np.concatenate")
    if isinstance(arrays, types.BaseTuple):
        return lambda arrays, axis=0: np.concatenate(arrays, axis)
    if isinstance(arrays, types.LiteralList):
        return lambda arrays, axis=0: concatenate(items_tuple(arrays), axis)

    def from_list(arrays, axis=0):
        ax = axis % arrays[0].ndim
        rest = moveaxis(arrays[0], ax, 0).shape[1:]
        total = 0
        for x in arrays:
            if moveaxis(x, ax, 0).shape[1:] != rest:
                raise ValueError("all the input array dimensions except for the "
                                 "concatenation axis must match exactly")
            total += x.shape[ax]
        out = empty_array((total,) + rest, arrays[0].dtype)
        start = 0
        for x in arrays:
            front = moveaxis(x, ax, 0)
            for i in range(front.shape[0]):
                out[start + i] = front[i]
            start += front.shape[0]
        return np.ascontiguousarray(moveaxis(out, 0, ax))
    return from_list


def hstack(arrays):
    """np.hstack of a tuple or a list of arrays (Numba's takes a tuple only)."""
    return np.hstack(arrays)


@overload(hstack)
def _hstack_nb(arrays):
    same_ranks(arrays, "np.hstack", 1)
    if isinstance(arrays, types.BaseTuple):
        return lambda arrays: np.hstack(arrays)
    if isinstance(arrays, types.LiteralList):
        return lambda arrays: hstack(items_tuple(arrays))
    axis = 0 if arrays.dtype.ndim == 1 else 1
    return lambda arrays: concatenate(arrays, axis)


def vstack(arrays):
    """np.vstack of a tuple or a list of arrays: Numba's takes a tuple only, of arrays of
    one rank (a vector beside a matrix is a row, as in NumPy)."""
    return np.vstack(arrays)


@overload(vstack)
def _vstack_nb(arrays):
    same_ranks(arrays, "np.vstack", 2)
    if isinstance(arrays, types.BaseTuple):
        ranks = {t.ndim for t in arrays.types if isinstance(t, types.Array)}
        if len(ranks) == 1 or not ranks <= {1, 2}:
            return lambda arrays: np.vstack(arrays)
        dtype = np.result_type(*[as_dtype(t.dtype) for t in arrays.types])

        def rows_of_tuple(arrays):
            rows, cols = 0, -1
            for x in literal_unroll(arrays):
                rows += _row_count(x)
                if cols not in (-1, x.shape[-1]):
                    raise ValueError("all the input array dimensions except for the "
                                     "concatenation axis must match exactly")
                cols = x.shape[-1]
            out = empty_array((rows, cols), dtype)
            start = 0
            for x in literal_unroll(arrays):
                _put_rows(out, start, x)
                start += _row_count(x)
            return out
        return rows_of_tuple
    if isinstance(arrays, types.LiteralList):
        return lambda arrays: vstack(items_tuple(arrays))
    if arrays.dtype.ndim != 1:
        return lambda arrays: concatenate(arrays, 0)

    def rows_of_list(arrays):
        out = empty_array((len(arrays), arrays[0].shape[0]), arrays[0].dtype)
        for k in range(len(arrays)):
            if arrays[k].shape[0] != out.shape[1]:
                raise ValueError("all the input array dimensions except for the "
                                 "concatenation axis must match exactly")
            out[k] = arrays[k]
        return out
    return rows_of_list


def _row_count(x):
    return 1 if np.ndim(x) == 1 else np.shape(x)[0]


@overload(_row_count)
def _row_count_nb(x):
    if x.ndim == 1:
        return lambda x: 1
    return lambda x: x.shape[0]


def _put_rows(out, start, x):
    out[start:start + _row_count(x)] = x


@overload(_put_rows)
def _put_rows_nb(out, start, x):
    if x.ndim == 1:
        def row(out, start, x):
            out[start] = x
        return row

    def rows(out, start, x):
        out[start:start + x.shape[0]] = x
    return rows


def column_stack(arrays):
    """np.column_stack of a tuple or a list of arrays (Numba's takes a tuple only): a
    vector is a column, a matrix its columns."""
    return np.column_stack(arrays)


@overload(column_stack)
def _column_stack_nb(arrays):
    if isinstance(arrays, types.BaseTuple):
        return lambda arrays: np.column_stack(arrays)
    if isinstance(arrays, types.LiteralList):
        return lambda arrays: column_stack(items_tuple(arrays))
    if arrays.dtype.ndim == 2:
        return lambda arrays: concatenate(arrays, 1)
    if arrays.dtype.ndim != 1:
        raise TypingError("np.column_stack under Numba: of vectors and matrices only")

    def columns_of_list(arrays):
        out = empty_array((arrays[0].shape[0], len(arrays)), arrays[0].dtype)
        for k in range(len(arrays)):
            if arrays[k].shape[0] != out.shape[0]:
                raise ValueError("all the input array dimensions except for the "
                                 "concatenation axis must match exactly")
            out[:, k] = arrays[k]
        return out
    return columns_of_list


def _part_index(g, xs, k, axis):
    """The index of the slice of ``g = np.concatenate(xs, axis)`` that came from ``xs[k]``."""
    start = sum(np.shape(xs[j])[axis] for j in range(k))
    index = [slice(None)] * np.ndim(g)
    index[axis] = slice(start, start + np.shape(xs[k])[axis])
    return tuple(index)


def concatenate_part(g, xs, k, axis=0):
    """The slice of ``g = np.concatenate(xs, axis)`` that came from ``xs[k]`` (with
    axis=None, of the flattened arrays, in ``xs[k]``'s shape)."""
    if axis is None:
        start = sum(np.size(xs[j]) for j in range(k))
        return np.reshape(g[start:start + np.size(xs[k])], np.shape(xs[k]))
    return g[_part_index(g, xs, k, axis)]


@overload(concatenate_part)
def _concatenate_part_nb(g, xs, k, axis=0):
    def impl(g, xs, k, axis=0):
        start, n = _part_span(xs, k, axis)
        front = moveaxis(g, axis, 0)[start:start + n]
        return np.ascontiguousarray(moveaxis(front, 0, axis))
    return impl


@register_jitable
def _part_span(xs, k, axis):
    """(start, length) along `axis` of the part of ``np.concatenate(xs, axis)`` from
    ``xs[k]``."""
    start, n, j = 0, 0, 0
    for x in literal_unroll(xs):
        if j < k:
            start += x.shape[axis]
        elif j == k:
            n = x.shape[axis]
        j += 1  # noqa: SIM113  (literal_unroll loops cannot enumerate)
    return start, n


def stack_part(g, k, axis=0):
    """The part of ``g = np.stack(xs, axis)`` that came from ``xs[k]``."""
    return np.take(g, k, axis)


@overload(stack_part)
def _stack_part_nb(g, k, axis=0):
    return lambda g, k, axis=0: np.ascontiguousarray(moveaxis(g, axis, 0)[k])


def hstack_part(g, xs, k):
    """The part of ``g = np.hstack(xs)`` that came from ``xs[k]``."""
    return concatenate_part(g, [np.atleast_1d(x) for x in xs], k, 0 if np.ndim(g) == 1 else 1)


def vstack_part(g, xs, k):
    """The part of ``g = np.vstack(xs)`` that came from ``xs[k]``."""
    part = concatenate_part(g, [np.atleast_2d(x) for x in xs], k, 0)
    return reshape_like(part, xs[k])


@overload(hstack_part)
def _hstack_part_nb(g, xs, k):
    axis = 0 if g.ndim == 1 else 1
    return lambda g, xs, k: concatenate_part(g, xs, k, axis)


@register_jitable
def _vstack_span(xs, k):
    """(first row, row count) of item `k` of `xs` in np.vstack(xs): a vector is one row."""
    start, n, j = 0, 0, 0
    for x in literal_unroll(xs):
        count = 1 if x.ndim == 1 else x.shape[0]
        if j < k:
            start += count
        elif j == k:
            n = count
        j += 1  # noqa: SIM113  (literal_unroll loops cannot enumerate)
    return start, n


@overload(vstack_part)
def _vstack_part_nb(g, xs, k):
    if not isinstance(k, types.IntegerLiteral):
        return lambda g, xs, k: literally(k)
    item = xs.types[k.literal_value] if isinstance(xs, types.Tuple) else xs.dtype

    def rows(g, xs, k):
        start, n = _vstack_span(xs, k)
        return np.ascontiguousarray(g[start:start + n])

    rows = register_jitable(rows)
    if item.ndim == 1:
        return lambda g, xs, k: rows(g, xs, k).reshape(g.shape[1:])
    return rows


# ---------------------------------------------------------------- transposes of the parts
# zeros shaped like `g` holding `t` where the part was: the adjoints of the parts above
# (second derivatives through np.concatenate & co.), each linear in `t`

def concatenate_unpart(t, g, xs, k, axis=0):
    """The transpose of ``concatenate_part(g, xs, k, axis)`` applied to `t`."""
    out = np.zeros(np.shape(g), np.asarray(t).dtype)
    view = out[_part_index(g, xs, k, axis)]
    view[...] = np.reshape(t, view.shape)
    return out


def stack_unpart(t, g, k, axis=0):
    """The transpose of ``stack_part(g, k, axis)`` applied to `t`."""
    out = np.zeros(np.shape(g), np.asarray(t).dtype)
    index = [slice(None)] * np.ndim(g)
    index[axis] = k
    out[tuple(index)] = t
    return out


def hstack_unpart(t, g, xs, k):
    """The transpose of ``hstack_part(g, xs, k)`` applied to `t`."""
    return concatenate_unpart(t, g, [np.atleast_1d(x) for x in xs], k,
                              0 if np.ndim(g) == 1 else 1)


def vstack_unpart(t, g, xs, k):
    """The transpose of ``vstack_part(g, xs, k)`` applied to `t`."""
    return concatenate_unpart(t, g, [np.atleast_2d(x) for x in xs], k, 0)


@overload(concatenate_unpart)
def _concatenate_unpart_nb(t, g, xs, k, axis=0):
    def impl(t, g, xs, k, axis=0):
        start, n = _part_span(xs, k, axis)
        out = zeros_array(g.shape, t.dtype)
        moveaxis(out, axis, 0)[start:start + n] = moveaxis(t, axis, 0)
        return out
    return impl


@overload(stack_unpart)
def _stack_unpart_nb(t, g, k, axis=0):
    def impl(t, g, k, axis=0):
        out = zeros_array(g.shape, t.dtype)
        moveaxis(out, axis, 0)[k] = t
        return out
    return impl


@overload(hstack_unpart)
def _hstack_unpart_nb(t, g, xs, k):
    axis = 0 if g.ndim == 1 else 1
    return lambda t, g, xs, k: concatenate_unpart(t, g, xs, k, axis)


@overload(vstack_unpart)
def _vstack_unpart_nb(t, g, xs, k):
    def impl(t, g, xs, k):
        start, rows = _vstack_span(xs, k)
        out = zeros_array(g.shape, t.dtype)
        out[start:start + rows] = reshape(t, (rows,) + g.shape[1:])
        return out
    return impl
