"""`for t in checkpoint_range(...)`: a `for` statement checkpointed in place. Gradients
equal those of the same loop over `range` and central differences (one carry, several
carries, constants, bounds (T) and (lo, hi)); the Revolve schedule really runs (the body
runs 2T + optimal_advances(T, s) times); what cannot be checkpointed is refused, located."""
import math  # noqa: F401  (generated programs use it)
import re

import numpy as np
import pytest
from gradcheck import assert_gradient_close, central_differences, smooth_differences, write_module
from hypothesis import HealthCheck, assume, event, given, note, settings
from hypothesis import strategies as st
from program_generator import WORK, programs

from transformer import (TransformError, checkpoint_range, debug, grad, jit, jvp, source,
                         value_and_grad, vmap)
from transformer.revolve import optimal_advances


def rnn(W, xs, h0):
    h, loss = h0, 0.0
    for t in checkpoint_range(xs.shape[0], snapshots=3):
        h = np.tanh(W @ h + xs[t])
        loss = loss + np.sum(h * h)
    return loss


def rnn_plain(W, xs, h0):
    h, loss = h0, 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + xs[t])
        loss = loss + np.sum(h * h)
    return loss


def decay(W, h, lo, hi):
    for t in checkpoint_range(lo, hi, snapshots=2, schedule="segments"):
        h = 0.9 * np.tanh(W @ h) + 0.01 * t
    return np.sum(h * h)


def decay_plain(W, h, lo, hi):
    for t in range(lo, hi):
        h = 0.9 * np.tanh(W @ h) + 0.01 * t
    return np.sum(h * h)


def inputs(steps, hidden=4, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(hidden, hidden)) * 0.5, rng.normal(size=(steps, hidden)),
            rng.normal(size=hidden) * 0.1)


def assert_same(got, expected):
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


def test_checkpoint_range_is_range_outside_transformations():
    assert list(checkpoint_range(4, snapshots=2)) == [0, 1, 2, 3]
    assert list(checkpoint_range(2, 7, snapshots=3, schedule="segments")) == [2, 3, 4, 5, 6]
    args = inputs(6)
    assert rnn(*args) == rnn_plain(*args)
    with pytest.raises(TransformError, match="snapshots must be an int >= 2"):
        checkpoint_range(4, snapshots=1)


def test_grad_of_a_checkpointed_for_equals_the_plain_loop_and_differences():
    for steps in (0, 1, 2, 7, 11):
        args = inputs(steps, seed=steps)
        got = grad(rnn, argnums=(0, 1, 2))(*args)
        assert_same(got, grad(rnn_plain, argnums=(0, 1, 2))(*args))
    for k in (0, 1, 2):
        assert_gradient_close(got[k], central_differences(rnn_plain, args, k), f"fd arg {k}")


@pytest.mark.slow
def test_lower_and_upper_bounds_and_the_segments_schedule():
    W, _, h0 = inputs(1)
    for lo, hi in ((0, 5), (3, 9), (4, 4), (6, 2)):
        value, got = value_and_grad(decay, argnums=(0, 1))(W, h0, lo, hi)
        assert value == pytest.approx(decay_plain(W, h0, lo, hi), rel=1e-12)
        assert_same(got, grad(decay_plain, argnums=(0, 1))(W, h0, lo, hi))
        for k in (0, 1):
            assert_gradient_close(got[k], central_differences(decay_plain, [W, h0, lo, hi], k),
                                  f"fd arg {k} over ({lo}, {hi})")


def two_layers(W, U, xs, h0, scale):
    h, g, total, n = h0, np.zeros_like(h0), 0.0, 0
    for t in checkpoint_range(1, xs.shape[0], snapshots=2):
        a = W @ h + xs[t]               # a temporary: assigned before read, not carried
        h = np.tanh(a)
        g = 0.5 * g + np.sin(U @ h) * scale
        total = total + np.sum(g) * n
        n = n + 1
    return total + np.sum(h * g) + n


def two_layers_plain(W, U, xs, h0, scale):
    h, g, total, n = h0, np.zeros_like(h0), 0.0, 0
    for t in range(1, xs.shape[0]):
        a = W @ h + xs[t]
        h = np.tanh(a)
        g = 0.5 * g + np.sin(U @ h) * scale
        total = total + np.sum(g) * n
        n = n + 1
    return total + np.sum(h * g) + n


