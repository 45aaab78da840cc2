"""Local functions as JAX users write them: a nested `def` with several statements, or a
name bound to a lambda, closing over the enclosing function's values, passed by name to
`transformer.lax` calls (tuple carries unpacked inside) or called directly.

Oracles: the same code run in plain Python (secant's `lax` and NumPy, no rewriting),
the same program written with module-level functions where secant takes that form,
central finite differences, and JAX where installed. What cannot be inlined is a located
TransformError whose hint, followed, gives a program that runs and matches.
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

POINTS = [np.array([0.3, 0.5, 0.7]), np.array([0.6, 0.1, 0.2])]


# ------------------------------------------------------------------ passed to lax calls
def scan_tuple_carry(x):
    w = x[0]

    def step(carry, xi):
        h, c = carry              # `h` and `c` are also the enclosing function's names
        h = np.tanh(w * h + xi)
        c = c + h * h
        return (h, c), h
    (h, c), hs = lax.scan(step, (0.0, 0.0), x)
    return c + np.sum(hs) + h


def fori_carry_items(x):
    t = x * 0.0 + 3.0             # the body's own `t` must not write this one

    def body(i, c):
        t = c[0] * 0.5 + np.sin(c[1]) * i
        return t, c[1] + t * x
    a, b = lax.fori_loop(0, 3, body, (x, x * 2.0))
    return np.sum(a * b) + np.sum(t)


def while_cond_and_body(x):
    limit = 3

    def keep_going(s):
        v, n = s
        return n < limit

    def body(s):
        v, n = s
        v = v * 0.7 + np.cos(x)
        return v, n + 1
    v, n = lax.while_loop(keep_going, body, (x, 0))
    return np.sum(v * v) + n


def cond_local_branches(x):
    scale = x[2]

    def big(v):
        s = np.sum(v * v)
        return s * scale
    small = lambda v: np.sum(np.sin(v)) - scale     # noqa: E731 - the form under test
    return lax.cond(np.sum(x) > 1.0, big, small, x)


def scan_lambda_name(x):
    decay = x[1]
    step = lambda c, xi: (c * decay + xi[0], (c * xi[1], np.sin(c)))   # noqa: E731
    c, (ys, zs) = lax.scan(step, 0.5, (x, x * x), reverse=True)
    return c + np.sum(ys * zs)


def lax_inside_local(x):
    def inner(i, v):
        return v * 0.9 + x[i]

    def step(c, xi):
        c = lax.fori_loop(0, 2, inner, c + xi)     # a parameter rebound in the body
        return c, c * xi
    c, ys = lax.scan(step, 0.1, x)
    return c + np.sum(ys)


def default_and_rebound_parameter(x):
    def body(i, v, rate=0.5):
        v = v + rate * np.sin(v)
        v = v * x[0]
        return v
    return np.sum(lax.fori_loop(0, 3, body, x))


def closure_reads_value_at_call(x):
    a = x[0]

    def body(i, v):
        return v + a * i
    first = lax.fori_loop(0, 2, body, x)
    a = x[1] * 3.0                # a closure reads `a` when called: the second call sees this
    return np.sum(first * lax.fori_loop(0, 2, body, x))


# ------------------------------------------------------------------ called directly
def called_directly(x):
    s = x[0]

    def g(v, k=2.0):
        t = np.sin(v) * s
        t = t * k                 # a parameter-free local rebound
        return t + v
    y = g(x)
    s = x[1]                      # read by the next calls: the value at the call
    if np.sum(g(y, k=0.5)) > 0.0:
        y = y * g(x)
    return np.sum(y) + np.sum(g(y) + g(2.0 * x))


def directly_in_a_loop(x):
    def smooth(v):
        v = v * 0.5               # a parameter rebound in the body
        w = np.tanh(v)
        return w * v

    def energy(u):
        e = np.sum(smooth(u) ** 2)
        return e + u[0]
    total = 0.0
    for i in range(3):
        total = total + energy(x * (i + 1.0))
    return total


def called_from_a_lambda_in_lax(x):
    def pair(a, b):
        p = a * b
        return p + np.sin(a), b * 0.9
    a, b = lax.fori_loop(0, 3, lambda i, c: pair(c[0], c[1]), (x, x + 1.0))
    return np.sum(a * b)


def used_by_lax_and_directly(x):
    def f(c, xi):
        y = c * xi
        return c + y, y
    c, ys = lax.scan(f, 0.3, x)
    a, b = f(c, x[0])
    return a + b + np.sum(ys)


def branches_inside_a_step(x):
    def step(c, xi):
        if xi > 0.35:             # under vmap, the batch takes both ways
            d = c * xi
        else:
            d = c - xi
        for k in range(2):
            d = d * 0.9 + k
        return d, d * d
    c, ys = lax.scan(step, 1.0, x)
    return c + np.sum(ys)


def squared_norm(v):
    total = 0.0
    for vi in v:
        total += vi * vi          # a local accumulator: not a write into `v`
    return total


def helper_beside_local(x):
    w = x * 2.0

    def g(v):
        t = np.tanh(v * w)
        return np.sum(t)
    return squared_norm(w) + g(x)     # a user helper handed `w`, which g reads, that
    #                                   does not write it: g's statements may go first


# module-level step functions handed a tuple carry (JAX's RNN idiom): inlined like local
# ones; their free names are the module's
W_REC = 0.8


def rnn_step(carry, xi):
    h, c = carry
    h = np.tanh(W_REC * h + xi + 0.1 * c)
    c = c + h * h
    return (h, c), (h, c * 0.5)


def scan_module_step(x):
    (h, c), (hs, cs) = lax.scan(rnn_step, (x[0], 0.0), x)     # the caller's own h and c
    return c + np.sum(hs) + np.sum(cs * x) + h


def shift_body(i, state):
    a, b = state
    return a * 0.5 + np.sin(b) * i, b + a * 0.1


def fori_module_body(x):
    a, b = lax.fori_loop(0, 3, shift_body, (x, x * 2.0))
    return np.sum(a * b)


PROGRAMS = [scan_tuple_carry, fori_carry_items, while_cond_and_body, cond_local_branches,
            scan_lambda_name, lax_inside_local, default_and_rebound_parameter,
            closure_reads_value_at_call, called_directly, directly_in_a_loop,
            called_from_a_lambda_in_lax, used_by_lax_and_directly, branches_inside_a_step,
            scan_module_step, fori_module_body, helper_beside_local]
ids = [f.__name__ for f in PROGRAMS]


def _with(f, lax_module, numpy_module):
    """`f`'s code with other `lax` and `np` modules (its nested functions read them from
    the same globals)."""
    env = dict(f.__globals__, lax=lax_module, np=numpy_module)
    return types.FunctionType(f.__code__, env, f.__name__)


def _plain(f):
    """`f` run by Python itself: plain-Python `lax`, no secant rewriting involved."""
    return _with(f, types.SimpleNamespace(**{k: getattr(lax, k) for k in (
        "cond", "switch", "fori_loop", "while_loop", "scan")}), np)


@pytest.mark.every_case
@pytest.mark.parametrize("f", PROGRAMS, ids=ids)
def test_grad_matches_finite_differences(f):
    for x in POINTS:
        assert_gradient_close(grad(f)(x), numerical_grad(_plain(f), (x,)), f.__name__)


@pytest.mark.every_case
@pytest.mark.parametrize("f", PROGRAMS, ids=ids)
def test_vmap_and_vmap_of_grad_match_each_row(f):
    xs = np.stack(POINTS)
    np.testing.assert_allclose(vmap(f)(xs), [_plain(f)(x) for x in xs], rtol=1e-12)
    for row, x in zip(vmap(grad(f))(xs), xs):
        assert_gradient_close(row, numerical_grad(_plain(f), (x,)), f.__name__)


@pytest.mark.every_case
@pytest.mark.parametrize("f", PROGRAMS, ids=ids)
def test_jvp_matches_finite_differences(f):
    assert_jvp_matches_differences(lambda x, t: jvp(f, (x,), (t,)), _plain(f), POINTS[0],
                                   np.array([0.2, -0.4, 0.9]))


@pytest.mark.parametrize("f", PROGRAMS, ids=ids)
@pytest.mark.slow
def test_hessian_matches_finite_differences_of_the_gradient(f):
    assert_hessian_matches_differences(hessian(f), _plain(f), POINTS[0])


@pytest.mark.slow
def test_hessian_of_a_scan_step_matches_finite_differences_of_the_gradient():
    assert_hessian_matches_differences(hessian(scan_tuple_carry), _plain(scan_tuple_carry),
                                       POINTS[1])


# ------------------------------------------------------------------ compiled (Numba)
JIT_GRAD = {f.__name__: jit(grad(f)) for f in PROGRAMS}
JIT = jit(scan_tuple_carry)


@pytest.mark.parametrize("f", PROGRAMS, ids=ids)
@pytest.mark.slow
def test_jit_of_grad_matches_finite_differences(f):
    for x in POINTS:
        assert_gradient_close(JIT_GRAD[f.__name__](x), numerical_grad(_plain(f), (x,)),
                              f.__name__)


@pytest.mark.slow
def test_jit_matches_plain_python():
    for x in POINTS:
        assert JIT(x) == pytest.approx(_plain(scan_tuple_carry)(x), rel=1e-12)


# ------------------------------------------------------------------ as module-level functions
def big_branch(v, scale):
    return np.sum(v * v) * scale


def small_branch(v, scale):
    return np.sum(np.sin(v)) - scale


def cond_module_branches(x):
    return lax.cond(np.sum(x) > 1.0, big_branch, small_branch, x, x[2])


def test_local_branches_match_the_module_level_program():
    for x in POINTS:
        assert cond_local_branches(x) == pytest.approx(cond_module_branches(x), rel=1e-14)
        np.testing.assert_allclose(grad(cond_local_branches)(x),
                                   grad(cond_module_branches)(x), rtol=1e-14)


# ------------------------------------------------------------------ switch
def switch_local_branches(x, k):
    shift = x[0]

    def square(v):
        s = v * v
        return np.sum(s) + shift
    sine = lambda v: np.sum(np.sin(v)) * shift      # noqa: E731

    def product(v):
        p = np.prod(v)
        return p - shift
    return lax.switch(k, [square, sine, product], x)


@pytest.mark.every_case
@pytest.mark.parametrize("k", [-1, 0, 1, 2, 5])
def test_switch_over_local_functions_clamps_and_differentiates(k):
    x = POINTS[0]
    plain = _plain(switch_local_branches)
    assert grad(switch_local_branches)(x, k).shape == (3,)
    assert vmap(switch_local_branches, in_axes=(0, None))(np.stack(POINTS), k) == \
        pytest.approx([plain(p, k) for p in POINTS], rel=1e-12)
    assert_gradient_close(grad(switch_local_branches)(x, k),
                          numerical_grad(lambda v: plain(v, k), (x,)), f"k={k}")


# ------------------------------------------------------------------ JAX, same programs
jax_modules = pytest.fixture(scope="module")(jax_with_x64)


# JAX traces `body` once per function object and reuses that trace, so its second call in
# closure_reads_value_at_call still sees the first `a` (Python and secant read the new one);
# a Python `if` on a traced value (branches_inside_a_step) is a TracerBoolConversionError
# (the module-level steps read this module's `np`, which no swap of `f`'s globals reaches)
FOR_JAX = [f for f in PROGRAMS if f not in (closure_reads_value_at_call,
                                            branches_inside_a_step, scan_module_step,
                                            fori_module_body)]


@pytest.mark.parametrize("f", FOR_JAX, ids=[f.__name__ for f in FOR_JAX])
def test_values_and_gradients_match_jax(f, jax_modules):
    assert_matches_jax(f, _with(f, jax_modules.lax, jax_modules.numpy), POINTS, jax_modules)


# ------------------------------------------------------------------ refused, located
def early_return(x):
    def body(i, v):
        if i > 0:
            return v * 2.0
        return v + 1.0
    return np.sum(lax.fori_loop(0, 3, body, x))


def early_return_rewritten(x):
    def body(i, v):
        if i > 0:
            out = v * 2.0
        else:
            out = v + 1.0
        return out
    return np.sum(lax.fori_loop(0, 3, body, x))


def early_return_called_directly(x):
    def clipped(v):
        s = np.sum(v)
        if s > 1.0:
            return v / s
        return v
    return np.sum(clipped(x) * x)


def early_return_called_directly_rewritten(x):
    def clipped(v):
        s = np.sum(v)
        if s > 1.0:
            out = v / s
        else:
            out = v
        return out
    return np.sum(clipped(x) * x)


def nonlocal_total(x):
    total = 0.0

    def step(c, xi):
        nonlocal total
        total = total + xi * c
        return c * 0.5 + xi, c
    c, ys = lax.scan(step, 1.0, x)
    return c + total + np.sum(ys)


def nonlocal_total_rewritten(x):
    def step(carry, xi):
        c, total = carry
        total = total + xi * c
        return (c * 0.5 + xi, total), c
    (c, total), ys = lax.scan(step, (1.0, 0.0), x)
    return c + total + np.sum(ys)


def def_inside_local(x):
    def body(i, v):
        def twice(u):
            return u * 2.0 + x[0]
        return twice(v) * 0.5
    return np.sum(lax.fori_loop(0, 2, body, x))


def def_inside_local_rewritten(x):
    def twice(u):
        return u * 2.0 + x[0]

    def body(i, v):
        return twice(v) * 0.5
    return np.sum(lax.fori_loop(0, 2, body, x))


def redefined_local(x):
    def body(i, v):
        return v * 2.0
    a = lax.fori_loop(0, 2, body, x)

    def body(i, v):               # noqa: F811 - the form under test
        return v + np.sin(v)
    return np.sum(a * lax.fori_loop(0, 2, body, x))


def redefined_local_rewritten(x):
    def double(i, v):
        return v * 2.0

    def grow(i, v):
        return v + np.sin(v)
    a = lax.fori_loop(0, 2, double, x)
    return np.sum(a * lax.fori_loop(0, 2, grow, x))


def defined_in_branch(x):
    if x[0] > 0.4:
        def body(i, v):
            return v * 2.0
    else:
        def body(i, v):
            return v + np.sin(v)
    return np.sum(lax.fori_loop(0, 2, body, x))


def defined_in_branch_rewritten(x):
    def double(i, v):
        return v * 2.0

    def grow(i, v):
        return v + np.sin(v)
    return np.sum(lax.cond(x[0] > 0.4, lambda: lax.fori_loop(0, 2, double, x),
                           lambda: lax.fori_loop(0, 2, grow, x)))


def read_before_assigned(x):
    def body(i, v):
        if i > 0:
            previous = v * 0.5
        return v + previous
    return np.sum(lax.fori_loop(0, 3, body, x))


def read_before_assigned_rewritten(x):
    def body(i, v):
        previous = v * 0.0
        if i > 0:
            previous = v * 0.5
        return v + previous
    return np.sum(lax.fori_loop(0, 3, body, x))


def shadows_a_global_of_the_step(x):
    W_REC = x[1]                  # rnn_step reads the module's W_REC, not this one
    (h, c), ys = lax.scan(rnn_step, (x[0], 0.0), x)
    return c * W_REC


def shadows_a_global_of_the_step_rewritten(x):
    w_rec = x[1]
    (h, c), ys = lax.scan(rnn_step, (x[0], 0.0), x)
    return c * w_rec


def scale_in_place(buf, k):
    buf *= k
    return 0.0


def written_before_the_call(x):
    buf = x * 1.0

    def total(v):
        s = np.sum(buf)
        return v * s
    return np.sum(scale_in_place(buf, 3.0) + total(x))   # Python scales buf first


def written_before_the_call_rewritten(x):
    buf = x * 1.0

    def total(v):
        s = np.sum(buf)
        return v * s
    t = scale_in_place(buf, 3.0)
    return np.sum(t + total(x))


def bump_through_a_name(buf, k):
    z = buf
    z += k                        # writes the caller's array through `z`
    return 0.0


# the same program, its `scale_in_place` bound to bump_through_a_name
bumped_before_the_call = types.FunctionType(
    written_before_the_call.__code__,
    dict(written_before_the_call.__globals__, scale_in_place=bump_through_a_name),
    "written_before_the_call")


def test_a_write_through_a_helpers_local_name_counts_as_a_write():
    x = POINTS[0]
    assert bumped_before_the_call(x) == pytest.approx(np.sum(x * np.sum(x + 3.0)))
    with pytest.raises(TransformError, match="called after `scale_in_place"):
        jit(bumped_before_the_call)(x)


def fill_in_place(buf, k):
    buf.fill(k)
    return 0.0


def add_into(buf, k):
    np.add(buf, k, out=buf)
    return 0.0


def add_at_first(buf, k):
    np.add.at(buf, 0, k)
    return 0.0


def scale_through_a_helper(buf, k):
    return scale_in_place(buf, k)


def scale_a_copy(buf, k):
    t = buf.copy()
    t.fill(k)
    return np.sum(t) * 0.0


def _with_helper(helper):
    """`written_before_the_call` with its `scale_in_place` bound to `helper`."""
    return types.FunctionType(written_before_the_call.__code__,
                              dict(written_before_the_call.__globals__,
                                   scale_in_place=helper), "written_before_the_call")


@pytest.mark.every_case
@pytest.mark.parametrize("helper", [fill_in_place, add_into, add_at_first,
                                    scale_through_a_helper],
                         ids=lambda h: h.__name__)
def test_a_helper_writing_its_argument_in_any_form_before_a_local_call_is_refused(helper):
    program = _with_helper(helper)
    x = POINTS[0]
    buf = x * 1.0
    helper(buf, 3.0)                         # what Python hands `total`
    assert program(x) == pytest.approx(np.sum(x * np.sum(buf)))
    assert not np.allclose(buf, x)
    with pytest.raises(TransformError, match="called after `scale_in_place"):
        jit(program)(x)


def test_a_helper_writing_only_its_own_copy_lets_the_local_call_run():
    program = _with_helper(scale_a_copy)
    x = POINTS[0]
    assert jit(program)(x) == pytest.approx(np.sum(x * np.sum(x)), rel=1e-14)
    assert jit(program)(x) == pytest.approx(program(x), rel=1e-14)


def test_a_local_call_after_a_write_in_its_statement_is_refused_and_its_hint_runs():
    """`total`'s statements run before the statement holding its call; Python runs
    `scale_in_place(buf, 3.0)`, which scales the `buf` total reads, first. jit gave
    12.25 where Python gives 36.75. (grad refuses the rewrite: the helper writes into its
    argument, tests/api/test_argument_writes.py.)"""
    x = POINTS[0]
    assert written_before_the_call(x) == pytest.approx(written_before_the_call_rewritten(x))
    with pytest.raises(TransformError) as info:
        vmap(written_before_the_call)(np.stack(POINTS))
    error = info.value
    assert "local function 'total' is called after `scale_in_place(buf, 3.0)`" in \
        error.message
    assert error.filename == __file__ and error.line[error.col:].startswith("total(x))")
    assert "on a line of its own" in error.hint
    np.testing.assert_allclose(vmap(written_before_the_call_rewritten)(np.stack(POINTS)),
                               [written_before_the_call(x) for x in POINTS], rtol=1e-14)


# the same step with globals of its own, as a function from another module has
foreign_step = types.FunctionType(rnn_step.__code__, dict(rnn_step.__globals__), "rnn_step")


def step_from_another_module(x):
    (h, c), ys = lax.scan(foreign_step, (x[0], 0.0), x)
    return c


def step_from_another_module_rewritten(x):
    (h, c), ys = lax.scan(rnn_step, (x[0], 0.0), x)
    return c


@pytest.mark.every_case
@pytest.mark.parametrize("f, rewritten, message, caret, hint", [
    (early_return, early_return_rewritten, "a `return` before the end", "return v * 2.0",
     "in each branch"),
    (early_return_called_directly, early_return_called_directly_rewritten,
     "a `return` before the end", "return v / s", "in each branch"),
    (nonlocal_total, nonlocal_total_rewritten, "`nonlocal` in local function 'step'",
     "nonlocal total", "return the new value"),
    (def_inside_local, def_inside_local_rewritten, "a function defined inside local "
     "function 'body'", "def twice", "at the top of the transformed function"),
    (redefined_local, redefined_local_rewritten, "not a function defined once", "body, x)",
     "once"),
    (defined_in_branch, defined_in_branch_rewritten, "not a function defined once",
     "body, x)", "at the top of the transformed function"),
    (read_before_assigned, read_before_assigned_rewritten, "'previous' may be read before "
     "it is assigned", "previous\n", "before the `if`"),
    (shadows_a_global_of_the_step, shadows_a_global_of_the_step_rewritten,
     "rnn_step reads the module's 'W_REC'", "def rnn_step", "rename 'W_REC'"),
    (step_from_another_module, step_from_another_module_rewritten,
     "a tuple carry or operand passed to a function called from a transformer.lax call, "
     "defined in another module", "lax.scan(foreign_step", "define the step function in "
     "this module"),
], ids=lambda v: getattr(v, "__name__", None))
def test_refused_local_functions_are_located_and_their_hint_runs(f, rewritten, message,
                                                                 caret, hint):
    x = POINTS[0]
    try:
        assert f(x) == pytest.approx(rewritten(x), rel=1e-12)  # the rewrite means the same
    except UnboundLocalError:
        assert f is read_before_assigned        # Python refuses it too, when it runs
    with pytest.raises(TransformError) as info:
        grad(f)(x)
    error = info.value
    assert message in error.message
    assert error.filename == __file__
    assert (error.line + "\n")[error.col:].startswith(caret), (error.line, error.col)
    assert hint in error.hint
    assert_gradient_close(grad(rewritten)(x), numerical_grad(_plain(rewritten), (x,)))


def conditional_call(x):
    def g(v):
        t = v * v
        return np.sum(t)
    return g(x) if x[0] > 0.0 else 0.0


def conditional_call_rewritten(x):
    def g(v):
        t = v * v
        return np.sum(t)
    t = g(x)
    return t if x[0] > 0.0 else 0.0


def call_after_or(x):
    def g(v):
        t = v * v
        return np.sum(t) > 0.5
    if x[0] > 0.0 or g(x):
        return np.sum(x)
    return 0.0


def call_after_or_rewritten(x):
    def g(v):
        t = v * v
        return np.sum(t) > 0.5
    t = g(x)
    if x[0] > 0.0 or t:
        return np.sum(x)
    return 0.0


def call_in_while_test(x):
    def small(v):
        s = np.sum(v * v)
        return s < 4.0
    while small(x):
        x = x * 1.5
    return np.sum(x)


def call_in_while_test_rewritten(x):
    def small(v):
        s = np.sum(v * v)
        return s < 4.0
    t = small(x)
    while t:
        x = x * 1.5
        t = small(x)
    return np.sum(x)


@pytest.mark.every_case
@pytest.mark.parametrize("f, rewritten, where, caret", [
    (conditional_call, conditional_call_rewritten, "`x if c else y`", "g(x) if"),
    (call_after_or, call_after_or_rewritten, "`or`", "g(x):"),
    (call_in_while_test, call_in_while_test_rewritten, "a `while` condition", "small(x):"),
], ids=lambda v: getattr(v, "__name__", None))
def test_direct_call_that_might_not_run_is_refused_and_its_hint_runs(f, rewritten, where,
                                                                     caret):
    x = POINTS[0]
    assert f(x) == pytest.approx(rewritten(x), rel=1e-12)
    with pytest.raises(TransformError) as info:
        grad(f)(x)
    error = info.value
    assert f"in {where}, where it might not run" in error.message
    assert error.filename == __file__
    assert error.line[error.col:].startswith(caret), (error.line, error.col)
    assert "assign `t = " in error.hint
    assert_gradient_close(grad(rewritten)(x), numerical_grad(rewritten, (x,)))
    np.testing.assert_allclose(vmap(rewritten)(np.stack(POINTS)),
                               [rewritten(p) for p in POINTS], rtol=1e-12)
