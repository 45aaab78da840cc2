"""Helpers that generated code calls; each runs as plain NumPy and inside Numba nopython mode.

Every helper is a plain Python function (NumPy, used by the ``python`` backend) with a
``numba.extending.overload`` that dispatches on Numba types. Numba's versions share two
index-mapping kernels (``_reduce_into``, ``_gather``) so that reductions, broadcasting and
their adjoints work for any rank, with an axis that is an int (negative too), a tuple or None.

Conventions: gradients keep the float type of the value they belong to (float32 stays
float32); a scalar's gradient is a scalar, never a 0-d array.

Plain NumPy only for now: ``tensordot``, ``squeeze`` without an axis (the lowering passes
the axes it can prove to ``squeeze_known``), and ``matmul`` with its adjoints for operands of
rank above 3. ``einsum``, ``einsum_grad`` and ``einsum_tangent`` are plain NumPy here; the
lowering replaces their calls with loops generated from the subscripts (``transformer.einsum``).
"""

from __future__ import annotations

import numpy as np
from numba import literal_unroll, literally, types
from numba.core.errors import TypingError
from numba.extending import overload, register_jitable
from numba.np.numpy_support import as_dtype
from numba.np.unsafe.ndarray import to_fixed_tuple

__all__ = [
    "axis_count",
    "broadcast_like",
    "broadcast_reduced",
    "cast_like",
    "concatenate_part",
    "cumprod",
    "cumsum",
    "cumsum_adjoint",
    "einsum",
    "einsum_grad",
    "einsum_tangent",
    "einsum_zeros",
    "flip",
    "getitem_mask",
    "hstack_part",
    "inner",
    "inner_grad_left",
    "inner_grad_right",
    "inside",
    "matmul",
    "matmul_grad_left",
    "matmul_grad_left_add",
    "matmul_grad_right",
    "matmul_grad_right_add",
    "moveaxis",
    "norm",
    "outer_or_matmul",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_std",
    "reduce_sum",
    "reduce_var",
    "repeat",
    "reshape",
    "reshape_like",
    "scatter_add",
    "setitem_mask",
    "squeeze",
    "squeeze_known",
    "stack",
    "stack_part",
    "tensordot",
    "tile",
    "transpose",
    "unbroadcast",
    "unrepeat",
    "untile",
    "untranspose",
    "vstack_part",
    "zeros_like",
]


def _float_dtype(x) -> np.dtype:
    dtype = np.asarray(x).dtype
    return dtype if np.issubdtype(dtype, np.floating) else np.dtype(np.float64)


def _is_scalar(x) -> bool:
    return not isinstance(x, np.ndarray) or x.ndim == 0


def _nb_float(ty):
    """The Numba float type a gradient of a value of type ``ty`` has."""
    dtype = ty.dtype if isinstance(ty, types.Array) else ty
    return dtype if isinstance(dtype, types.Float) else types.float64


def _is_none(ty) -> bool:
    return ty is None or isinstance(ty, (types.NoneType, types.Omitted)) and (
        not isinstance(ty, types.Omitted) or ty.value is None)


def _static(ty, what):
    """The value of a literal (or omitted) argument that fixes a result's rank."""
    if isinstance(ty, types.Omitted):
        return ty.value
    if isinstance(ty, types.Literal):
        return ty.literal_value
    if isinstance(ty, (bool, int)):
        return ty
    raise TypingError(f"{what} must be a constant here")


# ---------------------------------------------------------------- scalars, zeros, casts


def cast_like(value, x):
    """``value`` in the float type of ``x`` (arrays are converted elementwise)."""
    if isinstance(x, (float, int)) and not isinstance(value, np.ndarray):
        return float(value)
    dtype = _float_dtype(x)
    if isinstance(value, np.ndarray):
        return value.astype(dtype)
    return dtype.type(value)


@overload(cast_like)
def _cast_like_nb(value, x):
    target = as_dtype(_nb_float(x)).type
    if isinstance(value, types.Array):
        return lambda value, x: value.astype(target)
    return lambda value, x: target(value)


def zeros_like(x):
    """Float zeros shaped like ``x``: a scalar for a scalar, else an array; a tuple of
    them for a tuple (the zero tangent of a function returning a tuple)."""
    if isinstance(x, tuple):
        return tuple(zeros_like(e) for e in x)
    if _is_scalar(x):
        return cast_like(0.0, x)
    return np.zeros(np.shape(x), _float_dtype(x))


@overload(zeros_like)
def _zeros_like_nb(x):
    if isinstance(x, types.BaseTuple):
        parts = "".join(f"zeros_like(x[{i}]), " for i in range(len(x)))
        return eval(f"lambda x: ({parts})", {"zeros_like": zeros_like})
    target = as_dtype(_nb_float(x)).type
    if isinstance(x, types.Array):
        return lambda x: np.zeros(x.shape, target)
    return lambda x: target(0.0)