def test_several_carries_array_scalar_and_integer_with_constants():
    W, xs, h0 = inputs(9, seed=3)
    U = np.random.default_rng(5).normal(size=(4, 4)) * 0.4
    args = (W, U, xs, h0, 1.5)
    assert two_layers(*args) == pytest.approx(two_layers_plain(*args), rel=1e-12)
    got = grad(two_layers, argnums=(0, 1, 2, 3, 4))(*args)
    assert_same(got, grad(two_layers_plain, argnums=(0, 1, 2, 3, 4))(*args))
    for k in range(5):
        assert_gradient_close(got[k], central_differences(two_layers_plain, list(args), k),
                              f"fd arg {k}")


def epochs(W, xs, h0):
    h = h0
    for e in range(3):
        for t in checkpoint_range(xs.shape[0], snapshots=2):
            h = np.tanh(W @ h + xs[t] * e)
        h = h * 0.5
    return np.sum(h)


def epochs_plain(W, xs, h0):
    h = h0
    for e in range(3):
        for t in range(xs.shape[0]):
            h = np.tanh(W @ h + xs[t] * e)
        h = h * 0.5
    return np.sum(h)


def nested(x, c):
    a = x
    for _ in checkpoint_range(0, 2, snapshots=2):
        a = np.tanh(a)
        for _ in checkpoint_range(0, 2, snapshots=2):
            a = np.tanh(a)
            c = np.tanh(a)          # the outer loop carries c: the inner one assigns it
    return a - c * c


@pytest.mark.slow
def test_a_checkpointed_loop_inside_another_loop():
    args = inputs(6, seed=2)
    assert_same(grad(epochs, argnums=(0, 2))(*args), grad(epochs_plain, argnums=(0, 2))(*args))
    got = grad(nested, argnums=(0, 1))(0.3, 0.7)
    for k in (0, 1):
        assert_gradient_close(got[k], central_differences(nested, [0.3, 0.7], k), f"fd {k}")


calls = []


def counted(W, xs, h0):
    h = h0
    for t in checkpoint_range(xs.shape[0], snapshots=3):
        debug.callback(calls.append, t)
        h = np.tanh(W @ h + xs[t])
    return np.sum(h)


@pytest.mark.slow
def test_the_revolve_schedule_runs_the_fewest_forward_steps():
    assert "counted_loop(0, " in source(grad(counted))
    for steps in (5, 11, 20):
        args = inputs(steps)
        calls.clear()
        grad(counted)(*args)
        # the primal run, the schedule's advances, and each step's vjp once
        assert len(calls) == 2 * steps + optimal_advances(steps, 3)
        assert sorted(set(int(t) for t in calls)) == list(range(steps))


@pytest.mark.slow
def test_jit_of_grad_and_value_and_grad():
    args = inputs(13)
    value, got = jit(value_and_grad(rnn, argnums=(0, 2)))(*args)
    assert value == pytest.approx(rnn_plain(*args), rel=1e-12)
    assert_same(got, grad(rnn_plain, argnums=(0, 2))(*args))
    assert jit(rnn)(*args) == pytest.approx(rnn_plain(*args), rel=1e-12)


@pytest.mark.slow
def test_vmap_of_grad_over_sequences_and_forward_mode():
    W, _, h0 = inputs(1)
    batch = np.random.default_rng(4).normal(size=(3, 7, 4))
    got = vmap(grad(rnn, argnums=(0, 1)), in_axes=(None, 0, None))(W, batch, h0)
    each = [grad(rnn_plain, argnums=(0, 1))(W, xs, h0) for xs in batch]
    assert_same(got, [np.stack([e[j] for e in each]) for j in (0, 1)])
    point, direction = (W, batch[0], h0), (W * 0.1, batch[1], np.ones_like(h0))
    assert_same(jvp(rnn, point, direction), jvp(rnn_plain, point, direction))


def comprehension(W, h0, w):
    h = h0
    for t in checkpoint_range(4, snapshots=2):
        scales = [w[t] * k for k in range(1, 3)]        # k: the comprehension's own
        h = np.tanh(W @ h) * scales[1]
    return np.sum(h)


def comprehension_plain(W, h0, w):
    h = h0
    for t in range(4):
        scales = [w[t] * k for k in range(1, 3)]
        h = np.tanh(W @ h) * scales[1]
    return np.sum(h)


