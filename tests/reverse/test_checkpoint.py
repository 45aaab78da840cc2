"""checkpoint / remat and checkpoint_loop: values and gradients equal the un-checkpointed
function's (and central differences); bad input is refused, located."""
import numpy as np
import pytest

import transformer
from gradcheck import assert_gradient_close, central_differences
from transformer import (TransformError, checkpoint, checkpoint_loop, checkpoint_name,
                         checkpoint_policies, grad, jit, remat, value_and_grad, vjp, vmap)


def cell(h, x, W):
    a = checkpoint_name(W @ h + x, "pre")
    return np.tanh(a)


cell_ck = checkpoint(cell)


@remat
def cell_remat(h, x, W):
    return np.tanh(W @ h + x)


def run_plain(W, xs, h0):
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = cell(h, xs[t], W)
        total += np.sum(h * h)
    return total


def run_ck(W, xs, h0):
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = cell_ck(h, xs[t], W)
        total += np.sum(h * h)
    return total


def run_inline_ck(W, xs, h0):
    h = h0
    total = 0.0
    for t in range(xs.shape[0]):
        h = checkpoint(cell, policy=checkpoint_policies.nothing_saveable)(h, xs[t], W)
        total += np.sum(h * h)
    return total


def step(t, h, total, W, xs):
    h = np.tanh(W @ h + xs[t])
    return h, total + np.sum(h * h)


def run_loop(W, xs, h0):
    h, total = loop7(0, xs.shape[0], h0, 0.0, W, xs)
    return total


loop7 = checkpoint_loop(step, snapshots=3)


def inputs(steps=11, hidden=4, seed=0):
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(hidden, hidden)) * 0.5
    xs = rng.normal(size=(steps, hidden))
    h0 = rng.normal(size=hidden) * 0.1
    return W, xs, h0


def test_checkpointed_helper_gives_the_plain_gradient_and_finite_differences():
    args = inputs()
    expected = grad(run_plain, argnums=(0, 2))(*args)
    for fun in (run_ck, run_inline_ck):
        got = grad(fun, argnums=(0, 2))(*args)
        for g, e, k in zip(got, expected, (0, 2)):
            assert_gradient_close(g, e, f"{fun.__name__} arg {k}")
            assert_gradient_close(g, central_differences(run_plain, args, k), "fd")


@pytest.mark.slow
def test_checkpoint_loop_value_and_gradient_match_the_plain_loop():
    for steps in (0, 1, 2, 9, 10, 28):
        args = inputs(steps=steps, seed=steps)
        assert run_loop(*args) == pytest.approx(run_plain(*args), rel=1e-12)
        got = grad(run_loop, argnums=(0, 2))(*args)
        expected = grad(run_plain, argnums=(0, 2))(*args)
        for g, e in zip(got, expected):
            assert_gradient_close(g, e, f"T={steps}")


@pytest.mark.slow
def test_checkpointed_helper_under_jit_matches_the_python_backend():
    args = inputs(steps=23)
    got = jit(grad(run_ck, argnums=(0, 2)))(*args)
    expected = grad(run_plain, argnums=(0, 2))(*args)
    for g, e in zip(got, expected):
        assert_gradient_close(g, e, "jit")


@pytest.mark.slow
def test_checkpoint_loop_under_jit_matches_the_python_backend():
    args = inputs(steps=23)
    value, got = jit(value_and_grad(run_loop, argnums=(0, 2)))(*args)
    assert value == pytest.approx(run_plain(*args), rel=1e-12)
    expected = grad(run_plain, argnums=(0, 2))(*args)
    for g, e in zip(got, expected):
        assert_gradient_close(g, e, "jit")


@pytest.mark.slow
def test_whole_function_wrapped_like_jax_checkpoint():
    args = inputs(steps=5)
    wrapped = checkpoint(run_plain, policy=checkpoint_policies.nothing_saveable)
    assert_gradient_close(grad(wrapped)(*args), grad(run_plain)(*args), "grad")
    out, pull = vjp(wrapped, *args)
    assert out == pytest.approx(run_plain(*args))
    assert_gradient_close(pull(1.0)[0], central_differences(run_plain, args, 0), "vjp")


def test_forward_mode_passes_through_a_checkpointed_helper():
    args = inputs(steps=4)
    tangents = tuple(np.ones_like(a) for a in args)
    value, tangent = transformer.jvp(run_ck, args, tangents)
    expected_value, expected = transformer.jvp(run_plain, args, tangents)
    assert value == pytest.approx(expected_value)
    assert tangent == pytest.approx(expected)


def test_vmap_of_grad_through_a_checkpointed_helper():
    W, xs, h0 = inputs(steps=4)
    h0s = np.stack([h0, 2 * h0, -h0])
    got = vmap(grad(run_ck, argnums=2), in_axes=(None, None, 0))(W, xs, h0s)
    for k in range(3):
        assert_gradient_close(got[k], grad(run_plain, argnums=2)(W, xs, h0s[k]), f"ex {k}")


def test_every_policy_gives_the_same_gradient():
    args = inputs(steps=3)
    expected = grad(run_plain)(*args)
    policies = [None, checkpoint_policies.everything_saveable,
                checkpoint_policies.nothing_saveable,
                checkpoint_policies.save_only_these_names("other"),
                checkpoint_policies.save_any_names_but_these("pre")]
    for policy in policies:
        ck = checkpoint(run_plain, policy=policy)
        assert_gradient_close(grad(ck)(*args), expected, repr(policy))
    # "pre" is named in cell, which run_plain calls: its policy cannot save it
    with pytest.raises(TransformError, match="named in cell, which run_plain calls"):
        grad(checkpoint(run_plain, policy=checkpoint_policies.save_only_these_names("pre")))(
            *args)
    assert cell_remat(args[2], args[1][0], args[0]) == pytest.approx(
        cell(args[2], args[1][0], args[0]))


