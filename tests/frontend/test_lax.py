"""transformer.lax: JAX's structured control flow, run in plain Python and lowered to real
if/for/while inside transformed functions.

Each program below is written once, as a JAX user writes it (`lax.*`, `np.*`). The same
code object runs with secant's `lax` and NumPy, and, where JAX is installed, with
`jax.lax` and `jax.numpy` (the JAX oracle). Derivatives are compared with central finite
differences always. Compiled forms (`jit`) are built once per program at module level.
"""
from __future__ import annotations

import types

import numpy as np
import pytest

from transformer import TransformError, grad, hessian, jit, jvp, lax, vmap
from transformer.test_util import numerical_grad

from tests.gradcheck import (
    assert_gradient_close,
    assert_jvp_matches_differences,
    assert_matches_jax,
    assert_hessian_matches_differences,
    jax_with_x64,
)


def step(i, c):
    return c * 1.1 + np.sin(c) * i


def fori_function(x):
    return np.sum(lax.fori_loop(0, 3, step, x) ** 2)


def fori_tuple_carry(x):
    a, b = lax.fori_loop(1, 4, lambda i, c: (c[0] * c[1] * 0.5, c[1] + c[0] * i), (x, x * 2.0))
    return np.sum(a + b)


def cond_lambdas(x):
    return lax.cond(np.sum(x) > 1.0, lambda v: np.sum(v * v), lambda v: np.sum(np.sin(v)), x)


def cond_two_operands(x):
    return lax.cond(x[0] < 0.5, lambda a, b: a * b, lambda a, b: a - b, x[1], x[2]) ** 2


def switch_clamped(x, k):
    return lax.switch(k, [lambda v: np.sum(v * v), lambda v: np.sum(np.sin(v)),
                          lambda v: np.prod(v)], x)


def while_tuple_carry(x):
    c, n = lax.while_loop(lambda s: s[1] < 4, lambda s: (s[0] * 0.7 + x, s[1] + 1), (x, 0))
    return np.sum(c * c)


def scan_forward(x):
    c, ys = lax.scan(lambda c, xi: (c * 0.9 + xi, c * xi), 0.5, x)
    return c + np.sum(ys * ys)


def scan_reverse(x):
    c, ys = lax.scan(lambda c, xi: (c * 0.9 + xi, c * xi), 0.5, x, reverse=True)
    return c + np.sum(ys * np.arange(1.0, 4.0))


def select_elementwise(x):
    return np.sum(lax.select(x > 0.4, x * x, np.sin(x)))


def scan_pytree(x):
    (a, b), (ys, zs) = lax.scan(lambda c, xi: ((c[0] + xi[0], c[1] * xi[1]),
                                               (c[0] * xi[1], np.sin(c[1]))),
                                (0.1, 1.0), (x, x * x))
    return a + b + np.sum(ys * zs)


def scan_length_without_xs(x):
    c, ys = lax.scan(lambda c, _: (c * x[0] + x[1], c), 0.3, None, length=4)
    return c + np.sum(ys)


def cond_tuple_outputs(x):
    a, b = lax.cond(x[0] > 0.4, lambda v: (v[0] * 2.0, v[1]), lambda v: (v[1], v[0] * v[0]), x)
    return a * b


def positive_branch(v):
    return v * v


def negative_branch(v):
    return np.sin(v) * 2.0


def decay(c, xi):
    return c * 0.8 + xi * xi, c * xi


def module_level_callees(x):
    v = lax.cond(x[1] > 0.3, positive_branch, negative_branch, x)
    c, ys = lax.scan(decay, x[0], v)
    w = lax.while_loop(less_than_two, double, x[2] + 0.1)
    return c + np.sum(ys) + w


def less_than_two(v):
    return v < 2.0


def double(v):
    return v * 2.0


PROGRAMS = [fori_function, fori_tuple_carry, cond_lambdas, cond_two_operands,
            while_tuple_carry, scan_forward, scan_reverse, select_elementwise, scan_pytree,
            scan_length_without_xs, cond_tuple_outputs, module_level_callees]
# points on both sides of the branches' predicates
POINTS = [np.array([0.3, 0.5, 0.7]), np.array([0.6, 0.1, 0.2])]
ids = [f.__name__ for f in PROGRAMS]


def _with(f, lax_module, numpy_module):
    """`f`'s code with other `lax` and `np` modules: the same program, another library
    (the module-level helpers it calls too)."""
    env = dict(f.__globals__, lax=lax_module, np=numpy_module)
    for name in f.__code__.co_names:
        helper = env.get(name)
        if isinstance(helper, types.FunctionType) and helper.__module__ == __name__:
            env[name] = types.FunctionType(helper.__code__, env, helper.__name__)
    return types.FunctionType(f.__code__, env, f.__name__)


