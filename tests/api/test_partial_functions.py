"""`functools.partial` objects under every transformation, as JAX users write them:
`grad(partial(loss, scale=2.0))`, `jit(partial(step, W))`, `vmap(partial(f, W))`. They
were refused ("it is not a Python function with source code"). The bound arguments are
held fixed (`transformer.partials`); a keyword bound may still be passed by the caller.
Oracles: the partial called directly, central differences, the examples one by one."""
import functools

import numpy as np
import pytest

from transformer import (TransformError, grad, hessian, jacfwd, jacrev, jit, value_and_grad,
                         vmap)
from transformer.test_util import numerical_grad, numerical_jacobian

RNG = np.random.default_rng(3)
W = RNG.normal(size=(2, 3))
X = RNG.normal(size=3)
BATCH = RNG.normal(size=(4, 3))


def loss(w, x, scale=1.0, *, shift=0.0):
    return scale * np.sum(np.tanh(w @ x + shift) ** 2)


PARTIALS = {
    "keyword": functools.partial(loss, scale=2.0),
    "weights bound": functools.partial(loss, W),
    "weights and keyword": functools.partial(loss, W, shift=0.5),
    "nested": functools.partial(functools.partial(loss, W), scale=-1.5),
}


def _first_array_argument(name):
    return X if "weights" in name or name == "nested" else W


@pytest.mark.every_case
@pytest.mark.parametrize("name", list(PARTIALS))
def test_grad_jacobians_and_hessian(name):
    f = PARTIALS[name]
    arg = _first_array_argument(name)
    rest = () if arg is X else (X,)
    expected = numerical_grad(f, (arg,) + rest)
    np.testing.assert_allclose(grad(f)(arg, *rest), expected, rtol=1e-6, atol=1e-9)
    value, g = value_and_grad(f)(arg, *rest)
    assert value == pytest.approx(f(arg, *rest))
    np.testing.assert_allclose(g, expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jacfwd(f)(arg, *rest), expected, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jacrev(f)(arg, *rest), expected, rtol=1e-6, atol=1e-9)
    if arg is X:
        np.testing.assert_allclose(hessian(f)(X), numerical_jacobian(grad(f), X),
                                   rtol=1e-5, atol=1e-7)


@pytest.mark.every_case
@pytest.mark.parametrize("name", ["weights bound", "nested"])
def test_vmap_and_vmap_grad(name):
    f = PARTIALS[name]
    np.testing.assert_allclose(vmap(f)(BATCH), [f(x) for x in BATCH], rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(f))(BATCH),
                               [numerical_grad(f, (x,)) for x in BATCH], rtol=1e-6,
                               atol=1e-9)


def test_a_bound_keyword_can_still_be_passed():
    f = functools.partial(loss, W, shift=0.5)
    np.testing.assert_allclose(grad(f)(X, shift=-0.25),
                               numerical_grad(lambda x: loss(W, x, shift=-0.25), (X,)),
                               rtol=1e-6)


def test_jit_of_partials_with_different_bound_values():
    # each partial holds its own values: a compiled function is never reused for another
    results = []
    for scale, w in ((2.0, W), (-0.5, W * 3.0), (2.0, W * 3.0)):
        f = functools.partial(loss, w, scale=scale)
        np.testing.assert_allclose(jit(f)(X), f(X), rtol=1e-12)
        np.testing.assert_allclose(jit(grad(f))(X), numerical_grad(f, (X,)), rtol=1e-6)
        results.append(jit(f)(X))
    assert len(set(results)) == 3


def scaled_sum(scale, x):
    return scale * np.sum(np.sin(x))


def test_jit_of_partials_binding_different_numbers():
    for scale in (2.0, -3.0, 2.0):
        f = functools.partial(scaled_sum, scale)
        assert jit(f)(X) == pytest.approx(f(X), rel=1e-12)
        np.testing.assert_allclose(jit(grad(f))(X), scale * np.cos(X), rtol=1e-12)


def step(cfg, w, x):
    return w - cfg["lr"] * np.tanh(w * x) * (2.0 if cfg["kind"] == "double" else 1.0)


@pytest.mark.slow
def test_a_bound_dict_of_settings_is_read_when_transformed():
    for cfg in ({"lr": 0.1, "kind": "double"}, {"lr": 0.5, "kind": "single"}):
        f = functools.partial(step, cfg)
        np.testing.assert_allclose(jit(f)(W[0], X), f(W[0], X), rtol=1e-12)
        np.testing.assert_allclose(jit(vmap(f, in_axes=(0, None)))(W, X),
                                   [f(w, X) for w in W], rtol=1e-12)


def test_a_partial_of_a_numpy_function():
    power = functools.partial(np.power, 2.0)
    np.testing.assert_allclose(jacfwd(power)(X), np.diag(2.0 ** X * np.log(2.0)),
                               rtol=1e-12)
    np.testing.assert_allclose(jit(power)(X), 2.0 ** X, rtol=1e-12)


