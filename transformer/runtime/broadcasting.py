"""Broadcasting and its adjoints: `unbroadcast` sums a gradient back to an operand's
shape, `broadcast_like` / `broadcast_reduced` spread one out again; `scatter_add` and
`inside` serve indexed reads and clips.
"""
from __future__ import annotations

import numpy as np
from numba import types
from numba.core.errors import TypingError
from transformer.runtime.allocation import empty_array, full_array, zeros_array
from transformer.runtime.numba_api import overload, register_jitable
from numba.np.numpy_support import as_dtype

from .casts import _is_none, _is_scalar, _nb_float, cast_like, own_copy
from .kernels import _axes, _gather, _numba_sum, _reduce_into, axis_mask
from .wide_sums import is_float32_array, wide_sum


def unbroadcast(g, x):
    """Sum ``g`` down to the shape of ``x`` (the adjoint of broadcasting ``x``)."""
    if _is_scalar(x):
        return cast_like(np.sum(g), x)
    g = np.asarray(g)
    shape = np.shape(x)
    if g.shape == shape:
        return g
    if g.ndim < len(shape):
        return np.broadcast_to(g, shape).copy()
    g = np.sum(g, axis=tuple(range(g.ndim - len(shape))))
    return _fold_same_rank(g, shape)


@overload(unbroadcast)
def _unbroadcast_nb(g, x):
    # the implementation is chosen by rank at typing time: most adjoints have the shape of
    # their primal, and the generic fold costs seconds of compile and allocations per call
    if not isinstance(x, types.Array):
        target = as_dtype(_nb_float(x)).type
        if is_float32_array(g):
            return lambda g, x: target(wide_sum(g))     # added in float64, as `sum_all`
        if isinstance(g, types.Array):
            total = _numba_sum()    # Numba's np.sum(g) loop itself: no axis checks compiled
            return lambda g, x: target(total(g, None, None))
        return lambda g, x: target(g)
    if not isinstance(g, types.Array) or g.ndim < x.ndim:
        return lambda g, x: broadcast_like(g, x)
    if g.ndim == x.ndim and g.layout == "C":
        def same_rank(g, x):
            if g.shape == x.shape:
                return g
            return _fold_same_rank(g, x.shape)
        return same_rank
    if g.ndim == x.ndim:
        def same_rank_strided(g, x):      # one C-contiguous result type for both branches
            if g.shape == x.shape:
                return np.ascontiguousarray(g)
            return _fold_same_rank(g, x.shape)
        return same_rank_strided

    def impl(g, x):
        out = zeros_array(x.size, g.dtype)
        _reduce_into(np.ascontiguousarray(g).ravel(), np.asarray(g.shape), out,
                     _padded_shape(x.shape, g.ndim), 0)
        return out.reshape(x.shape)
    return impl


@register_jitable
def _padded_shape(shape, ndim):
    """``shape`` with leading ones up to ``ndim`` axes, as an int array (a loop: a slice
    assignment pulls in Numba's shape-mismatch error formatting, seconds of compile)."""
    out = np.ones(ndim, np.int64)
    for k in range(len(shape)):
        out[ndim - len(shape) + k] = shape[k]
    return out


def _fold_same_rank(g, shape):
    """``g`` summed over the axes where ``shape`` has length 1, keeping them."""
    axes = tuple(k for k, n in enumerate(shape) if n == 1 and g.shape[k] != 1)
    return np.sum(g, axis=axes, keepdims=True) if axes else g


@overload(_fold_same_rank)
def _fold_same_rank_nb(g, shape):
    dtype = as_dtype(g.dtype).type   # a class, as zeros_like passes: one np.zeros compile
    if g.ndim == 1:
        def vector(g, shape):
            out = zeros_array(shape, dtype)
            n = shape[0]
            for i in range(g.shape[0]):
                out[i % n] += g[i]
            return out
        return vector
    if g.ndim == 2:
        def matrix(g, shape):
            out = zeros_array(shape, dtype)
            n0, n1 = shape
            for i in range(g.shape[0]):
                for j in range(g.shape[1]):
                    out[i % n0, j % n1] += g[i, j]
            return out
        return matrix

    def any_rank(g, shape):
        out = zeros_array(shape, dtype)
        _reduce_into(np.ascontiguousarray(g).ravel(), np.asarray(g.shape),
                     out.reshape(out.size), np.asarray(shape), 0)
        return out
    return any_rank


def broadcast_like(t, z):
    """``t`` broadcast to the shape of ``z``, as an owned array (scalar for scalar ``z``).

    Owned even when ``t`` already has that shape: ``t`` may be a view of an array that a
    later in-place write changes (the tangent of ``a + g[1:]`` with ``a``'s tangent zero is
    this of ``dg[1:]``), as the compiled form's result is a new array too.
    """
    if _is_scalar(z):
        return t
    if np.shape(t) == np.shape(z):
        return t.copy() if isinstance(t, np.ndarray) else t
    return np.broadcast_to(t, np.shape(z)).copy()


