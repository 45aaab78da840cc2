"""`first, *rest = layers`: starred unpacking of a container argument (a pytree) and of a
tuple literal, under every transformation, against the same model written without it
(itself checked against finite differences) and against Python's own unpacking; any other
starred target is refused at its line."""
from __future__ import annotations

import numpy as np
import pytest
from gradcheck import central_differences

from transformer import TransformError, grad, hessian, jacfwd, jit, value_and_grad, vmap


def _layers(sizes=(3, 4, 4, 1), seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(m, n)), rng.normal(size=n)) for m, n in zip(sizes[:-1], sizes[1:])]


def predict_indexed(params, x):
    for w, b in params[:-1]:
        x = np.tanh(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def predict_last_starred(params, x):
    *hidden, last = params
    for w, b in hidden:
        x = np.tanh(x @ w + b)
    return x @ last[0] + last[1]


def predict_first_starred(params, x):
    first, *rest = params
    x = np.tanh(x @ first[0] + first[1])
    for w, b in rest[:-1]:
        x = np.tanh(x @ w + b)
    w, b = rest[-1]
    return x @ w + b


def hidden_layers(params, x):
    """A helper given the container: the starred name is unpacked in its variant."""
    head, *middle, (w, b) = params
    x = np.tanh(x @ head[0] + head[1])
    for m in middle:
        x = np.tanh(x @ m[0] + m[1])
    return x @ w + b


def through_helper(params, x):
    return hidden_layers(params, x)


def _loss(predict):
    def loss(params, x, y):
        return np.mean((predict(params, x) - y) ** 2)
    return loss


STARRED = [predict_last_starred, predict_first_starred, through_helper]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(1)
    return _layers(), rng.normal(size=(5, 3)), rng.normal(size=(5, 1))


def _assert_tree_close(got, want, **tol):
    assert type(got) is type(want) and len(got) == len(want)
    for g, w in zip(got, want):
        if isinstance(w, (tuple, list)):
            _assert_tree_close(g, w, **tol)
        else:
            np.testing.assert_allclose(g, w, **tol)


def test_the_reference_model_matches_finite_differences(data):
    params, x, y = data
    loss = _loss(predict_indexed)
    got = grad(loss)(params, x, y)
    for layer, (w, b) in enumerate(params):
        for which, leaf in enumerate((w, b)):
            def along(v, layer=layer, which=which):
                changed = [list(p) for p in params]
                changed[layer][which] = v
                return loss([tuple(p) for p in changed], x, y)
            np.testing.assert_allclose(got[layer][which], central_differences(along, (leaf,)),
                                       rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("predict", STARRED, ids=lambda f: f.__name__)
def test_grad_of_starred_unpacking_matches_the_indexed_model(data, predict):
    params, x, y = data
    want = grad(_loss(predict_indexed))(params, x, y)
    _assert_tree_close(grad(_loss(predict))(params, x, y), want, rtol=1e-12, atol=1e-14)


@pytest.mark.slow
@pytest.mark.parametrize("predict", STARRED[:2], ids=lambda f: f.__name__)
def test_jit_and_vmap_of_starred_unpacking(data, predict):
    params, x, y = data
    loss = _loss(predict)
    want = grad(_loss(predict_indexed))(params, x, y)
    _assert_tree_close(jit(grad(loss))(params, x, y), want, rtol=1e-12, atol=1e-14)
    value, _ = value_and_grad(loss)(params, x, y)
    assert value == pytest.approx(_loss(predict_indexed)(params, x, y), rel=1e-12)
    per_example = vmap(loss, in_axes=(None, 0, 0))(params, x, y)
    np.testing.assert_allclose(per_example, [loss(params, xi, yi) for xi, yi in zip(x, y)],
                               rtol=1e-12)
    np.testing.assert_allclose(jit(predict)(params, x), predict_indexed(params, x),
                               rtol=1e-12)


def test_the_starred_name_is_a_list_as_in_python():
    def rest_of(t):
        first, *rest = t
        return rest

    t = (np.ones(2), np.zeros(3), np.full(1, 2.0))
    got = jit(rest_of)(t)
    assert isinstance(got, list) and len(got) == 2
    for g, w in zip(got, rest_of(t)):
        np.testing.assert_array_equal(g, w)


def _literal(x):
    a, *b, c = (x, 2.0 * x, 3.0 * x, np.sin(x))
    return a * c + np.sum(np.array(b)) * c


def _named_literal(x):
    pair = (x, 2.0 * x)
    *a, b = pair
    return a[0] * b + len(a)


@pytest.mark.parametrize("f", [_literal, _named_literal], ids=lambda f: f.__name__)
def test_starred_unpacking_of_a_tuple_literal(f):
    x = 0.3
    assert jit(f)(x) == pytest.approx(f(x), rel=1e-14)
    slope = (f(x + 1e-6) - f(x - 1e-6)) / 2e-6
    assert grad(f)(x) == pytest.approx(slope, rel=1e-7)
    xs = np.array([0.1, 0.4])
    columns = [(f(xs + step) - f(xs - step)) / 2e-6 for step in np.eye(2) * 1e-6]
    np.testing.assert_allclose(jacfwd(f)(xs), np.stack(columns, axis=1), rtol=1e-7)
    assert hessian(f)(x) == pytest.approx(
        (f(x + 1e-4) - 2 * f(x) + f(x - 1e-4)) / 1e-8, rel=1e-4)


def _from_array(x):
    a, *b = x
    return a


def _in_a_loop_target(x):
    total = 0.0
    for a, *b in x:
        total += a * len(b)
    return total


def _too_few(x):
    a, *b, c, d = (x, x)
    return a + c + d + len(b)


@pytest.mark.parametrize("f, line, message", [
    (_from_array, "a, *b = x", "not for a value whose length is not known before the run"),
    (_in_a_loop_target, "for a, *b in x:", "not for a value whose length is not known"),
    (_too_few, "a, *b, c, d = (x, x)", "cannot unpack 2 values into 3 names and a starred"),
], ids=["array", "loop-target", "too-few"])
@pytest.mark.parametrize("transform", [grad, jit], ids=["grad", "jit"])
def test_other_starred_targets_are_refused_at_their_line(f, line, message, transform):
    with pytest.raises(TransformError) as info:
        transform(f)(np.ones((3, 2)) if f is _in_a_loop_target else np.ones(3))
    error = info.value
    assert message in error.message
    assert error.filename == __file__ and error.line.strip() == line
    assert "x[0], x[1:]" in error.hint or "as many" in error.hint


def test_too_few_entries_in_a_container_argument_are_refused():
    def f(params, x):
        a, b, *rest, c = params
        return x

    with pytest.raises(TransformError, match="cannot unpack 2 entries into 3 names"):
        jit(f)((np.ones(1), np.ones(1)), 1.0)
