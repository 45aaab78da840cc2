"""The benchmark peers agree with the workloads they stand in for, at small sizes.

Each peer is checked against the plain workload function (run by NumPy) or against an
independent oracle (finite differences, a hand derivation); JAX and autograd tests skip
when those libraries are not installed.
"""

import numpy as np
import pytest

from benchmarks import peers, timing, workloads
from transformer.test_util import numerical_jvp


@pytest.fixture
def needs_jax():
    pytest.importorskip("jax", reason="JAX peers need jax (pip install secant[bench])")


@pytest.fixture
def needs_autograd():
    pytest.importorskip("autograd",
                        reason="autograd peers need autograd (pip install secant[bench])")


def unit(x, index):
    """The basis direction of element `index` of `x`."""
    e = np.zeros_like(x, dtype=float)
    e[index] = 1.0
    return e


def central_difference(f, x, index, h=1e-6):
    """d f / d x[index] by a central difference."""
    return numerical_jvp(f, (x,), (unit(x, index),), h)


def second_difference(f, x, i, j, h=1e-4):
    """d2 f / dx[i] dx[j] by central differences of central differences."""
    return numerical_jvp(lambda y: numerical_jvp(f, (y,), (unit(x, j),), h),
                         (x,), (unit(x, i),), h)


# ---------------------------------------------------------------------------------------
# W1 Lennard-Jones
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lj():
    # 128 particles is the smallest lattice whose box exceeds 2 * rcut.
    pos, eps, sigma, box, rcut = workloads.lj_inputs(128, seed=3)
    assert box > 2 * rcut
    return pos, eps, sigma, box, rcut


@pytest.fixture(scope="module")
def lj_forces(lj):
    return peers.lj_forces_numba(*lj)


def test_lj_inputs_put_most_pairs_outside_the_cutoff(lj):
    pos, _, _, box, rcut = lj
    d = pos[:, None] - pos[None]
    d -= box * np.round(d / box)
    r = np.sqrt((d * d).sum(-1))[np.triu_indices(len(pos), 1)]
    assert 0.1 < np.mean(r < rcut) < 0.9
    assert r.min() > 0.7


def test_lj_vectorized_energy_matches_pair_loop(lj):
    np.testing.assert_allclose(peers.lj_energy_vectorized(*lj), workloads.lj_energy(*lj),
                               rtol=1e-12)


@pytest.mark.slow
def test_lj_numba_forces_match_finite_differences(lj, lj_forces):
    pos, *rest = lj
    for index in [(0, 0), (17, 1), (127, 2)]:
        slope = central_difference(lambda p: workloads.lj_energy(p, *rest), pos, index)
        np.testing.assert_allclose(-lj_forces[index], slope, rtol=1e-5, atol=1e-6)


def test_lj_forces_sum_to_zero(lj_forces):
    np.testing.assert_allclose(lj_forces.sum(axis=0), 0.0, atol=1e-9)


def test_lj_jax_grad_is_minus_numba_forces(needs_jax, lj, lj_forces):
    np.testing.assert_allclose(np.asarray(peers.lj_grad_jax()(*lj)), -lj_forces,
                               rtol=1e-10, atol=1e-10)


