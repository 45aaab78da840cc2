"""Tiered execution (`jit(f, tiered=True)`, `transformer.tiered`): a new specialization's
first calls run the generated NumPy source while another process compiles it, then the
machine code takes over, cutting over a call still running (`transformer.cutover`).
Oracles: NumPy's own result, the analytic derivative, exact counts of loop trips, and the
same function compiled without tiering (errors must match it exactly)."""
import gc
import sys
import threading

import numba
import numpy as np
import pytest

from codegen import precompile

from transformer import TransformError, cutover, debug, grad, jit, tiered
from transformer.tiered import TieredFunction

SCALE = np.array([1.0, 2.0, 3.0])


def energy(x):
    return np.sum(np.tanh(x) * SCALE)


def entry(jitted):
    """The function the jitted's only specialization calls now."""
    (function, _, _), = jitted._specs.values()
    return function


@pytest.mark.slow
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
    monkeypatch.setattr(precompile, "MAX_CHILDREN", 1)
    f, dropped = jit(_scaled, tiered=True), jit(_shifted_by, tiered=True)
    kinds = [np.ones(2), np.ones(2, np.float32), np.ones((2, 2))]
    for x in kinds:                     # three specializations: three tiered entries
        np.testing.assert_array_equal(f(x, 3.0), x * 3.0)
    tiers = [function for function, _, _ in f._specs.values()]
    # a second jit of the same function shares the child compiling it (asked at once: a
    # child that has finished leaves the code in the cache, and nothing is tiered then)
    again = jit(_scaled, tiered=True)
    again(kinds[1], 1.0)
    assert entry(again)._background is tiers[1]._background
    np.testing.assert_array_equal(dropped(np.ones(3), 1.0), [2.0, 2.0, 2.0])
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


# ---- a call that outlasts the compile is cut over to the machine code -------------------
# Each function here is loop-heavy: its NumPy tier would run far longer than the child's
# compile (tens of seconds against a few), so the first call must be cut over to finish.

LONG = 10 ** 7          # loop trips of the first call: ~13 s in the NumPy tier


def _relaxed(x, n):             # its own function: no other test fills its cache entry
    v = x * 0.0
    count = 0.0
    for _ in range(n):
        v = v * 0.5 + x         # reaches 2 x exactly, then stays there
        count += 1.0
    return v + count


def cut_over_records(caplog) -> list:
    return [r for r in caplog.records if "was cut over" in r.getMessage()]


@pytest.mark.slow
def test_a_first_call_outlasting_the_compile_is_cut_over_to_the_machine_code(caplog):
    f = jit(_relaxed, tiered=True)
    x = np.array([1.0, -2.0, 3.0])
    with caplog.at_level("INFO", logger="secant"):
        got = f(x, LONG)
    np.testing.assert_array_equal(got, 2.0 * x + LONG)    # every trip, counted exactly
    assert len(cut_over_records(caplog)) == 1               # not the NumPy tier's result
    assert not isinstance(entry(f), TieredFunction)         # later calls: machine code
    np.testing.assert_array_equal(jit(_relaxed)(x, LONG), got)


def _relaxed_into(out, x, n):
    v = x * 0.0
    for i in range(n):
        v = v * 0.5 + x
        out[i % out.shape[0]] += 1.0
    return v


@pytest.mark.slow
def test_an_argument_written_in_place_is_written_once_when_cut_over(caplog):
    f = jit(_relaxed_into, tiered=True)
    out, x = np.array([0.5, 1.5, 2.5, 3.5]), np.array([1.0, -2.0])
    before = out.copy()
    with caplog.at_level("INFO", logger="secant"):
        np.testing.assert_array_equal(f(out, x, LONG + 3), 2.0 * x)
    assert len(cut_over_records(caplog)) == 1
    np.testing.assert_array_equal(out, before + LONG // 4 + np.array([1, 1, 1, 0]))
    plain = before.copy()
    jit(_relaxed_into)(plain, x, LONG + 3)
    np.testing.assert_array_equal(out, plain)


CALLED = []


def _report_then_wait_for_the_child(value):
    CALLED.append(value)
    for background in list(precompile._shared.values()):
        background.wait()       # the call outlasts the compile, inside the callback


def _reported(x, n):
    debug.callback(_report_then_wait_for_the_child, x[0])
    total = 0.0
    for i in range(n):          # still running when the compile has ended
        total += x[i % x.shape[0]]
    return total


@pytest.mark.slow
def test_a_call_with_a_host_callback_is_never_cut_over_so_the_callback_runs_once(caplog):
    f = jit(_reported, tiered=True)
    x = np.array([4.0, 5.0])
    with caplog.at_level("INFO", logger="secant"):
        assert f(x, 10 ** 6) == 4.5e6
    assert CALLED == [4.0] and not cut_over_records(caplog)     # it ran to its end
    tier = entry(f)         # and still runs the NumPy tier, though its compile has ended
    assert isinstance(tier, TieredFunction) and tier._background.finished()
    assert f(x, 10) == 45.0 and CALLED == [4.0, 4.0]


def _printed(x):
    print("secant test: x0 =", x[0])
    return x * 2.0


def _debug_printed(x):
    debug.print("secant test: x0 = {}", x[0])
    return x * 2.0


@numba.njit
def _printing_kernel(v):
    print("secant test: x0 =", v)
    return v


def _calls_a_printing_kernel(x):
    return x * _printing_kernel(x[0]) * 2.0


def _quiet(x):
    return x * 2.0


def test_only_functions_without_prints_or_callbacks_can_be_cut_over(capsys):
    cuttable = {}
    for function in (_printed, _debug_printed, _calls_a_printing_kernel, _quiet):
        f = jit(function, tiered=True)
        np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])
        cuttable[function.__name__] = entry(f)._watch is not None
    assert cuttable == {"_printed": False, "_debug_printed": False,
                        "_calls_a_printing_kernel": False, "_quiet": True}
    assert capsys.readouterr().out.count("secant test: x0 = 1.0") == 3


