"""Functions held in local names, tuples and dicts, as JAX users write them: a loop over
functions (`for act in (np.tanh, relu):`), a local name bound to one (`act = np.tanh`, or
`relu if use_relu else np.tanh`), a dict of functions or settings read with a literal or
static key (`ACT["relu"](x)`, `CONFIG["scale"]`). Each is checked against finite
differences of the same model written out, or against the plain run; a loop whose
unrolling would change its meaning is refused at its line."""
from __future__ import annotations

import numpy as np
import pytest
from gradcheck import central_differences

from transformer import TransformError, grad, jit, jvp, vmap


def relu(x):
    return np.maximum(x, 0.0)


ACTIVATIONS = (np.tanh, relu, np.sin)
ACT = {"relu": relu, "tanh": np.tanh}
CONFIG = {"scale": 2.0, "shift": -1}


def written_out(w, x):
    return np.sum(np.sin(w @ relu(w @ np.tanh(w @ x))) ** 2)


def over_a_module_tuple(w, x):
    h = x
    for act in ACTIVATIONS:
        h = act(w @ h)
    return np.sum(h ** 2)


def over_a_list_literal(w, x):
    h = x
    for act in [np.tanh, relu, np.sin]:
        h = act(w @ h)
    return np.sum(h ** 2)


def over_a_local_name(w, x):
    acts = (np.tanh, relu, np.sin)
    h = x
    for act in acts:
        h = act(w @ h)
    return np.sum(h ** 2)


LOOPS = [over_a_module_tuple, over_a_list_literal, over_a_local_name]


@pytest.fixture(scope="module")
def point():
    rng = np.random.default_rng(0)
    return rng.normal(size=(3, 3)), np.array([0.3, -0.2, 0.5])


@pytest.mark.slow
@pytest.mark.parametrize("f", LOOPS, ids=lambda f: f.__name__)
def test_grad_and_jit_of_a_loop_over_functions(f, point):
    w, x = point
    want = central_differences(written_out, (w, x))
    np.testing.assert_allclose(grad(f)(w, x), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jit(grad(f))(w, x), want, rtol=1e-6, atol=1e-9)
    assert jit(f)(w, x) == pytest.approx(written_out(w, x), rel=1e-13)


@pytest.mark.parametrize("f", LOOPS[:2], ids=lambda f: f.__name__)
def test_vmap_and_jvp_of_a_loop_over_functions(f, point):
    w, x = point
    xs = np.stack([x, 2.0 * x, -x])
    np.testing.assert_allclose(vmap(f, in_axes=(None, 0))(w, xs),
                               [written_out(w, row) for row in xs], rtol=1e-13)
    tangent = np.ones_like(x)
    slope = (written_out(w, x + 1e-6 * tangent) - written_out(w, x - 1e-6 * tangent)) / 2e-6
    assert jvp(lambda v: f(w, v), (x,), (tangent,))[1] == pytest.approx(slope, rel=1e-6)


def _breaks(w, x):
    h = x
    for act in (np.tanh, relu):
        h = act(w @ h)
        if h[0] > 0:
            break
    return np.sum(h)


def _read_after(w, x):
    h = x
    for act in (np.tanh, relu):
        h = act(w @ h)
    return np.sum(act(h))


@pytest.mark.parametrize("f, line, message", [
    (_breaks, "break", "break and continue are not supported in a loop over functions"),
    (_read_after, "for act in (np.tanh, relu):", "is assigned in the loop or read after it"),
], ids=["break", "read-after"])
def test_a_loop_whose_unrolling_changes_its_meaning_is_refused(f, line, message, point):
    with pytest.raises(TransformError) as info:
        grad(f)(*point)
    assert message in info.value.message
    assert info.value.filename == __file__ and info.value.line.strip() == line


# ---------------------------------------------------------------- names and dicts

def bound_to_a_name(w, x):
    act = np.tanh
    return np.sum(act(w @ x)) + np.sum(act(x))


def chosen_at_run_time(w, x, use_relu=True):
    act = relu if use_relu else np.tanh
    return np.sum(act(w @ x) ** 2)


def read_from_a_dict(w, x):
    return np.sum(ACT["tanh"](w @ x)) + np.sum(ACT["tanh"](x))


def read_with_a_key(w, x, name="tanh"):
    return np.sum(ACT[name](w @ x)) + np.sum(np.tanh(x))


def scaled(x):
    return x * CONFIG["scale"] + CONFIG["shift"]


def _tanh_model(w, x):
    return np.sum(np.tanh(w @ x)) + np.sum(np.tanh(x))


