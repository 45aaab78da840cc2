"""Dict parameters as NumPy code walks them: `for k in params` (Python iterates a dict's
keys), a new dict bound to a name and returned under jit, and a dict comprehension over
the keys. Checked against plain Python and finite differences."""
import numpy as np
import pytest

from transformer import TransformError, grad, jit

from tests.tree_checks import assert_tree_close, tree_fd_grad

RNG = np.random.default_rng(11)
PARAMS = {"W": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2)}
X = RNG.normal(size=(4, 3))


def l2_over_keys(params, x):
    total = np.sum(np.tanh(x @ params["W"] + params["b"]) ** 2)
    for k in params:
        total = total + 0.01 * np.sum(params[k] ** 2)
    return total


def sgd_step_named(params, x):
    g = grad(l2_over_keys)(params, x)
    new = {"W": params["W"] - 0.1 * g["W"], "b": params["b"] - 0.1 * g["b"]}
    return new, l2_over_keys(new, x)


def scaled_by_comprehension(params, x):
    new = {k: v * 2.0 for k, v in params.items()}
    return new


def shifted_over_keys(params, x):
    return {k: params[k] - 0.1 * grad(l2_over_keys)(params, x)[k] for k in params}


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["python", "jit"])
def test_a_loop_over_a_dicts_keys_reads_each_entry(compiled):
    f = jit(grad(l2_over_keys)) if compiled else grad(l2_over_keys)
    assert_tree_close(f(PARAMS, X), tree_fd_grad(l2_over_keys, (PARAMS, X)),
                      rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(jit(l2_over_keys)(PARAMS, X), l2_over_keys(PARAMS, X))


@pytest.mark.parametrize("f", [sgd_step_named, scaled_by_comprehension, shifted_over_keys])
def test_a_dict_built_and_returned_under_jit_is_the_dict_python_returns(f):
    assert_tree_close(jit(f)(PARAMS, X), f(PARAMS, X), rtol=1e-10, atol=1e-12)


def rebinds_the_key(params, x):
    total = 0.0
    for k in params:
        k = "W"
        total = total + np.sum(params[k])
    return total


def test_a_key_name_rebound_in_the_loop_is_not_taken_for_the_key():
    with pytest.raises(TransformError, match="constant key"):
        jit(rebinds_the_key)(PARAMS, X)
