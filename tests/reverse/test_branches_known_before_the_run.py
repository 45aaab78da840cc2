"""Branches whose test is known before the run: `if 0.25 > 0.5:`, `if k > 3:` after
`k = 2`, `if 0.25 > LIMIT:` on a module global.

Numba prunes such a branch itself. A generated gradient binds the test's name in both
sweeps, so Numba prunes only after building SSA form, and keeps the phi nodes of the
names bound in the dead branch: with a loop in that branch and an early `return`
elsewhere, `jit(grad(f))` failed with Numba's "Type of variable 'a_times_w_item.3'
cannot be determined" (or "Unsupported assignment encountered: Undefined") about the
generated code, while `grad(f)` ran. `desugar` now folds these branches away before any
sweep mirrors them (`specialize.fold_constants`).
"""
import gast
import numpy as np
import pytest

import transformer
from gradcheck import assert_gradient_close, central_differences
from transformer import grad, jit
from transformer.frontend import parse
from transformer.specialize import fold_constants

LIMIT = 0.5


def loops_in_branches_known_false(x, v):
    w = v.copy()
    a = x
    b = v[0] * x
    k = 2
    c = 1
    for j in range(2):
        if 0.25 > 0.5:
            for i in range(0, 3):
                a = np.tanh(a * w[i % 3])
        elif k > 3:
            for i in range(0, 3):
                a = np.tanh(a + w[i % 3])
        elif c > 1.5:                    # `c` is rebound, but only after the loop
            for i in range(0, 3):
                a = np.tanh(a - w[i % 3])
        elif b > 0.1:
            return a + 2.0 * b + np.sum(w * w) - a
        b = np.tanh(b + a * w[j])
    c = np.tanh(b)
    if 0.25 > LIMIT:
        for i in range(0, 3):
            a = np.tanh(a * w[i % 3])
    else:
        return a + 2.0 * b - c * c + np.sum(w * w) + x * w[1]
    return a + 2.0 * b


@pytest.mark.slow
@pytest.mark.parametrize("x, v", [(0.3, np.array([0.1, 0.2, 0.3])),      # early return
                                  (-0.3, np.array([-0.1, 0.2, 0.3]))],    # the last one
                         ids=["early-return", "last-return"])
def test_compiled_grad_of_loops_in_branches_known_false_matches_finite_differences(x, v):
    f = loops_in_branches_known_false
    gx, gv = jit(grad(f, argnums=(0, 1)))(x, v)
    assert_gradient_close(gx, central_differences(f, [x, v], 0))
    assert_gradient_close(gv, central_differences(f, [x, v], 1))


def _tests(fn) -> list:
    return [sub.test for sub in gast.walk(fn.node) if isinstance(sub, (gast.If, gast.While))]


def test_the_gradient_keeps_no_branch_known_before_the_run():
    gradient = grad(loops_in_branches_known_false, argnums=(0, 1))
    tests = _tests(gradient.function)
    assert tests and not [t for t in tests if isinstance(t, gast.Constant)]
    source = transformer.source(gradient)
    assert "0.25 > 0.5" not in source and "k > 3" not in source and "LIMIT" not in source


def loop_rebinds_its_test(x):
    k = 2
    for _ in range(3):
        if k > 3:                  # k is 2 on the first trip only
            x = x * 2.0
        k = k + 1
    while LIMIT > 1.0:
        x = x + 1.0
    return x


def test_only_tests_known_before_the_run_are_folded():
    folded = fold_constants(parse(loop_rebinds_its_test))
    assert len(_tests(folded)) == 1                 # the `if`; the `while` never runs
    assert jit(loop_rebinds_its_test, backend="python")(1.0) == 2.0


def bound_only_in_a_dead_branch(x):
    if 0.25 > 0.5:
        t = x
    if x > 0.0:
        return x
    return t                       # UnboundLocalError in Python when reached


def test_a_name_bound_only_in_a_dead_branch_keeps_the_function_as_written():
    fn = parse(bound_only_in_a_dead_branch)
    assert fold_constants(fn) is fn
    with pytest.raises(UnboundLocalError):
        bound_only_in_a_dead_branch(-1.0)


def reads_a_global_flag(x):
    if LIMIT > 1.0:
        return x * x
    return 3.0 * x


def test_grad_follows_a_rebound_global_that_a_branch_was_folded_on():
    g = grad(reads_a_global_flag)
    assert g(2.0) == 3.0
    global LIMIT
    LIMIT = 2.0
    try:
        assert g(2.0) == 4.0
    finally:
        LIMIT = 0.5