@overload(broadcast_like)
def _broadcast_like_nb(t, z):
    if not isinstance(z, types.Array):
        return lambda t, z: t
    if not isinstance(t, types.Array):
        scalar = as_dtype(t).type
        return lambda t, z: full_array(z.shape, t, scalar)
    # ranks 1 and 2 by direct loops: the generic gather below costs ~1 s of compile in
    # every caller (its helpers are compiled, linked and optimized again at each level)
    dtype = as_dtype(t.dtype).type   # a class and a shape tuple, as zeros_like passes:
    if z.ndim == 1 and t.ndim == 1:  # one np.empty compile serves them all
        def vector(t, z):
            n, m = z.shape[0], t.shape[0]
            out = empty_array((n,), dtype)
            if m == n:                  # a copy: no division per element
                for i in range(n):
                    out[i] = t[i]
            else:
                for i in range(n):
                    out[i] = t[i % m]
            return out
        return vector
    if z.ndim == 2 and t.ndim == 2:
        def matrix(t, z):
            n0, n1 = z.shape
            m0, m1 = t.shape
            out = empty_array((n0, n1), dtype)
            for i in range(n0):
                row = i % m0
                if m1 == n1:
                    for j in range(n1):
                        out[i, j] = t[row, j]
                else:
                    for j in range(n1):
                        out[i, j] = t[row, j % m1]
            return out
        return matrix
    if z.ndim == 2 and t.ndim == 1:
        def rows(t, z):
            n0, n1 = z.shape
            m = t.shape[0]
            out = empty_array((n0, n1), dtype)
            for i in range(n0):
                if m == n1:
                    for j in range(n1):
                        out[i, j] = t[j]
                else:
                    for j in range(n1):
                        out[i, j] = t[j % m]
            return out
        return rows

    def impl(t, z):
        out = empty_array(z.size, t.dtype)
        _gather(np.ascontiguousarray(t).ravel(), _padded_shape(t.shape, z.ndim), out,
                np.asarray(z.shape))
        return out.reshape(z.shape)
    return impl


def broadcast_reduced(g, x, axis=None, keepdims=False):
    """Spread ``g``, the result of reducing ``x`` over ``axis``, back to the shape of ``x``."""
    if _is_scalar(x):
        return g
    g = np.asarray(g)
    if not keepdims:
        g = np.expand_dims(g, _axes(np.ndim(x), axis)) if g.ndim else g
    return np.broadcast_to(g, np.shape(x)).copy()


@overload(broadcast_reduced)
def _broadcast_reduced_nb(g, x, axis=None, keepdims=False):
    if not isinstance(x, types.Array):
        return lambda g, x, axis=None, keepdims=False: g
    if not isinstance(g, types.Array):
        scalar = as_dtype(g).type
        return lambda g, x, axis=None, keepdims=False: full_array(x.shape, g, scalar)
    # direct loops for ranks 1 and 2 (the generic gather costs over a second of compile):
    # `g` of `x`'s rank kept the reduced axes, so it spreads as `broadcast_like` spreads it
    if g.ndim == x.ndim and x.ndim <= 2:
        return lambda g, x, axis=None, keepdims=False: broadcast_like(g, x)
    if g.ndim == 1 and x.ndim == 2 and isinstance(axis, types.Integer):
        dtype = as_dtype(g.dtype).type

        def dropped(g, x, axis=None, keepdims=False):
            n0, n1 = x.shape
            rows = axis % 2 == 0        # axis 0 reduced: g holds one value per column
            out = empty_array((n0, n1), dtype)
            for i in range(n0):
                for j in range(n1):
                    out[i, j] = g[j] if rows else g[i]
            return out
        return dropped

    def impl(g, x, axis=None, keepdims=False):
        shape = np.asarray(x.shape)
        gshape = shape.copy()
        gshape[axis_mask(x.ndim, axis)] = 1
        out = empty_array(x.size, g.dtype)
        _gather(np.ascontiguousarray(g).ravel(), gshape, out, shape)
        return out.reshape(x.shape)
    return impl


def scatter_add(target, index, values) -> None:
    """``target[index] += values`` accumulating repeated indices (``np.add.at``)."""
    np.add.at(target, index, values)


@overload(scatter_add)
def _scatter_add_nb(target, index, values):
    vector = isinstance(values, types.Array)
    if isinstance(index, types.Array) and isinstance(index.dtype, types.Boolean):
        if index.ndim != 1 and index.ndim != target.ndim:
            raise TypingError("scatter_add: a boolean mask must be 1-D or cover every axis")
        whole = index.ndim == target.ndim

        def masked(target, index, values):
            flat = target.reshape(-1) if whole else target
            mask = index.reshape(-1)
            vals = values.reshape(-1) if whole and vector else values
            n = 0
            for i in range(mask.shape[0]):
                if mask[i]:
                    flat[i] += vals[n] if vector else vals
                    n += 1
        return masked
    if isinstance(index, types.Array):
        def gathered(target, index, values):
            flat = index.ravel()
            if vector:
                vals = np.ascontiguousarray(values).reshape((flat.shape[0],) + target.shape[1:])
                for i in range(flat.shape[0]):
                    target[flat[i]] += vals[i]
            else:
                for i in range(flat.shape[0]):
                    target[flat[i]] += values
        return gathered

    if isinstance(index, types.BaseTuple) and any(
            isinstance(t, types.Array) and isinstance(t.dtype, types.Integer)
            for t in index.types):
        # an index array among slices and ints (`x[:, idx]`, `x[idx, 1]`): `+=` would add
        # a repeated position once. Each value's flat position in `target`, read through
        # the same index, says where to add it.
        def spread(target, index, values):
            places = np.arange(target.size).reshape(target.shape)[index]
            flat = places.reshape(-1)
            vals = np.ascontiguousarray(np.broadcast_to(values, places.shape)).reshape(-1)
            added = np.zeros(target.size, target.dtype)
            for k in range(flat.shape[0]):
                added[flat[k]] += vals[k]
            target += added.reshape(target.shape)
        return spread

    def basic(target, index, values):
        target[index] += values
    return basic


