"""Named-value checkpoint policies: the values a policy saves are computed once, in the
forward sweep, and the reverse sweep reads them; gradients equal the plain ones, finite
differences and JAX's; a saved name that names no single value is refused, located."""
import numpy as np
import pytest

import transformer
from gradcheck import assert_gradient_close, central_differences
from transformer import (TransformError, checkpoint, checkpoint_name, grad, jit,
                         pure_callback, value_and_grad, vmap)
from transformer import checkpoint_policies as cp


def cell(h, x, W):
    pre = checkpoint_name(W @ h + x, "pre")
    act = checkpoint_name(np.tanh(pre), "act")
    return np.sin(act) * pre


only_pre = checkpoint(cell, policy=cp.save_only_these_names("pre"))
all_but_pre = checkpoint(cell, policy=cp.save_any_names_but_these("pre"))
both = checkpoint(cell, policy=cp.save_only_these_names("pre", "act"))


def loop_of(cell_fn):
    """The recurrence calling `cell_fn` at every step."""
    def run(W, xs, h0):
        h, total = h0, 0.0
        for t in range(xs.shape[0]):
            h = cell_fn(h, xs[t], W)
            total = total + np.sum(h ** 2)
        return total
    return run


run_plain, run_only_pre, run_all_but_pre = loop_of(cell), loop_of(only_pre), \
    loop_of(all_but_pre)


def one_call(W, xs, h0):
    return np.sum(both(h0, xs[0], W) ** 2)


def one_call_plain(W, xs, h0):
    return np.sum(cell(h0, xs[0], W) ** 2)


def inputs(steps=5, hidden=3, seed=1):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(hidden, hidden)) * 0.5, rng.normal(size=(steps, hidden)),
            rng.normal(size=hidden) * 0.1)


CASES = [(run_only_pre, run_plain), (run_all_but_pre, run_plain), (one_call, one_call_plain)]
IDS = ["only_pre_in_a_loop", "all_but_pre_in_a_loop", "both_in_one_call"]


@pytest.mark.parametrize("fun,plain", CASES, ids=IDS)
def test_named_policies_give_the_plain_gradient_and_finite_differences(fun, plain):
    args = inputs()
    got = grad(fun, argnums=(0, 2))(*args)
    expected = grad(plain, argnums=(0, 2))(*args)
    for g, e, k in zip(got, expected, (0, 2)):
        assert_gradient_close(g, e, f"arg {k}")
        assert_gradient_close(g, central_differences(plain, args, k), f"fd arg {k}")
    value, g = value_and_grad(fun)(*args)
    assert value == pytest.approx(plain(*args))
    assert_gradient_close(g, expected[0], "value_and_grad")


@pytest.mark.slow
@pytest.mark.parametrize("fun,plain", [
    pytest.param(run_only_pre, run_plain, id=IDS[0], marks=pytest.mark.slow),
    pytest.param(one_call, one_call_plain, id=IDS[2])])
def test_named_policies_under_jit_and_vmap_of_grad(fun, plain):
    W, xs, h0 = inputs()
    assert_gradient_close(jit(grad(fun, argnums=2))(W, xs, h0),
                          grad(plain, argnums=2)(W, xs, h0), "jit(grad)")
    h0s = np.stack([h0, 2 * h0, -h0])
    got = vmap(grad(fun, argnums=2), in_axes=(None, None, 0))(W, xs, h0s)
    for k in range(3):
        assert_gradient_close(got[k], grad(plain, argnums=2)(W, xs, h0s[k]), f"ex {k}")


calls = {"named": 0, "unnamed": 0}
spec = transformer.ShapeDtypeStruct((3,), np.float64)


def table_named(k):
    calls["named"] += 1
    return np.cos(k)


def table_unnamed(k):
    calls["unnamed"] += 1
    return np.sin(k)


