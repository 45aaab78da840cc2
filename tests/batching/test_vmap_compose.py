"""vmap composed with grad, jvp and jit: per-example gradients, gradients through a
vmapped call, batched tangents, and compiled versions of each. Oracles: Python loops over
the unbatched transformations, finite differences, hand-written backpropagation."""
import numpy as np
import pytest

from transformer import grad, jit, jvp, show_vmap, vmap
from transformer.test_util import numerical_jacobian


def mlp(W1, b1, W2, b2, x, y):
    h = np.tanh(W1 @ x + b1)
    logits = W2 @ h + b2
    z = logits - np.max(logits)
    return np.log(np.sum(np.exp(z))) - z[y]


def energy(r, w):
    return np.sum(np.tanh(r * w))


batched_energy = vmap(energy, in_axes=(0, None))


def total(x, w):
    e = batched_energy(x, w)
    return np.sum(e * e)


def smooth(x):
    return np.sum(np.sin(x) * x) + x[0] * x[1]


def branchy_loss(x, c):
    if np.sum(x) > c:
        return np.sum(x * x)
    return np.sum(np.cos(x))


rng = np.random.default_rng(0)
WEIGHTS = [rng.normal(size=(5, 7)), rng.normal(size=5), rng.normal(size=(3, 5)),
           rng.normal(size=3)]
X = rng.normal(size=(6, 7))
Y = rng.integers(0, 3, size=6)
AXES = (None,) * 4 + (0, 0)


def hand_mlp_grads(W1, b1, W2, b2, X, Y):
    H = np.tanh(X @ W1.T + b1)
    logits = H @ W2.T + b2
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(Y)), Y] -= 1.0
    dpre = (p @ W2) * (1.0 - H * H)
    return [dpre[:, :, None] * X[:, None, :], dpre, p[:, :, None] * H[:, None, :], p]


@pytest.fixture(scope="module")
def per_example():
    fn = vmap(grad(mlp, argnums=(0, 1, 2, 3)), in_axes=AXES)
    return fn, jit(fn)


def test_per_example_gradients_vectorize(per_example):
    assert "vmap: vectorize strategy" in per_example[0].source()


@pytest.mark.parametrize("backend", [0, pytest.param(1, marks=pytest.mark.slow)],
                         ids=["python", "numba"])
def test_per_example_gradients_equal_hand_backprop(per_example, backend):
    got = per_example[backend](*WEIGHTS, X, Y)
    for g, want in zip(got, hand_mlp_grads(*WEIGHTS, X, Y)):
        np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-12)


@pytest.mark.slow
def test_parallel_jit_of_vectorized_per_example_gradients(per_example):
    # the (B, 1) - (B, k) broadcasts of the vectorized code used to fail Numba's parfor
    # size assertion ("Sizes of ... do not match")
    got = jit(per_example[0], parallel=True)(*WEIGHTS, X, Y)
    for g, want in zip(got, hand_mlp_grads(*WEIGHTS, X, Y)):
        np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-12)


def test_per_example_gradients_equal_a_loop_of_grad(per_example):
    got = per_example[0](*WEIGHTS, X, Y)
    single = grad(mlp, argnums=(0, 1, 2, 3))
    for i in range(len(Y)):
        for g, want in zip(got, single(*WEIGHTS, X[i], Y[i])):
            np.testing.assert_allclose(g[i], want, rtol=1e-10, atol=1e-12)


@pytest.mark.slow
def test_per_example_gradients_through_a_batched_branch():
    xs = rng.normal(size=(5, 4))
    per = vmap(grad(branchy_loss), in_axes=(0, None))
    assert "vmap: loop strategy" in per.source()
    want = [grad(branchy_loss)(x, 0.1) for x in xs]
    np.testing.assert_allclose(per(xs, 0.1), want)
    np.testing.assert_allclose(jit(per, parallel=True)(xs, 0.1), want)


@pytest.mark.slow
def test_grad_of_a_function_calling_vmap():
    x, w = rng.normal(size=(4, 3)), rng.normal(size=3)
    want = numerical_jacobian(lambda v: total(x, v), w)
    np.testing.assert_allclose(grad(total, argnums=1)(x, w), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jit(grad(total, argnums=1))(x, w), want, rtol=1e-6, atol=1e-8)
    want_x = numerical_jacobian(lambda v: total(v, w), x)
    np.testing.assert_allclose(grad(total)(x, w), want_x, rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_vmap_of_jvp_equals_a_loop_of_jvp():
    xs, ts = rng.normal(size=(5, 4)), rng.normal(size=(5, 4))
    batched = vmap(jvp(smooth))
    assert "vmap: vectorize strategy" in show_vmap(jvp(smooth))
    primals, tangents = batched(xs, ts)
    for i in range(5):
        p, t = jvp(smooth, (xs[i],), (ts[i],))
        np.testing.assert_allclose(primals[i], p)
        np.testing.assert_allclose(tangents[i], t)
    compiled = jit(batched)(xs, ts)
    np.testing.assert_allclose(compiled[0], primals)
    np.testing.assert_allclose(compiled[1], tangents)


def test_jvp_of_vmap_equals_finite_differences():
    xs, ts = rng.normal(size=(5, 4)), rng.normal(size=(5, 4))
    _, tangent = jvp(vmap(smooth), (xs,), (ts,))
    eps = 1e-6
    want = (vmap(smooth)(xs + eps * ts) - vmap(smooth)(xs - eps * ts)) / (2 * eps)
    np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-8)


def dict_mlp(params, x, y):
    h = np.tanh(params["W1"] @ x + params["b1"])
    logits = params["W2"] @ h + params["b2"]
    z = logits - np.max(logits)
    return np.log(np.sum(np.exp(z))) - z[y]


def test_per_example_gradients_of_dict_parameters():
    params = dict(zip(["W1", "b1", "W2", "b2"], WEIGHTS))
    got = vmap(grad(dict_mlp), in_axes=(None, 0, 0))(params, X, Y)
    for key, want in zip(["W1", "b1", "W2", "b2"], hand_mlp_grads(*WEIGHTS, X, Y)):
        np.testing.assert_allclose(got[key], want, rtol=1e-9, atol=1e-12)


def dict_branchy(p, x):
    if np.sum(x) > 0:
        return np.sum(p["w"] * x * x)
    return np.sum(p["w"] * x) + p["b"]


@pytest.mark.slow
def test_per_example_gradients_with_dict_result_through_a_batched_branch():
    params = {"w": np.arange(3.0), "b": 2.0}
    xs = rng.normal(size=(5, 3))
    per = vmap(grad(dict_branchy), in_axes=(None, 0))
    assert "vmap: loop strategy" in per.source()
    want = [grad(dict_branchy)(params, x) for x in xs]
    for got in (per(params, xs), jit(per)(params, xs)):
        np.testing.assert_allclose(got["w"], [g["w"] for g in want])
        np.testing.assert_allclose(got["b"], [g["b"] for g in want])
