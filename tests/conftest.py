"""Test session setup: fast Numba compiles, a private secant cache directory, and the
``slow`` marker.

``NUMBA_OPT`` and ``SECANT_CACHE_DIR`` must be in the environment before Numba is imported,
which is why they are set at import time of this file rather than in a fixture.

The default run (``pytest``) is the quick set a newcomer runs, a few minutes on two cores;
it still holds at least one test of every feature area, and of a parametrized test it runs
three cases (``QUICK_CASES``; mark a test ``every_case`` to run all of its cases always).
Tests marked ``slow`` (whole corpora, the CUDA simulator, program generators, subprocesses
that compile from cold) run with ``pytest --runslow``, which is what ``.ci/run`` does.

The test configuration runs on every core through pytest-xdist (``-n auto --dist loadfile`` in
setup.cfg: a file's tests stay in one worker, so they share its compiled functions). Each
worker gets a cache directory of its own, so a test that expects a cold compile never finds a
function another worker compiled.
"""
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


# A parametrized test keeps this many of its cases in the quick set: the first, the last and
# ones evenly between. Each case is a separate program or input, and most compile, so a
# corpus of 150 cases would otherwise take the quick set's whole budget; --runslow runs all.
# SECANT_QUICK_CASES changes it (CI's Python 3.10 run keeps one: it checks the interpreter,
# and the corpora run in full under --runslow beside it).
QUICK_CASES = int(os.environ.get("SECANT_QUICK_CASES", "3"))

# The files that take longest under --runslow (minutes each on two cores), longest first, in
# the order --runslow starts them: pytest-xdist hands out whole files in the order collected
# (setup.cfg's --no-loadscope-reorder), and a file of ten minutes handed out last keeps one
# core busy after the other has finished. The other files follow, those with more tests first.
LONGEST_FILES_FIRST = (
    "tests/corpus/test_differential.py",
    "tests/api/test_nested_transforms.py",
    "tests/reverse/test_grad_corpus.py",
    "tests/corpus/test_jax_style_corpus.py",
    "tests/reverse/test_write_hunt.py",
    "tests/api/test_params_passed_on.py",
    "tests/user/test_examples.py",
    "tests/primitives/test_einsum_second_order.py",
    "tests/primitives/test_registry_structural.py",
    "tests/corpus/test_array_programs_against_jax.py",
    "tests/reverse/test_checkpoint_for.py",
    "tests/reverse/test_reverse_over_reverse.py",
    "tests/primitives/test_runtime.py",
    "tests/reverse/test_vjp_cotangent_copies.py",
    "tests/reverse/test_second_order_joins.py",
    "tests/batching/test_vmap_writes.py",
)


@pytest.hookimpl(trylast=True)    # after -k/-m deselection: sample what was selected
def pytest_collection_modifyitems(config, items):
    _start_longest_files_first(config, items)
    if config.getoption("--runslow"):
        return
    slow = pytest.mark.skip(reason="slow: run with pytest --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(slow)
    _sample_parametrized_cases([item for item in items if "slow" not in item.keywords])


def _start_longest_files_first(config, items):
    """The listed files first, in their order; then the files with more tests before those
    with fewer (a file's time grows with its tests), else as collected."""
    rank = {os.path.join(str(config.rootpath), name): k
            for k, name in enumerate(LONGEST_FILES_FIRST)}
    tests_in: dict = {}
    for item in items:
        tests_in[str(item.path)] = tests_in.get(str(item.path), 0) + 1
    items.sort(key=lambda item: (rank.get(str(item.path), len(rank)),
                                 -tests_in[str(item.path)]))       # stable


def _sample_parametrized_cases(items):
    """Skip all but QUICK_CASES evenly spread cases of each parametrized test function."""
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
