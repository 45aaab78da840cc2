"""Matrix products through NumPy's own BLAS, called directly from compiled code.

A batched `W @ x` (and the products of its gradient) runs as one matrix product, and for
it secant uses the BLAS a NumPy program uses: NumPy's wheels bundle OpenBLAS built with
64-bit integers (`scipy_cblas_sgemm64_`, `scipy_cblas_dgemm64_`), with NumPy's thread
pool. (Numba's own `np.dot` calls SciPy's BLAS, a second OpenBLAS with a second thread
pool, and needs SciPy.) An object-mode block calling `a @ b` reached it before, at the
cost of an object-mode compile per dtype, about 0.2-0.3 CPU-s of a cold first call, and
of taking the interpreter lock at every call.

`product(a, b, transpose_b)` (`for_compiled_code()` gives the form a helper calls) is
`a @ b` (or `a @ b.T`) of two C-contiguous matrices of
one float dtype, a new C-contiguous matrix. Compiled code calls the symbols
`secant_numpy_sgemm` / `secant_numpy_dgemm`, which `register` adds to LLVM's symbol table
when this module is imported, before any compiled code referring to them is compiled or
loaded from the disk cache (the code refers to them by name, so it caches). Each points to
NumPy's `cblas_?gemm` when NumPy's BLAS library is found with those names, else to a
ctypes callback with the same C signature that computes the product with NumPy (slower,
the same numbers as NumPy's `@`): every process has the symbols, whatever NumPy it runs.
`SECANT_NUMPY_BLAS=0` takes the callback (for the tests of it).
"""
from __future__ import annotations

import ctypes
import glob
import os

import numba
import numpy as np
from llvmlite import binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

from .allocation import empty_array
from .numba_api import register_jitable

ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112          # CBLAS's enum values
_SYMBOLS = {"float32": "secant_numpy_sgemm", "float64": "secant_numpy_dgemm"}
_NUMPY_NAMES = {"float32": ("scipy_cblas_sgemm64_", "cblas_sgemm64_"),
                "float64": ("scipy_cblas_dgemm64_", "cblas_dgemm64_")}


def _gemm_prototype(ctype):
    """The C type of `cblas_?gemm` with 64-bit integers."""
    i32, i64, ptr = ctypes.c_int, ctypes.c_int64, ctypes.c_void_p
    return ctypes.CFUNCTYPE(None, i32, i32, i32, i64, i64, i64, ctype, ptr, i64, ptr, i64,
                            ctype, ptr, i64)


def _numpy_blas_libraries() -> list[str]:
    """The BLAS libraries NumPy's wheels bundle (Linux, Windows, macOS on x86)."""
    root = os.path.dirname(np.__file__)
    found = []
    for folder in (os.path.join(root, os.pardir, "numpy.libs"), os.path.join(root, ".dylibs")):
        found += sorted(glob.glob(os.path.join(folder, "*openblas*")))
    return found


def _numpy_gemm(dtype_name: str):
    """The address of NumPy's `cblas_?gemm` with 64-bit integers, or None."""
    if os.environ.get("SECANT_NUMPY_BLAS", "1") in ("0", "false", "no"):
        return None
    for path in _numpy_blas_libraries():
        try:
            library = ctypes.CDLL(path)         # already loaded by NumPy: the same handle
        except OSError:
            continue
        for name in _NUMPY_NAMES[dtype_name]:
            function = getattr(library, name, None)
            if function is not None:
                return ctypes.cast(function, ctypes.c_void_p).value
    return None


def _callback(dtype_name: str):
    """A C function with `cblas_?gemm`'s signature (row-major operands, as `product`
    calls it) computing the product with NumPy's `@`."""
    dtype = np.dtype(dtype_name)
    pointer = ctypes.POINTER(np.ctypeslib.as_ctypes_type(dtype))

    def matrix(address, rows, cols, lead, transposed):
        if rows * cols == 0:
            return np.zeros((rows, cols), dtype)
        stored = (cols, rows) if transposed else (rows, cols)   # as laid out in memory
        flat = np.ctypeslib.as_array(ctypes.cast(address, pointer),
                                     ((stored[0] - 1) * lead + stored[1],))
        view = np.lib.stride_tricks.as_strided(
            flat, stored, (lead * dtype.itemsize, dtype.itemsize))
        return view.T if transposed else view

    def gemm(order, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc):
        out = matrix(c, m, n, ldc, False)
        try:
            left = matrix(a, m, k, lda, trans_a == TRANS)
            right = matrix(b, k, n, ldb, trans_b == TRANS)
            out[...] = alpha * (left @ right) + (beta * out if beta else 0)
        except BaseException:
            out[...] = np.nan       # ctypes reports the exception and cannot raise it
            raise
    return _gemm_prototype(np.ctypeslib.as_ctypes_type(dtype))(gemm)