@pytest.mark.parametrize("f", [bound_to_a_name, read_from_a_dict], ids=lambda f: f.__name__)
def test_a_function_in_a_local_name_or_a_dict(f, point):
    w, x = point
    want = central_differences(_tanh_model, (w, x))
    np.testing.assert_allclose(grad(f)(w, x), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jit(grad(f))(w, x), want, rtol=1e-6, atol=1e-9)
    assert jit(f)(w, x) == pytest.approx(_tanh_model(w, x), rel=1e-13)


@pytest.mark.parametrize("use_relu", [True, False])
def test_a_function_chosen_at_run_time_is_chosen_at_each_call(use_relu, point):
    w, x = point
    act = relu if use_relu else np.tanh

    def plain(w):
        return np.sum(act(w @ x) ** 2)

    want = central_differences(plain, (w,))
    np.testing.assert_allclose(grad(chosen_at_run_time)(w, x, use_relu), want,
                               rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jit(grad(chosen_at_run_time))(w, x, use_relu), want,
                               rtol=1e-6, atol=1e-9)
    xs = np.stack([x, -x])
    np.testing.assert_allclose(
        vmap(chosen_at_run_time, in_axes=(None, 0, None))(w, xs, use_relu),
        [chosen_at_run_time(w, row, use_relu) for row in xs], rtol=1e-13)


def test_a_dict_key_made_static_selects_the_function(point):
    w, x = point
    for key, act in (("tanh", np.tanh), ("relu", relu)):
        want = np.sum(act(w @ x)) + np.sum(np.tanh(x))
        assert jit(read_with_a_key, static_argnums=2)(w, x, key) == \
            pytest.approx(want, rel=1e-13)


def test_a_dict_key_known_only_at_run_time_is_refused_with_a_hint(point):
    with pytest.raises(TransformError) as info:
        grad(read_with_a_key)(*point)
    assert "static_argnums" in info.value.hint
    assert info.value.line.strip() == "return np.sum(ACT[name](w @ x)) + np.sum(np.tanh(x))"


def test_settings_read_from_a_dict_follow_its_changes_as_globals_do():
    x = np.array([1.5, -0.5])
    try:
        assert jit(scaled)(x) == pytest.approx(x * 2.0 - 1)
        transformed = grad(lambda v: np.sum(scaled(v) ** 2))
        np.testing.assert_allclose(transformed(x), 2 * (x * 2.0 - 1) * 2.0)
        compiled = jit(scaled)
        compiled(x)
        CONFIG["scale"] = 3.0
        # grad reads the dict as it is at each call; a jit specialization keeps the value
        # it compiled with, as for a global (README), and a new jit reads the new one
        np.testing.assert_allclose(transformed(x), 2 * (x * 3.0 - 1) * 3.0)
        np.testing.assert_allclose(compiled(x), x * 2.0 - 1)
        np.testing.assert_allclose(jit(scaled)(x), x * 3.0 - 1)
    finally:
        CONFIG["scale"] = 2.0


WEIGHTS = {"W": np.array([[2.0, 0.5], [-1.0, 1.0]]), "lr": 0.1}


def weighted(x):
    return np.sum(np.sin(WEIGHTS["W"] @ x)) * WEIGHTS["lr"]


def test_an_array_read_from_a_dict_is_read_at_each_call_under_jit_as_a_global_array_is():
    x = np.array([0.3, -0.7])
    W = WEIGHTS["W"]
    try:
        compiled = jit(grad(weighted))
        np.testing.assert_allclose(compiled(x), grad(weighted)(x), rtol=1e-12)
        np.testing.assert_allclose(compiled(x), 0.1 * W.T @ np.cos(W @ x), rtol=1e-12)
        WEIGHTS["W"] = 3.0 * W                  # a hidden argument: the next call sees it
        np.testing.assert_allclose(compiled(x), 0.1 * 3.0 * W.T @ np.cos(3.0 * W @ x),
                                   rtol=1e-12)
        np.testing.assert_allclose(grad(weighted)(x), compiled(x), rtol=1e-12)
    finally:
        WEIGHTS["W"] = W


COUNTS = {"calls": 0.0}


def counts_its_calls(x):
    COUNTS["calls"] = COUNTS["calls"] + 1.0
    return x * COUNTS["calls"]


def test_a_dict_the_function_writes_is_read_at_each_read():
    COUNTS["calls"] = 0.0
    assert grad(counts_its_calls)(2.0) == pytest.approx(1.0)
    assert grad(counts_its_calls)(2.0) == pytest.approx(2.0)
