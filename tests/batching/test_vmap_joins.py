"""vmap of np.concatenate/np.stack/np.hstack/np.vstack whose operands are a tuple (or list)
mixing batched and unbatched arrays, and vmap(grad) through them, whose adjoints call
`concatenate_part`/`stack_part`/`hstack_part`/`vstack_part` on that tuple. Oracle: the
per-example Python loop of grad, itself checked against central differences; JAX where
installed."""
import numpy as np
import pytest

import transformer
from tests.gradcheck import assert_gradient_close, central_differences, jax_with_x64
from transformer import grad, jit, vmap
from transformer.runtime import concatenate, concatenate_part, examples, hstack, vstack

C6 = np.linspace(0.5, 1.5, 6)


def concatenate_mixed(w, x):
    h = np.tanh(np.dot(w, x))
    return np.sum(np.concatenate((h, w[0], h[:1])) * C6)


def concatenate_list(w, x):
    h = np.dot(w, x)
    return np.sum(np.concatenate([h, w[0], h[:1]]) ** 2)


def concatenate_axis1(w, x):
    a = np.outer(x, x)
    return np.sum(np.sin(np.concatenate((a, w.T), axis=1)))


def stack_mixed(w, x):
    h = np.dot(w, x)
    return np.sum(np.stack((h, w[:, 0]), axis=-1) ** 3)


def hstack_mixed(w, x):
    h = np.dot(w, x)
    return np.sum(np.sin(np.hstack((h, w[0], x))))


def vstack_mixed(w, x):
    h = np.dot(w, x)
    return np.sum(np.vstack((h, w[:, 0])) * np.vstack((w[:, 1], h)))


def _pair(w, x):
    h1 = np.dot(w, x)
    return np.sum(w * w), np.concatenate([h1, h1[:1]])


def first_of_pair(w, x):           # found by hunt_against_jax.py, seed 63
    return _pair(w, x)[0]


PROGRAMS = [concatenate_mixed, concatenate_list, concatenate_axis1, stack_mixed,
            hstack_mixed, vstack_mixed, first_of_pair]
rng = np.random.default_rng(5)
W = rng.normal(size=(2, 3))
X = rng.normal(size=(4, 3))
WS = rng.normal(size=(4, 2, 3))


def per_example(f, ws, xs):
    return np.stack([grad(f)(w, x) for w, x in zip(ws, xs)])


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_grad_through_joins_matches_differences(f):
    assert_gradient_close(grad(f)(W, X[0]), central_differences(f, (W, X[0])),
                          f.__name__)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_vmap_grad_through_joins_of_batched_and_shared_operands(f):
    expected = per_example(f, [W] * len(X), X)
    np.testing.assert_allclose(vmap(grad(f), in_axes=(None, 0))(W, X), expected, rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(f), in_axes=(None, 1))(W, X.T), expected,
                               rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(f), in_axes=(0, 0))(WS, X),
                               per_example(f, WS, X), rtol=1e-12)


def test_vmap_grad_through_concatenate_vectorizes():
    text = str(transformer.source(vmap(grad(concatenate_mixed), in_axes=(None, 0))))
    assert "vectorize strategy" in text and "concatenate_part_each" in text


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_vmap_of_joins_with_shared_operands(axis):
    a, b = rng.normal(size=(4, 2, 3)), rng.normal(size=(2, 3))

    def joined(a, b):
        return np.concatenate((a, b, a), axis=axis), np.stack((b, a), axis=axis)

    got = vmap(joined, in_axes=(0, None))(a, b)
    for k in range(len(a)):
        for part, expected in zip(got, joined(a[k], b)):
            np.testing.assert_array_equal(part[k], expected)
    moved = vmap(joined, in_axes=(2, None))(np.moveaxis(a, 0, 2), b)
    for part, expected in zip(moved, got):
        np.testing.assert_array_equal(part, expected)


@pytest.mark.slow
def test_over_examples_splits_a_tuple_of_batched_and_shared_items():
    g, h, s = rng.normal(size=(4, 5)), rng.normal(size=(4, 3)), rng.normal(size=2)
    each = examples.over_examples(concatenate_part, (True, (True, False), False, False))
    expected = np.stack([concatenate_part(g[k], (h[k], s), 1, 0) for k in range(4)])
    np.testing.assert_array_equal(each(g, (h, s), 1, 0), expected)
    compiled = jit(vmap(grad(concatenate_mixed), in_axes=(None, 0)))
    np.testing.assert_allclose(compiled(W, X), per_example(concatenate_mixed, [W] * 4, X),
                               rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_jit_vmap_grad_through_joins(f):
    np.testing.assert_allclose(jit(vmap(grad(f), in_axes=(None, 0)))(W, X),
                               per_example(f, [W] * len(X), X), rtol=1e-12)


@pytest.mark.slow
def test_compiled_joins_of_lists_and_of_mixed_ranks():
    import numba
    join = numba.njit(lambda xs, axis: concatenate(xs, axis))
    a, b, v = rng.normal(size=(2, 3)), rng.normal(size=(2, 2)), rng.normal(size=3)
    np.testing.assert_array_equal(join([a, b[:, :2]], 1), np.concatenate([a, b], 1))
    np.testing.assert_array_equal(join([a, a], -2), np.concatenate([a, a], -2))
    with pytest.raises(ValueError, match="must match"):
        join([a, b], 0)
    rows = numba.njit(lambda xs: vstack(xs))
    columns = numba.njit(lambda xs: hstack(xs))
    for xs in ([v, v], [a, a], (v, a, v), (a.T, b.T)):
        np.testing.assert_array_equal(rows(xs), np.vstack(xs))
    for xs in ([v, v], [a, b], (a, b)):
        np.testing.assert_array_equal(columns(xs), np.hstack(xs))
    with pytest.raises(ValueError, match="must match"):
        rows((v, b))


@pytest.mark.slow
def test_jit_of_joins_of_lists_and_of_mixed_ranks():
    def joins(x):
        return np.sum(np.vstack((x, np.outer(x, x))) * np.vstack([x, x, x, x])) + \
            np.sum(np.hstack([x, x]) ** 2) + np.sum(np.concatenate([x, x[:1]]))

    x = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(jit(joins)(x), joins(x), rtol=1e-14)


@pytest.mark.slow
def test_vmap_grad_through_joins_matches_jax():
    jax = jax_with_x64()
    jnp = jax.numpy

    def jax_first_of_pair(w, x):
        h1 = jnp.dot(w, x)
        return jnp.sum(w * w) + 0.0 * jnp.sum(jnp.concatenate([h1, h1[:1]]))

    def jax_concatenate_mixed(w, x):
        h = jnp.tanh(jnp.dot(w, x))
        return jnp.sum(jnp.concatenate((h, w[0], h[:1])) * C6)

    def jax_stack_mixed(w, x):
        h = jnp.dot(w, x)
        return jnp.sum(jnp.stack((h, w[:, 0]), axis=-1) ** 3)

    for ours, theirs in [(first_of_pair, jax_first_of_pair),
                         (concatenate_mixed, jax_concatenate_mixed),
                         (stack_mixed, jax_stack_mixed)]:
        expected = jax.vmap(jax.grad(theirs), in_axes=(None, 0))(W, X)
        np.testing.assert_allclose(vmap(grad(ours), in_axes=(None, 0))(W, X),
                                   np.asarray(expected), rtol=1e-10)
