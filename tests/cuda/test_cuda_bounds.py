"""Index checks in CUDA kernels: a failed check sets an error flag, the launch raises.

The cases run on Numba's CUDA simulator, which must be switched on before numba is
imported: `test_cuda_index_checks_on_the_simulator` runs this file again in a process of
its own with NUMBA_ENABLE_CUDASIM=1, where the cases run and the launcher is deselected.
"""
import re
from pathlib import Path

import numpy as np
import pytest

from cuda_support import (HAS_NUMBA_CUDA, SIMULATED, launches_simulator,
                          on_simulator, run_on_simulator)
from transformer import grad, jit, vmap


@launches_simulator
@pytest.mark.slow
def test_cuda_index_checks_on_the_simulator(tmp_path):
    run_on_simulator(tmp_path, "-m", "not slow", "-k", "not on_the_simulator",
                     str(Path(__file__)))


# ---------------------------------------------------------------- the functions

def pick(x, k):
    return x[k] * 2.0


def put(x, k):
    x[k] = -1.0
    return x[0] + x[1] + x[2]


def through_helper(x, k):
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
    return total + pick(x, k)


def square_at(x, k):
    return x[k] * x[k]


def table_read(t, k):
    a = np.zeros(3)
    a[0] = t
    a[1] = 2.0 * t
    a[2] = 3.0 * t
    return a[k]


def table_write(t, k):
    a = np.zeros(3)
    a[k] = t
    return a[0] + 2.0 * a[1] + 3.0 * a[2]


PICK = jit(vmap(pick), backend="cuda")
PUT = jit(vmap(put), backend="cuda")
THROUGH = jit(vmap(through_helper), backend="cuda")
GRAD = jit(vmap(grad(square_at)), backend="cuda")
READ = jit(table_read, backend="cuda")
WRITE = jit(table_write, backend="cuda")

X = np.arange(18.0).reshape(6, 3) / 7.0
GOOD = np.array([0, 1, 2, -1, -3, 1])


def first_line(exc) -> str:
    """The message's first line without the column: the CUDA dialect keeps the position
    of the statement that holds an index, the cpu backend the index's own."""
    where, _, message = str(exc).splitlines()[0].partition(": ")
    return f"{where.rpartition(':')[0]}: {message}"


def cpu_error(fun, *args) -> str:
    """The message the cpu backend gives for the same out-of-bounds element."""
    with pytest.raises(IndexError) as info:
        jit(fun)(*args)
    return first_line(info.value)


# ---------------------------------------------------------------- in bounds: NumPy's values

@on_simulator
def test_in_bounds_reads_and_writes_give_numpys_values():
    np.testing.assert_allclose(PICK(X, GOOD), [2.0 * X[b, k] for b, k in enumerate(GOOD)])
    written = X.copy()
    expected = X.copy()
    sums = []
    for b, k in enumerate(GOOD):
        expected[b, k] = -1.0
        sums.append(expected[b].sum())
    np.testing.assert_allclose(PUT(written, GOOD), sums)
    np.testing.assert_array_equal(written, expected)
    np.testing.assert_allclose(THROUGH(X, GOOD), X.sum(axis=1) + 2.0 * X[np.arange(6), GOOD])
    t = np.linspace(0.5, 1.0, 6)
    np.testing.assert_allclose(READ(t, GOOD), t * np.array([1.0, 2.0, 3.0])[GOOD])
    np.testing.assert_allclose(WRITE(t, GOOD), t * np.array([1.0, 2.0, 3.0])[GOOD])


@on_simulator
def test_gradient_scatter_in_bounds_matches_the_derivative():
    expected = np.zeros_like(X)
    expected[np.arange(6), GOOD] = 2.0 * X[np.arange(6), GOOD]
    np.testing.assert_allclose(GRAD(X, GOOD), expected)


# ---------------------------------------------------------------- out of bounds: located errors

@pytest.mark.parametrize("bad", [3, -4, 7])
@on_simulator
def test_out_of_bounds_read_in_a_vmap_kernel_raises_the_cpu_error(bad):
    ks = GOOD.copy()
    ks[4] = bad
    with pytest.raises(IndexError) as info:
        PICK(X, ks)
    message = str(info.value)
    assert first_line(info.value) == cpu_error(pick, X[4], bad)
    assert f"index {bad} is out of bounds for axis 0 with size 3" in message
    assert "return x[k] * 2.0" in message and "^" in message


