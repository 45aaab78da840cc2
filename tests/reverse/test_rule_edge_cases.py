"""Derivative rules at inputs their first forms did not cover, each a silently wrong or
failing derivative before, checked against central differences:
- np.clip with crossed bounds (a_min > a_max, where NumPy's clip is a_max everywhere):
  the bounds' derivatives went to a_min below it and to a_max only above it;
- x ** y at x = 0: the exponent's derivative z * log(x) was 0 * -inf = NaN where it is 0
  (JAX's too);
- np.linalg.det, slogdet, inv and solve of a stack of matrices (the last two axes): the
  rules transposed every axis (`.T`), a wrong gradient for det and an error for the rest.
"""
import numpy as np
import pytest

from transformer import grad, hessian, jit, jvp

W = np.arange(12.0).reshape(3, 4) - 5.0
X = np.random.default_rng(5).uniform(0.05, 0.95, size=(3, 4))


def central(f, x, h=1e-6):
    steps = np.eye(x.size).reshape(-1, *x.shape) * h
    return np.array([(f(x + e) - f(x - e)) / (2 * h) for e in steps]).reshape(x.shape)


def crossed_bounds(x):
    return np.sum(np.clip(x, x[0, 0], x[2, 3]) * W)      # 0.77 > 0.26


def ordered_bounds(x):
    return np.sum(np.clip(x, x[2, 3], x[0, 0]) * W)


def upper_only(x):
    return np.sum(np.clip(x, None, x[1, 1]) * W)


def row_bounds(x):
    return np.sum(np.clip(x, x[0] * 0.5, x[1] + 0.3) * W)


def zero_base(x):
    return np.sum(np.power(0.0 * x, x + 1.0)) + np.sum(0.0 ** (x[1] + 1))


def stacked_det(x):
    return np.sum(np.linalg.det(x.reshape(3, 2, 2) + np.eye(2)) * np.arange(3.0))


def stacked_slogdet(x):
    sign, log = np.linalg.slogdet(x.reshape(3, 2, 2) + np.eye(2))
    return np.sum(sign * log * np.arange(1.0, 4.0))


def stacked_inverse(x):
    a = x.reshape(3, 2, 2) + 2 * np.eye(2)
    return np.sum(np.linalg.inv(a) * np.arange(12.0).reshape(3, 2, 2))


def stacked_solve(x):
    a = x.reshape(3, 2, 2) + 2 * np.eye(2)
    return np.sum(np.linalg.solve(a, np.arange(6.0).reshape(3, 2, 1)) ** 2)


def one_det(x):
    return np.linalg.det(x[:, :3] + np.eye(3))


def one_solve(x):
    return np.sum(np.linalg.solve(x[:, :3] + 2 * np.eye(3), x[:, 2:]) ** 2)


CASES = [crossed_bounds, ordered_bounds, upper_only, row_bounds, zero_base, stacked_det,
         stacked_slogdet, stacked_inverse, stacked_solve, one_det, one_solve]


@pytest.mark.every_case
@pytest.mark.parametrize("function", CASES)
def test_gradient_and_tangent_match_central_differences(function):
    want = central(function, X)
    np.testing.assert_allclose(grad(function)(X), want, atol=1e-6)
    _, tangent = jvp(function, (X,), (W,))
    assert tangent == pytest.approx(np.sum(want * W), abs=1e-5)


@pytest.mark.parametrize("function", [crossed_bounds, zero_base, one_det, one_solve])
def test_compiled_gradient_matches(function):
    np.testing.assert_allclose(jit(grad(function))(X), central(function, X), atol=1e-6)


def test_second_derivatives_of_a_determinant():
    numeric = np.array([(grad(one_det)(X + e) - grad(one_det)(X - e)).ravel() / 2e-5
                        for e in np.eye(12).reshape(12, 3, 4) * 1e-5])
    np.testing.assert_allclose(hessian(one_det)(X).reshape(12, 12), numeric, atol=1e-4)
