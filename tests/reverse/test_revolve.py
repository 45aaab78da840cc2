"""Binomial (Revolve) checkpointing: the schedule generator (every step's adjoint once,
in order, from the right state; at most `s` snapshots; the fewest forward steps, checked
against a dynamic programme) and checkpoint_loop(schedule="revolve") gradients, equal to
the plain loop's and to central differences; bad input refused, located."""
from functools import lru_cache

import numpy as np
import pytest

from gradcheck import assert_gradient_close, central_differences
from transformer import (TransformError, checkpoint_loop, grad, jit, jvp, value_and_grad,
                         vmap)
from transformer.revolve import optimal_advances, schedule


@lru_cache(maxsize=None)
def fewest_advances(steps, slots):
    """Dynamic programme over the first split: the oracle for the optimum."""
    if steps <= 1:
        return 0
    if slots == 1:
        return steps * (steps - 1) // 2
    return min(m + fewest_advances(steps - m, slots - 1) + fewest_advances(m, slots)
               for m in range(1, steps))


def replay(steps, slots):
    """Run the schedule on states named by their step: the reversed steps in order, the
    forward steps run, and the most slots in use; fails on any inconsistent action."""
    stored, current, reversed_steps, advances = {}, 0, [], 0
    for action in schedule(steps, slots):
        kind, a = action[0], action[1]
        if kind == "save":
            assert 0 <= a < slots and current is not None
            stored[a] = current
        elif kind == "restore":
            current = stored[a]
        elif kind == "advance":
            assert current == a and action[2] > a
            advances += action[2] - a
            current = action[2]
        else:
            assert current == a, f"step {a} reversed from the state of step {current}"
            reversed_steps.append(a)
            current = None
    return reversed_steps, advances, len(stored)


@pytest.mark.parametrize("slots", [1, 2, 3, 4, 6])
def test_schedule_reverses_each_step_once_with_the_fewest_forward_steps(slots):
    for steps in range(0, 70):
        reversed_steps, advances, used = replay(steps, slots)
        assert reversed_steps == list(range(steps - 1, -1, -1))
        assert used <= slots
        assert advances == fewest_advances(steps, slots) == optimal_advances(steps, slots)


def test_recomputation_grows_as_t_log_t_with_fixed_snapshots():
    steps, slots = 4096, 8
    _, advances, used = replay(steps, slots)
    assert used <= slots and advances == optimal_advances(steps, slots)
    assert advances <= steps * np.log2(steps)
    assert replay(steps, 1)[1] == steps * (steps - 1) // 2      # one slot: quadratic


def step(t, h, total, W, xs):
    h = np.tanh(W @ h + xs[t])
    return h, total + np.sum(h * h)


def decay(t, h, W):
    return 0.9 * np.tanh(W @ h) + 0.01 * t


revolve3 = checkpoint_loop(step, snapshots=3, schedule="revolve")
revolve_single = checkpoint_loop(decay, snapshots=2, schedule="revolve")


def run_revolve(W, xs, h0):
    h, total = revolve3(0, xs.shape[0], h0, 0.0, W, xs)
    return total + np.sum(revolve_single(0, 5, h, W))


def run_plain(W, xs, h0):
    h, total = h0, 0.0
    for t in range(xs.shape[0]):
        h, total = step(t, h, total, W, xs)
    for t in range(5):
        h = decay(t, h, W)
    return total + np.sum(h)


def inputs(steps, hidden=4, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(hidden, hidden)) * 0.5, rng.normal(size=(steps, hidden)),
            rng.normal(size=hidden) * 0.1)


@pytest.mark.slow
def test_revolve_gradient_equals_the_plain_loop():
    for steps in (0, 1, 2, 7, 11, 30):
        args = inputs(steps, seed=steps)
        assert run_revolve(*args) == pytest.approx(run_plain(*args), rel=1e-12)
        got = grad(run_revolve, argnums=(0, 2))(*args)
        expected = grad(run_plain, argnums=(0, 2))(*args)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)
    for g, k in zip(got, (0, 2)):
        assert_gradient_close(g, central_differences(run_plain, args, k), f"fd arg {k}")


@pytest.mark.slow
def test_revolve_under_jit_equals_the_plain_loop():
    args = inputs(23)
    value, got = jit(value_and_grad(run_revolve, argnums=(0, 2)))(*args)
    assert value == pytest.approx(run_plain(*args), rel=1e-12)
    for g, e in zip(got, grad(run_plain, argnums=(0, 2))(*args)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


@pytest.mark.slow
def test_revolve_under_vmap_of_grad_and_forward_mode():
    W, xs, h0 = inputs(9)
    h0s = np.stack([h0, 2 * h0, -h0])
    got = vmap(grad(run_revolve, argnums=2), in_axes=(None, None, 0))(W, xs, h0s)
    for k in range(3):
        np.testing.assert_allclose(got[k], grad(run_plain, argnums=2)(W, xs, h0s[k]),
                                   rtol=1e-12, atol=1e-14)
    tangents = tuple(np.ones_like(a) for a in (W, xs, h0))
    value, tangent = jvp(run_revolve, (W, xs, h0), tangents)
    expected_value, expected = jvp(run_plain, (W, xs, h0), tangents)
    assert value == pytest.approx(expected_value, rel=1e-12)
    assert tangent == pytest.approx(expected, rel=1e-12)


def counting(t, h, n, W):
    return np.tanh(W @ h) * 0.5 + n, n + 1


counting_loop = checkpoint_loop(counting, snapshots=2, schedule="revolve")


def run_counting(W, h0):
    h, n = counting_loop(0, 6, h0, 0, W)
    return np.sum(h) * n


def run_counting_plain(W, h0):
    h, n = h0, 0
    for _ in range(6):
        h = np.tanh(W @ h) * 0.5 + n
        n = n + 1
    return np.sum(h) * n


def test_an_integer_counter_carry_gets_no_cotangent_and_the_gradient_is_right():
    W, _, h0 = inputs(1)
    got = grad(run_counting)(W, h0)
    np.testing.assert_allclose(got, grad(run_counting_plain)(W, h0), rtol=1e-12)
    assert_gradient_close(got, central_differences(run_counting_plain, [W, h0], 0), "fd")


def writes_carry(t, h, w):
    h[0] = w[0] * t
    return np.tanh(h)


def run_writer(h, w):
    return np.sum(checkpoint_loop(writes_carry, snapshots=2, schedule="revolve")(0, 3, h, w))


def test_revolve_body_writing_into_its_argument_is_refused_located():
    with pytest.raises(TransformError) as info:
        grad(run_writer, argnums=1)(np.ones(3), np.ones(3))
    text = str(info.value)
    assert "writes into its argument 'h'" in text and "test_revolve.py" in text
    assert "h = h.copy()" in text
    with pytest.raises(TransformError, match="unknown schedule 'binomial'"):
        checkpoint_loop(step, snapshots=3, schedule="binomial")
