"""Matrix products by NumPy's BLAS from compiled code, and the huge-page allocation of
large batches (`transformer/runtime/numpy_blas.py`, `runtime/allocation.py`).

The oracle is NumPy's `@`. Both routes to the product are checked: NumPy's own
`cblas_?gemm` (found in its wheel here) and the ctypes callback a process takes when it
is not found (`SECANT_NUMPY_BLAS=0`, in a fresh process).
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from transformer.runtime import numpy_blas
from transformer.runtime.allocation import empty_array, large_empty_array
from transformer.runtime.views import contiguous

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SHAPES = [(3, 4, 5), (1, 1, 1), (0, 3, 2), (3, 0, 2), (4, 3, 0), (2, 7, 1), (33, 65, 17)]

# every shape, both dtypes, `b` as given and transposed; prints the route and "ok"
CHECK = """
import numpy as np
from transformer.runtime import numpy_blas
rng = np.random.default_rng(5)
for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
    for m, k, n in SHAPES:
        a = rng.normal(size=(m, k)).astype(dtype)
        b = rng.normal(size=(k, n)).astype(dtype)
        want = a.astype(np.float64) @ b.astype(np.float64)
        for right, flag in ((b, False), (np.ascontiguousarray(b.T), True)):
            got = numpy_blas.product(a, right, np.bool_(flag))
            assert got.dtype == dtype and got.shape == (m, n), (got.dtype, got.shape)
            assert got.flags.c_contiguous
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol * max(k, 1))
print(numpy_blas.KINDS["float32"], numpy_blas.KINDS["float64"], "ok")
"""


def _run_check(env_extra: dict) -> list[str]:
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
           **env_extra}
    program = f"SHAPES = {SHAPES!r}\n" + textwrap.dedent(CHECK)
    done = subprocess.run([sys.executable, "-c", program], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_products_match_numpy_through_numpys_blas(capsys):
    exec(f"SHAPES = {SHAPES!r}\n" + textwrap.dedent(CHECK), {})
    assert capsys.readouterr().out.split()[-1] == "ok"
    # one compiled form per dtype, whatever the flag
    assert len(numpy_blas.product.signatures) <= 2


def test_numpys_wheel_blas_is_found_here():
    # NumPy's wheels bundle OpenBLAS with 64-bit integers; this machine runs one
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    if "scipy-openblas" not in str(blas.get("name", "")) or \
            "USE64BITINT" not in str(blas.get("openblas configuration", "")):
        pytest.skip(f"NumPy built with another BLAS: {blas.get('name')}")
    assert numpy_blas.KINDS == {"float32": "numpy", "float64": "numpy"}


@pytest.mark.slow
def test_products_match_numpy_through_the_callback():
    assert _run_check({"SECANT_NUMPY_BLAS": "0"}) == ["callback", "callback", "ok"]


def test_mismatched_inner_dimensions_raise_instead_of_reading_past_the_end():
    a = np.ones((3, 4))
    with pytest.raises(ValueError, match="inner dimensions"):
        numpy_blas.product(a, np.ones((5, 2)), np.bool_(False))
    with pytest.raises(ValueError, match="inner dimensions"):
        numpy_blas.product(a, np.ones((2, 5)), np.bool_(True))


def test_product_refuses_other_types_at_typing():
    with pytest.raises(numba.core.errors.TypingError, match="float32 or float64"):
        numpy_blas.product(np.ones((2, 2), np.int64), np.ones((2, 2), np.int64),
                           np.bool_(False))
    with pytest.raises(numba.core.errors.TypingError, match="float32 or float64"):
        numpy_blas.product(np.ones((2, 2)), np.ones((2, 2), np.float32), np.bool_(False))


@numba.njit
def _filled(shape, value):
    out = large_empty_array(shape, np.float32)
    out[...] = value
    return out


@pytest.mark.parametrize("shape", [(3, 5, 7), (8, 512, 300), (1, 1, 1 << 21), (0, 4, 4)])
def test_large_empty_array_is_a_writable_c_array_of_its_shape(shape):
    # (8, 512, 300) float32 is 4.9 MB: NumPy's huge-page advice applies from 4 MiB on
    out = _filled(shape, 1.5)
    assert out.shape == shape and out.dtype == np.float32 and out.flags.c_contiguous
    assert out.flags.writeable and np.all(out == 1.5)


@numba.njit
def _plain(n):
    return empty_array((n,), np.float32)


@numba.njit
def _large(n):
    return large_empty_array((n,), np.float32)


def _vm_flags_at(address: int) -> list[str]:
    """The kernel's VmFlags of the mapping holding `address` (/proc/self/smaps)."""
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                low, high = (int(x, 16) for x in head[0].split("-"))
                inside = low <= address < high
            elif line.startswith("VmFlags") and inside:
                return head[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="madvise is Linux's")
def test_large_arrays_ask_for_huge_pages_as_numpy_does():
    large, plain = _large(3 << 20), _plain(3 << 20)        # 12 MiB each
    assert "hg" in _vm_flags_at(large.ctypes.data + large.nbytes // 2)
    assert "hg" not in _vm_flags_at(plain.ctypes.data + plain.nbytes // 2)
    small = _large(1000)                                     # under 4 MiB: no advice
    assert small.shape == (1000,)


@numba.njit
def _contiguous_and_write(a):
    out = contiguous(a)
    out.ravel()[0] = -7.0          # reaches `a` exactly when the result is `a` itself
    return out


@pytest.mark.parametrize("make", [
    lambda x: x,                                   # C: `a` itself
    np.asfortranarray,
    lambda x: x[:, ::2],
    lambda x: x[::-1],
    lambda x: x.T,
    lambda x: x[0],                                # a C vector
    lambda x: x[:, 1],                             # a strided vector
], ids=["c", "fortran", "strided", "reversed", "transposed", "vector", "column"])
def test_contiguous_is_numpys_ascontiguousarray(make):
    a = make(np.arange(24.0).reshape(4, 6) + 1.0)
    want = np.ascontiguousarray(a).copy()
    same = a.flags.c_contiguous
    before = a.copy()
    got = _contiguous_and_write(a)
    want.ravel()[0] = -7.0
    assert got.flags.c_contiguous and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    # NumPy gives `a` itself for a C-contiguous array and a copy for any other
    assert np.shares_memory(got, a) == same
    if not same:
        np.testing.assert_array_equal(a, before)


def test_contiguous_compiles_nothing_for_a_c_array():
    from numba.core.registry import cpu_target
    from transformer.runtime import views

    @numba.njit
    def total(a):
        return contiguous(a).sum()

    def copies_compiled(dtype) -> list:
        return [key for key in cpu_target.target_context.cached_internal_func
                if key[0] is views._ascontiguousarray.__code__
                and key[1].args[0].dtype == numba.from_dtype(np.dtype(dtype))]
    ones = np.ones((2, 3, 4), np.int16)          # a type no other test uses
    assert total(ones) == 24 and copies_compiled(np.int16) == []
    assert total(np.asfortranarray(ones)) == 24 and len(copies_compiled(np.int16)) == 1
