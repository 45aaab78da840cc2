"""A helper of the user's called in the middle of a function may change a dict or an
object the function reads (`bump()` does `CONFIG["scale"] += 1`): the reads after the
call see the new value, as in Python, under grad, vmap and jvp. A helper that only reads
the dict leaves its reads bound, so jit still compiles."""
from __future__ import annotations

import linecache

import numpy as np
import pytest

from transformer import TransformError, grad, jit, jvp, vmap
from transformer.helper_effects import may_change, may_set_attributes

CONFIG = {"scale": 2.0}


def bump():
    CONFIG["scale"] = CONFIG["scale"] + 1.0


def bump_through(d):
    d["scale"] += 1.0


def bump_passing_it_on():
    bump_through(CONFIG)


def bump_by_update():
    CONFIG.update(scale=CONFIG["scale"] + 1.0)


def bump_then_read(x):
    bump()
    return np.sum(x * CONFIG["scale"])


def bump_on_then_read(x):
    bump_passing_it_on()
    return np.sum(x * CONFIG["scale"])


def update_then_read(x):
    bump_by_update()
    return np.sum(x * CONFIG["scale"])


@pytest.fixture
def config():
    CONFIG["scale"] = 2.0
    yield CONFIG
    CONFIG["scale"] = 2.0


@pytest.mark.parametrize("f", [bump_then_read, bump_on_then_read, update_then_read],
                         ids=lambda f: f.__name__)
def test_a_dict_a_called_helper_changes_is_read_after_the_call(f, config):
    x = np.ones(2)
    # each call bumps the scale first: the derivative is the scale after the bump
    np.testing.assert_allclose(grad(f)(x), [3.0, 3.0])
    np.testing.assert_allclose(grad(f)(x), [4.0, 4.0])
    np.testing.assert_allclose(vmap(f)(np.ones((1, 2))), [10.0])
    np.testing.assert_allclose(jvp(f, (x,), (x,))[1], 12.0)
    assert config["scale"] == 6.0


def only_reads():
    return CONFIG["scale"] * 2.0


def reads_and_writes_its_own_array(n):
    out = np.zeros(n)
    for i in range(n):
        out[i] = CONFIG["scale"]
    return out


def reads_through_helpers(x):
    return np.sum(x * CONFIG["scale"]) + only_reads() * np.sum(
        reads_and_writes_its_own_array(2) * x)


def test_a_dict_helpers_only_read_stays_bound_and_compiles(config):
    x = np.array([0.5, -1.0])
    want = CONFIG["scale"] + only_reads() * reads_and_writes_its_own_array(2)
    assert not may_change(only_reads, CONFIG)
    assert not may_change(reads_and_writes_its_own_array, CONFIG)
    np.testing.assert_allclose(grad(reads_through_helpers)(x), want)
    np.testing.assert_allclose(jit(grad(reads_through_helpers))(x), want)


def test_which_helpers_may_change_a_dict():
    assert may_change(bump, CONFIG)
    assert may_change(bump_passing_it_on, CONFIG)       # handed on to a helper
    assert may_change(bump_by_update, CONFIG)
    assert not may_change(bump, {"scale": 2.0})          # another dict
    assert not may_change(np.sum, CONFIG)


class Counter:
    def __init__(self):
        self.n = 0

    def tick(self):
        self.n += 1


COUNTER = Counter()
TICK = COUNTER.tick                     # a bound method held in a global


def ticks():
    TICK()


def test_a_bound_method_held_in_a_global_is_followed():
    assert may_set_attributes(ticks)
    assert may_set_attributes(COUNTER.tick)
    assert not may_set_attributes(only_reads)


def bump_list():
    HISTORY.append(1.0)


HISTORY: list = []


def bump_list_then_scale(x):
    bump_list()
    return x * 2.0


@pytest.mark.parametrize("f, name", [(bump_then_read, "CONFIG"),
                                     (bump_on_then_read, "CONFIG"),
                                     (bump_list_then_scale, "HISTORY")],
                         ids=["dict", "dict-two-helpers-down", "list"])
def test_jit_refuses_a_helper_writing_a_global_container_at_its_line(f, name, config):
    """Compiled code cannot write a Python dict or list: the refusal is at a line of the
    user's that uses it, naming it, with a hint that works (Numba itself reports a list a
    helper appends to as a NameError, with no line)."""
    with pytest.raises(TransformError) as info:
        jit(f)(np.ones(2))
    err = info.value
    assert err.filename == __file__ and name in linecache.getline(__file__, err.lineno)
    assert name in str(err).splitlines()[0]
    assert "return new values rather than writing them" in str(err)
    want = f(np.ones(2))                # from the same state, as the hint says
    config["scale"], HISTORY[:] = 2.0, []
    np.testing.assert_allclose(jit(f, backend="python")(np.ones(2)), want)


def test_jit_names_the_helper_using_a_global_list():
    with pytest.raises(TransformError, match=r"the helper bump_list uses the global "
                                             r"'HISTORY', a list") as info:
        jit(bump_list_then_scale)(np.ones(2))
    assert info.value.lineno == bump_list.__code__.co_firstlineno + 1


def state_as_argument(x, state):
    n = state["n"] + 1.0
    return x * n, {"n": n}


def test_the_hinted_form_compiles():
    y, state = jit(state_as_argument)(np.ones(2), {"n": 1.0})
    np.testing.assert_allclose(y, [2.0, 2.0])
    assert state == {"n": 2.0}
