"""categorical, permutation and choice in CUDA kernels: PTX with real Numba typing (no GPU
needed, slow), located refusals of the call forms without a thread form, and the
simulator cases of tests/cuda_sim_random_choice_cases.py (slow)."""
import numpy as np
import pytest

from cuda_support import ROOT, needs_numba_cuda, ptx_missing, run_on_simulator
from transformer import TransformError, jit, random, vmap

KEYS = random.split(random.PRNGKey(0), 4)


def every_form(k, logits, items, p):
    return (random.categorical(k, logits, shape=(2, 3)),
            random.categorical(k, logits, axis=0, shape=(2, 5), replace=False, mode="high"),
            random.permutation(k, 9), random.permutation(k, items),
            random.choice(k, items, (2,)), random.choice(k, 6, (3,), replace=False),
            random.choice(k, 5, (4,), p=p), random.choice(k, 5, (2,), False, p))


def shuffle_of_a_count(k, n):
    return random.permutation(k, n)


def categorical_of_a_cube(k, logits):
    return random.categorical(k, logits)


def choice_of_rows(k, x):
    return random.choice(k, x, (2,), axis=1)


def choice_shaped_by_an_int(k):
    return random.choice(k, 5, 3)


@pytest.mark.slow
@pytest.mark.skipif(ptx_missing() is not None, reason=str(ptx_missing()))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_categorical_permutation_and_choice_compile_to_ptx(dtype):
    logits = np.zeros((3, 5), dtype)
    p = np.full(5, 0.2, dtype)
    ptx = jit(vmap(every_form, in_axes=(0, None, None, None)), backend="cuda").ptx(
        KEYS, logits, np.arange(6, dtype=dtype), p)
    assert ".entry" in ptx and ".local" in ptx


@needs_numba_cuda
def test_a_draw_whose_size_is_not_known_at_compile_time_is_refused_at_its_line():
    with pytest.raises(TransformError) as info:
        jit(vmap(shuffle_of_a_count, in_axes=(0, None)), backend="cuda").source(KEYS, 5)
    message = str(info.value)
    assert "test_cuda_random_choice.py" in message and "random.permutation(k, n)" in message
    assert "takes x as an int literal or a 1-D array" in message
    with pytest.raises(TransformError) as info:
        jit(vmap(categorical_of_a_cube, in_axes=(0, None)), backend="cuda").source(
            KEYS, np.zeros((2, 2, 3)))
    assert "random.categorical(k, logits)" in str(info.value)
    assert "takes logits as a 1-D or 2-D float32/float64 array" in str(info.value)
    with pytest.raises(TransformError) as info:
        jit(vmap(choice_of_rows, in_axes=(0, None)), backend="cuda").source(
            KEYS, np.zeros((2, 3)))
    assert "random.choice(k, x, (2,), axis=1)" in str(info.value)
    with pytest.raises(TransformError) as info:       # as plain NumPy refuses it
        jit(vmap(choice_shaped_by_an_int), backend="cuda").source(KEYS)
    assert "choice_shaped_by_an_int" in str(info.value)
    assert "shape argument of choice must be a sequence" in str(info.value)


@pytest.mark.slow
@needs_numba_cuda
def test_categorical_and_shuffle_kernels_on_the_simulator(tmp_path):
    run_on_simulator(tmp_path, str(ROOT / "tests" / "cuda_sim_random_choice_cases.py"))