def test_a_partial_binding_no_parameter_of_its_function_is_refused_located():
    with pytest.raises(TransformError, match="scael") as info:
        grad(functools.partial(loss, scael=2.0))(W, X)
    assert info.value.filename == __file__ and "def loss" in str(info.value)


def test_partials_of_a_lambda_and_of_positional_only_parameters():
    product = lambda a, b: np.sum(a * b)             # noqa: E731
    np.testing.assert_allclose(grad(functools.partial(product, b=X))(W[0]), X, rtol=1e-12)

    def g(a, /, b, c=2.0):
        return np.sum(a * b * c)
    np.testing.assert_allclose(grad(functools.partial(g, X))(W[0]), 2.0 * X, rtol=1e-12)
    np.testing.assert_allclose(grad(functools.partial(g, c=5.0))(X, W[0]), 5.0 * W[0],
                               rtol=1e-12)


# ------------------------------------------- partials made inside the transformed function
# `g = partial(loss, W); g(x)` in the function's body: written out at each call as the call
# of `loss` (transformer.local_partials); they were refused ("no adjoint rule for g").

def made_inside(w, x):
    energy = functools.partial(loss, w, shift=0.5)
    return energy(x) + energy(2.0 * x, scale=3.0)


def partial_of_partial(w, x):
    first = functools.partial(loss, w)
    second = functools.partial(first, shift=-0.25)
    return second(x, 2.0)


def bound_value_evaluated_once(w, x):
    v = x * 2.0
    g = functools.partial(scaled_sum, np.sum(v))   # the sum of v as it is here
    v = v * 10.0
    return g(w) + np.sum(v)


def partial_of_a_local_function(w, x):
    def inner(a, b, c=1.0):
        return np.sum(np.tanh(a * b) * c)
    h = functools.partial(inner, c=3.0)
    return h(w, x) + h(x, w, c=-1.0)


INSIDE = [made_inside, partial_of_partial, bound_value_evaluated_once,
          partial_of_a_local_function]


@pytest.mark.parametrize("f", INSIDE, ids=[f.__name__ for f in INSIDE])
def test_partials_made_inside_match_finite_differences(f):
    w = W[0]
    for k in (0, 1):
        np.testing.assert_allclose(grad(f, argnums=k)(w, X), numerical_grad(f, (w, X), k),
                                   rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jacfwd(f, argnums=1)(w, X), numerical_grad(f, (w, X), 1),
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(vmap(f, in_axes=(0, None))(W, X), [f(r, X) for r in W],
                               rtol=1e-12)


def test_jit_of_a_partial_made_inside():
    np.testing.assert_allclose(jit(grad(made_inside, argnums=1))(W[0], X),
                               numerical_grad(made_inside, (W[0], X), 1), rtol=1e-6)


def applied(f, x):
    return f(x)


def passes_it_on(w, x):
    g = functools.partial(loss, w)
    return applied(g, x)


def binds_it_twice(w, x):
    g = functools.partial(loss, w)
    g = functools.partial(loss, 2.0 * w)
    return g(x)


def makes_it_in_a_branch(w, x):
    g = functools.partial(loss, w)
    if x[0] > 0:
        g = functools.partial(loss, 2.0 * w)
    return g(x)


@pytest.mark.parametrize("f, message", [(passes_it_on, "not passing it on"),
                                        (binds_it_twice, "also bound elsewhere"),
                                        (makes_it_in_a_branch, "inside a block")])
def test_a_partial_made_inside_used_otherwise_is_refused_located(f, message):
    with pytest.raises(TransformError, match=message) as info:
        grad(f, argnums=1)(W[0], X)
    assert info.value.filename == __file__
    assert "bind the partial once" in str(info.value)


# a partial made at module level and called inside: its function and bound values are read
# as closed-over values are (they were refused: "no adjoint rule for functools.partial(...)")
ENERGY = functools.partial(loss, W, shift=0.5)


def calls_a_module_partial(x):
    return ENERGY(x) + ENERGY(x, scale=-2.0) * np.sum(x)


def test_a_module_level_partial_called_inside():
    f = calls_a_module_partial
    np.testing.assert_allclose(grad(f)(X), numerical_grad(f, (X,)), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jacfwd(f)(X), numerical_grad(f, (X,)), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(vmap(f)(BATCH), [f(x) for x in BATCH], rtol=1e-12)


@pytest.mark.slow             # two compiles
def test_jit_of_a_module_level_partial_follows_a_new_binding(monkeypatch):
    f = calls_a_module_partial
    np.testing.assert_allclose(jit(grad(f))(X), numerical_grad(f, (X,)), rtol=1e-6)
    monkeypatch.setitem(globals(), "ENERGY", functools.partial(loss, 3.0 * W, scale=0.5))
    np.testing.assert_allclose(jit(grad(f))(X), numerical_grad(f, (X,)), rtol=1e-6)