def kept_writes(cotangent, index):
    """``cotangent[index]`` with 0 where ``x[index] = v`` wrote an element that a later
    write of the same assignment replaced: an index array naming a position twice keeps
    only one of its values there (NumPy keeps the last), so only that one has a
    derivative. The winner is found by assigning each write's number the same way.
    The result is a new array (or a number): the caller zeroes `cotangent[index]` next."""
    taken = cotangent[index]
    if not _array_indexed(index):
        return own_copy(taken)
    owner = np.full(np.shape(cotangent), -1, dtype=np.intp)
    numbers = np.arange(np.size(taken)).reshape(np.shape(taken))
    owner[index] = numbers
    return np.where(owner[index] == numbers, taken, np.zeros_like(taken))


def _array_indexed(index) -> bool:
    """Whether `index` holds an integer array (or list) of at least one axis, which may
    name a position twice."""
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if isinstance(item, (list, np.ndarray)):
            array = np.asarray(item)
            if array.ndim >= 1 and array.dtype != np.bool_:
                return True
    return False


@register_jitable
def placed_writes(values, cotangent, index):
    """The transpose of `kept_writes(cotangent, index)`: zeros of `cotangent`'s shape with
    `values` assigned at `index` (the kept write of a repeated position lands last)."""
    out = np.zeros_like(cotangent)
    out[index] = values
    return out


@overload(kept_writes)
def _kept_writes_nb(cotangent, index):
    items = index.types if isinstance(index, types.BaseTuple) else (index,)
    if isinstance(index, types.Array) and isinstance(index.dtype, types.Boolean) and \
            index.ndim > 1:
        # a mask names each element once; Numba indexes by masks of one axis only
        return lambda cotangent, index: cotangent.ravel()[index.ravel()]
    if not any(isinstance(t, types.Array) and isinstance(t.dtype, types.Integer)
               and t.ndim >= 1 for t in items):
        return lambda cotangent, index: own_copy(cotangent[index])

    def impl(cotangent, index):
        taken = cotangent[index]              # a new array (an index array copies)
        owner = np.full(cotangent.shape, -1, np.intp)
        owner[index] = np.arange(taken.size).reshape(taken.shape)
        kept = owner[index].reshape(-1)
        flat = taken.reshape(-1)
        for k in range(flat.size):
            if kept[k] != k:
                flat[k] = 0
        return taken
    return impl


def inside(x, lo, hi):
    """Mask of ``lo <= x <= hi``; a bound of None is no bound (the adjoint of np.clip)."""
    mask = np.ones(np.shape(x), np.bool_) if not _is_scalar(x) else True
    if lo is not None:
        mask = mask & (x >= lo)
    if hi is not None:
        mask = mask & (x <= hi)
    return mask


def at_lower(x, lo, hi):
    """Mask of where ``np.clip(x, lo, hi)`` is ``lo``: ``x < lo``, unless the bounds cross
    (``lo > hi``), where NumPy's clip is ``hi`` everywhere (the adjoint of np.clip)."""
    return (x < lo) & (True if hi is None else lo <= hi)


def at_upper(x, lo, hi):
    """Mask of where ``np.clip(x, lo, hi)`` is ``hi``: ``x > hi``, or everywhere when the
    bounds cross (``lo > hi``); a lower bound of None is no bound."""
    return (x > hi) | (False if lo is None else lo > hi)


@overload(at_lower)
def _at_lower_nb(x, lo, hi):
    if _is_none(hi):
        return lambda x, lo, hi: x < lo
    return lambda x, lo, hi: (x < lo) & (lo <= hi)


@overload(at_upper)
def _at_upper_nb(x, lo, hi):
    if _is_none(lo):
        return lambda x, lo, hi: x > hi
    return lambda x, lo, hi: (x > hi) | (lo > hi)


@overload(inside)
def _inside_nb(x, lo, hi):
    lo_none, hi_none = _is_none(lo), _is_none(hi)

    def impl(x, lo, hi):
        if lo_none and hi_none:
            return np.isnan(x) | (x <= np.inf)
        if lo_none:
            return x <= hi
        if hi_none:
            return x >= lo
        return (x >= lo) & (x <= hi)
    return impl
