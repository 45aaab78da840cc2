"""Runs pmap's CUDA cases (cuda_sim_pmap_cases.py) on Numba's CUDA simulator in a process of
its own, the way tests/cuda does."""
import pytest

from cuda_support import ROOT, needs_numba_cuda, run_on_simulator


@pytest.mark.slow
@needs_numba_cuda
def test_pmap_cuda_cases_on_the_simulator(tmp_path):
    run_on_simulator(tmp_path, str(ROOT / "tests" / "pmap" / "cuda_sim_pmap_cases.py"))
