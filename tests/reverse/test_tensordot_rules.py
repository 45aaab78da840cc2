"""grad and jvp of np.tensordot: it was refused ("no adjoint rule for numpy.tensordot").
Both operands are checked against central differences with random weights on the output,
for an int `axes` (0: the outer product, 1, 2) and for pairs of axis lists in an order of
their own and negative; also the Hessian, vmap of grad, and jit, which refuses
np.tensordot itself (Numba has none) and says so rather than naming a derivative helper."""
import numpy as np
import pytest

from transformer import TransformError, grad, hessian, jit, jvp, vmap
from transformer.test_util import numerical_grad, numerical_jacobian, numerical_jvp


def contracted(a, b, w, axes):
    return np.sum(w * np.sin(np.tensordot(a, b, axes)))


# (shape of a, shape of b, axes)
CASES = [((3, 4, 5), (4, 5, 2), 2), ((3, 4), (4, 2), 1), ((2, 3), (4,), 0),
         ((3, 4, 5), (5, 3, 2), ([0, 2], [1, 0])), ((3, 4, 5), (5, 2, 4), ([-1, 1], [0, -1])),
         ((4, 3), (3,), (1, 0)), ((3,), (3,), 1)]


def _point(case, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=case[0]), rng.normal(size=case[1])
    return a, b, rng.normal(size=np.shape(np.tensordot(a, b, case[2])))


@pytest.mark.every_case
@pytest.mark.parametrize("case", CASES, ids=str)
def test_gradients_of_both_operands_match_central_differences(case):
    a, b, w = _point(case)

    def f(a, b, w):
        return contracted(a, b, w, case[2])
    for argnum in (0, 1):
        np.testing.assert_allclose(grad(f, argnums=argnum)(a, b, w),
                                   numerical_grad(f, (a, b, w), argnum), rtol=1e-6, atol=1e-8)


@pytest.mark.every_case
@pytest.mark.parametrize("case", CASES, ids=str)
def test_tangent_matches_central_differences(case):
    a, b, w = _point(case)
    ta, tb, _ = _point(case, seed=1)

    def f(a, b, w):
        return contracted(a, b, w, case[2])
    _, tangent = jvp(f, (a, b, w), (ta, tb, 0.0 * w))
    expected = numerical_jvp(lambda a, b: f(a, b, w), (a, b), (ta, tb))
    np.testing.assert_allclose(tangent, expected, rtol=1e-6, atol=1e-8)


def squared_contraction(a, b):
    return np.sum(np.tensordot(a, b, 1) ** 2)


def test_hessian_in_each_operand():
    rng = np.random.default_rng(2)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=4)
    for argnum, x in ((0, a), (1, b)):
        def gradient(x, argnum=argnum):
            args = (x, b) if argnum == 0 else (a, x)
            return grad(squared_contraction, argnums=argnum)(*args)
        np.testing.assert_allclose(hessian(squared_contraction, argnums=argnum)(a, b),
                                   numerical_jacobian(gradient, x), rtol=1e-5, atol=1e-7)


def test_batched_gradient_matches_a_loop_of_gradients():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(2, 3, 4)), rng.normal(size=4)
    got = vmap(grad(squared_contraction), in_axes=(0, None))(a, b)
    np.testing.assert_allclose(got, [grad(squared_contraction)(x, b) for x in a], rtol=1e-12)


def test_jit_of_the_gradient_names_tensordot_and_python_mode_runs_it():
    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=4)
    with pytest.raises(TransformError) as info:
        jit(grad(squared_contraction))(a, b)
    assert "numpy.tensordot" in str(info.value)
    assert info.value.line.strip() == "return np.sum(np.tensordot(a, b, 1) ** 2)"
    np.testing.assert_allclose(jit(grad(squared_contraction), backend="python")(a, b),
                               grad(squared_contraction)(a, b), rtol=1e-12)
