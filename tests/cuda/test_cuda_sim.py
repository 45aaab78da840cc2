"""Runs the CUDA kernel tests (tests/cuda_sim_cases.py) on Numba's CUDA simulator.

The simulator is chosen by NUMBA_ENABLE_CUDASIM=1 before numba is first imported, so
the cases run in a pytest process of their own; this process is left as it was.
"""

import pytest

from cuda_support import ROOT, needs_numba_cuda, run_on_simulator


@needs_numba_cuda
@pytest.mark.parametrize("selection", [
    pytest.param(["-m", "not slow"], id="quick"),
    pytest.param(["--runslow", "-m", "slow"], id="slow", marks=pytest.mark.slow),
])
def test_cuda_kernels_on_the_simulator(tmp_path, selection):
    run_on_simulator(tmp_path, *selection, str(ROOT / "tests" / "cuda_sim_cases.py"))
