"""Test session setup: fast Numba compiles, a private secant cache directory, and the
``slow`` marker.

``NUMBA_OPT`` and ``SECANT_CACHE_DIR`` must be in the environment before Numba is imported,
which is why they are set at import time of this file rather than in a fixture.

The default run (``pytest``) is the quick set a newcomer runs, a few minutes on two cores;
it still holds at least one test of every feature area (every test file), and of a
parametrized test it runs the first case (``QUICK_CASES``; mark a test ``every_case`` to run
all of its cases always). A test that compiles much (several Numba compiles, second
derivatives under jit, generated programs) is marked ``slow`` when its file keeps a cheaper
test of the same feature in the quick set.
Tests marked ``slow`` (whole corpora, the CUDA simulator, program generators, subprocesses
that compile from cold) run with ``pytest --runslow``, which is what ``.ci/run`` does.

The test configuration runs on every core through pytest-xdist (``-n auto --dist loadfile`` in
setup.cfg: a file's tests stay in one worker, so they share its compiled functions). Each
worker gets a cache directory of its own, so a test that expects a cold compile never finds a
function another worker compiled.
"""
import gc
import os
import tempfile

import pytest

os.environ.setdefault("NUMBA_OPT", "0")
if not os.environ.get("SECANT_CACHE_DIR"):
    os.environ["SECANT_CACHE_DIR"] = tempfile.mkdtemp(prefix="secant-test-cache-")
if os.environ.get("PYTEST_XDIST_WORKER"):     # inherited from the controller: one per worker
    os.environ["SECANT_CACHE_DIR"] = os.path.join(os.environ["SECANT_CACHE_DIR"],
                                                  os.environ["PYTEST_XDIST_WORKER"])


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run the tests marked slow (what .ci/run does)")


# A parametrized test keeps this many of its cases in the quick set: the first, then (when
# more) the last and ones evenly between. Each case is a separate program or input, and most
# compile, so a corpus of 150 cases would otherwise take the quick set's whole budget of five
# minutes on two cores; --runslow runs all. SECANT_QUICK_CASES=3 keeps three, 0 all of them.
QUICK_CASES = int(os.environ.get("SECANT_QUICK_CASES", "1"))

@pytest.hookimpl(trylast=True)    # after -k/-m deselection: sample what was selected
def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    slow = pytest.mark.skip(reason="slow: run with pytest --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(slow)
    _sample_parametrized_cases([item for item in items if "slow" not in item.keywords])


def _sample_parametrized_cases(items):
    """Skip all but QUICK_CASES evenly spread cases of each parametrized test function."""
    if QUICK_CASES <= 0:
        return
    groups: dict = {}
    for item in items:
        if getattr(item, "callspec", None) is not None and "every_case" not in item.keywords:
            groups.setdefault((item.path, item.originalname), []).append(item)
    for cases in groups.values():
        n = len(cases)
        if n <= QUICK_CASES:
            continue
        kept = {round(k * (n - 1) / max(QUICK_CASES - 1, 1)) for k in range(QUICK_CASES)}
        reason = f"one of {n} cases of this test; pytest --runslow runs every case"
        for k, item in enumerate(cases):
            if k not in kept:
                item.add_marker(pytest.mark.skip(reason=reason))


_previous_file = [None]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """At the first test of each file, collect the garbage and freeze what survives.

    A worker keeps every compiled function of the files it ran (Numba holds each one's typing
    and IR objects), and the cyclic collector's full passes walked them all again and again:
    about a tenth of a worker's CPU time by the end of `pytest --runslow`. Frozen objects are
    left out of those passes. The previous file's fixtures are torn down by now, so what is
    frozen is what stays alive anyway; reference counting still frees it if it dies later.
    """
    if item.path != _previous_file[0]:
        _previous_file[0] = item.path
        gc.collect()
        gc.freeze()
