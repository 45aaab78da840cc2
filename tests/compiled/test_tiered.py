"""Tiered execution (`jit(f, tiered=True)`, `transformer.tiered`): a new specialization's
first calls run the generated NumPy source while another process compiles it, then the
machine code takes over. Oracles: NumPy's own result, the analytic derivative, and the
same function compiled without tiering (errors must match it exactly)."""
import sys

import numpy as np
import pytest

from transformer import TransformError, grad, jit, tiered
from transformer.tiered import TieredFunction

SCALE = np.array([1.0, 2.0, 3.0])


def energy(x):
    return np.sum(np.tanh(x) * SCALE)


def entry(jitted):
    """The function the jitted's only specialization calls now."""
    (function, _, _), = jitted._specs.values()
    return function


def test_first_call_runs_numpy_then_the_machine_code_gives_the_same_gradient():
    g = jit(grad(energy), tiered=True)
    x = np.array([0.3, -1.2, 2.0])
    expected = (1.0 - np.tanh(x) ** 2) * SCALE
    first = g(x)                                 # the NumPy tier
    tier = entry(g)
    assert isinstance(tier, TieredFunction) and not tier.switched
    np.testing.assert_allclose(first, expected, rtol=1e-14)
    tier.wait()
    np.testing.assert_allclose(g(x), expected, rtol=1e-14)
    assert not isinstance(entry(g), TieredFunction)      # later calls skip the check
    # the machine code is in the disk cache now: a new jit of it is not tiered again
    again = jit(grad(energy), tiered=True)
    np.testing.assert_allclose(again(x), expected, rtol=1e-14)
    assert not isinstance(entry(again), TieredFunction)


def test_environment_switch_turns_it_on_and_the_option_wins(monkeypatch):
    monkeypatch.setenv(tiered.ENVIRONMENT_SWITCH, "1")
    assert tiered.enabled(None) and not tiered.enabled(False)
    monkeypatch.setenv(tiered.ENVIRONMENT_SWITCH, "0")
    assert not tiered.enabled(None) and tiered.enabled(True)
    with pytest.raises(ValueError, match="cpu backend"):
        jit(energy, backend="cuda", tiered=True)


def _write_then_index(x, i):
    x[0] = 100.0
    return x[i] * 2.0


@pytest.mark.slow
def test_an_error_in_the_numpy_tier_is_the_compiled_codes_error_with_arguments_restored():
    plain, tiered_ = jit(_write_then_index), jit(_write_then_index, tiered=True)
    with pytest.raises(IndexError) as expected:
        plain(np.arange(3.0), 7)
    x = np.arange(3.0)
    with pytest.raises(IndexError) as got:
        tiered_(x, 7)
    assert str(got.value) == str(expected.value)
    assert "test_tiered.py:" in str(got.value)               # located at the user's line
    np.testing.assert_array_equal(x, [100.0, 1.0, 2.0])       # written once, as by plain
    assert tiered_(np.arange(3.0), 1) == 2.0


@pytest.mark.slow
def test_a_rebound_captured_array_is_read_by_the_machine_code(monkeypatch):
    g = jit(grad(energy), tiered=True)
    x = np.array([0.5, 0.1, -0.4])
    g(x)
    assert isinstance(entry(g), TieredFunction)
    monkeypatch.setattr(sys.modules[__name__], "SCALE", np.array([-1.0, 5.0, 0.5]))
    np.testing.assert_allclose(g(x), (1.0 - np.tanh(x) ** 2) * np.array([-1.0, 5.0, 0.5]),
                               rtol=1e-14)


def _shifted(x):
    return x + 2


def test_integer_arguments_numpy_types_differently_are_not_tiered():
    f = jit(_shifted, tiered=True)
    out = f(np.array([1, 2, 254], dtype=np.uint8))
    assert out.dtype == np.int64 and list(out) == [3, 4, 256]     # the README's rule
    assert not isinstance(entry(f), TieredFunction)


def _contracted(a, b):
    c = a * b
    return np.tensordot(c, c, 1)         # NumPy has it; Numba does not


@pytest.mark.slow
def test_what_numba_refuses_is_raised_located_once_the_child_fails():
    f = jit(_contracted, tiered=True)
    assert f(np.ones(3), np.ones(3)) == 3.0          # the NumPy tier runs it
    tier = entry(f)
    assert isinstance(tier, TieredFunction)
    with pytest.raises(TransformError, match="Numba could not compile") as info:
        tier.wait()
        f(np.ones(3), np.ones(3))
    assert "np.tensordot" in info.value.line
