"""JAX's functional index updates `x.at[i].<method>(v)`: each is a write on a fresh copy.
Every form is checked against jax.numpy in float64 (values and gradients), finite
differences, the loop over examples (vmap) and the plain run (jit), with the argument's
contents unchanged after each call."""
import inspect

import numpy as np
import pytest

from tests import gradcheck
from transformer import TransformError, grad, hessian, jacfwd, jacrev, jit, jvp, vmap
from transformer.test_util import numerical_grad

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def on_jax(fun):
    return gradcheck.on_jax(fun, jnp)


def set_chain(x):
    y = x.at[0].set(x[1] * x[2]).at[2].set(3.0)
    return np.sum(y * y * x)


def add_repeated(x):
    y = x.at[np.array([0, 0, 2])].add(x[1] * x[1])       # index 0 gets both updates
    return np.sum(y * y)


def add_slice(x):
    return np.sum(np.sin(x.at[1:].add(x[:-1] * 2.0)))


def multiply_min_max(x):
    y = x.at[0].multiply(x[2]).at[1:].min(0.5 * x[0]).at[:].max(-x[2])
    return np.sum(y * x)


def divide_power(x):
    return np.sum(x.at[0].divide(x[1]).at[1].power(3.0))


def get(x):
    y = x.at[np.array([2, 0])].get()
    return np.sum(x.at[1:].get() * y[0])


def recurrence(x):
    h = x * 0.0
    for t in range(1, 3):
        h = h.at[t].set(np.tanh(h[t - 1] + x[t]))
    return np.sum(h) + x.at[0].get() * h[2]


def as_argument(x):
    return np.sum(np.cos(x.at[1].set(0.0)) * x)


def loop_multiply(x):                  # an index held in a name known to be an int
    for i in range(2):
        x = x.at[i + 1].multiply(x[0] + 2.0).at[i].min(x[2] * 3.0)
    return np.sum(x ** 2)


def loop_add(x):
    y = x
    n = len(x)
    for i in range(n - 1):
        y = y.at[n - 1 - i].add(x[i] * x[i + 1])
    return np.sum(np.sin(y))


def distinct_index_array(x):           # checked at run time: no entry repeats
    y = x.at[np.array([2, 0])].multiply(x[1], unique_indices=True)  # JAX's grad needs it
    y = y.at[np.array([-2])].max(x[0] * 0.5)
    return np.sum(np.cos(y) * x)


FORMS = [set_chain, add_repeated, add_slice, multiply_min_max, divide_power, get,
         recurrence, as_argument, loop_multiply, loop_add, distinct_index_array]
X = np.array([0.7, -1.3, 0.4])


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.__name__)
def test_grad_and_jvp_match_jax_and_finite_differences(form):
    x = X.copy()
    expected = jax.grad(on_jax(form))(jnp.asarray(X))
    np.testing.assert_allclose(grad(form)(x), expected, rtol=1e-10, atol=1e-12)
    differences = numerical_grad(lambda v: float(on_jax(form)(jnp.asarray(v))), (X,))
    np.testing.assert_allclose(grad(form)(x), differences, rtol=1e-5, atol=1e-7)
    direction = np.array([0.3, -0.2, 0.5])
    value, tangent = jvp(form, (x,), (direction,))
    assert float(value) == pytest.approx(float(on_jax(form)(jnp.asarray(X))), rel=1e-12)
    assert float(tangent) == pytest.approx(float(np.dot(expected, direction)), rel=1e-9)
    np.testing.assert_array_equal(x, X)


@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.__name__)
def test_hessian_matches_jax(form):
    expected = jax.hessian(on_jax(form))(jnp.asarray(X))
    np.testing.assert_allclose(hessian(form)(X.copy()), expected, rtol=1e-9, atol=1e-10)


def updated(x):
    return x.at[np.array([0, 0])].add(x[1]).at[2].multiply(x[0])


def weighted(x):
    y = x.at[np.array([0, 0])].add(x[1]).at[2].multiply(x[0])
    return np.sum(np.array([0.5, -2.0, 1.5]) * y)


def test_array_result_grad_vmap_and_jit():
    x = X.copy()
    expected = np.asarray(on_jax(updated)(jnp.asarray(X)))
    np.testing.assert_allclose(jit(updated)(x), expected, rtol=1e-12)
    np.testing.assert_allclose(grad(weighted)(x), jax.grad(on_jax(weighted))(jnp.asarray(X)),
                               rtol=1e-12)
    batch = np.stack([X, 2 * X, X - 1])
    np.testing.assert_allclose(vmap(updated)(batch.copy()),
                               np.stack([on_jax(updated)(jnp.asarray(b)) for b in batch]),
                               rtol=1e-12)
    np.testing.assert_array_equal(x, X)


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f.__name__)
def test_jit_matches_the_plain_run_and_leaves_the_argument(form):
    x = X.copy()
    assert float(jit(form)(x)) == pytest.approx(float(on_jax(form)(jnp.asarray(X))),
                                                rel=1e-12)
    np.testing.assert_array_equal(x, X)


def clipped(x):
    return np.sum(x.at[5].set(1.0, mode="clip"))


