"""Containers crossing calls inside a transformed function, as JAX's tutorials write them:
a slice of the layer list (`params[:-1]`), the parameter tree handed to a vmapped
`predict`, `grads = grad(loss)(params, x, y)` inside a jitted update, and the new tree
returned (`return tree_map(...)`). Checked against finite differences and plain Python."""
import numpy as np
import pytest

from transformer import TransformError, grad, jit, value_and_grad, vmap
from transformer.tree_util import tree_map

from tests.tree_checks import assert_tree_close, tree_fd_grad

RNG = np.random.default_rng(7)
LAYERS = [(RNG.normal(size=(5, 3)), RNG.normal(size=5)),
          (RNG.normal(size=(4, 5)), RNG.normal(size=4)),
          (RNG.normal(size=(2, 4)), RNG.normal(size=2))]
IMAGES = RNG.normal(size=(6, 3))
TARGETS = np.eye(2)[RNG.integers(0, 2, 6)]


# ---------------------------------------------------------------- JAX's MLP tutorial
def predict(params, image):
    activations = image
    for w, b in params[:-1]:
        activations = np.tanh(np.dot(w, activations) + b)
    final_w, final_b = params[-1]
    logits = np.dot(final_w, activations) + final_b
    return logits - np.log(np.sum(np.exp(logits)))


batched_predict = vmap(predict, in_axes=(None, 0))


def loss(params, images, targets):
    return -np.mean(batched_predict(params, images) * targets)


def update(params, x, y):
    grads = grad(loss)(params, x, y)
    return [(w - 0.1 * dw, b - 0.1 * db) for (w, b), (dw, db) in zip(params, grads)]



def test_grad_through_a_layer_slice_and_a_vmapped_predict_matches_finite_differences():
    assert_tree_close(grad(loss)(LAYERS, IMAGES, TARGETS),
                      tree_fd_grad(loss, (LAYERS, IMAGES, TARGETS)))


@pytest.mark.parametrize("backend", ["python", pytest.param("cpu", marks=pytest.mark.slow)])
def test_jitted_update_with_grad_inside_matches_plain_python(backend):
    got = jit(update, backend=backend)(LAYERS, IMAGES, TARGETS)
    want = update(LAYERS, IMAGES, TARGETS)
    g = tree_fd_grad(loss, (LAYERS, IMAGES, TARGETS))
    assert isinstance(got, list) and all(isinstance(layer, tuple) for layer in got)
    assert_tree_close(got, want, rtol=1e-12, atol=1e-12)
    assert_tree_close(got, [(w - 0.1 * dw, b - 0.1 * db)
                            for (w, b), (dw, db) in zip(LAYERS, g)])


def inline_vmap_loss(params, images):
    return np.sum(vmap(predict, in_axes=(None, 0))(params, images) ** 2)


def helper_loss(params, image):
    return np.sum(predict(params, image) ** 2)


@pytest.mark.slow
@pytest.mark.parametrize("f, data", [(inline_vmap_loss, IMAGES), (helper_loss, IMAGES[0])],
                         ids=["inline vmap", "helper"])
def test_containers_handed_on_differentiate(f, data):
    assert_tree_close(grad(f)(LAYERS, data), tree_fd_grad(f, (LAYERS, data)))


def slices(params, x):
    a = x
    for w, b in params[1:]:
        a = np.sin(np.dot(w, a[:w.shape[1]]) + b)
    w0, b0 = params[::2][0]
    wl, bl = params[::-1][0]
    return np.sum(a) + np.sum(w0) * np.sum(bl) + len(params[-2:]) * np.sum(wl)


def test_constant_slices_select_the_entries_python_selects():
    x = RNG.normal(size=5)
    assert grad(slices)(LAYERS, x)[0][0].shape == (5, 3)
    assert_tree_close(grad(slices)(LAYERS, x), tree_fd_grad(slices, (LAYERS, x)))


# ---------------------------------------------------------------- dict parameters
PARAMS = {"W1": RNG.normal(size=(4, 3)), "b1": RNG.normal(size=4),
          "W2": RNG.normal(size=(2, 4))}
