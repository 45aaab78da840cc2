"""`for act in (np.tanh, relu): h = act(W @ h)`: a loop over functions known before the run
is unrolled, under every transformation, and checked against finite differences of the
same model written out; a loop whose unrolling would change its meaning is refused at
its line."""
from __future__ import annotations

import numpy as np
import pytest
from gradcheck import central_differences

from transformer import TransformError, grad, jit, jvp, vmap


def relu(x):
    return np.maximum(x, 0.0)


ACTIVATIONS = (np.tanh, relu, np.sin)


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