def _reference(f):
    """`f` run with NumPy and a plain-Python lax: no secant lowering involved."""
    plain = types.SimpleNamespace(**{k: getattr(lax, k) for k in (
        "cond", "switch", "select", "fori_loop", "while_loop", "scan")})
    return _with(f, plain, np)


@pytest.mark.parametrize("f", PROGRAMS, ids=ids)
@pytest.mark.parametrize("x", POINTS)
def test_grad_matches_finite_differences(f, x):
    assert_gradient_close(grad(f)(x), numerical_grad(_reference(f), (x,)), f.__name__)


@pytest.mark.parametrize("f", PROGRAMS, ids=ids)
def test_vmap_of_grad_matches_each_row(f):
    xs = np.stack(POINTS)
    got = vmap(grad(f))(xs)
    for row, x in zip(got, xs):
        assert_gradient_close(row, numerical_grad(_reference(f), (x,)), f.__name__)


@pytest.mark.parametrize("f", PROGRAMS, ids=ids)
def test_vmap_matches_each_row(f):
    xs = np.stack(POINTS)
    np.testing.assert_allclose(vmap(f)(xs), [_reference(f)(x) for x in xs], rtol=1e-12)


@pytest.mark.parametrize("f", PROGRAMS, ids=ids)
@pytest.mark.slow
def test_hessian_matches_finite_differences_of_the_gradient(f):
    assert_hessian_matches_differences(hessian(f), _reference(f), POINTS[0])


@pytest.mark.parametrize("f", PROGRAMS, ids=ids)
def test_jvp_matches_finite_differences(f):
    assert_jvp_matches_differences(lambda x, t: jvp(f, (x,), (t,)), _reference(f), POINTS[0],
                                   np.array([0.2, -0.4, 0.9]))


@pytest.mark.parametrize("k", [-3, 0, 1, 2, 7])
def test_switch_clamps_the_index_under_grad(k):
    x = POINTS[0]
    reference = _reference(switch_clamped)
    assert switch_clamped(x, k) == pytest.approx(reference(x, k))
    assert_gradient_close(grad(switch_clamped)(x, k),
                          numerical_grad(lambda v: reference(v, k), (x,)), f"k={k}")


def nested_capture(x):
    h = x * 0.0 + 5.0        # a local named like the lambda's parameter: must not be read
    g = lax.fori_loop(0, 3, lambda i, h: lax.cond(i > 0, lambda v: v * h, lambda v: v + h, x),
                      x)
    return np.sum(g) + np.sum(h)


def test_inner_lambda_reads_the_outer_lambdas_parameter_not_a_local_of_that_name():
    x = POINTS[0]
    reference = _reference(nested_capture)
    assert nested_capture(x) == pytest.approx(reference(x))
    assert_gradient_close(grad(nested_capture)(x), numerical_grad(reference, (x,)))


# ------------------------------------------------------------------ compiled (Numba)
JIT_GRAD = {f.__name__: jit(grad(f)) for f in PROGRAMS}
JIT = {f.__name__: jit(f) for f in (fori_tuple_carry, scan_reverse, while_tuple_carry)}
QUICK_JIT = (fori_tuple_carry, cond_two_operands, scan_pytree)   # the rest: --runslow


def _jit_mark(f):
    return f if f in QUICK_JIT else pytest.param(f, marks=pytest.mark.slow)


@pytest.mark.parametrize("f", [_jit_mark(f) for f in PROGRAMS], ids=ids)
@pytest.mark.slow
def test_jit_of_grad_matches_finite_differences(f):
    for x in POINTS:
        assert_gradient_close(JIT_GRAD[f.__name__](x), numerical_grad(_reference(f), (x,)),
                              f.__name__)


@pytest.mark.parametrize("name", sorted(JIT))
def test_jit_matches_plain_python(name):
    f = globals()[name]
    for x in POINTS:
        assert JIT[name](x) == pytest.approx(_reference(f)(x), rel=1e-12)


def scan_of_products(x):
    c, ys = lax.scan(lambda c, xi: (c + xi, c * xi), x[0], x)
    return ys


SCAN_OF_PRODUCTS = jit(scan_of_products)


@pytest.mark.slow
@pytest.mark.parametrize("x", [np.arange(1.0, 9.0, dtype=np.float32).reshape(4, 2),
                               np.array([1 + 2j, -1j, 0.5, 3 - 1j])], ids=str)
