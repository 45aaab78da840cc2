"""`jit(grad(f))`: the generated gradient compiled by Numba agrees with the python backend.

One compile per function, shared by the tests through a module-scope fixture.
"""
import numpy as np
import pytest

import reverse_corpus as rc
from gradcheck import assert_gradient_close, central_differences
from transformer import grad, jit
from transformer.test_util import real_positions

pytestmark = pytest.mark.slow  # one Numba compile per corpus function

COMPILED = [rc.lj_energy, rc.rnn_loss, rc.loop_range_variants, rc.while_loop,
            rc.break_continue, rc.early_return, rc.inplace_overwrite_needed,
            rc.inplace_2d_and_slices, rc.calls_helper, rc.swap_and_unpack,
            rc.methods_and_shapes, rc.absolute_and_extremes, rc.unpacks_a_rule_result]
MAKERS = {f: make for f, make in rc.CORPUS}


@pytest.fixture(scope="module")
def compiled():
    out = {}
    for fun in COMPILED:
        args = MAKERS[fun](np.random.default_rng(3))
        wrt = real_positions(args)
        out[fun] = (jit(grad(fun, argnums=wrt)), grad(fun, argnums=wrt))
    return out


@pytest.mark.parametrize("fun", COMPILED, ids=[f.__name__ for f in COMPILED])
def test_compiled_gradient_matches_python_backend(compiled, fun):
    jitted, python = compiled[fun]
    for seed in (3, 4):
        args = MAKERS[fun](np.random.default_rng(seed))
        for a, b in zip(jitted(*args), python(*args)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_compiled_early_return_takes_each_exit(compiled):
    jitted, python = compiled[rc.early_return]
    for x in ([0.1, 0.2, 1.7, 0.3], [0.1, 0.2, 0.7, 0.3], [2.1, 3.2, 0.7, 0.3]):
        x = np.array(x)
        np.testing.assert_allclose(jitted(x)[0], python(x)[0])


def test_compiled_float32_gradient_stays_float32():
    g = jit(grad(rc.inplace_writes))(np.linspace(0.1, 0.5, 5).astype(np.float32))
    assert g.dtype == np.float32
    expect = grad(rc.inplace_writes)(np.linspace(0.1, 0.5, 5))
    np.testing.assert_allclose(g, expect, rtol=1e-4)


def row_recurrence(V, h0):
    h = h0
    for _ in range(4):
        h = np.tanh(h @ V)
    return np.sum(h * h)


def test_compiled_matrix_adjoints_accumulate_outer_products_in_place():
    # W @ h and h @ V: the matrix's adjoint gains an outer product per step, added in place
    assert "matmul_grad_left_add(" in jit(grad(rc.rnn_loss)).source()
    rows = jit(grad(row_recurrence))
    assert "matmul_grad_right_add(" in rows.source()
    rng = np.random.default_rng(5)
    V, h0 = rng.standard_normal((3, 3)) * 0.5, rng.standard_normal(3)
    got = rows(V, h0)
    np.testing.assert_allclose(got, grad(row_recurrence)(V, h0), rtol=1e-12)
    assert_gradient_close(got, central_differences(row_recurrence, (V, h0), 0))
