"""tree_util.ravel_pytree: JAX's flatten_util.ravel_pytree (one vector and back), and
the pattern handing jit(value_and_grad(loss)) over a pytree to scipy.optimize.minimize."""
import collections

import numpy as np
import pytest

from transformer import jit, tree_util, value_and_grad
from transformer.tree_util import ravel_pytree

Layer = collections.namedtuple("Layer", "scale shift")


def nested_tree():
    return {"layers": [Layer(np.arange(6.0).reshape(2, 3), np.array([10.0, 11.0])),
                       Layer(np.array(20.0), np.array([[21.0], [22.0]]))],
            "bias": (np.array([30.0, 31.0, 32.0]), 40.0)}


def assert_same_tree(got, expected):
    assert tree_util.tree_structure(got) == tree_util.tree_structure(expected)
    for a, b in zip(tree_util.tree_leaves(got), tree_util.tree_leaves(expected)):
        assert np.shape(a) == np.shape(b) and np.asarray(a).dtype == np.asarray(b).dtype
        assert isinstance(a, np.ndarray) == isinstance(b, np.ndarray)
        np.testing.assert_array_equal(a, b)


def test_ravel_concatenates_leaves_in_key_order_and_unravel_rebuilds_the_tree():
    tree = nested_tree()
    flat, unravel = ravel_pytree(tree)
    # dict keys sorted ("bias" < "layers"), then each container in order, leaves raveled
    expected = np.concatenate([[30.0, 31.0, 32.0], [40.0], np.arange(6.0), [10.0, 11.0],
                               [20.0], [21.0, 22.0]])
    np.testing.assert_array_equal(flat, expected)
    assert flat.dtype == np.float64
    expected_tree = tree_util.tree_map(
        lambda leaf: leaf if isinstance(leaf, np.ndarray) else np.float64(leaf), tree)
    assert_same_tree(unravel(flat), expected_tree)


def test_unravel_of_a_changed_vector_puts_each_value_in_its_leaf():
    tree = nested_tree()
    flat, unravel = ravel_pytree(tree)
    rebuilt = unravel(flat * 2.0)
    np.testing.assert_array_equal(rebuilt["layers"][0].scale, np.arange(6.0).reshape(2, 3) * 2)
    np.testing.assert_array_equal(rebuilt["layers"][1].shift, [[42.0], [44.0]])
    assert rebuilt["bias"][1] == 80.0 and isinstance(rebuilt["bias"][1], np.float64)
    assert isinstance(rebuilt["layers"][1].scale, np.ndarray)     # a 0-d array stays one


def test_unravel_returns_new_arrays_not_views_of_the_vector():
    flat, unravel = ravel_pytree({"w": np.ones(3)})
    leaves = unravel(flat)
    flat[:] = 5.0
    np.testing.assert_array_equal(leaves["w"], np.ones(3))


def test_mixed_dtypes_ravel_to_the_promoted_dtype_and_come_back():
    tree = {"a": np.ones(2, np.float32), "b": np.arange(3, dtype=np.int32),
            "c": np.zeros(1, np.float64)}
    flat, unravel = ravel_pytree(tree)
    assert flat.dtype == np.float64
    assert_same_tree(unravel(flat), tree)
    with pytest.raises(TypeError, match="dtype float32 but the tree ravels to float64"):
        unravel(flat.astype(np.float32))


def test_one_dtype_unravel_keeps_the_dtype_it_is_given_and_python_numbers_are_weak():
    flat, unravel = ravel_pytree({"w": np.ones(2, np.float32), "s": 2.0})
    assert flat.dtype == np.float32                 # as JAX: the Python float is weak
    rebuilt = unravel(np.array([1.0, 2.0, 3.0]))    # a float64 vector, e.g. from SciPy
    assert rebuilt["w"].dtype == np.float64
    np.testing.assert_array_equal(rebuilt["w"], [2.0, 3.0])
    assert rebuilt["s"] == 1.0


def test_an_empty_tree_ravels_to_an_empty_float32_vector():
    flat, unravel = ravel_pytree({"nothing": None, "empty": ()})
    assert flat.shape == (0,) and flat.dtype == np.float32
    assert unravel(flat) == {"nothing": None, "empty": ()}


def test_unravel_refuses_a_vector_of_the_wrong_length():
    _, unravel = ravel_pytree((np.ones(2), np.ones((2, 2))))
    with pytest.raises(ValueError, match=r"shape \(6,\).*got shape \(5,\)"):
        unravel(np.ones(5))


def quadratic_loss(params, data):
    r = params["w"] - data
    return np.sum(r * r) + (params["b"] - 2.0) ** 2 * 3.0


loss_and_grad = jit(value_and_grad(quadratic_loss))


def test_jit_value_and_grad_returns_the_gradient_dict_of_a_dict_argument():
    data = np.array([0.5, -1.0, 4.0])
    value, grads = loss_and_grad({"w": np.zeros(3), "b": 0.0}, data)
    assert value == pytest.approx(np.sum(data * data) + 12.0)
    assert sorted(grads) == ["b", "w"]
    np.testing.assert_allclose(grads["w"], -2.0 * data)        # d/dw sum((w - d)^2)
    assert grads["b"] == pytest.approx(-12.0)                   # d/db 3 (b - 2)^2 at b = 0


def test_scipy_minimize_over_a_pytree_with_bounds():
    optimize = pytest.importorskip("scipy.optimize")
    data = np.array([0.5, -1.0, 4.0])
    params = {"w": np.zeros(3), "b": 0.0}
    x0, unravel = ravel_pytree(params)

    def fun(x):
        value, grads = loss_and_grad(unravel(x), data)
        return float(value), ravel_pytree(grads)[0]

    lower, _ = ravel_pytree({"w": np.full(3, -2.0), "b": -10.0})
    upper, _ = ravel_pytree({"w": np.full(3, 3.0), "b": 10.0})
    result = optimize.minimize(fun, x0, jac=True, method="L-BFGS-B",
                               bounds=optimize.Bounds(lower, upper))
    found = unravel(result.x)
    np.testing.assert_allclose(found["w"], [0.5, -1.0, 3.0], atol=1e-6)  # 4.0 is out of bounds
    np.testing.assert_allclose(found["b"], 2.0, atol=1e-6)