def counted(x, k):
    a = checkpoint_name(np.sin(x) + pure_callback(table_named, spec, k), "a")
    b = np.cos(x) * pure_callback(table_unnamed, spec, k)
    return np.sum(np.tanh(a) * b)


saves_a = checkpoint(counted, policy=cp.save_only_these_names("a"))
saves_nothing = checkpoint(counted, policy=cp.nothing_saveable)


def loss_saving(x, k):
    return saves_a(x, k) ** 2


def loss_recomputing(x, k):
    return saves_nothing(x, k) ** 2


def loss_plain(x, k):
    return counted(x, k) ** 2


@pytest.mark.parametrize("wrap", [lambda f: f, pytest.param(jit, marks=pytest.mark.slow)],
                         ids=["python", "jit"])
def test_a_saved_value_is_not_computed_again_in_the_reverse_sweep(wrap):
    x, k = np.linspace(0.1, 1.0, 3), np.linspace(1.0, 2.0, 3)
    expected = grad(loss_plain)(x, k)
    saving, recomputing = wrap(grad(loss_saving)), wrap(grad(loss_recomputing))
    saving(x, k), recomputing(x, k)           # compiled, then counted
    calls.update(named=0, unnamed=0)
    assert_gradient_close(saving(x, k), expected, "saving")
    assert calls == {"named": 1, "unnamed": 2}      # only the unnamed one runs again
    calls.update(named=0, unnamed=0)
    assert_gradient_close(recomputing(x, k), expected, "recomputing")
    assert calls == {"named": 2, "unnamed": 2}


def test_the_reverse_sweep_reads_the_saved_value_in_the_generated_code():
    text = transformer.api_reverse.show_grad(one_call)
    bwd = text[text.index("def vjp_cell_checkpointed(h, x, W, __secant_saved_0"):]
    forward = bwd.split("# grad of")[0]          # the vjp's recomputation
    assert "act = __secant_saved_1" in forward and "pre = __secant_saved_0" in forward
    assert "np.tanh" not in forward              # tanh(pre) is not re-run, sin(act) is
    assert "np.sin(act)" in forward


def test_named_policies_match_jax_checkpoint():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    from jax.ad_checkpoint import checkpoint_name as jname
    jax.config.update("jax_enable_x64", True)

    def jcell(h, x, W):
        pre = jname(W @ h + x, "pre")
        act = jname(jnp.tanh(pre), "act")
        return jnp.sin(act) * pre

    W, xs, h0 = inputs()
    for policy, jpolicy in ((cp.save_only_these_names("pre"),
                             jax.checkpoint_policies.save_only_these_names("pre")),
                            (cp.save_any_names_but_these("pre"),
                             jax.checkpoint_policies.save_any_names_but_these("pre"))):
        jck = jax.checkpoint(jcell, policy=jpolicy)

        def jrun(W, xs, h0, jck=jck):
            h, total = h0, 0.0
            for t in range(xs.shape[0]):
                h = jck(h, xs[t], W)
                total += jnp.sum(h * h)
            return total

        expected = jax.grad(jrun, argnums=(0, 2))(W, xs, h0)
        fun = run_only_pre if policy.label == "save_only_these_names" else run_all_but_pre
        got = grad(fun, argnums=(0, 2))(W, xs, h0)
        for g, e in zip(got, expected):
            assert_gradient_close(g, np.asarray(e), repr(policy))


def names_in_a_loop(x):
    s = x
    for _ in range(3):
        s = checkpoint_name(np.sin(s), "s")
    return np.sum(s)


def names_inside_an_expression(x):
    return np.sum(np.cos(checkpoint_name(np.sin(x), "s")))


def names_after_a_return(x):
    if x[0] > 10.0:
        return np.sum(x)
    s = checkpoint_name(np.sin(x), "s")
    return np.sum(s)


def sine_step(s):
    s = checkpoint_name(np.sin(s), "s")
    return s


saved_step = checkpoint(sine_step, policy=cp.save_only_these_names("s"))


