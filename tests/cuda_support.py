"""What the CUDA tests share: whether numba-cuda, the simulator and PTX compilation are
available here (each decided once per process), and running a test file again in a
process of its own under Numba's CUDA simulator."""
from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numba
import pytest

ROOT = Path(__file__).resolve().parents[1]
SIMULATED = bool(numba.config.ENABLE_CUDASIM)
HAS_NUMBA_CUDA = importlib.util.find_spec("numba_cuda") is not None
NO_NUMBA_CUDA = "numba-cuda is not installed (pip install 'secant[cuda]')"

on_simulator = pytest.mark.skipif(not SIMULATED, reason="runs in the simulator process")
needs_numba_cuda = pytest.mark.skipif(not HAS_NUMBA_CUDA, reason=NO_NUMBA_CUDA)
# The real CUDA target's compiler (kernel source, PTX): not the simulator's Python kernels.
needs_cuda_target = pytest.mark.skipif(not HAS_NUMBA_CUDA or SIMULATED,
                                       reason="numba-cuda is not installed, or this is the "
                                              "simulator process")
# A test that starts `run_on_simulator`: from the host process only.
launches_simulator = pytest.mark.skipif(SIMULATED or not HAS_NUMBA_CUDA,
                                        reason="numba-cuda is not installed, or this is the "
                                               "simulator process")


@functools.lru_cache(maxsize=None)
def ptx_missing() -> str | None:
    """Why PTX cannot be compiled here, or None (one trial compile per process)."""
    if not HAS_NUMBA_CUDA:
        return NO_NUMBA_CUDA
    if SIMULATED:
        return "the CUDA simulator is on; PTX needs the real CUDA target"
    from numba import cuda, float64
    try:
        cuda.compile_ptx(lambda x: x + 1.0, (float64,), device=True, cc=(7, 5))
    except Exception as exc:  # NVVM or NVRTC libraries not found
        return f"NVVM/NVRTC not available (pip install nvidia-nvvm nvidia-cuda-nvrtc): " \
               f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return None


def run_on_simulator(tmp_path, *pytest_args) -> None:
    """Run pytest with `pytest_args` in a new process under the CUDA simulator (one
    process, no workers); every selected test must pass and none may skip (so every case
    of a parametrized test runs: SECANT_QUICK_CASES=0)."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", SECANT_QUICK_CASES="0",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests"),
                                           os.environ.get("PYTHONPATH", "")]))
    env.setdefault("SECANT_CACHE_DIR", str(tmp_path / "cache"))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n0", "-p", "no:cacheprovider", *pytest_args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout, run.stdout[-2000:]
