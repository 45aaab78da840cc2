"""The primitives table's claim for `np.add.at` (differentiated as a statement by the
reverse and forward passes, not through a registered rule) holds: grad and jvp agree with
central differences on an accumulation with a repeated index. (Reverse mode refuses, at
its line, an accumulated array whose values it would need: the README's rule.)"""
import numpy as np

from transformer import grad, jvp
from transformer.primitives import registry

IDX = np.array([0, 2, 0, 3])


W = np.linspace(-1.0, 2.0, 5)


def accumulate(x, v):
    y = np.copy(x) * 1.5
    np.add.at(y, IDX, v * x[1])
    return np.sum(y * W) + np.sum(np.tanh(x) * v[:1])


def accumulate_read(x, v):
    y = np.copy(x) * 1.5
    np.add.at(y, IDX, v * x[1])
    return np.sum(np.tanh(y) * y)


def _fd(f, args, k, direction, eps=1e-6):
    plus = list(args)
    minus = list(args)
    plus[k] = args[k] + eps * direction
    minus[k] = args[k] - eps * direction
    return (f(*plus) - f(*minus)) / (2 * eps)


def test_registry_says_grad_and_jvp_and_both_agree_with_differences():
    record = registry.lookup(np.add.at)
    assert record.supports("grad") and record.supports("jvp")
    rng = np.random.default_rng(3)
    x, v = rng.normal(size=5), rng.normal(size=4)
    for k in (0, 1):
        gradient = grad(accumulate, argnums=k)(x, v)
        direction = rng.normal(size=(x, v)[k].shape)
        expected = _fd(accumulate, (x, v), k, direction)
        np.testing.assert_allclose(np.dot(gradient, direction), expected, rtol=1e-6)
        tangents = (direction if k == 0 else np.zeros(5), direction if k == 1 else np.zeros(4))
        for f in (accumulate, accumulate_read):
            _, derivative = jvp(f, (x, v), tangents)
            np.testing.assert_allclose(derivative, _fd(f, (x, v), k, direction), rtol=1e-6)
