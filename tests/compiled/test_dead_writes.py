"""A write into an array read afterwards only through a name Numba does not know shares it
(`f = np.asarray(g)`, a tuple holding it) is kept under jit. Numba's dead-code elimination,
run again after an index check inlined into the function, dropped it and jit returned the
value as if nothing were written; so did a write through a tuple's item when Numba's alias
analysis met the write's block before the tuple's. Oracle: the plain NumPy run."""
from __future__ import annotations

import numpy as np
import pytest

from transformer import jit


def through_asarray(x, v):
    h = np.zeros(6) + x
    g = np.tanh(v) * 0.5
    f = np.asarray(g)
    i = 2
    g[i] = -0.6
    u = h.reshape(3, 2).T[0]          # an index check, inlined
    return np.sum(f * v) + u[0]


def through_a_tuple(x, v):
    h = np.zeros(6) + x
    g = np.tanh(v) * 0.5
    t = (g, x)
    t[0][2] = -0.6
    u = h.reshape(3, 2).T[0]
    return np.sum(g * v) + u[1]


def through_a_view_method(x, v):
    h = np.zeros(6) + x
    g = np.tanh(v) * 0.5
    f = g.view()
    M = np.reshape(h, (2, 3))
    t = (g, x)
    t[0][2] = np.tanh(-0.75)
    u = h.reshape(3, 2).T[0]
    return np.sum(f * v) * 0.125 + M[1, 2] + u[2]


def put(arr, i, e):
    arr[i] = e


def through_a_helper_in_a_branch(x, v, a):
    h = v.copy()
    u = h.reshape(3, 2).T[0]          # an index check, inlined
    lst = [x, h]
    if h[1] > 0.25:
        for _ in range(1):
            pass
    else:
        put(lst[1], 2, np.tanh(a[0]))   # its block comes before the tuple's in Numba's IR
    return np.sum(np.tanh(h)) + u[0]


def test_a_write_through_a_tuple_item_in_an_earlier_block_is_kept_under_jit():
    v = np.linspace(-1.0, 1.0, 6) * 0.2
    a = np.full(6, 0.7)
    assert jit(through_a_helper_in_a_branch)(0.3, v.copy(), a) == pytest.approx(
        through_a_helper_in_a_branch(0.3, v.copy(), a), rel=1e-13)


@pytest.mark.slow
@pytest.mark.parametrize("f", [through_asarray, through_a_tuple, through_a_view_method],
                         ids=lambda f: f.__name__)
def test_a_write_read_through_another_name_is_kept_under_jit(f):
    v = np.linspace(-1.0, 1.0, 6)
    assert jit(f)(0.3, v.copy()) == pytest.approx(f(0.3, v.copy()), rel=1e-13)


def test_the_rule_is_installed_once_and_keeps_one_already_there():
    from numba.core import ir, ir_utils

    from transformer.runtime import dead_writes
    installed = ir_utils.alias_analysis_extensions[ir.Assign]
    dead_writes.register()
    assert ir_utils.alias_analysis_extensions[ir.Assign] is installed
    seen = []
    try:
        ir_utils.alias_analysis_extensions[ir.Assign] = lambda *args: seen.append(args)
        dead_writes.register()
        chained = ir_utils.alias_analysis_extensions[ir.Assign]
        chained(ir.Assign(ir.Const(1, ir.Loc("f", 1)), ir.Var(None, "a", ir.Loc("f", 1)),
                          ir.Loc("f", 1)), (), None, None, {}, set())
        assert len(seen) == 1
    finally:
        ir_utils.alias_analysis_extensions[ir.Assign] = installed