def loop_of_checkpointed_steps(x):
    s = x
    for _ in range(3):
        s = saved_step(s)
    return np.sum(s)


def plain_loop(x):
    s = x
    for _ in range(3):
        s = np.sin(s)
    return np.sum(s)


@pytest.mark.parametrize("fun,message", [
    (names_in_a_loop, "not the value of an assignment at the top level"),
    (names_inside_an_expression, "not the value of an assignment at the top level"),
    (names_after_a_return, "assigned after this return")])
def test_a_saved_name_that_names_no_single_value_is_refused_located(fun, message):
    x = np.linspace(0.1, 1.0, 3)
    with pytest.raises(TransformError, match=message) as info:
        grad(checkpoint(fun, policy=cp.save_only_these_names("s")))(x)
    assert "test_checkpoint_names.py" in str(info.value) and "^" in str(info.value)
    # not saved, the same names are fine (the body is recomputed)
    assert_gradient_close(grad(checkpoint(fun, policy=cp.save_only_these_names("t")))(x),
                          central_differences(fun, (x,), 0), "unsaved")


@pytest.mark.slow
def test_the_refusals_hint_works_a_checkpointed_step_in_the_loop_saves_per_trip():
    x = np.linspace(0.1, 1.0, 3)
    expected = grad(plain_loop)(x)
    assert_gradient_close(grad(loop_of_checkpointed_steps)(x), expected, "python")
    assert_gradient_close(jit(grad(loop_of_checkpointed_steps))(x), expected, "jit")


def test_a_name_saved_in_a_called_function_is_refused_and_the_hint_works():
    args = inputs()
    with pytest.raises(TransformError, match="checkpoint cell itself") as info:
        grad(checkpoint(run_plain, policy=cp.save_only_these_names("act")))(*args)
    assert "test_checkpoint_names.py" in str(info.value)
    # the hint: cell checkpointed with the policy, called in the loop
    assert_gradient_close(grad(run_only_pre)(*args), grad(run_plain)(*args), "hint")


def one_call_grad_sum(W, xs, h0):
    return np.sum(grad(one_call, argnums=2)(W, xs, h0))


def one_call_plain_grad_sum(W, xs, h0):
    return np.sum(grad(one_call_plain, argnums=2)(W, xs, h0))


@pytest.mark.slow
def test_second_derivatives_through_a_named_checkpoint_call():
    W, xs, h0 = inputs()
    expected = transformer.hessian(one_call_plain, argnums=2)(W, xs, h0)
    assert_gradient_close(transformer.hessian(one_call, argnums=2)(W, xs, h0), expected,
                          "hessian")
    assert_gradient_close(grad(one_call_grad_sum, argnums=2)(W, xs, h0),
                          grad(one_call_plain_grad_sum, argnums=2)(W, xs, h0), "grad of grad")


run_recomputing = loop_of(checkpoint(cell))


@pytest.mark.slow
def test_a_second_derivative_through_a_looped_named_checkpoint_is_refused_and_the_hint_works():
    W, xs, h0 = inputs(steps=3)
    with pytest.raises(TransformError, match="second derivative through cell") as info:
        transformer.hessian(run_only_pre, argnums=2)(W, xs, h0)
    assert "policy=None or nothing_saveable" in str(info.value)
    assert "test_checkpoint_names.py" in str(info.value)
    assert_gradient_close(transformer.hessian(run_recomputing, argnums=2)(W, xs, h0),
                          transformer.hessian(run_plain, argnums=2)(W, xs, h0), "the hint")


def calls_by_keyword(W, xs, h0):
    return np.sum(only_pre(h0, xs[0], W=W))


def test_a_named_checkpoint_called_with_keywords_is_refused_located():
    with pytest.raises(TransformError, match="pass every argument positionally") as info:
        grad(calls_by_keyword)(*inputs())
    assert "test_checkpoint_names.py" in str(info.value)