@on_simulator
def test_out_of_bounds_write_in_a_vmap_kernel_raises_and_leaves_the_argument():
    written = X.copy()
    ks = GOOD.copy()
    ks[2] = 3
    with pytest.raises(IndexError) as info:
        PUT(written, ks)
    assert first_line(info.value) == cpu_error(put, X[2].copy(), 3)
    assert "x[k] = -1.0" in str(info.value)
    np.testing.assert_array_equal(written, X)     # nothing copied back from a failed call


@on_simulator
def test_out_of_bounds_read_in_a_called_device_function_names_the_helper_line():
    ks = GOOD.copy()
    ks[5] = -9
    with pytest.raises(IndexError) as info:
        THROUGH(X, ks)
    assert first_line(info.value) == cpu_error(pick, X[5], -9)
    assert "return x[k] * 2.0" in str(info.value)


@on_simulator
def test_out_of_bounds_index_in_the_gradient_raises_before_its_scatter():
    ks = GOOD.copy()
    ks[0] = 5
    with pytest.raises(IndexError) as info:
        GRAD(X, ks)
    assert "index 5 is out of bounds for axis 0 with size 3" in str(info.value)
    assert "return x[k] * x[k]" in str(info.value)


@on_simulator
def test_out_of_bounds_read_and_write_in_an_elementwise_kernel():
    t = np.linspace(0.5, 1.0, 6)
    ks = GOOD.copy()
    ks[3] = 4
    with pytest.raises(IndexError) as info:
        READ(t, ks)
    assert first_line(info.value) == cpu_error(table_read, 0.5, 4)
    with pytest.raises(IndexError) as info:
        WRITE(t, ks)
    assert first_line(info.value) == cpu_error(table_write, 0.5, 4)
    assert "a[k] = t" in str(info.value)


@on_simulator
def test_a_call_after_a_failed_one_starts_with_a_clear_flag():
    ks = GOOD.copy()
    ks[1] = 3
    with pytest.raises(IndexError):
        PICK(X, ks)
    np.testing.assert_allclose(PICK(X, GOOD), [2.0 * X[b, k] for b, k in enumerate(GOOD)])


# ---------------------------------------------------------------- what is checked

@on_simulator
def test_indices_proved_by_their_loop_carry_no_check():
    text = THROUGH.source(X, GOOD)
    device = text.split("def through_helper")[1].split("@cuda.jit")[0]
    assert "for i in range(3)" in device and "x[i]" in device
    assert "flagged_index" not in device


@on_simulator
def test_boundscheck_false_builds_an_unchecked_kernel_of_its_own():
    unchecked = jit(vmap(pick), backend="cuda", boundscheck=False)
    np.testing.assert_allclose(unchecked(X, GOOD), PICK(X, GOOD))
    text, checked_text = unchecked.source(X, GOOD), PICK.source(X, GOOD)
    assert "flagged_index" in checked_text and "flagged_index" not in text
    assert "boundscheck=False" in text and "index_error" not in text


# ---------------------------------------------------------------- real CUDA typing (PTX)

def _ptx_missing() -> str | None:
    if SIMULATED or not HAS_NUMBA_CUDA:
        return "needs numba-cuda without the simulator"
    from numba import cuda, float64
    try:
        cuda.compile_ptx(lambda x: x + 1.0, (float64,), device=True, cc=(7, 5))
    except Exception as exc:  # NVVM or NVRTC libraries not found
        return f"NVVM/NVRTC not available: {type(exc).__name__}"
    return None


@pytest.mark.slow
def test_checked_kernels_compile_to_ptx_with_an_atomic_flag():
    missing = _ptx_missing()
    if missing:
        pytest.skip(missing)
    cas = re.compile(r"atom(\.global)?\.cas\.b64")
    ptx = THROUGH.ptx(X, GOOD)           # a checked read, and one in a device function
    assert ".entry" in ptx and cas.search(ptx)
    assert cas.search(WRITE.ptx(np.linspace(0.5, 1.0, 6), GOOD))
    assert ".entry" in GRAD.ptx(X, GOOD)