SHORT = 3000            # loop trips of each call of the race: ~2 ms in the NumPy tier


def _summed_cyclically(x, n):   # its own function: no other test fills its cache entry
    total = 0.0
    for i in range(n):
        total += x[i % x.shape[0]]
    return total


@pytest.mark.slow
def test_many_short_calls_spanning_the_switch_are_all_right_and_none_raises():
    f = jit(_summed_cyclically, tiered=True)
    x = np.array([1.0, -2.0, 3.0, 7.0])
    calls = 0

    def call_and_check():   # integer values: every sum is exact in both tiers
        n = SHORT + calls % 5
        assert f(x, n) == n // 4 * x.sum() + x[:n % 4].sum()

    while calls < 200 or isinstance(entry(f), TieredFunction):
        call_and_check()
        calls += 1
    for _ in range(200):        # a Cutover left pending would be raised by now
        call_and_check()
        calls += 1


# ---- the cut-over mechanism on its own (`transformer.cutover`) ---------------------------

def _spin(n, progress, fire=None):
    """n trips of a Python loop, recording each; sets `fire` first."""
    if fire is not None:
        fire.set()
    for i in range(n):
        progress[0] = i + 1
    return n


FOREVER = 10 ** 8       # trips that take seconds: a call that reaches the end was not cut


@pytest.fixture
def frequent_thread_switches():
    """Threads take turns every 10 us: a cut over lands anywhere in the call."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(interval)


def test_a_watched_call_is_cut_over_or_completes_and_no_exception_leaks(
        frequent_thread_switches):
    rng = np.random.default_rng(0)
    seen = set()
    for _ in range(300):
        fire = threading.Event()
        watch = cutover.Watch(fire.wait, lambda: True)
        progress = [0]
        timer = threading.Timer(rng.uniform(0.0, 0.002), fire.set)  # around the call's end
        timer.start()
        result = watch.run(_spin, 10000, progress)
        timer.join()
        assert sum(range(10000)) == 49995000     # a stray Cutover would surface by now
        if result is cutover.CUT_OVER:
            seen.add("cut" if progress[0] < 10000 else "cut after the end")
        else:
            assert result == 10000 and progress[0] == 10000
            seen.add("completed")
    assert {"cut", "completed"} <= seen


def test_a_cutover_sent_to_an_enclosing_call_passes_through_a_nested_one():
    outer_fire, inner_fire = threading.Event(), threading.Event()
    outer = cutover.Watch(outer_fire.wait, lambda: True)
    inner = cutover.Watch(inner_fire.wait, lambda: True)
    progress = [0]
    assert outer.run(inner.run, _spin, FOREVER, progress, outer_fire) is cutover.CUT_OVER
    assert 0 < progress[0] < FOREVER
    # and one sent to the nested call stays there: the enclosing call goes on
    progress, never = [0], threading.Event()
    outer = cutover.Watch(never.wait, lambda: True)
    nested = outer.run(lambda: (inner.run(_spin, FOREVER, progress, inner_fire), "went on"))
    assert nested == (cutover.CUT_OVER, "went on") and progress[0] < FOREVER
    never.set()                 # its watcher stops


def test_calls_in_several_threads_are_all_cut_over_and_later_ones_at_once():
    fire = threading.Event()
    watch = cutover.Watch(fire.wait, lambda: True)
    results = [None] * 3

    def call(k):
        results[k] = watch.run(_spin, FOREVER, [0])

    threads = [threading.Thread(target=call, args=(k,)) for k in range(3)]
    for thread in threads:
        thread.start()
    fire.set()
    for thread in threads:
        thread.join()
    assert results == [cutover.CUT_OVER] * 3
    assert watch.cut and watch.run(_spin, 10, [0]) is cutover.CUT_OVER  # later: at once


def test_a_call_is_not_cut_over_when_the_settled_condition_is_not_wanted():
    fire = threading.Event()
    watch = cutover.Watch(fire.wait, lambda: False)
    progress = [0]
    assert watch.run(_spin, 2 * 10 ** 6, progress, fire) == 2 * 10 ** 6
    assert watch.run(_spin, 10, [0]) == 10 and not watch.cut


def _raises_value_error():
    raise ValueError("from the function")


def test_a_watched_calls_own_error_propagates():
    never = threading.Event()
    watch = cutover.Watch(never.wait, lambda: True)
    with pytest.raises(ValueError, match="from the function"):
        watch.run(_raises_value_error)
    never.set()
