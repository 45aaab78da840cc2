"""gamma, beta, dirichlet, poisson, orthogonal and multivariate_normal in CUDA kernels:
PTX with real Numba typing (no GPU needed), located refusals of the call forms without a
CUDA form, and the simulator cases of tests/cuda_sim_random_heavy_cases.py (slow)."""

import numpy as np
import pytest

from cuda_support import ROOT, needs_numba_cuda, ptx_missing, run_on_simulator
from transformer import TransformError, jit, random, vmap

KEYS = random.split(random.PRNGKey(0), 4)
COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]])


def rejection_draws(x, k, cov):
    k1, k2 = random.split(k)
    q = random.orthogonal(k2, 3)
    g = random.multivariate_normal(k1, x, cov)
    d = random.dirichlet(k2, x * x + 0.5)
    return x * random.gamma(k1, 0.5, x.shape) + random.beta(k2, 2.0, 3.0) + \
        np.float64(random.poisson(k, 30.0)) + q[0] + g + d


def dirichlet_of_a_matrix(x, k):
    return x * random.dirichlet(k, np.ones((2, 3)))


def gamma_of_a_vector(x, k):
    return random.gamma(k, x)


def gaussian_by_eigh(x, k):
    return random.multivariate_normal(k, x, COV, method="eigh")


def gaussian_of_a_global(x, k):
    return random.multivariate_normal(k, x, COV)


@pytest.mark.slow
@pytest.mark.skipif(ptx_missing() is not None, reason=str(ptx_missing()))
def test_the_rejection_and_linear_algebra_samplers_compile_to_ptx():
    ptx = jit(vmap(rejection_draws, in_axes=(0, 0, None)), backend="cuda").ptx(
        np.ones((4, 3)), KEYS, COV)
    assert ".entry" in ptx and "fma.rn.f64" in ptx


@needs_numba_cuda
def test_a_call_form_without_a_cuda_form_is_refused_at_its_line():
    with pytest.raises(TransformError) as info:
        jit(vmap(dirichlet_of_a_matrix), backend="cuda").source(np.ones((4, 2, 3)), KEYS)
    message = str(info.value)
    assert "test_cuda_random_heavy.py" in message and "random.dirichlet(k, np.ones((2, 3)))" \
        in message
    assert "takes alpha as a 1-D array" in message


@needs_numba_cuda
def test_an_array_parameter_in_a_kernel_is_refused_at_its_line():
    with pytest.raises(TransformError) as info:
        jit(vmap(gamma_of_a_vector), backend="cuda").source(np.ones((4, 3)), KEYS)
    message = str(info.value)
    assert "random.gamma(k, x)" in message and "takes a scalar a" in message


@needs_numba_cuda
def test_a_factorization_without_a_thread_form_is_refused_with_the_one_that_has():
    with pytest.raises(TransformError) as info:
        jit(vmap(gaussian_by_eigh), backend="cuda").source(np.ones((4, 3)), KEYS)
    message = str(info.value)
    assert 'method="eigh"' in message and "takes method='cholesky'" in message
    assert "w, v = np.linalg.eigh(cov); L = v * np.sqrt(w)" in message   # simulator-tested
    with pytest.raises(TransformError) as info:
        jit(vmap(gaussian_of_a_global), backend="cuda").source(np.ones((4, 3)), KEYS)
    assert "random.multivariate_normal(k, x, COV)" in str(info.value)
    assert "vmap with in_axes None" in str(info.value)


@pytest.mark.slow
@needs_numba_cuda
def test_heavy_random_kernels_on_the_simulator(tmp_path):
    run_on_simulator(tmp_path, str(ROOT / "tests" / "cuda_sim_random_heavy_cases.py"))
