"""np.linalg.norm with an `ord`. Its derivative rules are the 2-norm's (Frobenius for a
matrix), and they ignored `ord`: grad of np.linalg.norm(x, 1) gave x / |x|_2 where the
gradient is sign(x), a silently wrong derivative (also for np.inf, 3, and a matrix's 1).
grad and jvp now refuse another ord while transforming, at the user's call, with forms
that differentiate; ord=None and 'fro' keep their rules. Under jit, a number ord of a
vector or a matrix compiles (secant's lowering of norm had refused every ord), and so do
'fro' and the 2-norm of a complex array along an axis."""
import inspect

import numpy as np
import pytest

from transformer import TransformError, grad, jit, jvp

X = np.array([1.0, -2.5, 0.5, 0.3])
M = np.array([[1.0, -2.0], [3.0, 2.5]])


def one_norm(x):
    return np.linalg.norm(x, 1)


def max_norm(x):
    return np.linalg.norm(x, ord=np.inf)


def three_norm(x):
    return np.linalg.norm(x, 3)


def matrix_one_norm(x):
    return np.linalg.norm(x.reshape(2, 2), 1)


def central(f, x, h=1e-6):
    return np.array([(f(x + e) - f(x - e)) / (2 * h) for e in np.eye(x.size) * h])


@pytest.mark.every_case
@pytest.mark.parametrize("function", [one_norm, max_norm, three_norm, matrix_one_norm])
def test_another_ord_is_refused_at_the_call(function):
    first = inspect.getsourcelines(function)[1]
    for transform in (lambda: grad(function)(X),
                      lambda: jvp(function, (X,), (np.ones(4),))):
        with pytest.raises(TransformError) as caught:
            transform()
        assert (caught.value.filename, caught.value.lineno) == (__file__, first + 1)
        assert "np.sum(np.abs(x))" in str(caught.value)


def one_norm_by_hint(x):
    return np.sum(np.abs(x))


def max_norm_by_hint(x):
    return np.max(np.abs(x))


def three_norm_by_hint(x):
    return np.sum(np.abs(x) ** 3) ** (1 / 3)


@pytest.mark.parametrize("hinted, meant", [(one_norm_by_hint, one_norm),
                                           (max_norm_by_hint, max_norm),
                                           (three_norm_by_hint, three_norm)])
def test_the_hints_forms_have_the_right_gradient(hinted, meant):
    assert hinted(X) == pytest.approx(meant(X))
    np.testing.assert_allclose(grad(hinted)(X), central(meant, X), atol=1e-6)


def two_norm(x):
    return np.linalg.norm(x)


def frobenius(x):
    return np.linalg.norm(x.reshape(2, 2), "fro")


def row_norms(x):
    return np.sum(np.linalg.norm(x.reshape(2, 2), axis=1) ** 2 * np.array([1.0, 3.0]))


@pytest.mark.parametrize("function", [two_norm, frobenius, row_norms])
def test_the_two_norms_keep_their_rules(function):
    np.testing.assert_allclose(grad(function)(X), central(function, X), atol=1e-6)
    _, tangent = jvp(function, (X,), (np.arange(4.0),))
    assert tangent == pytest.approx(central(function, X) @ np.arange(4.0), abs=1e-6)


def vector_orders(x):
    return (np.linalg.norm(x, 1), np.linalg.norm(x, np.inf), np.linalg.norm(x, -np.inf),
            np.linalg.norm(x, 0), np.linalg.norm(x, 3), np.linalg.norm(x, 2))


def matrix_orders(m):
    return (np.linalg.norm(m, 1), np.linalg.norm(m, -1), np.linalg.norm(m, np.inf),
            np.linalg.norm(m, 2), np.linalg.norm(m, -2), np.linalg.norm(m, "fro"))


def complex_rows(m):
    return np.linalg.norm(m * (1.0 + 2.0j), axis=1)


@pytest.mark.parametrize("function, argument", [(vector_orders, X), (matrix_orders, M),
                                                (complex_rows, M)])
def test_compiled_orders_are_numpys(function, argument):
    np.testing.assert_allclose(jit(function)(argument), function(argument), rtol=1e-12)
