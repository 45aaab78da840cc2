"""grad of a loss that calls grad: reverse mode over generated gradients.

A generated gradient accumulates into array adjoints in place (`scatter_add(bpos, i, v)`),
records values on tapes and element buffers and reads them back; reverse mode over it
turns those into assignments with adjoint rules (reverse.prepare, helper_rules). Each
second derivative is checked against central differences of the first-order gradient,
with the python backend; one compiled loss (`combined_loss`) covers them all under jit,
so Numba compiles once.
"""
from __future__ import annotations

import numpy as np
import pytest
from gradcheck import assert_gradient_close, central_differences

from benchmarks.workloads import lj_energy, lj_inputs
from transformer import TransformError, grad, hessian, jacfwd, jacrev, jit, value_and_grad

# ---------------------------------------------------------------- energies and losses

POS, _, _, BOX, RCUT = lj_inputs(8, seed=1, density=0.6)
RCUT = 1.6        # some pairs inside the cutoff, some outside; the box wraps several
lj_forces = grad(lj_energy)
LJ_REF = -lj_forces(POS, 1.1, 0.97, BOX, RCUT)


def lj_force_loss(pos, eps, sigma):
    """Force matching: the squared misfit of -grad(energy) against reference forces."""
    residual = lj_forces(pos, eps, sigma, BOX, RCUT) + LJ_REF
    return np.sum(residual * residual)


def chain_energy(x, k):
    """Springs along a chain, summed over stiffness stages by a while loop (taped)."""
    e = 0.0
    t = 0.5
    while t < 2.0:
        for i in range(x.shape[0] - 1):
            d = x[i + 1] - x[i]
            e += k * t * d * d + 0.1 * d ** 4
        t += 0.5
    return e


chain_forces = grad(chain_energy)
CHAIN = np.array([0.3, -0.2, 0.9, 1.4, 0.1])


def chain_loss(x, k):
    f = chain_forces(x, k)
    return np.sum(f * f * x)


def written(x):
    """In-place writes read back later: its gradient records the overwritten elements."""
    n = x.shape[0]
    w = np.zeros(n)
    acc = 0.0
    for i in range(n):
        if x[i] > 0.0:
            w[i] = np.tanh(x[i]) * x[(i + 1) % n]
        else:
            w[i] = x[i] ** 3
        acc = acc + w[i] * w[i]
    return acc + np.sum(np.sin(w) * x)


X = np.array([0.7, -0.4, 1.3, 0.2])
written_grad = grad(written)


def written_loss(w):
    g = written_grad(w)
    return np.sum(g * g)


def combined_loss(pos, eps, sigma, x, k, w):
    """All of the above in one function, so that one compile checks every kind."""
    return lj_force_loss(pos, eps, sigma) + chain_loss(x, k) + written_loss(w)


def fd_all(f, args):
    return [central_differences(f, args, k) for k in range(len(args))]


# ---------------------------------------------------------------- python backend

@pytest.mark.slow
def test_force_matching_gradient_through_lj_cutoff_and_minimum_image():
    args = (POS, 1.0, 1.0)
    got = grad(lj_force_loss, argnums=(0, 1, 2))(*args)
    for g, expected, what in zip(got, fd_all(lj_force_loss, args), ("pos", "eps", "sigma")):
        assert_gradient_close(g, expected, what)


@pytest.mark.slow
def test_force_matching_gradient_agrees_with_forward_over_reverse():
    got = grad(lj_force_loss, argnums=(1, 2))(POS, 1.0, 1.0)
    forward = jacfwd(lj_force_loss, argnums=(1, 2))(POS, 1.0, 1.0)
    np.testing.assert_allclose(np.array(got), np.array(forward), rtol=1e-10)


@pytest.mark.slow
def test_gradient_of_a_gradient_with_a_while_loop_and_tapes():
    args = (CHAIN, 0.7)
    got = grad(chain_loss, argnums=(0, 1))(*args)
    for g, expected, what in zip(got, fd_all(chain_loss, args), ("x", "k")):
        assert_gradient_close(g, expected, what)


def test_value_and_grad_of_a_force_loss():
    value, g = value_and_grad(chain_loss, argnums=1)(CHAIN, 0.7)
    assert value == pytest.approx(chain_loss(CHAIN, 0.7), rel=1e-12)
    assert g == pytest.approx(central_differences(chain_loss, (CHAIN, 0.7), 1), rel=1e-6)


@pytest.mark.slow
def test_gradient_of_a_gradient_that_restores_overwritten_elements():
    assert_gradient_close(grad(written_loss)(X), central_differences(written_loss, (X,), 0))


@pytest.mark.slow
def test_hessian_as_jacrev_of_grad_with_in_place_writes():
    h = jacrev(grad(written))(X)
    rows = np.array([central_differences(lambda x, k=k: grad(written)(x)[k], (X,), 0)
                     for k in range(X.size)])
    np.testing.assert_allclose(h, rows, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(h, hessian(written)(X), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- np.add.at in user code

INDEX = np.array([0, 2, 0, 1])          # a repeated index: contributions add up
WEIGHT = np.array([0.5, -1.0, 2.0])


def binned(x):
    b = np.zeros(3)
    np.add.at(b, INDEX, x * x)
    return np.sum(b * WEIGHT)


def binned_squared(x):
    b = np.zeros(3)
    np.add.at(b, INDEX, x)
    return np.sum(b * b)


def test_grad_through_np_add_at_with_repeated_indices():
    np.testing.assert_allclose(grad(binned)(X), 2 * X * WEIGHT[INDEX], rtol=1e-12)


def test_reading_an_accumulated_array_back_is_refused_at_the_users_line():
    with pytest.raises(TransformError, match="accumulated in place") as err:
        grad(binned_squared)(X)
    assert "np.add.at(b, INDEX, x)" in str(err.value)


# ---------------------------------------------------------------- compiled

@pytest.fixture(scope="module")
def compiled_combined():
    return jit(grad(combined_loss, argnums=(0, 1, 2, 3, 4, 5)))


@pytest.mark.slow
def test_compiled_gradient_of_force_losses_matches_differences(compiled_combined):
    args = (POS, 1.0, 1.0, CHAIN, 0.7, X)
    got = compiled_combined(*args)
    python = grad(combined_loss, argnums=(0, 1, 2, 3, 4, 5))(*args)
    for g, p, expected in zip(got, python, fd_all(combined_loss, args)):
        np.testing.assert_allclose(g, p, rtol=1e-9, atol=1e-9)
        assert_gradient_close(g, expected)
