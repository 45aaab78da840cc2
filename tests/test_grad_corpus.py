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

import transformer  # noqa: E402

if not hasattr(transformer, "grad"):
    pytest.skip("reverse mode (transformer.grad) is not available", allow_module_level=True)

from transformer import grad, jit, value_and_grad  # noqa: E402
from transformer.test_util import check_grads  # noqa: E402

DIFFERENTIABLE = [c for c in CASES if c.differentiable]


def expected_gradients(case, args):
    return [central_differences(case.fn, args, k) for k in case.argnums]


def as_list(grads, argnums):
    return list(grads) if len(argnums) > 1 else [grads]


@pytest.mark.parametrize("case", DIFFERENTIABLE, ids=lambda c: c.name)
def test_grad_matches_finite_differences(case):
    args = case.args()
    argnums = case.argnums if len(case.argnums) > 1 else case.argnums[0]
    got = as_list(grad(case.fn, argnums=argnums)(*args), case.argnums)
    for k, g, e in zip(case.argnums, got, expected_gradients(case, case.args())):
        assert_gradient_close(g, e, f"{case.name} d/d{case.fn.__code__.co_varnames[k]}")
    for before, after in zip(case.args(), args):
        np.testing.assert_array_equal(after, before)


@pytest.mark.parametrize("case", DIFFERENTIABLE, ids=lambda c: c.name)
def test_value_and_grad_returns_the_value(case):
    value, g = value_and_grad(case.fn, argnums=case.argnums)(*case.args())
    np.testing.assert_allclose(value, case.fn(*case.args()), rtol=1e-12, atol=1e-12)
    assert len(g) == len(case.argnums)
    for k, gk in zip(case.argnums, g):
        assert np.shape(gk) == np.shape(case.args()[k])


@pytest.mark.parametrize("case", DIFFERENTIABLE, ids=lambda c: c.name)
def test_check_grads(case, tmp_path):
    partial = partial_module(case, tmp_path)
    args = case.args()
    check_grads(partial, tuple(args[k] for k in case.argnums), order=1, modes=("rev",))


# ------------------------------------------------------------------ compiled with Numba
JIT_GROUPS = {
    "arithmetic": ["arith_polynomial", "arith_float_powers", "arith_unary_minus", "arith_abs",
                   "arith_min_max", "arith_with_integer", "arith_matmul_vector",
                   "math_exp_log", "math_two_argument", "arith_broadcasting",
                   "tuple_swap_in_loop", "tuple_from_helper", "tuple_unpack_array"],
    "control_flow": ["branch_elif_chain", "branch_nested", "branch_conditional_expression",
                     "loop_range_step", "loop_range_negative_step", "loop_data_dependent_stop",
                     "loop_over_array", "loop_enumerate", "loop_zip", "loop_triangular",
                     "loop_recurrence", "while_data_dependent", "while_with_continue",
                     "while_newton_sqrt", "break_and_continue", "break_inner_loop",
                     "return_from_loop", "return_from_while", "return_multiple_branches",
                     "call_in_loop", "call_helper_with_branches"],
    "in_place": ["inplace_add_element", "inplace_two_dimensional", "inplace_slice_assign",
                 "inplace_overwrite_needed_value", "inplace_recurrence", "inplace_slice_add",
                 "inplace_row_write", "inplace_swap_elements", "inplace_overwrite_twice",
                 "inplace_hand_matmul", "inplace_in_while", "alloc_constructors",
                 "methods_copy", "call_helper_returning_array"],
    "numpy": ["np_exp_log_family", "np_trigonometric", "np_hyperbolic", "np_binary_functions",
              "np_clip_where", "red_sum_axes", "red_max_min", "red_var_std", "red_logsumexp",
              "la_products", "la_solve", "sh_concatenate_stack", "idx_ints_slices",
              "idx_integer_array", "idx_boolean_mask", "methods_sum_transpose_reshape"],
    "programs": ["lj_energy_cutoff", "rnn_loss", "mlp_loss", "euler_ode", "bubble_sort_weighted",
                 "explicit_heat_equation", "piecewise_spline", "huber_loss", "rosenbrock"],
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
def test_jit_grad_matches_finite_differences(compiled_groups, group, name):
    case = by_name(name)
    got = compiled_groups(group)[name]
    for k, g, e in zip(case.argnums, got, expected_gradients(case, case.args())):
        assert_gradient_close(g, e, f"jit(grad) of {name} d/d{case.fn.__code__.co_varnames[k]}")


def test_jit_grad_with_static_argument():
    case = by_name("loop_integer_argument_stop")
    x, n = case.args()
    compiled = jit(grad(case.fn), static_argnums=1)
    assert_gradient_close(compiled(x, n), central_differences(case.fn, (x, n), 0))
    assert_gradient_close(compiled(x, 2), central_differences(case.fn, (x, 2), 0))
