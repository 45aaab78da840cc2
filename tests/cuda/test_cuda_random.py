"""Random draws in CUDA kernels: PTX with real Numba typing (no GPU needed), located
refusals, and the simulator cases of tests/cuda_sim_random_cases.py (slow)."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from transformer import TransformError, jit, random, vmap

ROOT = Path(__file__).resolve().parents[2]
KEYS = random.split(random.PRNGKey(0), 4)
HAS_NUMBA_CUDA = importlib.util.find_spec("numba_cuda") is not None


def _ptx_missing():
    if not HAS_NUMBA_CUDA:
        return "numba-cuda is not installed"
    if numba.config.ENABLE_CUDASIM:
        return "the CUDA simulator is on; PTX needs the real CUDA target"
    from numba import cuda, float64
    try:
        cuda.compile_ptx(lambda x: x + 1.0, (float64,), device=True, cc=(7, 5))
    except Exception as exc:  # NVVM or NVRTC libraries not found
        return f"NVVM/NVRTC not available: {type(exc).__name__}"
    return None


PTX_MISSING = _ptx_missing()


def noisy(x, k):
    return x * random.normal(k, x.shape, dtype=np.float32) + random.uniform(
        k, (), np.float32) + np.float32(random.randint(k, (), 0, 9))


def split_in_thread(x, k):
    k1, k2 = random.split(k)
    ks = random.split(k2, 3)
    return x * random.normal(k1, x.shape) + random.uniform(ks[2], x.shape)


def fold_in_thread(x, k):
    return x + random.normal(random.fold_in(k, 3))


@pytest.mark.skipif(PTX_MISSING is not None, reason=str(PTX_MISSING))
def test_float32_draws_and_split_keys_compile_to_ptx():
    ptx = jit(vmap(noisy), backend="cuda").ptx(np.ones((4, 3), np.float32), KEYS)
    assert ".entry" in ptx and ".f64" not in ptx
    ptx = jit(vmap(split_in_thread), backend="cuda").ptx(np.ones((4, 3)), KEYS)
    assert ".entry" in ptx and "fma.rn.f64" in ptx


@pytest.mark.skipif(not HAS_NUMBA_CUDA, reason="numba-cuda is not installed")
def test_a_key_operation_in_a_kernel_is_refused_at_its_line():
    with pytest.raises(TransformError) as info:
        jit(vmap(fold_in_thread), backend="cuda").source(np.ones(4), KEYS)
    message = str(info.value)
    assert "test_cuda_random.py" in message and "random.fold_in(k, 3)" in message
    assert "random.fold_in has no CUDA form yet" in message and "one key per thread" in message


@pytest.mark.slow
@pytest.mark.skipif(not HAS_NUMBA_CUDA, reason="numba-cuda is not installed")
def test_random_kernels_on_the_simulator(tmp_path):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests"),
                                           os.environ.get("PYTHONPATH", "")]))
    env.setdefault("SECANT_CACHE_DIR", str(tmp_path / "cache"))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         str(ROOT / "tests" / "cuda_sim_random_cases.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout, run.stdout[-2000:]


@pytest.mark.skipif(not HAS_NUMBA_CUDA, reason="numba-cuda is not installed")
def test_a_key_of_the_wrong_shape_in_a_kernel_is_refused():
    with pytest.raises(TransformError) as info:
        jit(vmap(noisy), backend="cuda").source(np.ones((4, 3), np.float32),
                                                np.zeros((4, 3), np.uint32))
    assert "PRNG key of shape (2,), got shape (3,)" in str(info.value)
