"""Derivatives through complex intermediate values. secant's rules are those of real
values: np.abs of a complex z was differentiated as sign(z), and the 2-norm as x / |x|, so
jacrev and hessian of np.abs(x * (1 + 2j)) returned wrong real numbers (the imaginary
part dropped with a ComplexWarning), jvp a complex tangent of a real output, and grad
failed inside NumPy. Every transformation now refuses them with the form that works;
holomorphic arithmetic on the way to a complex output keeps its derivative."""
import numpy as np
import pytest

from transformer import TransformError, grad, hessian, jacfwd, jacrev, jit, jvp

X = np.array([0.5, -1.0, 2.0])


def modulus(x):
    return np.sum(np.abs(x * (1 + 2j)))


def norm_of_complex(x):
    return np.linalg.norm(x * 1j)


def squared_modulus(x):
    return np.sum(np.abs(x * (1 + 2j)) ** 2)


TRANSFORMS = {
    "grad": lambda f: grad(f)(X),
    "jvp": lambda f: jvp(f, (X,), (np.ones(3),)),
    "jacrev": lambda f: jacrev(f)(X),
    "jacfwd": lambda f: jacfwd(f)(X),
    "hessian": lambda f: hessian(f)(X),
    "jit_grad": lambda f: jit(grad(f))(X),
}


@pytest.mark.every_case
@pytest.mark.parametrize("function", [modulus, norm_of_complex, squared_modulus])
@pytest.mark.parametrize("transform", sorted(TRANSFORMS))
def test_refused_with_the_form_that_works(function, transform):
    with pytest.raises((TypeError, TransformError)) as caught:
        TRANSFORMS[transform](function)
    assert "np.hypot(a * x, b * x)" in str(caught.value)


def modulus_by_hint(x):
    return np.sum(np.hypot(1.0 * x, 2.0 * x))


def test_the_hints_form_has_the_derivative():
    np.testing.assert_allclose(grad(modulus_by_hint)(X), np.sqrt(5.0) * np.sign(X))


def complex_output(x):
    return x * (1 + 2j) + np.exp(x * 1j)


def test_holomorphic_arithmetic_keeps_its_derivative():
    out, tangent = jvp(complex_output, (X,), (np.ones(3),))
    np.testing.assert_allclose(tangent, (1 + 2j) + 1j * np.exp(X * 1j))
