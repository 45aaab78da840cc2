"""Random draws in CUDA kernels: PTX with real Numba typing (no GPU needed), located
refusals, and the simulator cases of tests/cuda_sim_random_cases.py (slow)."""

import numpy as np
import pytest

from cuda_support import ROOT, needs_numba_cuda, ptx_missing, run_on_simulator
from transformer import TransformError, jit, random, vmap

KEYS = random.split(random.PRNGKey(0), 4)


def noisy(x, k):
    return x * random.normal(k, x.shape, dtype=np.float32) + random.uniform(
        k, (), np.float32) + np.float32(random.randint(k, (), 0, 9))


def split_in_thread(x, k):
    k1, k2 = random.split(k)
    ks = random.split(k2, 3)
    return x * random.normal(k1, x.shape) + random.uniform(ks[2], x.shape)


def key_data_in_thread(x, k):
    return x + random.key_data(k)[0]


@pytest.mark.slow
@pytest.mark.skipif(ptx_missing() is not None, reason=str(ptx_missing()))
def test_float32_draws_and_split_keys_compile_to_ptx():
    ptx = jit(vmap(noisy), backend="cuda").ptx(np.ones((4, 3), np.float32), KEYS)
    assert ".entry" in ptx and ".f64" not in ptx
    ptx = jit(vmap(split_in_thread), backend="cuda").ptx(np.ones((4, 3)), KEYS)
    assert ".entry" in ptx and "fma.rn.f64" in ptx


@needs_numba_cuda
def test_a_key_operation_in_a_kernel_is_refused_at_its_line():
    with pytest.raises(TransformError) as info:
        jit(vmap(key_data_in_thread), backend="cuda").source(np.ones(4), KEYS)
    message = str(info.value)
    assert "test_cuda_random.py" in message and "random.key_data(k)" in message
    assert "random.key_data has no CUDA form yet" in message
    assert "one key per thread" in message and "draw on the CPU" in message


@pytest.mark.slow
@needs_numba_cuda
def test_random_kernels_on_the_simulator(tmp_path):
    run_on_simulator(tmp_path, str(ROOT / "tests" / "cuda_sim_random_cases.py"))


@needs_numba_cuda
def test_a_key_of_the_wrong_shape_in_a_kernel_is_refused():
    with pytest.raises(TransformError) as info:
        jit(vmap(noisy), backend="cuda").source(np.ones((4, 3), np.float32),
                                                np.zeros((4, 3), np.uint32))
    assert "PRNG key of shape (2,), got shape (3,)" in str(info.value)
