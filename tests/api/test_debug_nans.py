"""`debug_nans`: the first NaN or infinity a function computes is reported as a
FloatingPointError at the user's line, in the primal code or in the reverse sweep, under
jit (cpu and python backends), grad and vmap; with the option off nothing is checked."""
import inspect

import numpy as np
import pytest

import transformer
from transformer import grad, jit, vmap

# NumPy warns of what the checks report (the python backend runs NumPy)
pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")


def log_of(x):
    y = np.log(x)
    return np.sum(y * 2.0)


def scaled_root(x):
    r = np.sqrt(x)
    return np.sum(0.0 * r)


def running_max_exp(x):
    m = -np.inf
    for i in range(x.shape[0]):
        m = max(m, x[i])
    e = np.exp(x * m)
    return np.sum(e)


def root_plus(x):
    return np.sum(scaled_root(x) + x)


jit_log = jit(log_of, debug_nans=True)
jit_grad_root = jit(grad(scaled_root), debug_nans=True)


def _where(fun, text: str) -> str:
    """`file:line:` of the line of `fun` that holds `text`."""
    lines, first = inspect.getsourcelines(fun)
    offset = next(i for i, line in enumerate(lines) if text in line)
    return f"{inspect.getsourcefile(fun)}:{first + offset}:"


def test_jit_reports_the_infinity_of_a_log_of_zero_at_the_users_line():
    with pytest.raises(FloatingPointError) as info:
        jit_log(np.array([1.0, 0.0]))
    message = str(info.value)
    assert message.startswith(_where(log_of, "np.log(x)"))
    assert "invalid value (inf)" in message
    assert "y = np.log(x)" in message and "^" in message and "hint:" in message


def test_the_reverse_sweep_of_sqrt_at_zero_is_reported_at_its_primal_line():
    # d/dx of 0 * sqrt(x) at 0 is 0 * (0.5 / 0) = 0 * inf: a NaN made by the reverse sweep
    with pytest.raises(FloatingPointError) as info:
        jit_grad_root(np.array([1.0, 0.0]))
    message = str(info.value)
    assert message.startswith(_where(scaled_root, "np.sqrt(x)"))
    assert "invalid value (nan)" in message
    assert "reverse sweep" in message and "derivative of line" in message
    np.testing.assert_array_equal(jit_grad_root(np.array([4.0, 1.0])), [0.0, 0.0])


def test_an_exp_overflow_is_reported_but_an_intended_minus_infinity_is_not():
    checked = jit(running_max_exp, backend="python", debug_nans=True)
    x = np.array([0.5, 1.0, -2.0])
    assert checked(x) == pytest.approx(np.sum(np.exp(x * x.max())))
    with pytest.raises(FloatingPointError, match=r"invalid value \(inf\)") as info:
        checked(np.array([1.0, 800.0]))
    assert str(info.value).startswith(_where(running_max_exp, "np.exp(x * m)"))


def test_vmap_of_grad_reports_the_reverse_sweep_of_the_bad_example():
    per_example = jit(vmap(grad(root_plus)), backend="python",
                      debug_nans=True)
    xs = np.array([[1.0, 4.0], [0.0, 9.0]])
    with pytest.raises(FloatingPointError, match="reverse sweep") as info:
        per_example(xs)
    assert str(info.value).startswith(_where(scaled_root, "np.sqrt(x)"))
    fine = per_example(xs + 1.0)
    np.testing.assert_allclose(fine, np.ones_like(xs))


def test_a_nan_free_function_gives_no_report_and_the_same_values():
    x = np.array([0.5, 2.0, 3.0])
    assert jit_log(x) == pytest.approx(2.0 * np.sum(np.log(x)))


def test_without_the_option_nothing_is_checked_and_the_nan_comes_back(monkeypatch):
    monkeypatch.delenv("SECANT_DEBUG_NANS", raising=False)
    plain = jit(grad(scaled_root), backend="python")
    assert np.isnan(plain(np.array([0.0]))[0])
    assert "finite_check" not in plain.source()
    assert "finite_check" in jit(grad(scaled_root), backend="python",
                                 debug_nans=True).source()


def test_the_environment_switch_and_config_turn_checks_on_for_plain_transforms(monkeypatch):
    monkeypatch.setenv("SECANT_DEBUG_NANS", "1")
    with pytest.raises(FloatingPointError, match="reverse sweep"):
        grad(scaled_root)(np.array([0.0]))
    monkeypatch.setenv("SECANT_DEBUG_NANS", "0")
    assert np.isnan(grad(scaled_root)(np.array([0.0]))[0])
    monkeypatch.setattr(transformer.config, "debug_nans", None)
    transformer.config.update("jax_debug_nans", True)
    with pytest.raises(FloatingPointError, match=r"invalid value \(inf\)"):
        log_of_again = grad(log_of)
        log_of_again(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="jax_debug_nans"):
        transformer.config.update("jax_debug_infs", True)


def test_cuda_refuses_the_option_with_a_reason():
    with pytest.raises(ValueError, match="debug_nans is not supported on backend='cuda'"):
        jit(log_of, backend="cuda", debug_nans=True)


def host_log(a):
    return np.log(a)


PAIR = transformer.ShapeDtypeStruct((2,), np.float64)


def through_a_callback(x):
    y = transformer.pure_callback(host_log, PAIR, x)
    return np.sum(y)


def test_a_callbacks_non_finite_result_is_reported_at_the_call():
    checked = jit(through_a_callback, backend="python", debug_nans=True)
    with pytest.raises(FloatingPointError, match=r"invalid value \(inf\)") as info:
        checked(np.array([1.0, 0.0]))
    assert str(info.value).startswith(_where(through_a_callback, "pure_callback("))