def test_jit_scan_stacks_float32_and_complex_outputs_in_their_dtype(x):
    """float32 rows stay float32 and a complex y keeps its imaginary part, as plain scan
    and JAX's scan stack them (they were stacked into float64 zeros). (A float32 scalar y
    follows jit's arithmetic rule: float32 with a Python float is float64.)"""
    got, expected = SCAN_OF_PRODUCTS(x), scan_of_products(x)
    assert got.dtype == expected.dtype == x.dtype
    np.testing.assert_array_equal(got, expected)


@pytest.mark.slow
def test_jit_scan_stacks_integer_outputs_as_floats_exactly():
    """An int y is stacked as floats: a later y may be a float (`c = 0`, then `c + x`)."""
    x = np.array([3, -7, 2**40, 5])
    got = SCAN_OF_PRODUCTS(x)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, scan_of_products(x))


def running_sums(start, xs):
    c, ys = lax.scan(lambda c, xi: (c + xi, c), start, xs)
    return ys


RUNNING_SUMS = jit(running_sums)


@pytest.mark.slow
@pytest.mark.parametrize("start", [
    np.int8(3), np.array([True, False]),
    pytest.param(np.int16(-2), marks=pytest.mark.slow),
    pytest.param(np.uint8(7), marks=pytest.mark.slow)], ids=repr)
def test_jit_scan_stacks_a_small_int_or_bool_first_y_as_float64(start):
    """The first y is the int8/int16/uint8/bool start, the later ys are its float64 sums:
    the stack is float64, as NumPy's stack of the ys (it was float32, which rounded every
    later y)."""
    xs = np.array([0.1, 1e-9, 2.0 / 3.0])
    if np.ndim(start):
        xs = np.stack([xs, 3 * xs], axis=1)
    got, expected = RUNNING_SUMS(start, xs), running_sums(start, xs)
    assert got.dtype == expected.dtype == np.float64
    np.testing.assert_array_equal(got, expected)