_keep = []          # the callbacks (ctypes frees a callback whose object is collected)


def register() -> dict:
    """Add `secant_numpy_?gemm` to LLVM's symbol table (once per process); which each
    points to, by dtype: "numpy" or "callback"."""
    kinds = {}
    for dtype_name, symbol in _SYMBOLS.items():
        address = _numpy_gemm(dtype_name)
        kinds[dtype_name] = "numpy" if address else "callback"
        if address is None:
            _keep.append(_callback(dtype_name))
            address = ctypes.cast(_keep[-1], ctypes.c_void_p).value
        llvm.add_symbol(symbol, address)
    return kinds


KINDS = register()


@intrinsic
def _gemm(typingctx, a, b, out, transpose_b):
    """`out[...] = a @ (b.T if transpose_b else b)` by `secant_numpy_?gemm`: C-contiguous
    float matrices of one dtype, `out` of the product's shape and not empty (BLAS wants
    each leading dimension at least 1; with an inner dimension 0 it writes zeros)."""
    arrays = (a, b, out)
    if not all(isinstance(x, types.Array) and x.ndim == 2 and x.layout == "C"
               for x in arrays) or len({x.dtype for x in arrays}) != 1 \
            or str(a.dtype) not in _SYMBOLS:
        raise TypingError("numpy_blas: C-contiguous float32 or float64 matrices of one dtype")
    dtype = a.dtype

    def codegen(context, builder, signature, args):
        i32, i64 = ir.IntType(32), ir.IntType(64)
        scalar = context.get_value_type(dtype)
        pointer = scalar.as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, scalar, pointer,
                                               i64, pointer, i64, scalar, pointer, i64])
        gemm = cgutils.get_or_insert_function(builder.module, fnty, _SYMBOLS[str(dtype)])
        left, right, result = (context.make_array(t)(context, builder, v)
                               for t, v in zip(signature.args[:3], args[:3]))
        m, k = cgutils.unpack_tuple(builder, left.shape, 2)
        n = cgutils.unpack_tuple(builder, result.shape, 2)[1]
        right_cols = cgutils.unpack_tuple(builder, right.shape, 2)[1]
        flag = context.cast(builder, args[3], signature.args[3], types.boolean)
        trans_b = builder.select(flag, i32(TRANS), i32(NO_TRANS))
        one = i64(1)
        lda, ldb = (builder.select(builder.icmp_signed("<", v, one), one, v)
                    for v in (k, right_cols))
        builder.call(gemm, [i32(ROW_MAJOR), i32(NO_TRANS), trans_b, m, n, k,
                            scalar(1.0), left.data, lda, right.data, ldb,
                            scalar(0.0), result.data, n])
        return context.get_dummy_value()
    return types.none(a, b, out, transpose_b), codegen


def _product(a, b, transpose_b):
    """`a @ b`, or `a @ b.T` when `transpose_b`, of C-contiguous float matrices of one
    dtype: a new C-contiguous matrix, NumPy's BLAS computing it."""
    n = b.shape[0] if transpose_b else b.shape[1]
    inner = b.shape[1] if transpose_b else b.shape[0]
    if a.shape[1] != inner:
        raise ValueError("matmul: the inner dimensions of the product differ")
    out = empty_array((a.shape[0], n), a.dtype)
    if out.size != 0:
        _gemm(a, b, out, transpose_b)       # an inner dimension 0 fills `out` with zeros
    return out


# A helper calling a jitted function reads it as a global, which Numba lowers as the
# function object's address; LLVM removes that unused load, but at `NUMBA_OPT=0` it stays,
# and Numba refuses to disk-cache every function reaching it ("uses dynamic globals").
# There the product is compiled into each caller instead (`register_jitable`).
product = numba.njit(no_cfunc_wrapper=True)(_product)
register_jitable(_product)


def for_compiled_code():
    """The product a compiled helper calls: the jitted `product` (compiled once, cached on
    its own), or at `NUMBA_OPT=0` the same body compiled into the caller."""
    return product if int(numba.config.OPT) > 0 else _product
