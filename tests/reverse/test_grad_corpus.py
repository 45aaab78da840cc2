"""Reverse-mode gradients of the whole corpus against finite differences.

Python backend: every differentiable corpus function, through `grad(f, argnums)` compared
with central differences computed here, through `value_and_grad`, and through the
exported `check_grads`. Compiled: groups of corpus functions summed into one function
whose `jit(grad(...))` is compiled once per group (few Numba compiles, NUMBA_OPT=0).
"""
import os

os.environ.setdefault("NUMBA_OPT", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from corpus import CASES, by_name  # noqa: E402
from gradcheck import (  # noqa: E402
    assert_gradient_close,
    central_differences,
    group_module,
    partial_module,
)

from transformer import grad, jit, value_and_grad  # noqa: E402
from transformer.test_util import check_grads  # noqa: E402

DIFFERENTIABLE = [c for c in CASES if c.differentiable]

# Known reverse-mode bugs (none at present), each named with its reason; strict xfails, so
# a fix shows up as XPASS and is noticed.
KNOWN: dict = {"grad": {}, "value_and_grad": {}, "check_grads": {}}
for _name, _reason in KNOWN["grad"].items():
    KNOWN["check_grads"].setdefault(_name, _reason)


def cases_for(test: str, cases=DIFFERENTIABLE):
    known = KNOWN.get(test, {})
    return [pytest.param(c, id=c.name, marks=pytest.mark.xfail(strict=True, reason=known[c.name]))
            if c.name in known else pytest.param(c, id=c.name) for c in cases]


def expected_gradients(case, args):
    return [central_differences(case.fn, args, k) for k in case.argnums]


def as_list(grads, argnums):
    return list(grads) if len(argnums) > 1 else [grads]


@pytest.mark.parametrize("case", cases_for("grad"))
def test_grad_matches_finite_differences(case):
    args = case.args()
    argnums = case.argnums if len(case.argnums) > 1 else case.argnums[0]
    got = as_list(grad(case.fn, argnums=argnums)(*args), case.argnums)
    for k, g, e in zip(case.argnums, got, expected_gradients(case, case.args())):
        what = f"{case.name} d/d{case.fn.__code__.co_varnames[k]}"
        assert isinstance(g, np.ndarray) == isinstance(args[k], np.ndarray), \
            f"{what}: gradient of a {type(args[k]).__name__} is a {type(g).__name__}"
        assert_gradient_close(g, e, what)
    for before, after in zip(case.args(), args):
        np.testing.assert_array_equal(after, before)


@pytest.mark.parametrize("case", cases_for("value_and_grad"))
def test_value_and_grad_returns_the_value(case):
    value, g = value_and_grad(case.fn, argnums=case.argnums)(*case.args())
    np.testing.assert_allclose(value, case.fn(*case.args()), rtol=1e-12, atol=1e-12)
    assert len(g) == len(case.argnums)
    for k, gk in zip(case.argnums, g):
        assert np.shape(gk) == np.shape(case.args()[k])


@pytest.mark.parametrize("case", cases_for("check_grads"))
@pytest.mark.slow
def test_check_grads(case, tmp_path):
    partial = partial_module(case, tmp_path)
    args = case.args()
    check_grads(partial, tuple(args[k] for k in case.argnums), order=1, modes=("rev",))


# ------------------------------------------------------------------ compiled with Numba
JIT_GROUPS = {
    "arithmetic": ["arith_polynomial", "arith_float_powers", "arith_negative_base_power",
                   "arith_unary_minus", "arith_abs", "arith_min_max", "arith_with_integer",
                   "math_exp_log", "math_two_argument", "tuple_swap_in_loop", "tuple_from_helper",
                   "tuple_fibonacci", "tuple_rotate", "call_helpers",
                   "call_keyword_argument", "call_numba_function"],
    "control_flow": ["branch_elif_chain", "branch_nested", "branch_boolean_operators",
                     "branch_conditional_expression", "loop_range_step",
                     "loop_range_negative_step", "loop_over_array", "loop_enumerate",
                     "loop_zip", "loop_triangular", "loop_recurrence", "while_data_dependent",
                     "while_true_break", "while_with_continue", "while_newton_sqrt",
                     "while_counter", "while_break_on_element", "return_from_while",
                     "break_inner_loop", "continue_nested", "break_and_continue",
                     "return_from_loop", "return_from_nested_loop", "return_multiple_branches",
                     "call_helper_with_branches", "call_helper_with_early_return"],
    "in_place": ["inplace_add_element", "inplace_two_dimensional", "inplace_slice_assign",
                 "inplace_overwrite_needed_value", "inplace_recurrence", "inplace_slice_add",
                 "inplace_swap_elements", "inplace_hand_matmul",
                 "inplace_in_while", "methods_copy", "call_helper_returning_array",
                 "alloc_arange"],
    "numpy": ["np_exp_log_family", "np_trigonometric", "np_misc_unary", "red_sum_axes",
              "red_logsumexp", "la_matrix_vector_forms", "idx_integer_array",
              "idx_boolean_mask", "idx_write_through_mask"],
    "programs": ["lj_energy_cutoff", "rnn_loss", "euler_ode", "bubble_sort_weighted",
                 "explicit_heat_equation", "piecewise_spline", "huber_loss", "rosenbrock",
                 "harmonic_oscillator_verlet", "gradient_descent_inner"],
    # forms Numba lacks, lowered (transformer.lowering): 2-D masks, np.inner, batched `@`,
    # squeeze without an axis, np.stack of a list, einsum as generated loops
    "lowered": ["idx_boolean_mask_2d", "la_products", "la_batched_matmul", "sh_expand_squeeze",
                "sh_concatenate_stack", "la_trace_einsum"],
}
_JIT_MEMBERS = [(group, name) for group, names in JIT_GROUPS.items() for name in names]

@pytest.fixture(scope="module")
def compiled_groups(tmp_path_factory):
    """group -> (gradients of every member, or the exception compiling the group raised)."""
    directory = tmp_path_factory.mktemp("groups")
    results = {}

    def run(group):
        if group not in results:
            cases = [by_name(n) for n in JIT_GROUPS[group]]
            fn = group_module(cases, directory, f"group_{group}")
            args = [a for c in cases for k, a in enumerate(c.args()) if k in c.argnums]
            try:
                grads = jit(grad(fn, argnums=tuple(range(len(args)))))(*args)
                results[group] = _split(cases, grads)
            except Exception as error:  # reported for every member of the group
                results[group] = error
        if isinstance(results[group], Exception):
            raise results[group]
        return results[group]
    return run


def _split(cases, grads):
    out, position = {}, 0
    for case in cases:
        out[case.name] = list(grads[position:position + len(case.argnums)])
        position += len(case.argnums)
    return out


@pytest.mark.parametrize("group,name", _JIT_MEMBERS, ids=[n for _, n in _JIT_MEMBERS])
@pytest.mark.slow
def test_jit_grad_matches_finite_differences(compiled_groups, group, name):
    case = by_name(name)
    got = compiled_groups(group)[name]
    for k, g, e in zip(case.argnums, got, expected_gradients(case, case.args())):
        assert_gradient_close(g, e, f"jit(grad) of {name} d/d{case.fn.__code__.co_varnames[k]}")


@pytest.mark.slow
def test_jit_grad_with_static_argument():
    case = by_name("loop_integer_argument_stop")
    x, n = case.args()
    compiled = jit(grad(case.fn), static_argnums=1)
    assert_gradient_close(compiled(x, n), central_differences(case.fn, (x, n), 0))
    assert_gradient_close(compiled(x, 2), central_differences(case.fn, (x, 2), 0))