def test_lj_autograd_grad_is_minus_numba_forces(needs_autograd, lj, lj_forces):
    np.testing.assert_allclose(peers.lj_grad_autograd()(*lj), -lj_forces,
                               rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------------------
# W7 recurrence
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rnn():
    return workloads.rnn_inputs(steps=40, seed=1)


def test_rnn_bptt_matches_finite_differences(rnn):
    W, *rest = rnn
    dW = peers.rnn_grad_numpy(W, *rest)
    for index in [(0, 0), (5, 20), (31, 31)]:
        slope = central_difference(lambda w: workloads.rnn_loss(w, *rest), W, index)
        np.testing.assert_allclose(dW[index], slope, rtol=1e-6, atol=1e-8)


def test_rnn_scan_loss_matches_loop(needs_jax, rnn):
    np.testing.assert_allclose(float(peers.rnn_loss_scan(*rnn)), workloads.rnn_loss(*rnn),
                               rtol=1e-12)


def test_rnn_jax_grad_matches_bptt(needs_jax, rnn):
    np.testing.assert_allclose(np.asarray(peers.rnn_grad_jax()(*rnn)),
                               peers.rnn_grad_numpy(*rnn), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------------------
# W4 Hessians
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hess():
    x, A, v = workloads.hessian_inputs(12, seed=2)
    return {
        "sum_tanh": (workloads.sum_tanh, peers.hessian_sum_tanh_numpy, x, (), v),
        "sum_tanh_linear": (workloads.sum_tanh_linear, peers.hessian_sum_tanh_linear_numpy,
                            x, (A,), v),
    }


@pytest.mark.parametrize("name", ["sum_tanh", "sum_tanh_linear"])
def test_analytic_hessian_matches_second_differences(hess, name):
    f, analytic, x, rest, _ = hess[name]
    H = analytic(x, *rest)
    for i, j in [(0, 0), (3, 7), (11, 2)]:
        second = second_difference(lambda y: f(y, *rest), x, i, j)
        np.testing.assert_allclose(H[i, j], second, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["sum_tanh", "sum_tanh_linear"])
def test_jax_hessian_and_hvp_match_analytic(needs_jax, hess, name):
    f, analytic, x, rest, v = hess[name]
    H = analytic(x, *rest)
    np.testing.assert_allclose(np.asarray(peers.hessian_jax(f)(x, *rest)), H, atol=1e-12)
    np.testing.assert_allclose(np.asarray(peers.hvp_jax(f)(x, v, *rest)), H @ v, atol=1e-12)


@pytest.mark.parametrize("name", ["sum_tanh", "sum_tanh_linear"])
def test_autograd_hessian_matches_analytic(needs_autograd, hess, name):
    f, analytic, x, rest, _ = hess[name]
    np.testing.assert_allclose(peers.hessian_autograd(f)(x, *rest), analytic(x, *rest),
                               atol=1e-12)


# ---------------------------------------------------------------------------------------
# W3 matvec and W2 per-example gradients
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def matvec_case():
    M, V = workloads.matvec_inputs(n=48, batch=5, seed=4)
    return M, V, np.stack([workloads.matvec(M, v) for v in V])


def test_numpy_batched_matvec_matches_workload_per_row(matvec_case):
    M, V, expected = matvec_case
    np.testing.assert_allclose(peers.matvec_batched_numpy(M, V), expected, rtol=1e-5, atol=1e-5)


def test_jax_batched_matvec_matches_workload_per_row(needs_jax, matvec_case):
    M, V, expected = matvec_case
    result = np.asarray(peers.matvec_batched_jax()(M, V))
    assert result.dtype == np.float32
    np.testing.assert_allclose(result, expected, rtol=1e-5, atol=1e-5)


@pytest.fixture(scope="module")
def mlp():
    params, X, Y = workloads.mlp_inputs(batch=6, seed=5)
    return params, X, Y, peers.mlp_per_example_grads_numpy(params, X, Y)


def test_mlp_numpy_grads_match_finite_differences(mlp):
    params, X, Y, grads = mlp
    params64 = {k: v.astype(np.float64) for k, v in params.items()}
    for name, index in [("W1", (3, 100)), ("b1", (7,)), ("W2", (9, 255)), ("b2", (0,))]:
        def loss(p, name=name):
            return workloads.mlp_loss(dict(params64, **{name: p}), X[2].astype(np.float64), Y[2])
        slope = central_difference(loss, params64[name], index)
        np.testing.assert_allclose(grads[name][(2, *index)], slope, rtol=1e-3, atol=1e-5)


def test_mlp_jax_per_example_grads_match_numpy(needs_jax, mlp):
    params, X, Y, grads = mlp
    result = peers.mlp_per_example_grads_jax()(params, X, Y)
    for name, expected in grads.items():
        assert result[name].shape == (X.shape[0], *params[name].shape)
        np.testing.assert_allclose(np.asarray(result[name]), expected, rtol=1e-4, atol=1e-5)


def test_mlp_autograd_grads_match_numpy(needs_autograd, mlp):
    import autograd
    import autograd.numpy as anp

    params, X, Y, grads = mlp
    grad_fn = autograd.grad(peers.on_array_module(workloads.mlp_loss, anp))
    for k in range(X.shape[0]):
        for name, g in grad_fn(params, X[k], Y[k]).items():
            np.testing.assert_allclose(g, grads[name][k], rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------------------------------
# W6 order book
# ---------------------------------------------------------------------------------------


def test_market_buy_walks_asks_upward_until_filled():
    bid = np.zeros(6, dtype=np.int64)
    ask = np.array([0, 0, 0, 5, 3, 10])
    filled = workloads.book_step(bid, ask, workloads.MARKET, workloads.BUY, 0, 12)
    assert filled == 12
    np.testing.assert_array_equal(ask, [0, 0, 0, 0, 0, 6])


def test_market_sell_on_thin_book_fills_what_is_there():
    bid = np.array([4, 0, 2, 0, 0, 0])
    ask = np.zeros(6, dtype=np.int64)
    assert workloads.book_step(bid, ask, workloads.MARKET, workloads.SELL, 0, 50) == 6
    np.testing.assert_array_equal(bid, 0)


def test_cancel_never_leaves_a_negative_quantity():
    bid = np.array([4, 0, 2])
    ask = np.zeros(3, dtype=np.int64)
    assert workloads.book_step(bid, ask, workloads.CANCEL, workloads.BUY, 2, 9) == 0
    np.testing.assert_array_equal(bid, [4, 0, 0])


def copies(arrays):
    return [a.copy() for a in arrays]


@pytest.fixture(scope="module")
def book_step_case():
    bid, ask, *messages = workloads.book_inputs(40, 1, levels=16, seed=6)
    messages = [m[:, 0] for m in messages]
    assert set(messages[0]) == {0, 1, 2}
    bid_after, ask_after = bid.copy(), ask.copy()
    filled = peers.book_step_batch_loop(bid_after, ask_after, *messages)
    return (bid, ask, *messages), (bid_after, ask_after, filled)


@pytest.fixture(scope="module")
def book_replay_case():
    inputs = workloads.book_inputs(24, 60, levels=16, seed=7)
    bid_after, ask_after, *messages = copies(inputs)
    filled = peers.book_replay_batch_loop(bid_after, ask_after, *messages)
    assert filled.min() > 0
    return inputs, (bid_after, ask_after, filled)


@pytest.mark.parametrize("case, numba_peer", [
    ("book_step_case", peers.book_step_batch_numba),
    ("book_replay_case", peers.book_replay_batch_numba),
])
@pytest.mark.slow
def test_book_numba_prange_matches_loop(request, case, numba_peer):
    inputs, expected = request.getfixturevalue(case)
    bid, ask, *messages = copies(inputs)
    filled = numba_peer(bid, ask, *messages)
    for result, want in zip((bid, ask, filled), expected):
        np.testing.assert_array_equal(result, want)


@pytest.mark.parametrize("case, jax_factory", [
    ("book_step_case", peers.book_step_batch_jax),
    ("book_replay_case", peers.book_replay_batch_jax),
])
@pytest.mark.slow
def test_book_jax_vmap_matches_loop(needs_jax, request, case, jax_factory):
    inputs, expected = request.getfixturevalue(case)
    for result, want in zip(jax_factory()(*inputs), expected):
        np.testing.assert_array_equal(np.asarray(result), want)


# ---------------------------------------------------------------------------------------
# timing harness
# ---------------------------------------------------------------------------------------


def test_table_reports_ratio_to_baseline(capsys, tmp_path):
    seconds = timing.median_time(np.add, 1.0, 2.0, repeat=3, number=2)
    assert 0 < seconds < 1
    rows = [timing.Row("W3", "512", "numpy", 2e-3), timing.Row("W3", "512", "jax", 1e-3, 0.5),
            timing.Row("W3", "1024", "jax", 4e-3)]
    timing.print_table(rows, baseline="numpy")
    lines = capsys.readouterr().out.splitlines()
    assert lines[3].split()[-1] == "0.50x"
    assert lines[4].split()[-1] == "ms"
    timing.write_json(tmp_path / "t.json", rows)
    assert (tmp_path / "t.json").read_text().count('"impl"') == 3
