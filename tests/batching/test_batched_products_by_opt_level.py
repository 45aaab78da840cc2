"""Batched matrix products and outer products at the optimization level users run and at
the one the tests run (`transformer/runtime/batching.py`).

A batched `W @ x` and the matrix products of its gradient go through NumPy's BLAS
(`runtime/numpy_blas.py`) at every level, one compiled product per dtype (at
`NUMBA_OPT=0` compiled into each caller, where a call to a jitted function keeps the
caller from Numba's disk cache); the per-example
outer products of `vmap(grad)` allocate as NumPy does (`large_empty_array`). The rest of
the suite runs at `NUMBA_OPT=0`, so the forms users get are checked here, in a fresh
process at Numba's default level, against NumPy.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numba
import numpy as np
import pytest

from transformer import grad, jit, vmap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# per-example gradients of a two-layer loss, against the same written out in NumPy; the
# batched `W1 @ x` (dot_right), `h @ W2` (dot_left), the weights' gradients (outer
# products of rows) and the input's gradient (grad_right) in float64 and float32
PROGRAM = """
import numpy as np
import numba
from transformer import grad, jit, vmap
from transformer.runtime import batching

def loss(W1, W2, x):
    h = np.tanh(W1 @ x)
    return np.sum(np.sin(h @ W2))

def by_hand(W1, W2, X):
    gW1, gW2, gx = [], [], []
    for x in X:
        h = np.tanh(W1 @ x)
        c = np.cos(h @ W2)
        dh = (W2 @ c) * (1.0 - h * h)
        gW1.append(np.outer(dh, x))
        gW2.append(np.outer(h, c))
        gx.append(W1.T @ dh)
    return np.stack(gW1), np.stack(gW2), np.stack(gx)

rng = np.random.default_rng(7)
for dtype, tol in ((np.float64, 1e-10), (np.float32, 2e-4)):
    W1 = rng.normal(size=(6, 5)).astype(dtype)
    W2 = rng.normal(size=(6, 3)).astype(dtype)
    X = rng.normal(size=(4, 5)).astype(dtype)
    want = by_hand(W1.astype(np.float64), W2.astype(np.float64), X.astype(np.float64))
    # weights in C order, in Fortran order and as a transposed view: one product each
    for weights in (W1, np.asfortranarray(W1), np.ascontiguousarray(W1.T).T):
        got = jit(vmap(grad(loss, argnums=(0, 1, 2)), in_axes=(None, None, 0)))(
            weights, W2, X)
        for g, w in zip(got, want):
            assert g.dtype == dtype, (g.dtype, dtype)
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol)
# which forms ran: NumPy's product at Numba's default level, compiled once per dtype
# whatever the layout of the weights
from transformer.runtime import numpy_blas
print(int(numba.config.OPT) > 0, len(numpy_blas.product.signatures))
"""


def test_batched_products_at_numbas_default_level_match_numpy(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_OPT"}
    env.update(PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               SECANT_CACHE_DIR=str(tmp_path / "cache"))
    script = tmp_path / "products.py"
    script.write_text(textwrap.dedent(PROGRAM))
    done = subprocess.run([sys.executable, str(script)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "2"]


def test_at_opt_level_0_batched_products_compile_without_a_cache_warning():
    numba.core.config.reload_config()        # Numba rereads its settings at each compile
    assert int(numba.config.OPT) == 0        # the test setting (tests/conftest.py)

    def layer_loss(W, x):                        # a body no other test compiles
        return np.sum(np.tanh(W @ x) * 0.625)

    rng = np.random.default_rng(3)
    W, X = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = jit(vmap(grad(layer_loss), in_axes=(None, 0)))(W, X)
    want = np.stack([np.outer(0.625 * (1 - np.tanh(W @ x) ** 2), x) for x in X])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    messages = [str(w.message) for w in caught]
    assert not [m for m in messages if "Cannot cache" in m], messages


@pytest.mark.parametrize("level", [0, 2])
def test_the_numpy_product_is_chosen_at_every_level(monkeypatch, level):
    from numba import types
    from transformer.runtime import batching, numpy_blas
    monkeypatch.setattr(numba.config, "OPT", type(numba.config.OPT)(level))
    for dtype in (types.float64, types.float32):
        matrix = types.Array(dtype, 2, "C")
        want = numpy_blas.product if level else numpy_blas._product
        assert batching._numpy_product(matrix, matrix) is want
    ints = types.Array(types.int64, 2, "C")
    assert batching._numpy_product(ints, ints) is None
    assert batching._numpy_product(types.Array(types.float32, 2, "C"),
                                   types.Array(types.float64, 2, "C")) is None
