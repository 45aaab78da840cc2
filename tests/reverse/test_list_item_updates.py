"""`lst[0] *= k` updates in place the array the list holds, as NumPy does: every other
name for that array (`h`, a view `M = h.reshape(3, 2)`) sees the change. Desugaring made
it `lst[0] = lst[0] * k`, a new array in the list and `h` left as it was: vmap gave the
numbers of the unchanged array, grad a silently wrong gradient; and vmap's vectorized
strategy took a list holding batched values for one array (`lst[:, 1]`, a TypeError). The
oracles are the plain run example by example and central finite differences; reverse mode
may refuse, located at the write. Found by benchmarks/hunt_writes.py."""
import numpy as np
import pytest
from gradcheck import write_module

from transformer import TransformError, grad, jit, jvp, vmap
from transformer.test_util import numerical_grad

SOURCE = '''import numpy as np


def through_a_view(x, v):
    h = v.copy()
    M = h.reshape(3, 2)
    lst = [h]
    lst[0] *= x
    return M[1, 1] + np.sum(h)


def pair_with_a_number(x, v):
    h = v.copy()
    lst = [x, h]
    lst[1] *= 0.75
    return np.sum(np.tanh(h)) * x


def item_replaced(x, v):
    h = v.copy()
    lst = [x, h]
    lst[1] = h * 2.0
    return np.sum(lst[1]) + np.sum(h)


def read_through_the_view_only(x, v):
    h = v.copy()
    M = h.reshape(3, 2)
    lst = [h]
    lst[0] *= x
    return M[1, 1]
'''

CASES = ("through_a_view", "pair_with_a_number", "item_replaced", "read_through_the_view_only")
X = np.array([0.4, -1.1, 0.7])
V = np.arange(18.0).reshape(3, 6) * 0.1 - 0.5


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return write_module(tmp_path_factory.mktemp("list_items"), SOURCE, {})


@pytest.mark.parametrize("case", CASES)
def test_vmap_gives_the_loop_over_examples(module, case):
    f = getattr(module, case)
    want = np.array([f(X[k], V[k].copy()) for k in range(3)])
    np.testing.assert_allclose(vmap(f)(X, V.copy()), want, rtol=1e-13)
    np.testing.assert_allclose(vmap(f, in_axes=(None, 0))(X[0], V.copy()),
                               [f(X[0], V[k].copy()) for k in range(3)], rtol=1e-13)


@pytest.mark.parametrize("case", CASES)
def test_jit_gives_the_plain_run(module, case):
    f = getattr(module, case)
    np.testing.assert_allclose(jit(f, backend="python")(X[1], V[1].copy()),
                               f(X[1], V[1].copy()), rtol=1e-13)


@pytest.mark.parametrize("case", CASES)
def test_derivatives_are_right_or_refused_at_the_write(module, case):
    f = getattr(module, case)
    x, v = X[2], V[2].copy()
    for argnum in (0, 1):
        want = numerical_grad(f, (x, v.copy()), argnum)
        try:
            got = grad(f, argnums=argnum)(x, v.copy())
        except (TransformError, ValueError) as error:
            assert any(f".py:{line}:5" in str(error) for line in (8, 15, 22, 30)), str(error)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    want = numerical_grad(f, (x, v.copy()), 0) + np.sum(numerical_grad(f, (x, v.copy()), 1))
    try:
        _, tangent = jvp(f, (x, v.copy()), (1.0, np.ones(6)))
    except TransformError as error:
        assert error.location.split(":")[-2] in ("6", "8", "15", "22", "28", "30"), str(error)
    else:
        np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-8)