def writes_argument(h, x):
    h[0] = x[0]
    return np.sum(h * x)


def copies_then_writes(h, x):
    h = h.copy()
    h[0] = x[0]
    return np.sum(h * x)


def calls_writer(h, x):
    return checkpoint(writes_argument)(h, x)


def calls_copier(h, x):
    return checkpoint(copies_then_writes)(h, x)


def test_checkpoint_of_a_function_writing_into_its_argument_is_refused_located():
    h, x = np.ones(3), np.arange(3.0) + 1
    with pytest.raises(TransformError) as info:
        grad(calls_writer, argnums=1)(h, x)
    text = str(info.value)
    assert "writes into its argument 'h'" in text and "test_checkpoint.py" in text
    assert "h = h.copy()" in text
    # the hint works: the copy makes the write the function's own
    assert_gradient_close(grad(calls_copier, argnums=1)(h, x),
                          central_differences(copies_then_writes, [h, x], 1), "copy")


def uneven_returns(t, h, w):
    if t > 2:
        return h
    return h, w


def too_few_parameters(t):
    return t, t


def test_unknown_policy_and_bad_loop_budget_are_refused():
    with pytest.raises(TransformError, match="checkpoint takes a function"):
        checkpoint(3.0)
    with pytest.raises(TransformError, match="the same number at every return") as info:
        checkpoint_loop(uneven_returns, snapshots=4)
    assert "test_checkpoint.py" in str(info.value)
    with pytest.raises(TransformError, match="returns 2 carries but takes 1 parameters"):
        checkpoint_loop(too_few_parameters, snapshots=4)
    with pytest.raises(TransformError, match="unknown checkpoint policy"):
        checkpoint(cell, policy="dots")
    with pytest.raises(TransformError, match="names given to checkpoint_name"):
        checkpoint_policies.save_only_these_names(3)
    with pytest.raises(TransformError, match="snapshots must be an int >= 2"):
        checkpoint_loop(step, snapshots=1)
    with pytest.raises(TransformError, match="levels"):
        checkpoint_loop(step, snapshots=4, levels=0)


def names_a_list(x):
    pair = checkpoint_name([x, x], "pair")
    return np.sum(x) + pair[0][0]


def names_without_a_string(x):
    return np.sum(checkpoint_name(x, 3))


def test_checkpoint_name_in_a_checkpointed_function_is_checked_located():
    x = np.ones(3)
    with pytest.raises(TransformError, match="not a container or a string") as info:
        grad(checkpoint(names_a_list))(x)
    assert "test_checkpoint.py" in str(info.value) and "^" in str(info.value)
    with pytest.raises(TransformError, match="a string constant"):
        grad(checkpoint(names_without_a_string))(x)


def test_checkpoint_name_of_a_non_array_is_refused():
    with pytest.raises(TypeError, match="not an array or a number"):
        checkpoint_name([1.0, 2.0], "xs")
    with pytest.raises(TypeError, match="must be a string"):
        checkpoint_name(np.ones(2), 3)
    assert transformer.remat is transformer.checkpoint


@pytest.mark.slow
@pytest.mark.parametrize("snapshots,levels", [(2, 1), (2, 3), (4, 1), (5, 2), (40, 1)])
@pytest.mark.parametrize("steps", [1, 7, 16, 17, 63])
def test_checkpoint_loop_schedules_sweep(snapshots, levels, steps):
    loop = checkpoint_loop(step, snapshots=snapshots, levels=levels)

    def run(W, xs, h0):
        h, total = loop(0, xs.shape[0], h0, 0.0, W, xs)
        return total

    args = inputs(steps=steps, seed=steps)
    got = grad(run, argnums=(0, 2))(*args)
    for g, k in zip(got, (0, 2)):
        assert_gradient_close(g, central_differences(run_plain, args, k), f"arg {k}")


@pytest.mark.slow
def test_vmap_of_grad_through_checkpoint_loop():
    W, xs, h0 = inputs(steps=9)
    h0s = np.stack([h0, 2 * h0, -h0])
    got = vmap(grad(run_loop, argnums=2), in_axes=(None, None, 0))(W, xs, h0s)
    for k in range(3):
        assert_gradient_close(got[k], grad(run_plain, argnums=2)(W, xs, h0s[k]), f"ex {k}")


def test_everything_saveable_differentiates_as_the_plain_function():
    """Saving every residual is no checkpoint: the same generated gradient, body run once
    (no recomputing vjp); saving nothing generates the recomputing vjp."""
    from transformer.api_reverse import show_grad
    saving = checkpoint(run_plain, policy=checkpoint_policies.everything_saveable)
    recomputing = checkpoint(run_plain, policy=checkpoint_policies.nothing_saveable)
    assert show_grad(saving) == show_grad(run_plain)
    assert "run_plain_checkpointed" in show_grad(recomputing)
    assert "run_plain_checkpointed" not in show_grad(saving)
    args = inputs(steps=3)
    assert_gradient_close(grad(saving)(*args), central_differences(run_plain, args, 0), "fd")
