"""secant's first Numba compile of a process imports no SciPy unless the program needs BLAS.

`codegen.numba_startup.defer_blas_check` imports Numba's `arraymath` with its BLAS check
answered by `importlib.util.find_spec`; these tests run each first call in a fresh process
(the deferral only acts before `arraymath` is imported) and hold results to NumPy.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(body: str, tmp_path) -> str:
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               SECANT_CACHE_DIR=str(tmp_path / "cache"), NUMBA_OPT="0")
    script = tmp_path / "first_call.py"
    script.write_text(textwrap.dedent(body))
    done = subprocess.run([sys.executable, str(script)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.slow
def test_elementwise_first_call_imports_no_scipy_linalg(tmp_path):
    out = _run("""
        import sys
        import numpy as np
        from transformer import grad, jit

        def f(x):
            return np.sum(np.sin(x) * x)

        x = np.linspace(0.1, 1.0, 5)
        g = jit(grad(f))(x)
        assert np.allclose(g, np.cos(x) * x + np.sin(x), rtol=1e-12, atol=0)
        import numba.np.arraymath as arraymath
        print('scipy.linalg' in sys.modules, arraymath._HAVE_BLAS)
        """, tmp_path)
    assert out.split() == ["False", "True"]


@pytest.mark.slow
def test_blas_functions_still_right_under_jit(tmp_path):
    out = _run("""
        import sys
        import numpy as np
        from transformer import grad, jit

        def f(a, b):
            return np.dot(a, b) + np.sum(np.convolve(a, b)) + np.sum(np.outer(a, b) @ b)

        rng = np.random.default_rng(0)
        a, b = rng.normal(size=4), rng.normal(size=4)
        assert np.isclose(jit(f)(a, b), f(a, b), rtol=1e-12, atol=0)
        ga = jit(grad(f))(a, b)
        h = 1e-6
        fd = np.array([(f(a + h * e, b) - f(a - h * e, b)) / (2 * h) for e in np.eye(4)])
        assert np.allclose(ga, fd, rtol=1e-6, atol=1e-8)
        print('scipy.linalg' in sys.modules)
        """, tmp_path)
    assert out.split() == ["True"]


@pytest.mark.slow
def test_without_scipy_convolve_compiles_with_the_inner_product(tmp_path):
    out = _run("""
        import importlib.abc
        import sys

        class NoScipy(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == 'scipy' or name.startswith('scipy.'):
                    raise ImportError('no scipy here')
                return None

        sys.meta_path.insert(0, NoScipy())
        import numpy as np
        from transformer import jit

        def f(a, b):
            return np.convolve(a, b)

        a, b = np.arange(1.0, 5.0), np.array([0.5, -1.0, 2.0])
        assert np.array_equal(jit(f)(a, b), np.convolve(a, b))
        import numba.np.arraymath as arraymath
        print(arraymath._HAVE_BLAS, 'scipy' in sys.modules)
        """, tmp_path)
    assert out.split() == ["False", "False"]


def test_does_nothing_once_arraymath_is_imported():
    from codegen import numba_startup
    import numba.np.arraymath  # noqa: F401
    assert numba_startup.defer_blas_check() is False