# ------------------------------------------------------------------ plain Python semantics
def test_plain_scan_stacks_pytree_outputs_and_visits_in_reverse():
    seen = []

    def f(c, x):
        seen.append(float(x["a"]))
        return c + x["a"], {"double": 2 * x["a"], "pair": (x["b"], c)}

    xs = {"a": np.array([1.0, 2.0, 3.0]), "b": np.ones((3, 2))}
    carry, ys = lax.scan(f, 0.0, xs, reverse=True)
    assert seen == [3.0, 2.0, 1.0]
    assert carry == 6.0
    np.testing.assert_array_equal(ys["double"], [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(ys["pair"][1], [5.0, 3.0, 0.0])
    assert ys["pair"][0].shape == (3, 2)


def test_plain_scan_without_xs_uses_length():
    carry, ys = lax.scan(lambda c, _: (c * 2, c), 1, None, length=4)
    assert carry == 16
    np.testing.assert_array_equal(ys, [1, 2, 4, 8])


def test_plain_scan_refuses_mismatched_lengths():
    with pytest.raises(ValueError, match="length=2"):
        lax.scan(lambda c, x: (c, x), 0.0, np.zeros(3), length=2)


def test_plain_control_flow_follows_jax_semantics():
    assert lax.fori_loop(2, 5, lambda i, v: v + i, 0) == 9
    assert lax.fori_loop(5, 2, lambda i, v: v + i, 0) == 0
    assert lax.while_loop(lambda v: v < 10, lambda v: v * 3, 1) == 27
    assert lax.switch(-5, [lambda: "a", lambda: "b"]) == "a"
    assert lax.switch(9, [lambda: "a", lambda: "b"]) == "b"
    assert lax.cond(False, lambda a, b: a, lambda a, b: b, 1, 2) == 2
    np.testing.assert_array_equal(lax.select(np.array([True, False]), np.ones(2),
                                             np.zeros(2)), [1.0, 0.0])
    with pytest.raises(TypeError, match="scalar"):
        lax.cond(np.array([True, False]), lambda: 1, lambda: 2)


# ------------------------------------------------------------------ refused, located
def scan_state_to_function(x):
    c, ys = lax.scan(step_pair, (x, x), x)
    return np.sum(ys)


def step_pair(c, xi):
    return c, xi


def test_tuple_carry_to_a_module_function_is_inlined():
    """It was refused; a function of this module is now inlined like a local one (the
    rest: tests/frontend/test_local_functions.py)."""
    x = POINTS[0]
    assert_gradient_close(grad(scan_state_to_function)(x),
                          numerical_grad(scan_state_to_function, (x,)))


def switch_branches_from_a_variable(x):
    branches = [np.sin, np.cos]
    return lax.switch(1, branches, x)


def while_condition_calls_lax(x):
    while lax.cond(x[0] > 0.0, lambda: True, lambda: False):
        x = x - 1.0
    return np.sum(x)


def local_callee(x):
    body = step
    return np.sum(lax.fori_loop(0, 2, body, x))


def pair_step(i, a, b):
    return a * b, b + a


def tuple_to_helper_in_lambda(x):
    a, b = lax.fori_loop(0, 2, lambda i, c: pair_step(i, c), (x, x))
    return np.sum(a + b)


def tuple_items_to_helper(x):
    a, b = lax.fori_loop(0, 2, lambda i, c: pair_step(i, c[0], c[1]), (x, x * 0.5))
    return np.sum(a + b)


def test_tuple_carry_items_passed_to_a_helper_differentiate():
    x = POINTS[0]
    assert_gradient_close(grad(tuple_items_to_helper)(x),
                          numerical_grad(_reference(tuple_items_to_helper), (x,)))


def wrong_arity(x):
    return np.sum(lax.fori_loop(0, 2, lambda c: c * 2.0, x))


@pytest.mark.parametrize("f, message, hint", [
    (switch_branches_from_a_variable, "list or tuple written in the call", "lax.switch(i, ["),
    (while_condition_calls_lax, "`while` condition", "assign its result"),
    (local_callee, "cannot be resolved", "module level"),
    (tuple_to_helper_in_lambda, "passed whole to a function", "c[0], c[1]"),
    (wrong_arity, "takes 1 arguments but the lax call passes 2", "calling convention"),
])
def test_unlowerable_calls_are_refused_at_their_line(f, message, hint):
    with pytest.raises(TransformError, match=message) as info:
        grad(f)(POINTS[0])
    error = info.value
    assert error.filename == __file__
    assert error.hint is not None and hint in error.hint
    assert "lax." in error.line


# ------------------------------------------------------------------ JAX, same programs
jax_modules = pytest.fixture(scope="module")(jax_with_x64)


@pytest.mark.parametrize("f", PROGRAMS, ids=ids)
def test_values_and_gradients_match_jax(f, jax_modules):
    assert_matches_jax(f, _with(f, jax_modules.lax, jax_modules.numpy), POINTS, jax_modules)


@pytest.mark.parametrize("k", [-3, 1, 7])
def test_switch_matches_jax(k, jax_modules):
    jax = jax_modules
    jf = _with(switch_clamped, jax.lax, jax.numpy)
    x = POINTS[1]
    np.testing.assert_allclose(grad(switch_clamped)(x, k),
                               jax.grad(jf)(jax.numpy.asarray(x), k), rtol=1e-10)


def test_scan_outputs_match_jax(jax_modules):
    jax = jax_modules
    x = POINTS[0]
    for reverse in (False, True):
        got = lax.scan(lambda c, xi: (c * 0.9 + xi, (c * xi, -xi)), 0.5, x, reverse=reverse)
        expected = jax.lax.scan(lambda c, xi: (c * 0.9 + xi, (c * xi, -xi)), 0.5,
                                jax.numpy.asarray(x), reverse=reverse)
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(expected)):
            np.testing.assert_allclose(a, b, rtol=1e-12)


# ------------------------------------------------------------------ the README's example
@pytest.mark.slow
def test_readme_lax_example_runs_and_matches_finite_differences(tmp_path):
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Porting from JAX: lax", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    path = tmp_path / "readme_lax.py"         # secant reads source: run it from a file
    path.write_text(code)
    namespace = {"__name__": "readme_lax", "__file__": str(path)}
    exec(compile(code, str(path), "exec"), namespace)
    xs = np.array([[0.3, -0.2], [0.5, 0.1], [-0.4, -0.9]])
    expected = [numerical_grad(lambda w, x=x: namespace["loss"](w, x), (0.7,)) for x in xs]
    np.testing.assert_allclose(namespace["per_example"](0.7, xs), expected, rtol=1e-6)
    np.testing.assert_allclose(
        namespace["d_rewards"],
        numerical_grad(lambda r: namespace["discounted"](r, 0.9), (np.ones(5),)), rtol=1e-6)
    xs = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(
        namespace["d_w"], numerical_grad(lambda w: namespace["rnn_loss"](w, xs), (0.5,)),
        rtol=1e-6)
