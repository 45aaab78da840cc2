"""Test session setup: fast Numba compiles, a private secant cache directory, and the
``slow`` marker.

``NUMBA_OPT`` and ``SECANT_CACHE_DIR`` must be in the environment before Numba is imported,
which is why they are set at import time of this file rather than in a fixture.

The default run (``pytest``) is the quick set a newcomer runs, a few minutes on two cores;
it still holds at least one test of every feature area. Tests marked ``slow`` (whole
corpora, the CUDA simulator, program generators, subprocesses that compile from cold) run
with ``pytest --runslow``, which is what ``.ci/run`` does.
"""
import os
import tempfile

import pytest

os.environ.setdefault("NUMBA_OPT", "0")
if not os.environ.get("SECANT_CACHE_DIR"):
    os.environ["SECANT_CACHE_DIR"] = tempfile.mkdtemp(prefix="secant-test-cache-")


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run the tests marked slow (what .ci/run does)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with pytest --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
