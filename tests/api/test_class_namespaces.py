"""The user's classes read as namespaces of constants and functions (`Units.KB`,
`Acts.relu(x)`, a staticmethod, a constant inherited from a base class), and objects
reached through a user's module (`params.model.W`), as scientific code writes them: read
as globals are (`transformer.object_attributes`), where Numba refused them under `jit`
("Untyped global name", "Unknown attribute"). Checked against central differences and
plain Python."""
import sys
import types

import numpy as np
import pytest

from gradcheck import central_differences
from transformer import TransformError, grad, jit

RNG = np.random.default_rng(17)


class Units:
    KB = 8.617e-5                               # a number
    SIGMA = np.array([1.0, 2.0, 0.5])           # an array


class Acts:
    def softplus(x):                            # a function held by a class
        return np.log1p(np.exp(x))

    @staticmethod
    def swish(x):
        return x / (1.0 + np.exp(-x))


class BaseField:
    EPS = 0.25


class Field(BaseField):                         # EPS inherited
    pass


class Counter:
    n = 0.0


class Model:
    def __init__(self, W):
        self.W = W


# a module holding an object, as `import params; params.model.W`
params = types.ModuleType("namespace_params")
params.model = Model(RNG.normal(size=(3, 3)))
params.Units = Units
sys.modules.setdefault(params.__name__, params)


def energy(x):
    return Units.KB * np.sum(Units.SIGMA * x ** 2)


def activations(x):
    return np.sum(Acts.softplus(x) + Acts.swish(x))


def inherited(x):
    return Field.EPS * np.sum(np.sin(x))


def through_a_module(x):
    return np.sum(np.tanh(params.model.W @ x)) * params.Units.KB


CASES = [energy, activations, inherited, through_a_module]


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "jit"])
@pytest.mark.parametrize("f", CASES, ids=[f.__name__ for f in CASES])
def test_a_class_read_as_a_namespace_matches_central_differences(f, compiled):
    x = RNG.normal(size=3)
    g = jit(grad(f)) if compiled else grad(f)
    np.testing.assert_allclose(g(x), central_differences(f, [x]), rtol=1e-6, atol=1e-9)
    if compiled:
        assert jit(f)(x) == pytest.approx(f(x), rel=1e-12)


def test_class_constants_rebound_are_seen_as_globals_are(monkeypatch):
    g = jit(grad(energy))
    x = RNG.normal(size=3)
    np.testing.assert_allclose(g(x), 2 * Units.KB * Units.SIGMA * x, rtol=1e-12)
    Units.SIGMA[0] = 10.0                       # in place: the same array, read at the call
    np.testing.assert_allclose(g(x), 2 * Units.KB * Units.SIGMA * x, rtol=1e-12)
    monkeypatch.setattr(Units, "SIGMA", RNG.normal(size=3))   # an array of the same kind
    np.testing.assert_allclose(g(x), 2 * Units.KB * Units.SIGMA * x, rtol=1e-12)
    assert g.cache_info().misses == 1
    kb = Units.KB
    monkeypatch.setattr(Units, "KB", 1.0)      # a number: captured when it compiled, as
    np.testing.assert_allclose(g(x), 2 * kb * Units.SIGMA * x, rtol=1e-12)  # jax.jit does
    np.testing.assert_allclose(grad(energy)(x), 2 * Units.SIGMA * x, rtol=1e-12)
    np.testing.assert_allclose(jit(grad(energy))(x), 2 * Units.SIGMA * x, rtol=1e-12)


def test_a_constant_set_on_the_subclass_after_is_seen(monkeypatch):
    x = RNG.normal(size=3)
    assert jit(inherited)(x) == pytest.approx(0.25 * np.sum(np.sin(x)))
    g = grad(inherited)
    np.testing.assert_allclose(g(x), 0.25 * np.cos(x), rtol=1e-12)
    monkeypatch.setattr(Field, "EPS", 2.0, raising=False)      # shadows BaseField.EPS
    np.testing.assert_allclose(g(x), 2.0 * np.cos(x), rtol=1e-12)
    assert jit(inherited)(x) == pytest.approx(2.0 * np.sum(np.sin(x)))


def test_a_function_writing_a_class_attribute_is_run_as_written():
    def count(x):
        Counter.n += 1.0
        return x * Counter.n
    before = Counter.n
    try:
        assert count(2.0) == 2.0 * (before + 1.0)
        with pytest.raises(TransformError) as caught:
            jit(count)(2.0)
        assert caught.value.filename == __file__
    finally:
        Counter.n = before
