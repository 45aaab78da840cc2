"""Runs the CUDA kernel tests (tests/cuda_sim_cases.py) on Numba's CUDA simulator.

The simulator is chosen by NUMBA_ENABLE_CUDASIM=1 before numba is first imported, so
the cases run in a pytest process of their own; this process is left as it was.
"""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(importlib.util.find_spec("numba_cuda") is None,
                    reason="numba-cuda is not installed (pip install 'secant[cuda]')")
@pytest.mark.parametrize("selection", [
    pytest.param(["-m", "not slow"], id="quick"),
    pytest.param(["--runslow", "-m", "slow"], id="slow", marks=pytest.mark.slow),
])
def test_cuda_kernels_on_the_simulator(tmp_path, selection):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests"),
                                           os.environ.get("PYTHONPATH", "")]))
    env.setdefault("SECANT_CACHE_DIR", str(tmp_path / "cache"))
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *selection,
         str(ROOT / "tests" / "cuda_sim_cases.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout, run.stdout[-2000:]