X, Y = RNG.normal(size=3), RNG.normal(size=2)


def dict_loss(params, x, y):
    h = np.tanh(params["W1"] @ x + params["b1"])
    return np.sum((params["W2"] @ h - y) ** 2)


def sgd_step(params, x, y):
    grads = grad(dict_loss)(params, x, y)
    return tree_map(lambda p, g: p - 0.1 * g, params, grads)


def sgd_step_with_value(params, x, y):
    value, grads = value_and_grad(dict_loss)(params, x, y)
    new = tree_map(lambda p, g: p - 0.1 * g, params, grads)
    return value, new


def gradient_norm(params, x, y):
    g = grad(dict_loss)(params, x, y)
    return np.sum(g["W1"] ** 2) + np.sum(g["b1"] ** 2) + np.sum(g["W2"] ** 2)


def _expected_step():
    g = tree_fd_grad(dict_loss, (PARAMS, X, Y))
    return {k: PARAMS[k] - 0.1 * g[k] for k in PARAMS}


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["python", "jit"])
def test_a_step_returning_tree_map_of_the_gradient(compiled):
    step = jit(sgd_step) if compiled else sgd_step
    assert_tree_close(step(PARAMS, X, Y), _expected_step())


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["python", "jit"])
def test_value_and_grad_inside_returns_the_value_and_the_new_tree(compiled):
    step = jit(sgd_step_with_value) if compiled else sgd_step_with_value
    value, new = step(PARAMS, X, Y)
    assert value == pytest.approx(dict_loss(PARAMS, X, Y), rel=1e-12)
    assert_tree_close(new, _expected_step())


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["python", "jit"])
def test_grad_of_a_function_of_grad_matches_finite_differences(compiled):
    second = jit(grad(gradient_norm)) if compiled else grad(gradient_norm)
    assert_tree_close(second(PARAMS, X, Y), tree_fd_grad(gradient_norm, (PARAMS, X, Y)),
                      rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- refused, located
def grad_used_in_an_expression(params, x, y):
    return np.sum(grad(dict_loss)(params, x, y)["W1"])


def grad_used_under_a_condition(params, x, y):
    return np.sum(grad(dict_loss)(params, x, y)["W1"]) if x[0] > -10.0 else 0.0


def step_mapping_the_gradient_in_place(params, x, y):
    """JAX's `tree_map(lambda p, g: p - lr * g, params, grad(loss)(params, x, y))`."""
    return tree_map(lambda p, g: p - 0.1 * g, params, grad(dict_loss)(params, x, y))


def grad_bound_in_a_loop(params, x, y):
    total = 0.0
    for _ in range(2):
        g = grad(dict_loss)(params, x, y)
        total = total + np.sum(g["b1"])
    return total


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["python", "jit"])
def test_a_container_result_read_inside_an_expression_is_bound_first(compiled):
    f = jit(grad(grad_used_in_an_expression)) if compiled else grad(grad_used_in_an_expression)
    assert_tree_close(f(PARAMS, X, Y), tree_fd_grad(grad_used_in_an_expression, (PARAMS, X, Y)),
                      rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", ["python", pytest.param("cpu", marks=pytest.mark.slow)])
def test_tree_map_of_a_gradient_computed_in_its_arguments_matches_plain_python(backend):
    got = jit(step_mapping_the_gradient_in_place, backend=backend)(PARAMS, X, Y)
    assert_tree_close(got, step_mapping_the_gradient_in_place(PARAMS, X, Y), rtol=1e-10,
                      atol=1e-12)


@pytest.mark.parametrize("f, hint", [
    (grad_used_under_a_condition, "assign its result to a name first"),
    (grad_bound_in_a_loop, "bind it before the branch")])
def test_a_container_result_used_another_way_is_refused_at_the_call(f, hint):
    with pytest.raises(TransformError) as info:
        grad(f)(PARAMS, X, Y)
    assert info.value.filename == __file__
    assert "grad(dict_loss)(params, x, y)" in info.value.line
    assert hint in info.value.hint


def hinted(params, x, y):
    g = grad(dict_loss)(params, x, y)
    return np.sum(g["W1"])


def test_the_hint_for_an_expression_works():
    assert_tree_close(grad(hinted)(PARAMS, X, Y), tree_fd_grad(hinted, (PARAMS, X, Y)),
                      rtol=1e-4, atol=1e-5)


# ---------------------------------------------------------------- one array back, in place
def pair_energy(pos, params):
    d = pos[:, None, :] - pos[None, :, :]
    r2 = np.sum(d * d, axis=-1) + np.eye(pos.shape[0])
    sr6 = (params["sigma"] ** 2 / r2) ** 3
    return 0.5 * np.sum(4.0 * params["eps"] * (sr6 * sr6 - sr6) * (1.0 - np.eye(pos.shape[0])))


def force_matching(params, confs, forces):
    """Forces as -grad(energy) inside the loss, read in place: the gradient is with respect
    to the positions (an array), so the result is one array though `params` is a dict."""
    total = 0.0
    for k in range(confs.shape[0]):
        total = total + np.sum((-grad(pair_energy)(confs[k], params) - forces[k]) ** 2)
    return total


FM_CONFS = np.array([[0.0, 0.0, 0.0], [1.1, 0.1, 0.0], [0.1, 1.2, 0.1],
                     [1.0, 1.1, 0.9]]) + 0.03 * RNG.normal(size=(2, 4, 3))
FM_FORCES = 0.1 * RNG.normal(size=(2, 4, 3))
FM_PARAMS = {"eps": 1.0, "sigma": 0.9}


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["python", "jit"])
def test_a_gradient_with_respect_to_an_array_is_read_in_place_beside_a_dict(compiled):
    f = jit(grad(force_matching)) if compiled else grad(force_matching)
    assert_tree_close(f(FM_PARAMS, FM_CONFS, FM_FORCES),
                      tree_fd_grad(force_matching, (FM_PARAMS, FM_CONFS, FM_FORCES)),
                      rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- an optimizer step, jitted
def mlp(layers, x):
    for layer in layers[:-1]:
        x = np.maximum(0.0, x @ layer["W"] + layer["b"])
    return x @ layers[-1]["W"] + layers[-1]["b"]


def mse(layers, x, y):
    return np.mean((mlp(layers, x) - y) ** 2)


def adam_step(params, m, v, x, y, t):
    value, g = value_and_grad(mse)(params, x, y)
    m = tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
    v = tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
    params = tree_map(lambda p, a, b: p - 0.01 * (a / (1 - 0.9 ** t)) /
                      (np.sqrt(b / (1 - 0.999 ** t)) + 1e-8), params, m, v)
    return params, m, v, value


@pytest.mark.parametrize("backend", ["python", pytest.param("cpu", marks=pytest.mark.slow)])
def test_a_jitted_adam_step_returns_lists_of_dicts_as_plain_python_does(backend):
    layers = [{"W": RNG.normal(size=(3, 4)), "b": np.zeros(4)},
              {"W": RNG.normal(size=(4, 1)), "b": np.zeros(1)}]
    zeros = tree_map(np.zeros_like, layers)
    x, y = RNG.normal(size=(8, 3)), RNG.normal(size=(8, 1))
    step = jit(adam_step, backend=backend)
    got, want = (layers, zeros, zeros), (layers, zeros, zeros)
    for t in (1, 2):
        got = step(*got[:3], x, y, t)
        want = adam_step(*want[:3], x, y, t)
    assert isinstance(got[0], list) and isinstance(got[0][0], dict)
    assert_tree_close(got, want, rtol=1e-12, atol=1e-12)


def unsupported_with_containers(p, x):
    return np.tensordot(p["W"], x, 1) + p["b"]


def test_a_numba_refusal_with_container_arguments_names_their_leaves_at_the_users_line():
    with pytest.raises(TransformError) as info:
        jit(unsupported_with_containers)({"W": np.ones((2, 2)), "b": np.ones(2)}, np.ones(2))
    err = info.value
    assert err.filename == __file__
    assert err.line.strip() == 'return np.tensordot(p["W"], x, 1) + p["b"]'
    assert "p_W: array(float64, 2d, C), p_b: array(float64, 1d, C), x: " in err.message