def test_a_comprehension_variable_in_the_body_is_neither_carried_nor_constant():
    W, _, h0 = inputs(1)
    w = np.linspace(0.5, 1.5, 4)
    assert_same(grad(comprehension, argnums=(0, 1, 2))(W, h0, w),
                grad(comprehension_plain, argnums=(0, 1, 2))(W, h0, w))


def in_place(W, h0, w):
    h, total = h0, 0.0
    for t in checkpoint_range(5, snapshots=2):
        z = np.zeros(h.shape[0])
        z[0] = h[1] * 2.0               # into an array this iteration made
        h[1] += z[0] * w[t]             # into a carry: the step copies it first
        total += np.sum(h)              # a scalar carry
        h = np.tanh(W @ h)
    return total + np.sum(h)


def in_place_plain(W, h0, w):
    h, total = h0.copy(), 0.0
    for t in range(5):
        z = np.zeros(h.shape[0])
        z[0] = h[1] * 2.0
        h[1] += z[0] * w[t]
        total += np.sum(h)
        h = np.tanh(W @ h)
    return total + np.sum(h)


def test_writes_into_carries_give_the_plain_loops_values():
    W, _, h0 = inputs(1)
    w = np.linspace(0.5, 1.5, 5)
    kept = h0.copy()
    assert in_place(W, h0.copy(), w) == pytest.approx(in_place_plain(W, h0, w), rel=1e-12)
    got = grad(in_place, argnums=(0, 1, 2))(W, h0, w)
    assert_same(got, grad(in_place_plain, argnums=(0, 1, 2))(W, h0, w))
    for k in range(3):
        assert_gradient_close(got[k], central_differences(in_place_plain, [W, h0, w], k),
                              f"fd arg {k}")
    np.testing.assert_array_equal(h0, kept)     # the carry was copied, never the input


def shared_carry(h0):
    h, g = h0, h0                       # two carries holding one array
    for _ in checkpoint_range(3, snapshots=2):
        h += 1.0
        g = np.sin(g) + h
    return np.sum(g)


def test_a_write_into_a_carry_sharing_its_array_is_refused_at_run_time():
    with pytest.raises(ValueError) as info:
        grad(shared_carry)(np.ones(3))
    assert "'g' shares its array with 'h'" in str(info.value)
    assert f"{__file__}:{shared_carry.__code__.co_firstlineno + 3}" in str(info.value)


def writes_argument_copied(h, w):
    for t in checkpoint_range(3, snapshots=2):
        w = w.copy()                    # the hint for writes_argument below
        w[t] = h[t]
        h = np.sin(h) * w
    return np.sum(h)


def writes_argument_plain(h, w):
    w = w.copy()
    for t in range(3):
        w[t] = h[t]
        h = np.sin(h) * w
    return np.sum(h)


@pytest.mark.slow
def test_writes_into_carries_under_jit_and_the_shared_array_check_compiled():
    W, _, h0 = inputs(1)
    w = np.linspace(0.5, 1.5, 5)
    assert_same(jit(grad(in_place, argnums=(0, 1, 2)))(W, h0, w),
                grad(in_place_plain, argnums=(0, 1, 2))(W, h0, w))
    with pytest.raises(ValueError, match="shared with another name"):
        jit(grad(shared_carry))(np.ones(3))


def test_the_hint_for_a_write_into_a_constant_works():
    h, w = np.linspace(0.1, 0.6, 6), np.linspace(1.0, 2.0, 6)
    assert_same(grad(writes_argument_copied, argnums=(0, 1))(h, w),
                grad(writes_argument_plain, argnums=(0, 1))(h, w))


# ---------------------------------------------------------------- refusals


def with_break(h):
    for t in checkpoint_range(5, snapshots=2):
        h = h * 2.0
        if t > 2:
            break
    return np.sum(h)


def with_continue(h):
    for t in checkpoint_range(5, snapshots=2):
        if t > 2:
            continue
        h = h * 2.0
    return np.sum(h)


def with_return(h):
    for t in checkpoint_range(5, snapshots=2):
        h = h * 2.0
        if t > 2:
            return np.sum(h)
    return np.sum(h)


def writes_argument(h, w):
    for t in checkpoint_range(3, snapshots=2):
        w[t] = h[t]
        h = np.sin(h) * w
    return np.sum(h)


def writes_view_of_constant(h, w):
    for t in checkpoint_range(3, snapshots=2):
        row = w[1:]
        row[t] = h[t]
        h = np.sin(h) * w
    return np.sum(h)


def index_after(h):
    for t in checkpoint_range(3, snapshots=2):
        h = h * t
    return np.sum(h) * t


