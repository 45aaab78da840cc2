"""A tuple holding arrays read from outside (a module global, a closure, an object's
attribute; a namedtuple, nested tuples, numbers beside the arrays) is a hidden argument of
the compiled code like an array (`transformer.captured_arrays`): a write into one of its
arrays is seen at the next call, as Python sees it. Frozen into the machine code, the
compiled code went on returning the values from its first call. Oracle: the same function
run by Python, and its derivative written out with NumPy."""
import collections

import numpy as np
import pytest

from transformer import grad, jit

Pair = collections.namedtuple("Pair", "w b")

LAYERS = (np.ones(3), 2.0 * np.ones(3))
MIXED = (2.0 * np.ones(3), 0.5)
NAMED = Pair(2.0 * np.ones(3), np.zeros(3))
NESTED = ((np.ones(3), np.zeros(3)), (2.0 * np.ones(3), np.zeros(3)))


class Model:
    def __init__(self):
        self.layers = (np.ones(3), 2.0 * np.ones(3))


MODEL = Model()


def indexed(x):
    return np.sum(np.sin(x) * LAYERS[1])


def scaled(x):
    return np.sum(np.sin(x) * MIXED[0]) * MIXED[1]


def named(x):
    return np.sum(np.sin(x) * NAMED.w + NAMED.b)


def looped(x):
    total = 0.0
    for w, b in NESTED:
        total = total + np.sum(np.sin(x) * w + b)
    return total


def attribute(x):
    return np.sum(np.sin(x) * MODEL.layers[1])


def through_a_helper(x):
    return np.sum(helper(x))


def helper(x):
    return np.sin(x) * LAYERS[1]


def closure():
    held = (np.ones(3), 2.0 * np.ones(3))

    def f(x):
        return np.sum(np.sin(x) * held[1])
    return f, held[1]


CLOSED, CLOSED_ARRAY = closure()

def central_differences(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))])


CASES = [(indexed, LAYERS[1]), (scaled, MIXED[0]), (named, NAMED.w), (looped, NESTED[1][0]),
         (attribute, MODEL.layers[1]), (through_a_helper, LAYERS[1]),
         (CLOSED, CLOSED_ARRAY)]


@pytest.mark.every_case
@pytest.mark.parametrize("f, array", CASES, ids=[f.__name__ for f, _ in CASES[:-1]] + ["closure"])
def test_a_write_into_an_array_of_a_captured_tuple_is_seen_at_the_next_call(f, array):
    x = np.linspace(0.1, 0.7, 3)
    value, gradient = jit(f), jit(grad(f))
    saved = array.copy()
    try:
        np.testing.assert_allclose(value(x), f(x), rtol=1e-12)
        np.testing.assert_allclose(gradient(x), central_differences(f, x), rtol=1e-7)
        array[0] = 100.0
        np.testing.assert_allclose(value(x), f(x), rtol=1e-12)
        np.testing.assert_allclose(gradient(x), central_differences(f, x), rtol=1e-7)
        assert value.cache_info().misses == 1 and gradient.cache_info().misses == 1
    finally:
        array[:] = saved


def test_the_header_names_the_tuple_as_a_hidden_argument():
    f = jit(indexed)
    assert "takes LAYERS: hidden argument, UniTuple(array(float64, 1d, C) x 2)" in \
        f.source(np.ones(3))


def test_a_tuple_rebound_to_another_kind_or_other_numbers_compiles_again(monkeypatch):
    import sys
    module = sys.modules[__name__]
    f = jit(scaled)
    x = np.linspace(0.1, 0.7, 3)
    f(x)
    monkeypatch.setattr(module, "MIXED", (3.0 * np.ones(3), 0.5))      # same kind
    np.testing.assert_allclose(f(x), scaled(x), rtol=1e-12)
    assert f.cache_info().misses == 1
    monkeypatch.setattr(module, "MIXED", (3.0 * np.ones(3), 0.25))     # another number
    np.testing.assert_allclose(f(x), scaled(x), rtol=1e-12)
    monkeypatch.setattr(module, "MIXED", (np.ones((1, 3)), 0.25))      # another rank
    np.testing.assert_allclose(f(x), scaled(x), rtol=1e-12)
    assert f.cache_info().misses == 3


LAYERS_OF_AN_MLP = ((np.linspace(-1.0, 1.0, 12).reshape(4, 3), np.full(4, 0.1)),
                    (np.linspace(0.5, -0.5, 8).reshape(2, 4), np.zeros(2)))


def mlp(x):
    h = x
    for W, b in LAYERS_OF_AN_MLP:           # h changes shape from layer to layer
        h = np.tanh(W @ h + b)
    return np.sum(h * h)


def test_a_loop_over_a_captured_tuple_of_layers_is_written_out():
    """Reverse mode records a loop's names on one typed tape each, which cannot hold an
    activation that changes shape: the loop over the tuple is unrolled, as a loop over a
    tuple literal is (`container_loops`); jit(grad) refused it before."""
    x = np.array([0.3, -0.2, 0.7])
    gradient = jit(grad(mlp))
    np.testing.assert_allclose(gradient(x), central_differences(mlp, x), rtol=1e-7)
    np.testing.assert_allclose(jit(mlp)(x), mlp(x), rtol=1e-12)
    weights = LAYERS_OF_AN_MLP[1][0]
    saved = weights.copy()
    try:
        weights[0, 0] = 3.0
        np.testing.assert_allclose(gradient(x), central_differences(mlp, x), rtol=1e-7)
    finally:
        weights[:] = saved
