"""Tiered execution (`jit(f, tiered=True)`, `transformer.tiered`): a new specialization's
first calls run the generated NumPy source while another process compiles it, then the
machine code takes over. Oracles: NumPy's own result, the analytic derivative, and the
same function compiled without tiering (errors must match it exactly)."""
import gc
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
    tiered_ = jit(_write_then_index, tiered=True)
    assert tiered_(np.arange(3.0), 1) == 2.0             # the NumPy tier
    assert isinstance(entry(tiered_), TieredFunction) and not entry(tiered_).switched
    x = np.arange(3.0)
    with pytest.raises(IndexError) as got:
        tiered_(x, 7)                                    # run again by the machine code
    assert entry(tiered_) is not None and not isinstance(entry(tiered_), TieredFunction)
    with pytest.raises(IndexError) as expected:
        jit(_write_then_index)(np.arange(3.0), 7)
    assert str(got.value) == str(expected.value)
    assert "test_tiered.py:" in str(got.value)               # located at the user's line
    np.testing.assert_array_equal(x, [100.0, 1.0, 2.0])       # written once, as by plain


OFFSETS = np.array([1.0, 2.0, 3.0])


def shifted_energy(x):          # its own function: no other test fills its cache entry
    return np.sum(np.sin(x + OFFSETS))


@pytest.mark.slow
def test_a_rebound_captured_array_is_read_by_the_machine_code(monkeypatch):
    g = jit(grad(shifted_energy), tiered=True)
    x = np.array([0.5, 0.1, -0.4])
    g(x)
    assert isinstance(entry(g), TieredFunction)
    monkeypatch.setattr(sys.modules[__name__], "OFFSETS", np.array([-1.0, 5.0, 0.5]))
    np.testing.assert_allclose(g(x), np.cos(x + np.array([-1.0, 5.0, 0.5])), rtol=1e-14)


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


def _scaled(x, k):
    return x * k


def _shifted_by(x, k):
    return x + k


@pytest.mark.slow
def test_children_beyond_the_limit_wait_their_turn_and_a_dropped_function_stops_its_own(
        monkeypatch):
    from codegen import precompile
    monkeypatch.setattr(precompile, "MAX_CHILDREN", 1)
    f, dropped = jit(_scaled, tiered=True), jit(_shifted_by, tiered=True)
    kinds = [np.ones(2), np.ones(2, np.float32), np.ones((2, 2))]
    for x in kinds:                     # three specializations: three tiered entries
        np.testing.assert_array_equal(f(x, 3.0), x * 3.0)
    np.testing.assert_array_equal(dropped(np.ones(3), 1.0), [2.0, 2.0, 2.0])
    tiers = [function for function, _, _ in f._specs.values()]
    backgrounds = [tier._background for tier in tiers]
    children = [b for b in backgrounds if b._process is not None and b._process.poll() is None]
    assert len(children) <= 1 and any(b in precompile._queue for b in backgrounds)
    queued = entry(dropped)._background
    assert queued in precompile._queue
    del dropped
    gc.collect()                        # dropped before it ran: its child never starts
    assert queued not in precompile._queue and queued._process is None
    tiers[2].wait()                     # waiting starts a queued child at once
    np.testing.assert_array_equal(f(kinds[2], 2.0), kinds[2] * 2.0)
    # a second jit of the same function shares the child already compiling it
    again = jit(_scaled, tiered=True)
    again(kinds[1], 1.0)
    assert entry(again)._background is tiers[1]._background


def _scaled_by_constant(x):
    return 1.5 * x


@pytest.mark.slow
def test_a_dtype_the_tiers_disagree_on_is_said_at_the_switch(caplog):
    f = jit(_scaled_by_constant, tiered=True)
    x = np.ones(3, np.float32)
    assert f(x).dtype == np.float32                 # NumPy 2: the constant is weak
    with caplog.at_level("INFO", logger="secant"):
        entry(f).wait()
    assert f(x).dtype == np.float64                 # Numba: the constant is float64
    warned = [r for r in caplog.records if r.levelname == "WARNING"]
    assert warned and "returns float64 where its NumPy tier returned float32" in \
        warned[0].getMessage()