def repeated_multiply(x):
    return np.sum(x.at[np.array([0, 0])].multiply(2.0))


def conditional(x):
    return np.sum(x.at[0].set(1.0) if x[0] > 0 else x)


@pytest.mark.parametrize("fun, match", [(clipped, "mode="), (conditional, "if c else")])
def test_refused_forms_are_located(fun, match):
    with pytest.raises(TransformError, match=match) as info:
        grad(fun)(X.copy())
    assert info.value.lineno == inspect.getsourcelines(fun)[1] + 1


@pytest.mark.slow
def test_a_repeated_index_of_multiply_raises_at_run_time_where_jax_multiplies_twice():
    line = inspect.getsourcelines(repeated_multiply)[1] + 1
    assert float(on_jax(repeated_multiply)(jnp.asarray(X))) == pytest.approx(
        float(np.sum(X) + 3 * X[0]))
    for run in (grad(repeated_multiply), jit(repeated_multiply)):
        with pytest.raises(ValueError, match=f":{line}:.*selects an element twice"):
            run(X.copy())


def apply(x):
    return np.sum(x.at[1:].apply(np.sin) * x[0])


@pytest.mark.slow
def test_apply_matches_jax_values_and_finite_differences():
    """JAX does not differentiate `apply` (scatter_apply): finite differences are the oracle."""
    x = X.copy()
    assert float(jit(apply)(x)) == pytest.approx(
        float(on_jax(apply)(jnp.asarray(X))), rel=1e-12)
    expected = numerical_grad(lambda v: float(on_jax(apply)(jnp.asarray(v))), (X,))
    np.testing.assert_allclose(grad(apply)(x), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(vmap(grad(apply))(np.stack([X, 2 * X])),
                               np.stack([grad(apply)(X), grad(apply)(2 * X)]), rtol=1e-12)
    np.testing.assert_array_equal(x, X)


def in_while_test(x):
    while np.sum(x.at[0].set(0.0)) > 1.0:
        x = x * 0.5
    return np.sum(x)


def out_of_bounds(x):
    return np.sum(x.at[3].set(1.0))


def test_update_in_a_while_test_is_refused_and_out_of_bounds_raises():
    with pytest.raises(TransformError, match="while"):
        grad(in_while_test)(X.copy())
    with pytest.raises(IndexError):
        grad(out_of_bounds)(X.copy())


def pytree_loss(params, x):
    W = params["W"].at[0].set(0.0)
    return np.sum((W @ x) ** 2)


def test_update_of_a_pytree_leaf_and_the_python_backend():
    params = {"W": np.arange(6.0).reshape(2, 3) / 5}
    x = np.array([1.0, -2.0, 0.5])
    expected = jax.grad(on_jax(pytree_loss))({"W": jnp.asarray(params["W"])}, jnp.asarray(x))
    np.testing.assert_allclose(grad(pytree_loss)(params, x)["W"], expected["W"], rtol=1e-12)
    assert jit(pytree_loss, backend="python")(params, x) == pytest.approx(
        float(on_jax(pytree_loss)({"W": jnp.asarray(params["W"])}, jnp.asarray(x))), rel=1e-12)
    np.testing.assert_array_equal(params["W"], np.arange(6.0).reshape(2, 3) / 5)


def zeroed_first(v):
    return v.at[0].set(v[1] * 3.0)


def through_helper(x):
    return np.sin(zeroed_first(x)) * x[2]


@pytest.mark.slow
def test_an_update_in_a_helper_and_jacrev_run_the_rewritten_helper():
    """A helper the transformed function calls is rewritten too (it was called as written:
    AttributeError on `.at` under jit, grad, vmap), and so is the primal jacrev runs."""
    scope = {"np": jnp}
    for fun in (zeroed_first, through_helper):
        exec(inspect.getsource(fun), scope)
    oracle, x = scope["through_helper"], X.copy()
    expected = np.asarray(oracle(jnp.asarray(X)))
    for backend in ("python", "cpu"):
        np.testing.assert_allclose(jit(through_helper, backend=backend)(x), expected,
                                   rtol=1e-12)
    weights = np.array([0.5, -2.0, 1.5])
    np.testing.assert_allclose(
        grad(lambda v: np.sum(through_helper(v) * weights))(x),
        jax.grad(lambda v: jnp.sum(oracle(v) * weights))(jnp.asarray(X)), rtol=1e-12)
    jacobian = np.asarray(jax.jacrev(oracle)(jnp.asarray(X)))
    np.testing.assert_allclose(jacrev(through_helper)(x), jacobian, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(jacrev(zeroed_first)(x),
                               np.asarray(jax.jacrev(scope["zeroed_first"])(jnp.asarray(X))),
                               atol=1e-15)
    np.testing.assert_allclose(jacfwd(through_helper)(x), jacobian, rtol=1e-12, atol=1e-15)
    batch = np.stack([X, 2 * X, X - 1])
    np.testing.assert_allclose(vmap(through_helper)(batch.copy()),
                               np.stack([oracle(jnp.asarray(b)) for b in batch]), rtol=1e-12)
    np.testing.assert_array_equal(x, X)
