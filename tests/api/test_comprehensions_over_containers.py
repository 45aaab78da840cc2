"""Comprehensions and `sum` the way JAX users write them over a pytree of parameters and
over lists they build: `sum(np.sum(W ** 2) for W, b in params)` (an L2 penalty),
`[(W - lr * dW, b - lr * db) for (W, b), (dW, db) in zip(params, grads)]` (an SGD step),
`{k: v * 2 for k, v in params.items()}`, `sum([np.sum(w * w) for w in ws])`.

They were refused: a comprehension over a container argument used the container whole, a
generator expression was not supported at all, `zip` of two containers was not a loop
the pytree boundary unrolled, and `sum` of a list built in the function handed the list
on whole. Oracles: the plain Python run and central differences."""
import numpy as np
import pytest

from transformer import TransformError, grad, jit, vmap
from transformer.test_util import numerical_grad

RNG = np.random.default_rng(1)
PARAMS = [(RNG.normal(size=(4, 3)), RNG.normal(size=4)),
          (RNG.normal(size=(2, 4)), RNG.normal(size=2))]
X = RNG.normal(size=3)
Y = RNG.normal(size=2)


def predict(params, x):
    h = x
    for W, b in params[:-1]:
        h = np.tanh(W @ h + b)
    W, b = params[-1]
    return W @ h + b


def penalty_generator(params):
    return sum(np.sum(W ** 2) for W, _ in params)


def penalty_list(params):
    return sum([np.sum(W ** 2) + np.sum(b ** 2) for W, b in params])


def penalty_enumerated(params):
    return sum([(i + 1.0) * np.sum(layer[0] ** 2) for i, layer in enumerate(params)])


def loss(params, x, y):
    return np.sum((predict(params, x) - y) ** 2) + 1e-2 * penalty_generator(params)


def sgd_step(params, x, y):
    grads = grad(loss)(params, x, y)
    return [(W - 0.1 * dW, b - 0.1 * db) for (W, b), (dW, db) in zip(params, grads)]


def _flat_numerical_grad(f, params):
    """d f / d every leaf of `params` (a list of (W, b)) by central differences."""
    out = []
    for k, (W, b) in enumerate(params):
        pair = []
        for which, leaf in enumerate((W, b)):
            def of_leaf(value, k=k, which=which):
                changed = [list(p) for p in params]
                changed[k][which] = value
                return f([tuple(p) for p in changed])
            pair.append(numerical_grad(of_leaf, (leaf,)))
        out.append(tuple(pair))
    return out


def _assert_trees_close(got, expected, rtol=1e-6):
    assert len(got) == len(expected)
    for (gW, gb), (eW, eb) in zip(got, expected):
        np.testing.assert_allclose(gW, eW, rtol=rtol, atol=1e-9)
        np.testing.assert_allclose(gb, eb, rtol=rtol, atol=1e-9)


@pytest.mark.every_case
@pytest.mark.parametrize("f", [penalty_generator, penalty_list, penalty_enumerated],
                         ids=lambda f: f.__name__)
def test_penalties_over_the_parameters(f):
    expected = _flat_numerical_grad(f, PARAMS)
    _assert_trees_close(grad(f)(PARAMS), expected)
    _assert_trees_close(jit(grad(f))(PARAMS), expected)
    assert jit(f)(PARAMS) == pytest.approx(f(PARAMS), rel=1e-12)


@pytest.mark.slow
def test_an_sgd_step_written_with_zip_under_jit():
    expected = sgd_step(PARAMS, X, Y)              # plain Python (grad's own run inside)
    _assert_trees_close(jit(sgd_step)(PARAMS, X, Y), expected, rtol=1e-10)
    loss_grad = _flat_numerical_grad(lambda p: loss(p, X, Y), PARAMS)
    _assert_trees_close(expected, [(W - 0.1 * dW, b - 0.1 * db)
                                   for (W, b), (dW, db) in zip(PARAMS, loss_grad)])


def test_a_dict_comprehension_over_a_dict_argument():
    params = {"w": RNG.normal(size=3), "v": RNG.normal(size=3)}

    def scaled(params):
        doubled = {k: v * 2.0 for k, v in params.items()}
        return np.sum(doubled["w"] * doubled["v"])
    g = grad(scaled)(params)
    np.testing.assert_allclose(g["w"], 4.0 * params["v"], rtol=1e-12)
    np.testing.assert_allclose(g["v"], 4.0 * params["w"], rtol=1e-12)


def local_sum(x):
    ws = [np.sin(x), np.cos(x) * x]
    return sum([np.sum(w * w) for w in ws]) + sum(np.sum(w) for w in ws)


@pytest.mark.slow
def test_sum_of_a_list_built_in_the_function():
    np.testing.assert_allclose(grad(local_sum)(X), numerical_grad(local_sum, (X,)),
                               rtol=1e-6)
    np.testing.assert_allclose(jit(grad(local_sum))(X), numerical_grad(local_sum, (X,)),
                               rtol=1e-6)
    batch = np.stack([X, X + 1.0])
    np.testing.assert_allclose(vmap(local_sum)(batch), [local_sum(r) for r in batch],
                               rtol=1e-12)


def test_a_generator_expression_given_elsewhere_is_still_refused_located():
    def elsewhere(x):
        return np.sum(np.stack(list(x * k for k in range(3))) + np.array(x for _ in ()))
    with pytest.raises(TransformError, match="generator expressions") as info:
        grad(elsewhere)(X)
    assert info.value.filename == __file__


def test_a_comprehension_with_a_condition_over_a_container_argument_is_refused():
    def filtered(params):
        return sum([np.sum(W) for W, b in params if W.shape[0] > 2])
    with pytest.raises(TransformError) as info:
        grad(filtered)(PARAMS)
    assert info.value.filename == __file__