def stepped(h):
    for t in checkpoint_range(0, 6, 2, snapshots=2):
        h = h * t
    return np.sum(h)


def local_budget(h):
    s = 3
    for _ in checkpoint_range(6, snapshots=s):
        h = np.sin(h)
    return np.sum(h)


def no_initial_value(h):
    for t in checkpoint_range(6, snapshots=2):
        if t > 0:
            h = h + a  # noqa: F821 (refused: `a` has no value before the loop)
        a = np.sin(h)  # noqa: F841 (read in the next trip)
    return np.sum(h)


def unknown_option(h):
    for _ in checkpoint_range(6, snapshots=2, budget=3):
        h = np.sin(h)
    return np.sum(h)


def one_snapshot(h):
    for _ in checkpoint_range(6, snapshots=1):
        h = np.sin(h)
    return np.sum(h)


def nothing_carried(h):
    for _ in checkpoint_range(6, snapshots=2):
        a = np.sin(h)  # noqa: F841 (refused: nothing is carried)
    return np.sum(h)


REFUSED = [
    (with_break, "`break` inside a checkpointed loop", "        break", "np.where"),
    (with_continue, "`continue` inside a checkpointed loop", "continue", "np.where"),
    (with_return, "`return` inside a checkpointed loop", "return np.sum(h)", "np.where"),
    (writes_argument, "writes into 'w', which it does not carry", "w[t] = h[t]",
     "w = w.copy() before the write"),
    (writes_view_of_constant, "writes into 'w', which it does not carry", "row[t] = h[t]",
     "w = w.copy() before the write"),
    (index_after, "index 't' of a checkpointed loop is read after", "for t in", "upper - 1"),
    (stepped, "steps by 1", "checkpoint_range(0, 6, 2", "lower + step * t"),
    (local_budget, "snapshots must be known", "snapshots=s", "module-level constant"),
    (no_initial_value, "'a' is carried by this checkpointed loop but has no value before",
     "for t in", "give a its initial value before the loop"),
    (unknown_option, "no option 'budget'", "budget=3", "snapshots=s"),
    (one_snapshot, "checkpoint_range: snapshots must be an int >= 2", "snapshots=1",
     "snapshots=s"),
    (nothing_carried, "assigns nothing that is read after it", "for _ in", "range(...)"),
]


@pytest.mark.every_case                 # refused before anything compiles
@pytest.mark.parametrize("fun, message, line, hint", REFUSED,
                         ids=[r[0].__name__ for r in REFUSED])
def test_what_cannot_be_checkpointed_is_refused_located(fun, message, line, hint):
    with pytest.raises(TransformError) as info:
        grad(fun)(np.ones(6), np.ones(6)) if fun.__code__.co_argcount == 2 \
            else grad(fun)(np.ones(6))
    error = info.value
    assert message in error.message
    assert error.filename == __file__ and line in error.line, str(error)
    assert hint in error.hint


# ---------------------------------------------------------------- generated programs

@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    return tmp_path_factory.mktemp("checkpointed_programs")


def checkpointed(source):
    """`source` with each `for ... in range(...)` over checkpoint_range, two snapshots."""
    return re.sub(r"for (\w+) in range\((.*)\):", r"for \1 in checkpoint_range(\2, snapshots=2):",
                  source)


@pytest.mark.slow
@settings(max_examples=75, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(source=programs(), x=st.floats(-1.0, 1.0), seed=st.integers(0, 2 ** 16))
def test_generated_loops_checkpointed_get_the_gradient_or_a_located_refusal(directory, source,
                                                                             x, seed):
    assume("range(" in source)
    text = checkpointed(source)
    note(text)
    module = write_module(directory, "import math\n\nimport numpy as np\n\n"
                          "from transformer import checkpoint_range\n\n\n" + text, {})
    program = module.program
    v = np.random.default_rng(seed).uniform(-1.0, 1.0, size=WORK)
    expected = smooth_differences(program, (x, v), (0, 1))
    assume(expected is not None)
    try:
        got = grad(program, argnums=(0, 1))(x, v.copy())
    except TransformError as error:
        assert error.filename == module.__file__ and error.lineno is not None, str(error)
        assert "checkpoint" in error.message, str(error)
        event(f"refused: {error.message.split(':')[0][:40]}")
        return
    event("gradient compared")
    for g, e in zip(got, expected):
        assert_gradient_close(g, e, text)
