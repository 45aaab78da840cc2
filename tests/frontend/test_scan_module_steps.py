"""`lax.scan` with a step function defined at the top of the module, as JAX users write it
(`def step(carry, x): ...; return carry, y`), under grad, jit(grad), jit, jvp and vmap.

Reverse mode differentiates such a step as a call returning a tuple; the cotangent of an
item the loss does not use is zeros shaped like the item's own name, so the tuple itself
is not recorded on a tape (compiled tapes hold no tuples: jit(grad) failed). A step
returning `carry, None` stacks nothing, and the scan gives None for ys, as JAX's does.
Oracle: central differences of the function run by Python."""
import numpy as np
import pytest

from transformer import grad, jit, jvp, lax, vmap


def scalar_y(c, xi):
    return c + np.sum(2.0 * xi * xi), 0.0


def vector_y(c, xi):
    return c * 0.9 + np.sum(np.sin(xi)), xi * c


def carry_as_y(c, xi):
    c = c * 0.5 + np.tanh(xi)
    return c, c


def no_y(c, xi):
    return c * 0.9 + np.sum(xi * xi), None


def last_value(c, xi):
    if np.sum(xi) > 0.0:
        return c + np.sum(xi), np.sum(xi)
    return c - np.sum(xi), 0.0


def over_rows(step, reads_ys):
    def f(x):
        c, ys = lax.scan(step, 0.5 * np.ones_like(x) if step is carry_as_y else 0.5,
                         np.stack([x, 2.0 * x, -x]))
        if reads_ys and ys is not None:
            return np.sum(c) + 0.1 * np.sum(ys)
        return np.sum(c)
    f.__name__ = f"scan_{step.__name__}" + ("_reading_ys" if reads_ys else "")
    return f


STEPS = [vector_y, no_y, last_value, scalar_y, carry_as_y]
# the loss not reading ys first: the quick set runs the first three cases
PROGRAMS = [over_rows(step, False) for step in STEPS] + \
    [over_rows(step, True) for step in STEPS if step is not no_y]
X = np.array([0.3, -0.2, 0.7])


def central_differences(f, x, h=1e-6):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(len(x))])


@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_a_module_step_function_is_differentiated_and_compiled(f):
    want = central_differences(f, X)
    np.testing.assert_allclose(grad(f)(X), want, rtol=1e-6, atol=1e-8)
    value, gradient = jit(f), jit(grad(f))
    np.testing.assert_allclose(value(X), f(X), rtol=1e-12)
    np.testing.assert_allclose(gradient(X), want, rtol=1e-6, atol=1e-8)
    direction = np.array([1.0, -0.5, 0.25])
    np.testing.assert_allclose(jvp(f, (X,), (direction,))[1], want @ direction, rtol=1e-6)
    batch = np.stack([X, 0.5 * X])
    np.testing.assert_allclose(vmap(f)(batch), [f(X), f(0.5 * X)], rtol=1e-12)


def test_a_step_returning_none_gives_none_for_ys_as_jax_does():
    def f(x):
        c, ys = lax.scan(no_y, 0.0, np.stack([x, x]))
        assert ys is None
        return c
    assert f(X) == pytest.approx(0.9 * np.sum(X * X) + np.sum(X * X))
    assert jit(f, backend="python")(X) == pytest.approx(f(X))
