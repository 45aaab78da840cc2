"""Views under Numba where NumPy makes views: reshape, ravel, squeeze and flip.

NumPy's `reshape` returns a view of its argument whenever the new shape can be laid on the
old strides, `ravel` of a contiguous array, `squeeze` and `flip` always do; Numba's forms
(and `np.ascontiguousarray(a)` before a reshape) copy an array typed as not C-contiguous.
A write through the result then misses the argument, and a write to the argument misses
the result: a wrong number with no error. The compiled forms in `shapes` use what is here
so that each returns a view exactly where NumPy does, and a copy where NumPy copies.

- `strided_view(a, shape, strides, offset)`: the array over `a`'s memory starting `offset`
  bytes into its data, with the given shape and byte strides (layout 'A'); it keeps `a`'s
  memory alive, as a slice does.
- `reshape_strides(shape, strides, itemsize, dims, out)`: NumPy's test of whether a C-order
  reshape of an array (`shape`, `strides`) to `dims` can be a view (its
  `_attempt_nocopy_reshape`, shape.c): True with the view's strides written to `out`,
  False where NumPy copies.
- `contiguous(a)`: `np.ascontiguousarray(a)` for an array of rank 1 or more: `a` itself
  when it is typed C-contiguous (nothing compiled), else a C-ordered copy.
- `resolved_dims(size, shape, dims)`: writes the new shape to `dims`, its one -1 filled
  in; False where the shape does not fit `size` (the caller's copying reshape then raises
  NumPy's error) or the array is empty (nothing to view).
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import literal_unroll, types
from numba.core import cgutils
from numba.core.imputils import impl_ret_borrowed
from transformer.runtime.numba_api import intrinsic, register_jitable


def _int_tuple(ty) -> bool:
    return isinstance(ty, types.BaseTuple) and all(isinstance(t, types.Integer) for t in ty)


def _ascontiguousarray(a):
    return np.ascontiguousarray(a)


@intrinsic
def contiguous(typingctx, a):
    """`np.ascontiguousarray(a)` (rank 1 or more); for a C-contiguous `a` the call is `a`,
    where Numba's own form is two compiled functions for each array type."""
    if not isinstance(a, types.Array) or a.ndim == 0:
        return None
    result = a if a.layout == "C" else a.copy(layout="C", readonly=False)

    def codegen(context, builder, sig, args):
        if sig.return_type == sig.args[0]:
            return impl_ret_borrowed(context, builder, sig.return_type, args[0])
        return context.compile_internal(builder, _ascontiguousarray, sig, args)
    return result(a), codegen


@intrinsic
def strided_view(typingctx, a, shape, strides, offset):
    """A view of `a`'s memory: `shape`, byte `strides`, first element `offset` bytes in."""
    if not (isinstance(a, types.Array) and _int_tuple(shape) and _int_tuple(strides)
            and len(shape) == len(strides) and isinstance(offset, types.Integer)):
        return None
    result = a.copy(ndim=len(shape), layout="A")

    def codegen(context, builder, sig, args):
        # imported when compiling: numba.np loads Numba's NumPy registries (and SciPy)
        from numba.np.arrayobj import make_array, populate_array
        array_type, shape_type, strides_type, offset_type = sig.args
        source = make_array(array_type)(context, builder, args[0])

        def intps(value, ty):
            return [context.cast(builder, v, t, types.intp)
                    for v, t in zip(cgutils.unpack_tuple(builder, value), ty)]
        start = context.cast(builder, args[3], offset_type, types.intp)
        raw = builder.bitcast(source.data, ir.IntType(8).as_pointer())
        data = builder.bitcast(builder.gep(raw, [start]), source.data.type)
        view = make_array(sig.return_type)(context, builder)
        populate_array(view, data=data, shape=intps(args[1], shape_type),
                       strides=intps(args[2], strides_type), itemsize=source.itemsize,
                       meminfo=source.meminfo, parent=source.parent)
        return impl_ret_borrowed(context, builder, sig.return_type, view._getvalue())
    return result(a, shape, strides, offset), codegen


@register_jitable
def resolved_dims(size, shape, dims):
    unknown, known, k = -1, 1, 0
    for value in literal_unroll(shape):
        dims[k] = value
        if value < 0:
            if unknown >= 0 or value != -1:
                return False
            unknown = k
        else:
            known *= value
        k += 1
    if unknown >= 0:
        if known == 0 or size % known != 0:
            return False
        dims[unknown] = size // known
    elif known != size:
        return False
    return size > 0


@register_jitable
def reshape_strides(shape, strides, itemsize, dims, out):
    old_dims = np.empty(len(shape), np.int64)
    old_strides = np.empty(len(shape), np.int64)
    old = 0
    for k in range(len(shape)):           # length-1 axes: any stride, left out
        if shape[k] != 1:
            old_dims[old] = shape[k]
            old_strides[old] = strides[k]
            old += 1
    new = len(dims)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < new and oi < old:
        np_, op = dims[ni], old_dims[oi]
        while np_ != op:                  # the smallest groups of axes of equal size
            if np_ < op:
                np_ *= dims[nj]
                nj += 1
            else:
                op *= old_dims[oj]
                oj += 1
        for ok in range(oi, oj - 1):      # old axes merged must be laid out in C order
            if old_strides[ok] != old_dims[ok + 1] * old_strides[ok + 1]:
                return False
        out[nj - 1] = old_strides[oj - 1]
        for nk in range(nj - 1, ni, -1):
            out[nk - 1] = out[nk] * dims[nk]
        ni, nj = nj, nj + 1
        oi, oj = oj, oj + 1
    last = out[ni - 1] if ni >= 1 else itemsize
    for nk in range(ni, new):             # trailing length-1 axes of the new shape
        out[nk] = last
    return True
