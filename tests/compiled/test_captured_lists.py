"""Lists a compiled function reads from outside (`PARAMS = [(W1, b1), (W2, b2)]`,
`COEFFS = [1.0, -2.0]`, `self.layers`, `cfg.LAYERS`) are hidden arguments, passed as
tuples and read at each call (`captured_arrays.passed`), as Python reads them: Numba
refused a list in globals. A write into a listed array, an item rebound or an item
appended is seen by the next call; a function that changes the list itself is refused at
its line. Oracles: the function's gradient run by Python, and NumPy written out."""
import sys
import types

import numpy as np
import pytest

from transformer import TransformError, grad, jit, vmap

RNG = np.random.default_rng(23)


def _layer():
    return RNG.normal(size=(3, 3)), RNG.normal(size=3)


PARAMS = [_layer(), _layer()]
COEFFS = [1.0, -2.0, 0.5]
lists = types.ModuleType("captured_lists_cfg")
sys.modules.setdefault(lists.__name__, lists)
lists.LAYERS = [RNG.normal(size=3), RNG.normal(size=3)]


def mlp(x):
    h = x
    for W, b in PARAMS:
        h = np.tanh(W @ h + b)
    return np.sum(h ** 2)


def poly(x):
    s = 0.0
    for i, c in enumerate(COEFFS):
        s += c * x ** i
    return s


def through_a_module(x):
    return np.sum(np.sin(x) * lists.LAYERS[0] * lists.LAYERS[1])


class Model:
    def __init__(self):
        self.layers = [_layer(), _layer()]
        self.scales = [0.5, 2.0]

    def loss(self, x):
        h = x
        for W, b in self.layers:
            h = np.tanh(W @ h + b)
        return self.scales[0] * np.sum(h ** 2) + self.scales[1]


@pytest.fixture
def params(monkeypatch):
    """PARAMS restored after the test."""
    monkeypatch.setattr(sys.modules[__name__], "PARAMS", [_layer(), _layer()])
    return sys.modules[__name__].PARAMS


def test_a_global_list_of_layers_is_read_at_each_call(params):
    g = jit(grad(mlp))
    x = RNG.normal(size=3)
    np.testing.assert_allclose(g(x), grad(mlp)(x), rtol=1e-12)
    params[0][0][0, 0] += 3.0                    # a write into a listed array
    np.testing.assert_allclose(g(x), grad(mlp)(x), rtol=1e-12)
    params[1] = _layer()                         # an item rebound: the same kind
    np.testing.assert_allclose(g(x), grad(mlp)(x), rtol=1e-12)
    assert g.cache_info().misses == 1
    params.append(_layer())                      # another length: a new specialization
    np.testing.assert_allclose(g(x), grad(mlp)(x), rtol=1e-12)
    assert g.cache_info().misses == 2
    assert "takes PARAMS: hidden argument" in g.source(x)


def test_vmap_under_jit_reads_the_global_list(params):
    f = jit(vmap(grad(mlp)))
    X = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(f(X), np.stack([grad(mlp)(x) for x in X]), rtol=1e-12)
    params[0][1][:] = 0.0
    np.testing.assert_allclose(f(X), np.stack([grad(mlp)(x) for x in X]), rtol=1e-12)


def test_a_list_of_numbers_changed_is_seen(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "COEFFS", [1.0, -2.0, 0.5])
    f, g = jit(poly), jit(grad(poly))
    assert f(2.0) == pytest.approx(1.0 - 4.0 + 2.0)
    assert g(2.0) == pytest.approx(-2.0 + 2.0)
    COEFFS[1] = 3.0                              # numbers by value: compiled again
    assert f(2.0) == pytest.approx(1.0 + 6.0 + 2.0)
    assert g(2.0) == pytest.approx(3.0 + 2.0)


def test_a_list_held_by_an_object_is_read_at_each_call():
    m = Model()
    g = jit(grad(m.loss))
    x = RNG.normal(size=3)
    np.testing.assert_allclose(g(x), grad(m.loss)(x), rtol=1e-12)
    m.layers[0][0][:] *= 2.0
    m.layers[1] = _layer()
    m.scales[0] = 3.0
    np.testing.assert_allclose(g(x), grad(m.loss)(x), rtol=1e-12)


def test_a_list_read_through_a_module_is_read_at_each_call():
    g = jit(grad(through_a_module))
    x = RNG.normal(size=3)
    want = lambda: np.cos(x) * lists.LAYERS[0] * lists.LAYERS[1]   # noqa: E731
    np.testing.assert_allclose(g(x), want(), rtol=1e-12)
    lists.LAYERS[0] = RNG.normal(size=3)
    np.testing.assert_allclose(g(x), want(), rtol=1e-12)


def appends(x):
    COEFFS.append(x)
    return len(COEFFS) * 1.0


def sets(x):
    COEFFS[0] = x
    return COEFFS[0] + 1.0


@pytest.mark.parametrize("f, line", [(appends, 1), (sets, 1)], ids=["append", "item"])
def test_a_function_changing_a_global_list_is_refused_at_its_line(f, line, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "COEFFS", [1.0, -2.0, 0.5])
    import inspect
    with pytest.raises(TransformError) as caught:
        jit(f)(2.0)
    assert (caught.value.filename, caught.value.lineno) == \
        (__file__, inspect.getsourcelines(f)[1] + line)
    assert "reflected list" in str(caught.value)
    assert COEFFS == [1.0, -2.0, 0.5]
