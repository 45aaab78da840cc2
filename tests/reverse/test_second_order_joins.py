"""Second derivatives through np.concatenate/np.stack/np.hstack/np.vstack: their adjoints
pick one input's part (`concatenate_part` & co.), whose own adjoint puts the part back in
zeros (`concatenate_unpart` & co.) and whose tangent is the part of the tangent. Oracles:
second central differences, the transpose identity <part(g), t> = <g, unpart(t)>, and
jax.hessian where installed."""
import numpy as np
import pytest

from tests.gradcheck import assert_hessian_matches_differences, central_differences, \
    jax_with_x64
from transformer import grad, hessian, jit
from transformer.runtime import (concatenate_part, concatenate_unpart, hstack_part,
                                 hstack_unpart, stack_part, stack_unpart, vstack_part,
                                 vstack_unpart)


def concatenated(x):
    return np.sum(np.concatenate((x, x[:1] * x[1:2], np.sin(x))) ** 3)


def concatenated_columns(x):
    a = np.outer(x, x)
    return np.sum(np.tanh(np.concatenate((a, np.sin(a)), axis=-1)) ** 2)


def stacked(x):
    return np.sum(np.stack((x, x * x), axis=-1) ** 2 * np.cos(x[0]))


def hstacked(x):
    return np.sum(np.hstack((x, np.sin(x))) ** 3)


def vstacked(x):
    return np.sum(np.vstack((x, np.outer(x, np.sin(x)))) ** 3)


PROGRAMS = [concatenated, concatenated_columns, stacked, hstacked, vstacked]
X = np.array([0.3, -0.7, 1.1])


def sum_of_grad(f):
    def summed(x):
        return np.sum(grad(f)(x))
    return summed


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_hessian_through_joins_matches_second_differences(f):
    assert_hessian_matches_differences(hessian(f), f, X)


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_grad_of_grad_through_joins_matches_differences(f):
    def reference(x):
        return np.sum(central_differences(f, (x,), eps=1e-4))
    expected = central_differences(reference, (X,), eps=1e-4)
    np.testing.assert_allclose(grad(sum_of_grad(f))(X), expected, rtol=1e-4, atol=1e-5)


rng = np.random.default_rng(11)
A, B, C, D = (rng.normal(size=s) for s in [(2, 3), (2, 4), (3,), (2,)])
# (part, unpart, g, arguments after g): every join of the parts' callers, axes included
PARTS = [
    (concatenate_part, concatenate_unpart, np.concatenate((A, B), axis=1), ((A, B), 1, 1)),
    (concatenate_part, concatenate_unpart, np.concatenate((A, A)), ((A, A), 0, -2)),
    (stack_part, stack_unpart, np.stack((A, A), axis=-1), (1, -1)),
    (hstack_part, hstack_unpart, np.hstack((A, B)), ((A, B), 0)),
    (hstack_part, hstack_unpart, np.hstack((C, C, C)), ((C, C, C), 2)),
    (vstack_part, vstack_unpart, np.vstack((C, A)), ((C, A), 0)),
    (vstack_part, vstack_unpart, np.vstack((A.T, D[None])), ((A.T, D[None]), 1)),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", range(len(PARTS)))
def test_unpart_is_the_transpose_of_part(case):
    import numba
    part, unpart, g, rest = PARTS[case]
    t = rng.normal(size=np.shape(part(g, *rest)))
    expected = np.sum(part(g, *rest) * t)
    assert np.shape(unpart(t, g, *rest)) == np.shape(g)
    np.testing.assert_allclose(np.sum(g * unpart(t, g, *rest)), expected, rtol=1e-12)
    if len(rest) == 2:
        compiled_part = numba.njit(lambda g, a, b: part(g, a, b))
        compiled_unpart = numba.njit(lambda t, g, a, b: unpart(t, g, a, b))
    else:
        compiled_part = numba.njit(lambda g, a, b, c: part(g, a, b, c))
        compiled_unpart = numba.njit(lambda t, g, a, b, c: unpart(t, g, a, b, c))
    np.testing.assert_array_equal(compiled_part(g, *rest), part(g, *rest))
    np.testing.assert_array_equal(compiled_unpart(t, g, *rest), unpart(t, g, *rest))


@pytest.mark.slow
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_compiled_second_derivatives_through_joins(f):
    np.testing.assert_allclose(jit(hessian(f))(X), hessian(f)(X), rtol=1e-12)
    np.testing.assert_allclose(jit(grad(sum_of_grad(f)))(X), grad(sum_of_grad(f))(X),
                               rtol=1e-12)


@pytest.mark.slow
def test_hessian_through_joins_matches_jax():
    jax = jax_with_x64()
    jnp = jax.numpy

    def jax_concatenated(x):
        return jnp.sum(jnp.concatenate((x, x[:1] * x[1:2], jnp.sin(x))) ** 3)

    def jax_stacked(x):
        return jnp.sum(jnp.stack((x, x * x), axis=-1) ** 2 * jnp.cos(x[0]))

    def jax_vstacked(x):
        return jnp.sum(jnp.vstack((x, jnp.outer(x, jnp.sin(x)))) ** 3)

    for ours, theirs in [(concatenated, jax_concatenated), (stacked, jax_stacked),
                         (vstacked, jax_vstacked)]:
        np.testing.assert_allclose(hessian(ours)(X), np.asarray(jax.hessian(theirs)(X)),
                                   rtol=1e-10, atol=1e-12)
