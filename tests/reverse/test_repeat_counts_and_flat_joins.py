"""grad of np.repeat with a count per element (`np.repeat(x, [1, 3, 0, 2])`, also along
an axis) and of np.concatenate(..., axis=None): their adjoints took an int count and an
int axis only, and the gradient failed with a TypeError inside secant's runtime. They now
sum each element's copies and read each array's part of the flattened join, checked
against central differences."""
import numpy as np
import pytest

from transformer import grad, jvp

X = np.random.default_rng(0).uniform(size=(3, 4))


def flat_join(x):
    return np.sum(np.concatenate([x, x[:1] ** 2], axis=None) * np.arange(16.0))


def counts_flat(x):
    return np.sum(np.repeat(x[0], np.array([1, 2, 0, 3])) * np.arange(6.0))


def counts_rows(x):
    return np.sum(np.repeat(x, np.array([2, 0, 1]), axis=0) * np.arange(12.0).reshape(3, 4))


def counts_columns_list(x):
    return np.sum(np.repeat(x, [1, 3, 1, 0], axis=1) ** 2)


def central(f, x, h=1e-6):
    steps = np.eye(x.size).reshape(-1, *x.shape) * h
    return np.array([(f(x + e) - f(x - e)) / (2 * h) for e in steps]).reshape(x.shape)


@pytest.mark.every_case
@pytest.mark.parametrize("function", [flat_join, counts_flat, counts_rows,
                                      counts_columns_list])
def test_gradient_and_tangent_match_central_differences(function):
    want = central(function, X)
    np.testing.assert_allclose(grad(function)(X), want, atol=1e-6)
    _, tangent = jvp(function, (X,), (np.ones_like(X),))
    assert tangent == pytest.approx(want.sum(), abs=1e-6)
