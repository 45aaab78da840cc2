"""exponential, laplace, logistic, gumbel, truncated_normal, fold_in and PRNGKey in CUDA
kernels: PTX with real Numba typing (no GPU needed, slow), located refusals, and the
simulator cases of tests/cuda_sim_random_sampler_cases.py (slow)."""
import numpy as np
import pytest

from cuda_support import ROOT, needs_numba_cuda, ptx_missing, run_on_simulator
from transformer import TransformError, jit, random, vmap

KEYS = random.split(random.PRNGKey(0), 4)


def keyed_draws(x, k):
    folded = random.fold_in(k, 3)
    fresh = random.PRNGKey(11)
    return np.sum(x * random.exponential(folded, (3,))) + random.laplace(fresh) + \
        random.gumbel(k, (), mode="highest") + random.truncated_normal(k, -np.inf, 0.5) + \
        random.logistic(k, (), np.float32)


def categorical_replaced_by_a_test(x, k):
    return random.categorical(k, x, replace=x[0] > 0.0)


def truncated_to_an_array(x, k):
    return random.truncated_normal(k, x, 2.0, (3,))


@pytest.mark.slow
@pytest.mark.skipif(ptx_missing() is not None, reason=str(ptx_missing()))
def test_samplers_and_thread_keys_compile_to_ptx():
    ptx = jit(vmap(keyed_draws), backend="cuda").ptx(np.ones((4, 3)), KEYS)
    assert ".entry" in ptx and "fma.rn.f64" in ptx and "fma.rn.f32" in ptx


@needs_numba_cuda
def test_categorical_with_an_option_unknown_at_compile_time_is_refused_at_its_line():
    with pytest.raises(TransformError) as info:
        jit(vmap(categorical_replaced_by_a_test), backend="cuda").source(np.ones((4, 3)), KEYS)
    message = str(info.value)
    assert "test_cuda_random_samplers.py" in message
    assert "random.categorical(k, x, replace=x[0] > 0.0)" in message
    assert "takes replace as a literal, one of True, False" in message


@needs_numba_cuda
def test_an_array_bound_of_truncated_normal_in_a_kernel_is_refused_at_its_line():
    with pytest.raises(TransformError) as info:
        jit(vmap(truncated_to_an_array), backend="cuda").source(np.ones((4, 3)), KEYS)
    message = str(info.value)
    assert "random.truncated_normal(k, x, 2.0, (3,))" in message
    assert "scalar lower" in message


@pytest.mark.slow
@needs_numba_cuda
def test_random_sampler_kernels_on_the_simulator(tmp_path):
    run_on_simulator(tmp_path, str(ROOT / "tests" / "cuda_sim_random_sampler_cases.py"))
