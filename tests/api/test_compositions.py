"""Transformations of transformations, checked against finite differences of the
lower-order result, with the python backend and compiled.

Each composition is compiled once (module-scope fixtures) to keep Numba's work small.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("NUMBA_OPT", "0")

from reverse_corpus import branch_defines_values, lj_energy  # noqa: E402
from transformer import grad, hessian, jacfwd, jacrev, jit, jvp  # noqa: E402
from transformer.test_util import numerical_jacobian  # noqa: E402

RNG = np.random.default_rng(7)


def fd_gradient(f, x):
    """The Jacobian by central differences, with the step second derivatives here need."""
    return numerical_jacobian(f, x, eps=1e-5)


# ---------------------------------------------------------------- functions

def smooth(x):
    y = np.sin(x) * x + x * x * 0.2
    return y * np.tanh(y)


def loopy(x):
    """Loops, a data-dependent branch, an early exit and an in-place write."""
    n = x.shape[0]
    acc = 0.0
    w = np.zeros(n)
    for i in range(n):
        if x[i] > 0.0:
            w[i] = np.tanh(x[i]) * x[(i + 1) % n]
        else:
            w[i] = x[i] ** 3
        acc = acc + w[i] * w[i]
        if acc > 1e6:
            break
    return acc + np.sum(np.sin(w) * x)


def pair_energy(pos, eps, sigma):
    """A Lennard-Jones energy over all pairs, vectorized (n, n) with the diagonal masked."""
    n = pos.shape[0]
    d = np.expand_dims(pos, 1) - np.expand_dims(pos, 0)
    off = 1.0 - np.eye(n)
    r2 = np.sum(d * d, axis=2) + np.eye(n)
    s6 = (sigma * sigma / r2) ** 3
    return 2.0 * eps * np.sum(off * (s6 * s6 - s6))


energy_grad = grad(pair_energy)                # forces are minus this
energy_grad_loops = grad(lj_energy)            # the same energy with loops and a cutoff


def make_force_loss(positions, reference, forces_of=energy_grad):
    def loss(eps, sigma):
        f = forces_of(positions, eps, sigma)
        r = -f - reference
        return np.mean(r * r)
    return loss


X = np.array([0.7, -0.4, 1.3, 0.2])
V = np.array([0.5, 1.0, -0.3, 0.8])
POS = np.array([[0.0, 0.0, 0.0], [1.1, 0.1, 0.0], [0.2, 1.2, 0.1], [1.0, 1.0, 1.1]])
EPS, SIGMA = 1.0, 0.95
F_REF = -grad(pair_energy)(POS, 1.2, 0.9)


# ---------------------------------------------------------------- grad of grad

@pytest.fixture(scope="module")
def second_derivative():
    return grad(grad(smooth))


@pytest.mark.parametrize("x", [0.9, 0.2, -0.6])
def test_grad_of_grad_matches_differences_of_grad(second_derivative, x):
    first = grad(smooth)
    assert second_derivative(x) == pytest.approx(fd_gradient(first, x), rel=1e-6, abs=1e-8)


def test_jit_grad_of_grad(second_derivative):
    compiled = jit(second_derivative)
    for x in (0.9, -0.6):
        assert compiled(x) == pytest.approx(second_derivative(x), rel=1e-12)


@pytest.mark.parametrize("x", [0.9, 0.2])              # the taken branch, then the other
def test_grad_of_grad_through_either_branch(x):
    first = grad(branch_defines_values)
    assert grad(first)(x) == pytest.approx(fd_gradient(first, x), rel=1e-6)


# ---------------------------------------------------------------- forward over reverse

@pytest.fixture(scope="module")
def hvp():
    return jvp(grad(loopy))


@pytest.mark.slow
def test_jvp_of_grad_is_a_hessian_vector_product(hvp):
    g, hv = hvp(X, V)
    np.testing.assert_allclose(g, grad(loopy)(X), rtol=1e-12)
    fd = (grad(loopy)(X + 1e-6 * V) - grad(loopy)(X - 1e-6 * V)) / 2e-6
    np.testing.assert_allclose(hv, fd, rtol=1e-5, atol=1e-7)


@pytest.mark.slow
def test_jit_jvp_of_grad(hvp):
    g, hv = jit(hvp)(X, V)
    np.testing.assert_allclose(hv, hvp(X, V)[1], rtol=1e-10)


# ---------------------------------------------------------------- reverse over forward

directional = jvp(loopy)


def directional_derivative(x, v):
    return directional(x, v)[1]


@pytest.mark.slow
def test_grad_of_jvp_matches_differences_of_jvp():
    g = grad(directional_derivative)(X, V)
    fd = fd_gradient(lambda x: directional_derivative(x, V), X)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(jit(grad(directional_derivative))(X, V), g, rtol=1e-10)


# ---------------------------------------------------------------- Jacobians of Jacobians

@pytest.mark.slow
def test_jacfwd_of_jacrev_through_loops_and_branches():
    h = jacfwd(jacrev(loopy))(X)
    np.testing.assert_allclose(h, fd_gradient(grad(loopy), X), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(h, h.T, rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def compiled_hessian():
    return jit(hessian(loopy))


@pytest.mark.slow
def test_hessian_through_loops_and_branches(compiled_hessian):
    h = hessian(loopy)(X)
    np.testing.assert_allclose(h, fd_gradient(grad(loopy), X), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(compiled_hessian(X), h, rtol=1e-10)


@pytest.mark.slow
def test_jacrev_of_vector_function_and_jit():
    def vec(x):
        return np.tanh(x) * np.sum(x * x)
    j = jacrev(vec)(X)
    np.testing.assert_allclose(j, fd_gradient(vec, X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jit(jacrev(vec))(X), j, rtol=1e-12)


# ---------------------------------------------------------------- force matching

def fd_parameters(loss, eps=1e-6):
    return np.array([(loss(EPS + eps, SIGMA) - loss(EPS - eps, SIGMA)) / (2 * eps),
                     (loss(EPS, SIGMA + eps) - loss(EPS, SIGMA - eps)) / (2 * eps)])


@pytest.mark.slow
def test_grad_of_a_loss_that_calls_grad_force_matching():
    loss = make_force_loss(POS, F_REF)
    g = np.array(grad(loss, argnums=(0, 1))(EPS, SIGMA))
    np.testing.assert_allclose(g, fd_parameters(loss), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(jit(grad(loss, argnums=(0, 1)))(EPS, SIGMA), g, rtol=1e-10)


@pytest.mark.slow
def test_force_matching_with_loops_forward_over_reverse():
    loss = make_force_loss(POS, F_REF, energy_grad_loops)
    g = np.array(jacfwd(loss, argnums=(0, 1))(EPS, SIGMA))
    np.testing.assert_allclose(g, fd_parameters(loss), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(jit(jacfwd(loss, argnums=(0, 1)))(EPS, SIGMA), g, rtol=1e-10)


@pytest.mark.slow
def test_force_matching_with_loops_reverse_over_reverse():
    # the loop gradient accumulates into bpos in place; grad over it differentiates that
    loss = make_force_loss(POS, F_REF, energy_grad_loops)
    g = np.array(grad(loss, argnums=(0, 1))(EPS, SIGMA))
    np.testing.assert_allclose(g, fd_parameters(loss), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(g, np.array(jacfwd(loss, argnums=(0, 1))(EPS, SIGMA)),
                               rtol=1e-10)
