"""Arrays read from a module global or a closure are hidden arguments of the compiled code
(`transformer.captured_arrays`): read at each call, never frozen in, so a rebinding is seen
without compiling again, the module is shared by closures over different arrays, and Numba
caches the code on disk. Oracles: the analytic derivatives, written out with NumPy."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from transformer import grad, hessian, jit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RNG = np.random.default_rng(7)
WEIGHTS = RNG.normal(size=3)


def weighted(x):
    return np.sum(np.tanh(x) * WEIGHTS)


def quadratic_form(A):
    def f(x):
        return x @ A @ x
    return f


@pytest.fixture
def weights(monkeypatch):
    """Rebinds the module global WEIGHTS; restored after the test."""
    def rebind(value):
        monkeypatch.setattr(sys.modules[__name__], "WEIGHTS", value)
    return rebind


def test_grad_reads_a_rebound_global_array_without_compiling_again(weights):
    g = jit(grad(weighted))
    x = RNG.normal(size=3)
    np.testing.assert_allclose(g(x), (1.0 - np.tanh(x) ** 2) * WEIGHTS, rtol=1e-12)
    new = RNG.normal(size=3)
    weights(new)
    np.testing.assert_allclose(g(x), (1.0 - np.tanh(x) ** 2) * new, rtol=1e-12)
    info = g.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    assert "takes WEIGHTS: hidden argument, array float64 1-d" in g.source(x)


@pytest.mark.slow
def test_a_global_array_rebound_to_another_kind_compiles_a_new_specialization(weights):
    g = jit(grad(weighted))
    x = RNG.normal(size=3)
    g(x)
    matrix = RNG.normal(size=(2, 3))         # another rank: the sum runs over both rows
    weights(matrix)
    np.testing.assert_allclose(g(x), (1.0 - np.tanh(x) ** 2) * matrix.sum(axis=0),
                               rtol=1e-12)
    weights(2.5)                             # not an array any more: a constant again
    np.testing.assert_allclose(g(x), (1.0 - np.tanh(x) ** 2) * 2.5, rtol=1e-12)
    assert g.cache_info().misses == 3


def test_closures_over_different_arrays_share_one_compiled_module():
    x = RNG.normal(size=4)
    first, second = RNG.normal(size=(4, 4)), RNG.normal(size=(4, 4))
    kept = second.copy()
    g1, g2 = jit(grad(quadratic_form(first))), jit(grad(quadratic_form(second)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # Numba's "uses dynamic globals" would raise
        np.testing.assert_allclose(g1(x), (first + first.T) @ x, rtol=1e-12)
    np.testing.assert_allclose(g2(x), (second + second.T) @ x, rtol=1e-12)
    assert g2.cache_info().modules_reused == 1     # the text names no value of the array
    np.testing.assert_array_equal(second, kept)    # a captured array gets no cotangent


@pytest.mark.slow
def test_an_array_read_from_outside_is_written_through_like_in_python():
    A = np.zeros(3)

    def scatter(x):
        A[0] = x[0]
        return np.sum(x * A)
    f = jit(scatter)
    assert f(np.array([2.0, 1.0, 1.0])) == 4.0
    assert A[0] == 2.0


@pytest.mark.slow
def test_hessian_of_a_closed_over_matrix_is_cached_and_reused_for_a_new_matrix():
    x = RNG.normal(size=5)
    for A in (RNG.normal(size=(5, 5)), RNG.normal(size=(5, 5))):
        h = jit(hessian(quadratic_form(A)))
        np.testing.assert_allclose(h(x), A + A.T, rtol=1e-12)
    assert h.cache_info().modules_reused >= 1


PROGRAM = """
    import warnings, numpy as np
    from transformer import grad, jit
    A = np.arange(9.0).reshape(3, 3)
    def f(x):
        return np.sum(np.tanh(A @ x))
    g = jit(grad(f))
    x = np.array([0.1, -0.2, 0.3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # "uses dynamic globals" would raise
        value = g(x)
    t = 1.0 - np.tanh(A @ x) ** 2
    assert np.allclose(value, A.T @ t, rtol=1e-12), value
    print(g.cache_info().disk_hits)
"""


@pytest.mark.slow
def test_code_reading_a_global_array_is_cached_on_disk_for_the_next_process(tmp_path):
    env = {**os.environ, "SECANT_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    program = tmp_path / "program.py"
    program.write_text(textwrap.dedent(PROGRAM))
    runs = [subprocess.run([sys.executable, str(program)], env=env, capture_output=True,
                           text=True) for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    assert int(runs[0].stdout.split()[-1]) == 0
    assert int(runs[1].stdout.split()[-1]) >= 1
