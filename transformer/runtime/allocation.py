"""New arrays for compiled helpers, allocated inside the caller: `empty_array`,
`zeros_array` and `full_array` (Numba only; plain NumPy code calls NumPy).

Numba compiles `np.empty`, `np.zeros` and `np.full` as functions of their own, one per
(shape type, dtype type) pair: `np.zeros((n, 3), np.float64)` alone is four compiles (the
zeros wrapper, the empty wrapper, the zero fill, the allocator), about a quarter of a second
of a first `jit(grad(f))` on a cold cache (benchmarks/bench_compile.py). These intrinsics
emit the allocation (Numba's own `_empty_nd_impl`: the same checks of negative and too large
shapes, the same allocator and alignment) and the fill directly in the calling helper, so
only Numba's allocator itself is compiled, once per process.

Each takes a shape (an int or a tuple of ints) and a dtype (`np.float64`, `x.dtype`, a
dtype value bound in a helper's closure) and returns a C-contiguous array, as NumPy does.
"""
from __future__ import annotations

import sys

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError

from transformer.runtime.numba_api import intrinsic


def _array_type(shape, dtype, what: str) -> types.Array:
    """The C-contiguous array type `what(shape, dtype)` returns."""
    if isinstance(dtype, types.NumberClass):
        element = dtype.instance_type
    elif isinstance(dtype, types.DType):
        element = dtype.dtype
    elif getattr(dtype, "typing_key", None) is bool:          # the builtin `bool`
        element = types.boolean
    else:
        raise TypingError(f"{what}: the dtype must be a NumPy scalar type, got {dtype}")
    if isinstance(shape, types.Integer):
        return types.Array(element, 1, "C")
    if isinstance(shape, types.BaseTuple) and all(isinstance(s, types.Integer)
                                                  for s in shape):
        return types.Array(element, len(shape), "C")
    raise TypingError(f"{what}: the shape must be an int or a tuple of ints, got {shape}")


def _allocate(context, builder, array_type, shape_type, shape):
    """A new array of `array_type` shaped by the lowered `shape` (Numba's np.empty)."""
    # imported when compiling: numba.np loads Numba's NumPy registries (and SciPy)
    from numba.np.arrayobj import _empty_nd_impl, _parse_shape
    dims = _parse_shape(context, builder, shape_type, shape)
    return _empty_nd_impl(context, builder, array_type, dims)


@intrinsic
def empty_array(typingctx, shape, dtype):
    """`np.empty(shape, dtype)`."""
    array_type = _array_type(shape, dtype, "empty_array")

    def codegen(context, builder, sig, args):
        return _allocate(context, builder, array_type, sig.args[0], args[0])._getvalue()
    return array_type(shape, dtype), codegen


# NumPy asks Linux for transparent huge pages on every allocation of 4 MiB or more, from
# the first whole page on (numpy/_core/src/multiarray/alloc.c); for a batch of outer
# products of many megabytes that spares most of the page faults of writing it, several
# times faster than Numba's allocator, which does not ask.
_HUGE_PAGES = sys.platform.startswith("linux")
_HUGE_PAGE_BYTES = 1 << 22
_MADV_HUGEPAGE = 14
_PAGE = 4096


def _advise_huge_pages(builder, ary) -> None:
    """`madvise(MADV_HUGEPAGE)` on `ary`'s data from its first whole page, as NumPy's."""
    i64 = ir.IntType(64)
    size = builder.mul(ary.itemsize, ary.nitems)
    with builder.if_then(builder.icmp_signed(">=", size, i64(_HUGE_PAGE_BYTES)),
                         likely=False):
        start = builder.ptrtoint(ary.data, i64)
        offset = builder.sub(i64(_PAGE), builder.urem(start, i64(_PAGE)))
        fnty = ir.FunctionType(ir.IntType(32), [cgutils.voidptr_t, i64, ir.IntType(32)])
        madvise = cgutils.get_or_insert_function(builder.module, fnty, "madvise")
        builder.call(madvise, [builder.inttoptr(builder.add(start, offset), cgutils.voidptr_t),
                               builder.sub(size, offset), ir.IntType(32)(_MADV_HUGEPAGE)])


@intrinsic
def large_empty_array(typingctx, shape, dtype):
    """`np.empty(shape, dtype)` asking for huge pages as NumPy does (Linux), for arrays
    that may be many megabytes; elsewhere `empty_array`."""
    array_type = _array_type(shape, dtype, "large_empty_array")

    def codegen(context, builder, sig, args):
        ary = _allocate(context, builder, array_type, sig.args[0], args[0])
        if _HUGE_PAGES:
            _advise_huge_pages(builder, ary)
        return ary._getvalue()
    return array_type(shape, dtype), codegen


@intrinsic
def zeros_array(typingctx, shape, dtype):
    """`np.zeros(shape, dtype)`: all bytes zero, as NumPy's (and Numba's) zeros."""
    array_type = _array_type(shape, dtype, "zeros_array")

    def codegen(context, builder, sig, args):
        ary = _allocate(context, builder, array_type, sig.args[0], args[0])
        cgutils.memset(builder, ary.data, builder.mul(ary.itemsize, ary.nitems), 0)
        return ary._getvalue()
    return array_type(shape, dtype), codegen


@intrinsic
def full_array(typingctx, shape, value, dtype):
    """`np.full(shape, value, dtype)`: `value` cast to the dtype as an element write
    (`out[i] = value`) casts it."""
    array_type = _array_type(shape, dtype, "full_array")
    if not isinstance(value, (types.Number, types.Boolean)):
        raise TypingError(f"full_array: the value must be a number, got {value}")

    def codegen(context, builder, sig, args):
        ary = _allocate(context, builder, array_type, sig.args[0], args[0])
        element = context.cast(builder, args[1], sig.args[1], array_type.dtype)
        with cgutils.for_range(builder, ary.nitems) as loop:
            pointer = builder.gep(ary.data, [loop.index])
            context.pack_value(builder, array_type.dtype, element, pointer)
        return ary._getvalue()
    return array_type(shape, value, dtype), codegen


@intrinsic
def dtype_of(typingctx, value):
    """The dtype of a number, as `np.asarray(value).dtype` (which compiles two functions)."""
    if not isinstance(value, (types.Number, types.Boolean)):
        raise TypingError(f"dtype_of: the value must be a number, got {value}")

    def codegen(context, builder, sig, args):
        return context.get_dummy_value()
    return types.DType(value)(value), codegen
