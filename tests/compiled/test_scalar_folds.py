"""np.sum/np.prod/np.max/np.min of a float (a 0-d value such as np.dot(x, x)) under jit of
forward mode: jacfwd and hessian fold the tangent of that float, which the compiled folds
took for an array ("'Float' object has no attribute 'ndim'"). Oracle: the derivatives
written by hand."""
from __future__ import annotations

import numpy as np
import pytest

from transformer import hessian, jacfwd, jit


def _body(x):
    s = np.dot(x, x)
    return np.sum(s ** 2) + np.max(s) - np.min(s) + np.prod(s), x * 2.0


def _second(x):
    return _body(x)[1]


def _first(x):
    return _body(x)[0]


@pytest.fixture
def x():
    return np.array([0.3, -0.2, 0.5])


def test_jit_jacfwd_of_a_function_folding_a_float(x):
    np.testing.assert_allclose(jit(jacfwd(_second))(x), 2.0 * np.eye(3))


@pytest.mark.slow
def test_jit_hessian_of_a_function_folding_a_float(x):
    s = x @ x        # f = s**2 + s: hessian 4 s I + 8 x x^T + 2 I
    expected = (4.0 * s + 2.0) * np.eye(3) + 8.0 * np.outer(x, x)
    np.testing.assert_allclose(jit(hessian(_first))(x), expected, rtol=1e-12)
