"""A method of an array being differentiated (`v.view()`, `v.take(i)`, `w.fill(c)`) reads
its receiver: grad and jvp took its result for a constant (and `w.fill(2.0)` for no write
at all) and gave silently wrong derivatives. `v.view()`, `v.repeat(k)` and `v.astype(t)` are
differentiated; a method without a rule is refused at its line, naming the method.
Oracle: central finite differences of the plain function. Found by
benchmarks/hunt_writes.py (`f = a.view()` in a drawn program)."""
import pathlib

import numpy as np
import pytest
from gradcheck import write_module

from transformer import TransformError, grad, jvp
from transformer.test_util import numerical_grad

SOURCE = '''import numpy as np


def view(v, a):
    f = a.view()
    return np.sum(f * v)


def view_written(v, a):
    h = a * 0.5
    f = h.view()
    f[1] = v[0] * 3.0
    return np.sum(np.tanh(h) * v)


def repeat(v, a):
    return np.sum(v.repeat(2) * np.tanh(a.repeat(2)))


def take(v, a):
    return np.sum(v.take([0, 1]) * a[0])


def astype(v, a):
    return np.sum(v.astype(np.float64) * a)


def diagonal(v, a):
    return np.sum(np.outer(v, a).diagonal())


def fill(v, a):
    w = v.copy()
    w.fill(2.0)
    return np.sum(w * v * a)
'''

V = np.array([0.3, -1.2, 0.8])
A = np.array([1.1, 0.4, -0.7])


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    return write_module(tmp_path_factory.mktemp("methods"), SOURCE, {})


@pytest.mark.parametrize("case", ["view", "repeat", "astype"])
def test_methods_with_rules_are_differentiated(module, case):
    f = getattr(module, case)
    for argnum in (0, 1):
        want = numerical_grad(f, (V.copy(), A.copy()), argnum)
        np.testing.assert_allclose(grad(f, argnums=argnum)(V.copy(), A.copy()), want,
                                   rtol=1e-6, atol=1e-8)
        tangents = (np.ones(3), np.zeros(3)) if argnum == 0 else (np.zeros(3), np.ones(3))
        _, tangent = jvp(f, (V.copy(), A.copy()), tangents)
        np.testing.assert_allclose(tangent, np.sum(want), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case, line, method", [("take", 21, "take"),
                                                ("diagonal", 29, "diagonal")])
def test_methods_without_rules_are_refused_at_their_line(module, case, line, method):
    f = getattr(module, case)
    for transform in (lambda: grad(f)(V.copy(), A.copy()),
                      lambda: jvp(f, (V.copy(), A.copy()), (np.ones(3), np.zeros(3)))):
        with pytest.raises(TransformError, match=rf"\.{method}\(\)") as caught:
            transform()
        assert caught.value.location.endswith(f".py:{line}:5")
        assert "outer_v" not in str(caught.value)


def test_a_write_through_a_view_made_by_view_is_refused_for_reverse_mode(module):
    """As any other view's (tests/reverse/test_writes_through_views.py): `.view()` stays
    a view for the write analyses now that it is differentiated."""
    with pytest.raises(TransformError, match="'f' is a view into 'h'") as caught:
        grad(module.view_written)(V.copy(), A.copy())
    assert caught.value.location.endswith(".py:12:5")


def test_a_method_writing_in_place_is_refused_at_its_line(module):
    with pytest.raises(TransformError) as caught:
        grad(module.fill)(V.copy(), A.copy())
    assert caught.value.location.endswith(".py:34:5")
    with pytest.raises(TransformError) as caught:
        jvp(module.fill, (V.copy(), A.copy()), (np.ones(3), np.zeros(3)))
    assert caught.value.location.endswith(".py:34:5")


def test_the_refused_methods_hint_works(module):
    """`stop_gradient` on the receiver, or the NumPy function with a rule."""
    fixed = write_module(pathlib.Path(module.__file__).parent,
                         "import numpy as np\nfrom transformer import stop_gradient\n\n\n"
                         "def take(v, a):\n"
                         "    return np.sum(stop_gradient(v).take([0, 1]) * a[0])\n", {})
    want = numerical_grad(fixed.take, (V.copy(), A.copy()), 1)
    np.testing.assert_allclose(grad(fixed.take, argnums=1)(V.copy(), A.copy()), want,
                               rtol=1e-6, atol=1e-8)