def update_in_place(target, value):
    """``target op= v`` as NumPy runs it, with ``value`` = ``target op v``: an array is
    overwritten in place (every name holding it sees the change) and returned; anything
    else (a number) is rebound to ``value``."""
    if not isinstance(target, np.ndarray):
        return value
    if not np.can_cast(np.result_type(value), target.dtype, casting="same_kind"):
        raise TypeError(f"cannot update an array of {target.dtype} in place with values of "
                        f"{np.result_type(value)}")
    target[...] = value
    return target


@overload(update_in_place)
def _update_in_place_nb(target, value):
    if not isinstance(target, types.Array):
        return lambda target, value: value

    def impl(target, value):
        target[...] = value
        return target
    return impl


def update_tangent(target, tangent, value):
    """The tangent of ``update_in_place(target, v)``: written in place into ``tangent``
    exactly where the primal ``target`` (an array) is written in place, else ``value``."""
    if not isinstance(target, np.ndarray):
        return value
    tangent[...] = value
    return tangent


@overload(update_tangent)
def _update_tangent_nb(target, tangent, value):
    if not isinstance(target, types.Array):
        return lambda target, tangent, value: value

    def impl(target, tangent, value):
        tangent[...] = value
        return tangent
    return impl


def own_copy(x):
    """A copy of an array (so in-place writes reach no other name); a number as it is."""
    return x.copy() if isinstance(x, np.ndarray) else x


@overload(own_copy)
def _own_copy_nb(x):
    if isinstance(x, types.Array):
        return lambda x: x.copy()
    return lambda x: x


# ---------------------------------------------------------------- index-mapping kernels


@register_jitable
def _c_strides(shape):
    strides = np.empty(shape.shape[0], np.int64)
    acc = 1
    for k in range(shape.shape[0] - 1, -1, -1):
        strides[k] = acc
        acc *= shape[k]
    return strides


