"""Constructors whose values come from their arguments: `np.full(shape, v)`,
`np.full_like(a, v)`, `np.linspace(start, stop, n)` and `np.arange(start, stop, step)`.
They were registered as having no derivative, like np.zeros, so grad and jvp silently
dropped the derivative of `v`, `start`, `stop` and `step` (a gradient of 0). They now have
rules, checked here against central differences under grad, jvp and jit(grad)."""
import numpy as np
import pytest

from transformer import grad, hessian, jit, jvp, vmap


def filled(x):
    return np.sum(np.full(3, x[0]) * x[:3]) + np.sum(np.full((2, 2), x[3]) ** 2)


def filled_by_keyword(x):
    return np.sum(np.full(shape=3, fill_value=x[1]) ** 3)


def filled_with_a_row(x):
    return np.sum(np.full((2, 3), x[:3]) * np.arange(6.0).reshape(2, 3))


def filled_like(x):
    return np.sum(np.full_like(x, x[2]) * x)


def spaced(x):
    return np.sum(np.linspace(x[0], x[1], 5) ** 2)


def spaced_to(x):
    return np.sum(np.linspace(0.0, x[3], 4) * np.arange(4.0))


def spaced_one(x):
    return np.sum(np.linspace(x[0], x[1], 1) ** 2)


def counted_from(x):
    return np.sum(np.arange(x[0], 3.0) ** 2)


def stepped(x):
    return np.sum(np.arange(0.0, 2.0, x[2] + 0.5) ** 2)


def counted_to(x):
    return np.sum(np.arange(x[3] * 4.0) * x[0])


X = np.array([0.3, 1.7, 0.45, 0.8])
CASES = [filled, filled_by_keyword, filled_with_a_row, filled_like, spaced, spaced_to,
         spaced_one, counted_from, stepped, counted_to]


def central(f, x, h=1e-6):
    return np.array([(f(x + e) - f(x - e)) / (2 * h) for e in np.eye(x.size) * h])


@pytest.mark.every_case
@pytest.mark.parametrize("function", CASES)
def test_gradient_and_tangent_match_central_differences(function):
    want = central(function, X)
    np.testing.assert_allclose(grad(function)(X), want, atol=1e-6)
    v = np.array([0.5, -1.0, 2.0, 0.25])
    _, tangent = jvp(function, (X,), (v,))
    assert tangent == pytest.approx(want @ v, abs=1e-6)


@pytest.mark.parametrize("function", [filled, filled_like, spaced, counted_from, stepped])
def test_compiled_gradient_matches(function):
    np.testing.assert_allclose(jit(grad(function))(X), central(function, X), atol=1e-6)


def spaced_rows(x):
    start, stop = x[:2], x[2:]
    values = np.linspace(start, stop, 3, endpoint=False, axis=1)
    return np.sum(values * np.arange(6.0).reshape(2, 3))


def test_array_endpoints_along_an_axis():
    np.testing.assert_allclose(grad(spaced_rows)(X), central(spaced_rows, X), atol=1e-6)


def test_second_order_and_batched():
    np.testing.assert_allclose(hessian(filled)(X)[0], central(grad(filled), X)[:, 0],
                               atol=1e-5)
    xs = np.stack([X, X * 0.5, X + 0.1])
    np.testing.assert_allclose(vmap(grad(spaced))(xs), [central(spaced, x) for x in xs],
                               atol=1e-6)
