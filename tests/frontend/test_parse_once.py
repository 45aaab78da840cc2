"""A helper the transformed function calls is parsed once per build, whichever passes read
it (reverse mode's classification and adjoints, the integer-call and alias analyses, the
recursion check, the compile of its module), and a rebound global is still read at the next
call. Parses are counted where the source is read (`frontend._function_node`); values are
checked against the hand derivative."""
import numpy as np
import pytest

from transformer import frontend, grad, jit, jvp, value_and_grad, vmap

X = np.array([0.5, -1.0, 2.0])


def square(v):
    return v * v


def cube(v):
    return v * v * v


def energy(x):
    a = square(x)
    b = square(a + 1.0)
    return np.sum(a * b)


def energy_grad(x):
    """d/dx sum(x^2 (x^2 + 1)^2)."""
    return 2.0 * x * (x * x + 1.0) ** 2 + 4.0 * x ** 3 * (x * x + 1.0)


@pytest.fixture
def parsed(monkeypatch):
    """The functions whose source was read, one entry per read."""
    seen = []
    read = frontend._function_node

    def counting(fn, *args):
        seen.append(fn)
        return read(fn, *args)
    monkeypatch.setattr(frontend, "_function_node", counting)
    return seen


def _jit_grad(f):
    return jit(grad(f), backend="python")


def _jit_value_and_grad(f):
    def gradient(x):        # a def: Python 3.10 cannot tell two lambdas on a line apart
        return value_and_grad(f)(x)[1]
    return jit(gradient, backend="python")


@pytest.mark.parametrize("transform", [grad, _jit_grad, _jit_value_and_grad],
                         ids=["grad", "jit-grad", "jit-value-and-grad"])
def test_a_helper_is_parsed_once_per_build_by_every_pass(parsed, transform):
    assert np.allclose(transform(energy)(X), energy_grad(X))
    assert sum(fn is square for fn in parsed) == 1


def test_forward_mode_parses_a_helper_once(parsed):
    _, tangent = jvp(energy, (X,), (np.ones_like(X),))
    assert np.isclose(tangent, np.sum(energy_grad(X)))
    assert sum(fn is square for fn in parsed) == 1


def test_vmap_of_grad_parses_a_helper_once(parsed):
    batch = np.stack([X, 2.0 * X])
    got = jit(vmap(grad(energy)), backend="python")(batch)
    assert np.allclose(got, [energy_grad(row) for row in batch])
    assert sum(fn is square for fn in parsed) == 1


def test_a_helper_rebound_between_calls_is_read_at_the_next_call():
    global square
    g = grad(energy)
    assert np.allclose(g(X), energy_grad(X))
    try:
        square = cube           # energy(x) = sum(x^3 (x^3 + 1)^3)
        expected = 3.0 * X ** 2 * (X ** 3 + 1.0) ** 3 + 9.0 * X ** 5 * (X ** 3 + 1.0) ** 2
        assert np.allclose(g(X), expected)
    finally:
        square = _square
    assert np.allclose(g(X), energy_grad(X))


_square = square