@register_jitable
def _reduce_into(src, src_shape, out, out_shape, op):
    """Fold the C-ordered ``src`` into ``out``: element ``i`` of ``src`` lands on the index
    ``i mod out_shape`` (axis by axis), so axes of length 1 are reduced and longer axes
    wrap around (the adjoint of tiling).

    ``op``: 0 sum, 1 product, 2 max, 3 min. ``out`` holds the starting values.
    """
    ss = _c_strides(src_shape)
    os_ = _c_strides(out_shape)
    for i in range(src.shape[0]):
        j = 0
        for k in range(src_shape.shape[0]):
            j += (((i // ss[k]) % src_shape[k]) % out_shape[k]) * os_[k]
        v = src[i]
        if op == 0:
            out[j] += v
        elif op == 1:
            out[j] *= v
        elif op == 2:
            if v > out[j] or np.isnan(v):
                out[j] = v
        elif v < out[j] or np.isnan(v):
            out[j] = v


@register_jitable
def _gather(src, src_shape, out, out_shape):
    """Fill the C-ordered ``out`` from ``src``: element ``i`` of ``out`` reads the index
    ``i mod src_shape`` (axis by axis), which broadcasts axes of length 1 and tiles the rest.
    """
    ss = _c_strides(src_shape)
    os_ = _c_strides(out_shape)
    for i in range(out.shape[0]):
        j = 0
        for k in range(out_shape.shape[0]):
            j += (((i // os_[k]) % out_shape[k]) % src_shape[k]) * ss[k]
        out[i] = src[j]


def _axes(ndim, axis):
    if axis is None:
        return tuple(range(ndim))
    axis = (axis,) if np.ndim(axis) == 0 else tuple(axis)
    return tuple(sorted(a % ndim for a in axis))


def axis_mask(ndim, axis):
    """Boolean mask of the axes a reduction over ``axis`` removes."""
    mask = np.zeros(ndim, np.bool_)
    mask[list(_axes(ndim, axis))] = True
    return mask


@overload(axis_mask)
def _axis_mask_nb(ndim, axis):
    if _is_none(axis):
        return lambda ndim, axis: np.ones(ndim, np.bool_)
    if isinstance(axis, types.Integer):
        def one(ndim, axis):
            mask = np.zeros(ndim, np.bool_)
            mask[axis % ndim] = True
            return mask
        return one

    def several(ndim, axis):
        mask = np.zeros(ndim, np.bool_)
        for a in axis:
            mask[a % ndim] = True
        return mask
    return several


def _removed(ndim, axis_ty) -> int:
    if _is_none(axis_ty):
        return ndim
    if isinstance(axis_ty, types.Integer):
        return 1
    return len(axis_ty)


def axis_count(x, axis=None) -> int:
    """How many elements of ``x`` a reduction over ``axis`` folds into each result."""
    shape = np.shape(x)
    return int(np.prod([shape[a] for a in _axes(len(shape), axis)], dtype=np.int64))


@overload(axis_count)
def _axis_count_nb(x, axis=None):
    def impl(x, axis=None):
        shape = np.asarray(x.shape)
        return np.prod(shape[axis_mask(x.ndim, axis)])
    return impl


# ---------------------------------------------------------------- broadcasting


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
        if isinstance(g, types.Array):
            return lambda g, x: target(np.sum(g))
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
        out = np.zeros(x.size, g.dtype)
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
            out = np.zeros(shape, dtype)
            n = shape[0]
            for i in range(g.shape[0]):
                out[i % n] += g[i]
            return out
        return vector
    if g.ndim == 2:
        def matrix(g, shape):
            out = np.zeros(shape, dtype)
            n0, n1 = shape
            for i in range(g.shape[0]):
                for j in range(g.shape[1]):
                    out[i % n0, j % n1] += g[i, j]
            return out
        return matrix

    def any_rank(g, shape):
        out = np.zeros(shape, dtype)
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
        return lambda t, z: np.full(z.shape, t)

    def impl(t, z):
        out = np.empty(z.size, t.dtype)
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
        return lambda g, x, axis=None, keepdims=False: np.full(x.shape, g)

    def impl(g, x, axis=None, keepdims=False):
        shape = np.asarray(x.shape)
        gshape = shape.copy()
        gshape[axis_mask(x.ndim, axis)] = 1
        out = np.empty(x.size, g.dtype)
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

    def basic(target, index, values):
        target[index] += values
    return basic


def inside(x, lo, hi):
    """Mask of ``lo <= x <= hi``; a bound of None is no bound (the adjoint of np.clip)."""
    mask = np.ones(np.shape(x), np.bool_) if not _is_scalar(x) else True
    if lo is not None:
        mask = mask & (x >= lo)
    if hi is not None:
        mask = mask & (x <= hi)
    return mask


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


# ---------------------------------------------------------------- reductions with an axis

_FOLD_START = {0: 0.0, 1: 1.0, 2: -np.inf, 3: np.inf}


_FOLDS = {0: np.sum, 1: np.prod, 2: np.max, 3: np.min}


def _fold_nb(a, axis, keepdims, op):
    """A Numba implementation of one fold; the output rank is fixed at typing time."""
    keep = bool(_static(keepdims, "keepdims"))
    rank = a.ndim if keep else a.ndim - _removed(a.ndim, axis)
    dtype = as_dtype(a.dtype).type
    start = _FOLD_START[op]

    @register_jitable
    def folded(a, axis):
        shape = np.asarray(a.shape)
        mask = axis_mask(a.ndim, axis)
        oshape = shape.copy()
        oshape[mask] = 1
        res = np.full(np.prod(oshape), start, dtype)
        _reduce_into(np.ascontiguousarray(a).ravel(), shape, res, oshape, op)
        return res, (oshape if keep else shape[~mask])

    if rank == 0:
        return lambda a, axis=None, dtype=None, out=None, keepdims=False: folded(a, axis)[0][0]

    def impl(a, axis=None, dtype=None, out=None, keepdims=False):
        res, kept = folded(a, axis)
        return res.reshape(to_fixed_tuple(kept, rank))
    return impl


def _make_fold(op, name):
    def fold(a, axis=None, dtype=None, out=None, keepdims=False):
        extra = {k: v for k, v in (("dtype", dtype), ("out", out)) if v is not None}
        return _FOLDS[op](a, axis=axis, keepdims=keepdims, **extra)
    fold.__name__ = fold.__qualname__ = name
    fold.__doc__ = f"np.{name[7:]} with axis and keepdims, also under Numba."

    @overload(fold)
    def _nb(a, axis=None, dtype=None, out=None, keepdims=False):
        return _fold_nb(a, axis, keepdims, op)
    return fold


reduce_sum = _make_fold(0, "reduce_sum")
reduce_prod = _make_fold(1, "reduce_prod")
reduce_max = _make_fold(2, "reduce_max")
reduce_min = _make_fold(3, "reduce_min")


def reduce_mean(a, axis=None, dtype=None, out=None, keepdims=False):
    """np.mean with axis and keepdims, also under Numba."""
    return np.mean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)


@overload(reduce_mean)
def _reduce_mean_nb(a, axis=None, dtype=None, out=None, keepdims=False):
    target = as_dtype(_nb_float(a)).type

    def impl(a, axis=None, dtype=None, out=None, keepdims=False):
        return reduce_sum(a, axis, None, None, keepdims) / target(axis_count(a, axis))
    return impl


def reduce_var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """np.var with axis, ddof and keepdims, also under Numba."""
    return np.var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)


@overload(reduce_var)
def _reduce_var_nb(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    target = as_dtype(_nb_float(a)).type

    def impl(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        n = axis_count(a, axis)
        mean = reduce_sum(a, axis, None, None, True) / target(n)
        centered = a - broadcast_reduced(mean, a, axis, True)
        return reduce_sum(centered * centered, axis, None, None, keepdims) / target(n - ddof)
    return impl


def reduce_std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    """np.std with axis, ddof and keepdims, also under Numba."""
    return np.std(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)


@overload(reduce_std)
def _reduce_std_nb(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    def impl(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return np.sqrt(reduce_var(a, axis, None, None, ddof, keepdims))
    return impl


# ---------------------------------------------------------------- scans


def cumsum(a, axis=None):
    """np.cumsum, also under Numba with an axis."""
    return np.cumsum(a, axis=axis)


def cumprod(a, axis=None):
    """np.cumprod, also under Numba with an axis."""
    return np.cumprod(a, axis=axis)


def cumsum_adjoint(g, x, axis=None):
    """The adjoint of ``np.cumsum(x, axis)``: reversed cumulative sums, shaped like ``x``."""
    if axis is None:
        return np.flip(np.cumsum(np.flip(np.ravel(g)))).reshape(np.shape(x))
    return np.flip(np.cumsum(np.flip(g, axis), axis), axis)


def _scan_nb(a, axis, product, reverse):
    """Numba: cumulative sum or product along an axis (flattened for None)."""
    dtype = as_dtype(a.dtype).type

    @register_jitable
    def scan(src, ax):
        out = src.copy()
        shape = np.asarray(out.shape)
        stride = 1
        for k in range(ax + 1, out.ndim):
            stride *= shape[k]
        n = shape[ax]
        flat = out.reshape(-1)
        for start in range(flat.shape[0]):
            if (start // stride) % n != 0:
                continue
            acc = dtype(1) if product else dtype(0)
            for m in range(n):
                i = start + (n - 1 - m if reverse else m) * stride
                acc = acc * flat[i] if product else acc + flat[i]
                flat[i] = acc
        return out

    if _is_none(axis):
        return lambda a, axis: scan(np.ascontiguousarray(a).reshape(-1), 0)
    return lambda a, axis: scan(np.ascontiguousarray(a), axis % a.ndim)


@overload(cumsum)
def _cumsum_nb(a, axis=None):
    impl = register_jitable(_scan_nb(a, axis, False, False))
    return lambda a, axis=None: impl(a, axis)


@overload(cumprod)
def _cumprod_nb(a, axis=None):
    impl = register_jitable(_scan_nb(a, axis, True, False))
    return lambda a, axis=None: impl(a, axis)


@overload(cumsum_adjoint)
def _cumsum_adjoint_nb(g, x, axis=None):
    impl = register_jitable(_scan_nb(g, axis, False, True))
    return lambda g, x, axis=None: impl(g, axis).reshape(x.shape)


# ---------------------------------------------------------------- shapes


def reshape(a, shape):
    """np.reshape that also accepts non-contiguous arrays under Numba."""
    return np.reshape(a, shape)


@overload(reshape)
def _reshape_nb(a, shape):
    return lambda a, shape: np.ascontiguousarray(a).reshape(shape)


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
    """np.moveaxis for int axes."""
    return np.moveaxis(a, source, destination)


@overload(moveaxis)
def _moveaxis_nb(a, source, destination):
    n = a.ndim

    def impl(a, source, destination):
        order = np.empty(n, np.int64)
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


def squeeze(a, axis=None):
    """np.squeeze (under Numba the axis must be given)."""
    return np.squeeze(a, axis)


@overload(squeeze)
def _squeeze_nb(a, axis=None):
    if _is_none(axis):
        raise TypingError("squeeze under Numba: give the axis (the result rank must be known)")
    rank = a.ndim - _removed(a.ndim, axis)

    def impl(a, axis=None):
        shape = np.asarray(a.shape)
        kept = shape[~axis_mask(a.ndim, axis)]
        return np.ascontiguousarray(a).reshape(to_fixed_tuple(kept, rank))
    return impl


def flip(a, axis=None):
    """np.flip."""
    return np.flip(a, axis)


@overload(flip)
def _flip_nb(a, axis=None):
    def impl(a, axis=None):
        shape = np.asarray(a.shape)
        mask = axis_mask(a.ndim, axis)
        strides = _c_strides(shape)
        src = np.ascontiguousarray(a).ravel()
        out = np.empty_like(src)
        for i in range(src.shape[0]):
            j = 0
            for k in range(a.ndim):
                index = (i // strides[k]) % shape[k]
                j += (shape[k] - 1 - index if mask[k] else index) * strides[k]
            out[i] = src[j]
        return out.reshape(a.shape)
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
        out = np.empty(np.prod(full), a.dtype)
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
        out = np.zeros(x.size, g.dtype)
        _reduce_into(np.ascontiguousarray(g).ravel(), full, out, padded, 0)
        return out.reshape(x.shape)
    return impl


def repeat(a, repeats, axis=None):
    """np.repeat."""
    return np.repeat(a, repeats, axis)


def unrepeat(g, x, repeats, axis=None):
    """The adjoint of ``np.repeat(x, repeats, axis)`` for an int ``repeats``."""
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
        out = np.empty(np.prod(full), a.dtype)
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
        out = np.zeros(x.size, g.dtype)
        for i in range(src.shape[0]):
            out[_repeat_source(i, full, fstrides, sstrides, ax, repeats)] += src[i]
        return out.reshape(x.shape)
    return impl


def concatenate_part(g, xs, k, axis=0):
    """The slice of ``g = np.concatenate(xs, axis)`` that came from ``xs[k]``."""
    start = sum(np.shape(xs[j])[axis] for j in range(k))
    index = [slice(None)] * np.ndim(g)
    index[axis] = slice(start, start + np.shape(xs[k])[axis])
    return g[tuple(index)]


@overload(concatenate_part)
def _concatenate_part_nb(g, xs, k, axis=0):
    def impl(g, xs, k, axis=0):
        start, n, j = 0, 0, 0
        for x in literal_unroll(xs):
            if j < k:
                start += x.shape[axis]
            elif j == k:
                n = x.shape[axis]
            j += 1  # noqa: SIM113  (literal_unroll loops cannot enumerate)
        front = moveaxis(g, axis, 0)[start:start + n]
        return np.ascontiguousarray(moveaxis(front, 0, axis))
    return impl


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


@overload(vstack_part)
def _vstack_part_nb(g, xs, k):
    if not isinstance(k, types.IntegerLiteral):
        return lambda g, xs, k: literally(k)
    item = xs.types[k.literal_value] if isinstance(xs, types.Tuple) else xs.dtype

    def rows(g, xs, k):
        start, n, j = 0, 0, 0
        for x in literal_unroll(xs):
            count = 1 if x.ndim == 1 else x.shape[0]
            if j < k:
                start += count
            elif j == k:
                n = count
            j += 1  # noqa: SIM113  (literal_unroll loops cannot enumerate)
        return np.ascontiguousarray(g[start:start + n])

    rows = register_jitable(rows)
    if item.ndim == 1:
        return lambda g, xs, k: rows(g, xs, k).reshape(g.shape[1:])
    return rows


# ---------------------------------------------------------------- linear algebra


def matmul(a, b):
    """``a @ b`` for any ranks, batched over leading axes (Numba's stops at 2-D)."""
    return np.matmul(a, b)


def _batch_len(x):
    return x.shape[0] if np.ndim(x) == 3 else 1


@overload(_batch_len)
def _batch_len_nb(x):
    if x.ndim == 3:
        return lambda x: x.shape[0]
    return lambda x: 1


def _batch_item(x, i):
    return x[i % x.shape[0]] if np.ndim(x) == 3 else x


@overload(_batch_item)
def _batch_item_nb(x, i):
    if x.ndim == 3:
        return lambda x, i: np.ascontiguousarray(x[i % x.shape[0]])
    return lambda x, i: np.ascontiguousarray(x)


@overload(matmul)
def _matmul_nb(a, b):
    if a.ndim > 3 or b.ndim > 3:
        raise TypingError("matmul under Numba: operands of rank 3 at most")
    if a.ndim <= 2 and b.ndim <= 2 and _contiguous(a) and _contiguous(b):
        return lambda a, b: np.dot(a, b)           # ascontiguousarray would copy anyway
    if a.ndim <= 2 and b.ndim <= 2:
        if _contiguous(a) and _contiguous(b):      # ascontiguousarray would copy anyway
            return lambda a, b: np.dot(a, b)
        return lambda a, b: np.dot(np.ascontiguousarray(a), np.ascontiguousarray(b))

    def batched(a, b):
        n = max(_batch_len(a), _batch_len(b))
        first = np.dot(_batch_item(a, 0), _batch_item(b, 0))
        out = np.empty((n,) + first.shape, first.dtype)
        for i in range(n):
            out[i] = np.dot(_batch_item(a, i), _batch_item(b, i))
        return out
    return batched


@register_jitable
def _swap_last_nb(x):
    return np.swapaxes(x, x.ndim - 2, x.ndim - 1)


@register_jitable
def _append_axis(x):
    return np.ascontiguousarray(x).reshape(x.shape + (1,))


@register_jitable
def _insert_axis(x):
    """(B, p) -> (B, 1, p)."""
    return np.ascontiguousarray(x).reshape((x.shape[0], 1, x.shape[1]))


def _contiguous(ty) -> bool:
    return not isinstance(ty, types.Array) or ty.layout == "C"


def _swap_last(a):
    return np.swapaxes(a, -1, -2)


def matmul_grad_left(g, a, b):
    """The adjoint of ``a`` in ``z = a @ b`` (also ``np.dot`` up to 2-D)."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    if np.ndim(b) == 1:
        return unbroadcast(np.multiply.outer(g, b), a) if np.ndim(a) > 1 else g * b
    if np.ndim(a) == 1:
        return unbroadcast(np.matmul(np.expand_dims(g, -2), _swap_last(b)), a)
    return unbroadcast(np.matmul(g, _swap_last(b)), a)


def matmul_grad_right(g, a, b):
    """The adjoint of ``b`` in ``z = a @ b`` (also ``np.dot`` up to 2-D)."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(a * g, b)
    if np.ndim(a) == 1:
        return unbroadcast(a[:, None] * np.expand_dims(g, -2), b) if np.ndim(b) > 1 else a * g
    if np.ndim(b) == 1:
        return unbroadcast(np.matmul(_swap_last(a), g[..., None])[..., 0], b)
    return unbroadcast(np.matmul(_swap_last(a), g), b)


def _outer_nb(u, v):
    """A jitable ``np.outer(u, v)`` for two vectors of these types, written as a loop:
    Numba's np.outer compiles for a second and more and copies each operand."""
    dtype = np.result_type(as_dtype(u.dtype), as_dtype(v.dtype)).type

    @register_jitable
    def outer(u, v):
        out = np.empty((u.shape[0], v.shape[0]), dtype)
        for i in range(u.shape[0]):
            ui = u[i]
            for j in range(v.shape[0]):
                out[i, j] = ui * v[j]
        return out
    return outer


@overload(matmul_grad_left)
def _matmul_grad_left_nb(g, a, b):
    na = a.ndim if isinstance(a, types.Array) else 0
    nb = b.ndim if isinstance(b, types.Array) else 0
    if na == 0 or nb == 0:
        return lambda g, a, b: unbroadcast(g * b, a)
    if na == 1 and nb == 1:
        return lambda g, a, b: g * b
    if na == 2 and nb == 1:
        outer = _outer_nb(g, b)
        return lambda g, a, b: outer(g, b)
    if na == 1 and nb == 2:
        return lambda g, a, b: np.dot(np.ascontiguousarray(b), np.ascontiguousarray(g))
    if na == 2 and nb == 2:
        return lambda g, a, b: np.dot(np.ascontiguousarray(g), np.ascontiguousarray(b.T))
    if nb == 1:
        return lambda g, a, b: unbroadcast(_append_axis(g) * b, a)
    if na == 1:
        return lambda g, a, b: unbroadcast(matmul(_insert_axis(g), _swap_last_nb(b)), a)
    return lambda g, a, b: unbroadcast(matmul(g, _swap_last_nb(b)), a)


@overload(matmul_grad_right)
def _matmul_grad_right_nb(g, a, b):
    na = a.ndim if isinstance(a, types.Array) else 0
    nb = b.ndim if isinstance(b, types.Array) else 0
    if na == 0 or nb == 0:
        return lambda g, a, b: unbroadcast(a * g, b)
    if na == 1 and nb == 1:
        return lambda g, a, b: a * g
    if na == 2 and nb == 1 and _contiguous(a) and _contiguous(g):
        return lambda g, a, b: np.dot(g, a)    # a.T @ g without transposing a copy
    if na == 2 and nb == 1:
        return lambda g, a, b: np.dot(np.ascontiguousarray(a.T), np.ascontiguousarray(g))
    if na == 1 and nb == 2:
        outer = _outer_nb(a, g)
        return lambda g, a, b: outer(a, g)
    if na == 2 and nb == 2:
        return lambda g, a, b: np.dot(np.ascontiguousarray(a.T), np.ascontiguousarray(g))
    if na == 1:
        return lambda g, a, b: unbroadcast(_append_axis(a) * _insert_axis(g), b)
    if nb == 1:
        return lambda g, a, b: unbroadcast(
            matmul(_swap_last_nb(a), _append_axis(g))[:, :, 0], b)
    return lambda g, a, b: unbroadcast(matmul(_swap_last_nb(a), g), b)


def matmul_grad_left_add(acc, g, a, b):
    """``acc += matmul_grad_left(g, a, b)``, returning ``acc`` (an array is updated in place).

    Compiled code accumulates into a parameter's adjoint through this (see lowering.py):
    the adjoint of the matrix in a matrix-vector product is an outer product, which is
    added in place instead of built as a temporary matrix and then added.
    """
    acc += matmul_grad_left(g, a, b)
    return acc


def matmul_grad_right_add(acc, g, a, b):
    """``acc += matmul_grad_right(g, a, b)``, returning ``acc`` (see matmul_grad_left_add)."""
    acc += matmul_grad_right(g, a, b)
    return acc


def _is_vector(ty) -> bool:
    return isinstance(ty, types.Array) and ty.ndim == 1


def _outer_add_nb(acc, u, v):
    """A jitable ``acc += np.outer(u, v)`` in place, or None when the types are others."""
    if not (isinstance(acc, types.Array) and acc.ndim == 2 and _is_vector(u) and
            _is_vector(v)):
        return None

    @register_jitable
    def outer_add(acc, u, v):
        if acc.shape[0] != u.shape[0] or acc.shape[1] != v.shape[0]:
            raise ValueError("matmul adjoint: the accumulator's shape is not the operand's")
        for i in range(u.shape[0]):
            ui = u[i]
            for j in range(v.shape[0]):
                acc[i, j] += ui * v[j]
        return acc
    return outer_add


@overload(matmul_grad_left_add)
def _matmul_grad_left_add_nb(acc, g, a, b):
    outer_add = _outer_add_nb(acc, g, b)
    if outer_add is not None:
        return lambda acc, g, a, b: outer_add(acc, g, b)

    def generic(acc, g, a, b):
        acc += matmul_grad_left(g, a, b)
        return acc
    return generic


@overload(matmul_grad_right_add)
def _matmul_grad_right_add_nb(acc, g, a, b):
    outer_add = _outer_add_nb(acc, a, g)
    if outer_add is not None:
        return lambda acc, g, a, b: outer_add(acc, a, g)

    def generic(acc, g, a, b):
        acc += matmul_grad_right(g, a, b)
        return acc
    return generic


def outer_or_matmul(t, z):
    """``np.outer(t, z)`` for vectors, ``t @ z.T`` for matrices (the adjoint of solve)."""
    return np.outer(t, z) if np.ndim(z) == 1 else np.matmul(t, _swap_last(z))


@overload(outer_or_matmul)
def _outer_or_matmul_nb(t, z):
    if z.ndim == 1:
        return lambda t, z: np.outer(t, z)
    return lambda t, z: np.dot(np.ascontiguousarray(t), np.ascontiguousarray(z.T))


def einsum(subscripts, *operands):
    """np.einsum (plain Python only)."""
    return np.einsum(subscripts, *operands)


def _einsum_unsupported(what: str):
    from ..errors import TransformError
    return TransformError(f"no derivative rule for np.einsum with {what}",
                          hint="write the contraction with explicit indices, np.trace or "
                               "np.diagonal, which have derivative rules")


def _einsum_spec(subscripts):
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise _einsum_unsupported("ellipsis subscripts (...)")
    if "->" not in spec:
        letters = spec.replace(",", "")
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
        return spec.split(","), out
    ins, out = spec.split("->")
    return ins.split(","), out


def einsum_grad(subscripts, k, g, operands):
    """The adjoint of ``operands[k]`` in ``z = np.einsum(subscripts, *operands)``."""
    ins, out = _einsum_spec(subscripts)
    target = ins[k]
    unique = "".join(dict.fromkeys(target))     # 'ii' -> 'i': the diagonal is written
    others = [j for j in range(len(ins)) if j != k]
    present = "".join(c for c in unique if c in out or any(c in ins[j] for j in others))
    spec = ",".join([out] + [ins[j] for j in others]) + "->" + present
    part = np.einsum(spec, g, *[operands[j] for j in others])
    index = tuple(slice(None) if c in present else None for c in unique)
    shape = np.shape(operands[k])
    sizes = tuple(shape[target.index(c)] for c in unique)
    part = np.broadcast_to(part[index], sizes)
    if unique == target:
        return part.copy()
    grad = np.zeros(shape, part.dtype)
    strides = tuple(sum(grad.strides[p] for p, c in enumerate(target) if c == u) for u in unique)
    np.lib.stride_tricks.as_strided(grad, sizes, strides)[...] = part
    return grad


def einsum_tangent(subscripts, k, t, operands):
    """The tangent contribution of ``operands[k]`` (tangent ``t``) to an einsum."""
    operands = list(operands)
    operands[k] = t
    return np.einsum(subscripts, *operands)


def norm(x, ord=None, axis=None, keepdims=False):
    """np.linalg.norm for ord=None (2-norm, Frobenius) with axis and keepdims."""
    return np.linalg.norm(x, ord, axis, keepdims)


@overload(norm)
def _norm_nb(x, ord=None, axis=None, keepdims=False):
    if not _is_none(ord):
        raise TypingError("norm under Numba: only ord=None with an axis")

    def impl(x, ord=None, axis=None, keepdims=False):
        return np.sqrt(reduce_sum(x * x, axis, None, None, keepdims))
    return impl


def tensordot(a, b, axes=2):
    """np.tensordot (plain Python only)."""
    return np.tensordot(a, b, axes)


# ---------------------------------------------------------------- lowered NumPy forms
# Call forms Numba's nopython mode lacks, redirected here by `transformer.lowering`
# (einsum itself becomes loops generated from its subscripts, see `transformer.einsum`).


def getitem_mask(x, index):
    """``x[index]``; under Numba also for a boolean mask of rank above 1."""
    return x[index]


@overload(getitem_mask, inline="always")
def _getitem_mask_nb(x, index):
    if not (isinstance(index, types.Array) and isinstance(index.dtype, types.Boolean)
            and index.ndim > 1):
        return lambda x, index: x[index]
    if index.ndim != x.ndim:
        raise TypingError("a boolean mask of rank above 1 must cover every axis of the array")

    def masked(x, index):
        if x.shape != index.shape:
            raise IndexError("boolean mask shape does not match the indexed array")
        return x.ravel()[index.ravel()]     # row-major order, as NumPy selects
    return masked


def setitem_mask(x, index, values) -> None:
    """``x[index] = values``; under Numba also for a boolean mask of rank above 1."""
    x[index] = values


@overload(setitem_mask, inline="always")
def _setitem_mask_nb(x, index, values):
    if not (isinstance(index, types.Array) and isinstance(index.dtype, types.Boolean)
            and index.ndim > 1):
        def plain(x, index, values):
            x[index] = values
        return plain
    if index.ndim != x.ndim:
        raise TypingError("a boolean mask of rank above 1 must cover every axis of the array")
    vector = isinstance(values, types.Array)

    def masked(x, index, values):
        if x.shape != index.shape:
            raise IndexError("boolean mask shape does not match the indexed array")
        flat = values.ravel() if vector else values
        # The count lives in an array: a local assigned twice (`n = 0`, `n += 1`) makes
        # Numba's SSA repair warn (NumbaIRAssumptionWarning) when this body is inlined twice.
        n = np.zeros(1, np.intp)
        for at in np.ndindex(x.shape):      # row-major, as NumPy assigns
            if index[at]:
                x[at] = flat[n[0]] if vector else flat
                n[0] += 1
    return masked


def inner(a, b):
    """np.inner: the sum over the last axes of ``a`` and ``b``."""
    return np.inner(a, b)


def inner_grad_left(g, a, b):
    """The adjoint of ``a`` in ``z = np.inner(a, b)``."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(g * b, a)
    a2, b2, g2 = _inner_matrices(g, a, b)
    return np.reshape(g2 @ b2, np.shape(a))


def inner_grad_right(g, a, b):
    """The adjoint of ``b`` in ``z = np.inner(a, b)``."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return unbroadcast(a * g, b)
    a2, b2, g2 = _inner_matrices(g, a, b)
    return np.reshape(g2.T @ a2, np.shape(b))


def _inner_matrices(g, a, b):
    """``a`` and ``b`` as (rows, n) matrices and ``g`` as (rows of a, rows of b)."""
    n = np.shape(a)[-1]
    a2, b2 = np.reshape(a, (-1, n)), np.reshape(b, (-1, n))
    return a2, b2, np.reshape(g, (a2.shape[0], b2.shape[0]))


@register_jitable
def _rows(x):
    return np.ascontiguousarray(x).reshape((-1, x.shape[x.ndim - 1]))


def _as_matrix(g, rows, cols):
    return np.reshape(g, (rows, cols))


@overload(_as_matrix)
def _as_matrix_nb(g, rows, cols):
    if isinstance(g, types.Array):
        return lambda g, rows, cols: np.ascontiguousarray(g).reshape((rows, cols))
    return lambda g, rows, cols: np.full((rows, cols), g)


def _rank(ty) -> int:
    return ty.ndim if isinstance(ty, types.Array) else 0


@overload(inner)
def _inner_nb(a, b):
    if _rank(a) == 0 or _rank(b) == 0:
        return lambda a, b: a * b
    if _rank(a) == 1 and _rank(b) == 1:
        return lambda a, b: np.dot(np.ascontiguousarray(a), np.ascontiguousarray(b))
    return lambda a, b: np.dot(_rows(a), np.ascontiguousarray(_rows(b).T)).reshape(
        a.shape[:-1] + b.shape[:-1])


@overload(inner_grad_left)
def _inner_grad_left_nb(g, a, b):
    if _rank(a) == 0 or _rank(b) == 0:
        return lambda g, a, b: unbroadcast(g * b, a)

    def impl(g, a, b):
        a2, b2 = _rows(a), _rows(b)
        return np.dot(_as_matrix(g, a2.shape[0], b2.shape[0]), b2).reshape(a.shape)
    return impl


@overload(inner_grad_right)
def _inner_grad_right_nb(g, a, b):
    if _rank(a) == 0 or _rank(b) == 0:
        return lambda g, a, b: unbroadcast(a * g, b)

    def impl(g, a, b):
        a2, b2 = _rows(a), _rows(b)
        g2 = _as_matrix(g, a2.shape[0], b2.shape[0])
        return np.dot(np.ascontiguousarray(g2.T), a2).reshape(b.shape)
    return impl


def stack(arrays, axis=0):
    """np.stack of a tuple or a list of equally shaped arrays."""
    return np.stack(arrays, axis)


@overload(stack)
def _stack_nb(arrays, axis=0):
    if isinstance(arrays, types.BaseTuple):
        return lambda arrays, axis=0: np.stack(arrays, axis)

    def from_list(arrays, axis=0):
        first = arrays[0]
        out = np.empty((len(arrays),) + first.shape, first.dtype)
        for k in range(len(arrays)):
            if arrays[k].shape != first.shape:
                raise ValueError("all input arrays must have the same shape")
            out[k] = arrays[k]
        return np.ascontiguousarray(moveaxis(out, 0, axis))
    return from_list


def squeeze_known(a, axis):
    """``np.squeeze(a)`` where the caller knows ``axis`` holds the only length-1 axes."""
    return np.squeeze(a)


@overload(squeeze_known)
def _squeeze_known_nb(a, axis):
    def impl(a, axis):
        removed = axis_mask(a.ndim, axis)
        for k in range(a.ndim):
            if a.shape[k] == 1 and not removed[k]:
                raise ValueError("np.squeeze without an axis under jit: the array has a "
                                 "length-1 axis whose removal the compiled code cannot know; "
                                 "pass axis=")
        return squeeze(a, axis)
    return impl


def einsum_zeros(shape, operands):
    """Zeros of ``shape`` in the type NumPy gives the product of the ``operands``."""
    return np.zeros(shape, np.result_type(*operands))


@overload(einsum_zeros)
def _einsum_zeros_nb(shape, operands):
    dtype = np.result_type(*[as_dtype(t.dtype if isinstance(t, types.Array) else t)
                             for t in operands]).type
    return lambda shape, operands: np.zeros(shape, dtype)
