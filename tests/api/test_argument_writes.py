"""vjp and linearize of a function that writes into its argument: each later pull or
tangent map differentiates at the arguments as they were at the call, however often it runs.

The function squares x[0] in place, so running it again on the written array would give
the derivative at x[0]**2 (a silently wrong number); the oracle is the analytic Jacobian.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

from transformer import TransformError, grad, jacfwd, jacrev, jit, linearize, vjp
from transformer.test_util import numerical_grad, numerical_jacobian


def square_first(x):
    x[0] = x[0] ** 2
    return x * 1.0


def square_first_pair(p):
    p["w"][0] = p["w"][0] ** 2
    return p["w"] * p["b"]


E0 = np.array([1.0, 0.0, 0.0])


def test_vjp_pulls_back_at_the_arguments_of_the_call_every_time():
    x = np.array([3.0, 2.0, 1.0])
    y, pull = vjp(square_first, x)
    np.testing.assert_array_equal(y, [9.0, 2.0, 1.0])
    for _ in range(3):
        (ct,) = pull(E0)
        np.testing.assert_array_equal(ct, [6.0, 0.0, 0.0])
    np.testing.assert_array_equal(x, [9.0, 2.0, 1.0])        # written once, by the call


def test_linearize_pushes_forward_at_the_arguments_of_the_call_every_time():
    x = np.array([3.0, 2.0, 1.0])
    y, push = linearize(square_first, x)
    np.testing.assert_array_equal(y, [9.0, 2.0, 1.0])
    for _ in range(3):
        np.testing.assert_array_equal(push(E0), [6.0, 0.0, 0.0])
    np.testing.assert_array_equal(x, [9.0, 2.0, 1.0])


def test_vjp_of_a_pytree_argument_written_in_place_pulls_back_at_the_call():
    params = {"w": np.array([3.0, 2.0]), "b": np.array([2.0, 5.0])}
    _, pull = vjp(square_first_pair, params)
    for _ in range(2):
        (ct,) = pull(np.array([1.0, 1.0]))
        np.testing.assert_array_equal(ct["w"], [12.0, 5.0])   # 2 * w0 * b0, b1
        np.testing.assert_array_equal(ct["b"], [9.0, 2.0])    # w as written by the call


def test_jvp_leaves_the_callers_tangent_as_it_was_given():
    """The tangent of a parameter written in place is written on a copy: a basis vector
    used again gives the same column (plain Python and compiled)."""
    from transformer import jit, jvp
    compiled = jit(jvp(square_first))
    for run in (lambda x, t: jvp(square_first, (x,), (t,)), compiled):
        t = np.array([1.0, 0.0, 0.0])
        for _ in range(2):
            _, dy = run(np.array([3.0, 2.0, 1.0]), t)
            np.testing.assert_array_equal(dy, [6.0, 0.0, 0.0])
        np.testing.assert_array_equal(t, [1.0, 0.0, 0.0])


def chains_writes(x):
    """Each write reads an earlier one: a row or column taken after another's write of
    the same array is taken at another point."""
    x[0] = x[0] ** 2 * x[2]
    x[1] = x[1] * x[0]
    return x * 1.0


def writes_into_both(x, y):
    x[0] = x[0] ** 2 * y[1]
    y[1] = y[1] * x[1]
    return x * y


def _on_copies(f):
    return lambda *args: f(*(np.copy(a) for a in args))


X = np.array([1.5, 0.7, -0.3])
Y = np.array([0.4, 1.2, 2.0])
JACOBIANS = {"jacfwd": jacfwd(chains_writes), "jacrev": jacrev(chains_writes),
             "jit(jacfwd)": jit(jacfwd(chains_writes)),
             "jit(jacrev)": jit(jacrev(chains_writes))}


@pytest.mark.parametrize("which", [pytest.param(k, marks=pytest.mark.slow) if "jit" in k else k
                                   for k in sorted(JACOBIANS)])
def test_every_jacobian_column_and_row_is_taken_at_the_arguments_of_the_call(which):
    x = X.copy()
    jac = JACOBIANS[which](x)
    np.testing.assert_allclose(jac, numerical_jacobian(_on_copies(chains_writes), X),
                               atol=1e-6)
    expected = X.copy()
    chains_writes(expected)
    np.testing.assert_array_equal(x, expected)                 # written once


@pytest.mark.parametrize("jacobian", [jacfwd, jacrev])
def test_jacobians_in_two_written_arguments_are_taken_at_the_call(jacobian):
    jx, jy = jacobian(writes_into_both, argnums=(0, 1))(X.copy(), Y.copy())
    np.testing.assert_allclose(jx, numerical_jacobian(
        lambda v: _on_copies(writes_into_both)(v, Y), X), atol=1e-6)
    np.testing.assert_allclose(jy, numerical_jacobian(
        lambda v: _on_copies(writes_into_both)(X, v), Y), atol=1e-6)


def updates_through_an_alias(x, v):
    w = v
    z = w
    z += np.tanh(x)
    return np.sum(w * w) + x * w[1]


def test_jacfwd_sees_a_write_through_an_augmented_alias_of_the_argument():
    v = np.array([-0.69, -1.377, -1.45, 0.94])
    jac = jacfwd(updates_through_an_alias, argnums=1)(0.41, v.copy())
    np.testing.assert_allclose(jac, numerical_jacobian(
        lambda u: _on_copies(updates_through_an_alias)(0.41, u), v), atol=1e-6)


def test_reverse_modes_refusal_of_a_shared_augmented_array_names_the_users_line():
    from transformer import grad
    line = updates_through_an_alias.__code__.co_firstlineno + 3
    for fn in (grad(updates_through_an_alias, argnums=1),
               jit(grad(updates_through_an_alias, argnums=1))):
        with pytest.raises(ValueError, match="shares its array|shared with another") as info:
            fn(0.41, np.array([-0.69, -1.377, -1.45, 0.94]))
        assert f"{__file__}:{line}:" in str(info.value)


# ------------------------------------------------------------ a helper that writes its argument
def scale_in_place(buf, k):
    buf *= k                      # the caller's array: `*=` on an array writes in place
    return 0.0


def scaled_then_read(x):
    buf = x * 1.0
    t = scale_in_place(buf, 3.0)
    return np.sum(t + x * np.sum(buf))


def scale_copy(buf, k):
    buf = buf.copy()
    buf *= k
    return buf


def scaled_then_read_rewritten(x):
    buf = scale_copy(x * 1.0, 3.0)
    return np.sum(x * np.sum(buf))


@pytest.mark.parametrize("transform, mode", [(grad, "reverse"), (jacfwd, "forward")])
def test_a_helper_scaling_its_argument_in_place_is_refused_and_its_hint_runs(transform,
                                                                             mode):
    """`buf *= k` inside a helper: grad and jacfwd gave 6 and 3 where finite differences
    give 9 (the caller's `buf` was read as if unscaled); such a call is now refused, as a
    subscript write into an argument is, and the hint's copy differentiates."""
    x = np.array([0.3, 0.5, 0.7])
    assert scaled_then_read(x) == pytest.approx(scaled_then_read_rewritten(x), rel=1e-14)
    with pytest.raises(TransformError, match=f"scale_in_place writes into its argument "
                       f"'buf'; {mode} mode cannot differentiate") as info:
        transform(scaled_then_read)(x)
    assert info.value.filename == __file__ and "buf = buf.copy()" in info.value.hint
    np.testing.assert_allclose(transform(scaled_then_read_rewritten)(x),
                               numerical_grad(scaled_then_read, (x,)), rtol=1e-6)


def wrap_into_box(pos, box):
    pos -= box * np.floor(pos / box)
    return pos


def energy_of_wrapped(x):
    p = x * 1.0
    p = wrap_into_box(p, 2.0)         # the written array is read only through the result
    return np.sum(np.sin(p) * p)


def energy_reading_the_argument_again(x):
    p = x * 1.0
    q = wrap_into_box(p, 2.0)
    return np.sum(np.sin(p) * q)      # `p` is the wrapped array too


@pytest.mark.parametrize("transform", [grad, jacfwd])
def test_a_helper_writing_its_argument_differentiates_when_only_its_result_is_read(
        transform):
    x = np.array([0.3, 2.5, -0.7])
    np.testing.assert_allclose(transform(energy_of_wrapped)(x),
                               numerical_grad(energy_of_wrapped, (x,)), rtol=1e-6)
    with pytest.raises(TransformError, match="wrap_into_box writes into its argument") as info:
        transform(energy_reading_the_argument_again)(x)
    assert "return pos" in info.value.hint
    # the hint: read the result where the array is read after the call
    assert energy_reading_the_argument_again(x) == pytest.approx(energy_of_wrapped(x))


def shifted_then_updated(x, v):
    a = x
    a = a + 0.5          # a new array: the update below never reaches x
    a += 0.25 * v
    return np.sum(a * a) + np.sum(v * v) * np.sum(x)


def twice_shifted(x, v):
    return 2.0 * shifted_then_updated(x, v) + 0.5


@pytest.mark.slow
def test_a_name_rebound_before_its_update_is_not_a_write_into_the_argument():
    """Forward mode over reverse (hessian, the jvp of a grad) refuses a helper writing
    into its argument; `a = x; a = a + 0.5; a += v` writes into a new array and is
    differentiated, matching finite differences of the gradient."""
    from transformer import hessian, jvp
    x, v = np.array([0.3, -0.2]), np.array([0.5, 0.1])
    want = numerical_jacobian(lambda p: grad(twice_shifted)(p, v), x)
    assert np.allclose(hessian(twice_shifted)(x, v), want, atol=1e-5)
    want_v = numerical_jacobian(lambda p: grad(twice_shifted, argnums=1)(x, p), v)
    got_v = jacfwd(lambda p: grad(twice_shifted, argnums=1)(x, p))(v)
    assert np.allclose(got_v, want_v, atol=1e-5)
    tangent = jvp(grad(twice_shifted), (x, v), (np.ones(2), np.zeros(2)))[1]
    assert np.allclose(tangent, hessian(twice_shifted)(x, v) @ np.ones(2))


# ------------------------------------------------- a name rebound on every path before its update
def shifted(fn):
    """A decorator as users write them: the program is a helper called by the wrapper, so
    forward mode over reverse asks whether the helper writes into its argument."""
    @functools.wraps(fn)
    def wrapper(x, v):
        return 2.0 * fn(x + 0.25, v) + np.sum(x * v[0])
    return wrapper


@shifted
def rebound_in_both_branches(x, v):
    a = x
    if v[0] > 0.0:
        a = a + 0.5
    else:
        a = a * 2.0
    a += 0.25 * v[1]          # a new array on either path
    return np.sum(a * a) + np.sum(x)


@shifted
def rebound_in_every_loop_run(x, v):
    a = x
    for _ in range(3):        # runs at least once: `a` is a new array after it
        a = np.tanh(a) + v[1]
    a += v[0]
    return np.sum(a * a)


@shifted
def rebound_before_each_update_in_a_while(x, v):
    a = x
    k = 0
    while k < 2:
        a = a * 1.5
        a += v[1]             # `a` is rebound above on every run
        k += 1
    return np.sum(a * a) + np.sum(x)


@shifted
def swapped_then_updated(x, v):
    a = x
    a = a + 0.5
    b = v[0] * x
    if v[1] > 2.0:
        b, a = a, np.tanh(v[0])
    else:
        b -= 0.5 * np.tanh(a)  # `b` never holds x's array
    return np.sum(a + 2.0 * b)


REBOUND = [rebound_in_both_branches, rebound_in_every_loop_run,
           rebound_before_each_update_in_a_while, swapped_then_updated]
POINTS = {"float": 0.3, "array": np.array([0.3, -0.2])}
V = np.array([0.5, 0.1])


def _hessian_by_differences(f, x):
    point, shape, gradient = np.atleast_1d(np.asarray(x, dtype=float)), np.shape(x), grad(f)
    return numerical_jacobian(lambda p: np.atleast_1d(gradient(p.reshape(shape), V)), point)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(POINTS))
@pytest.mark.parametrize("f", REBOUND, ids=lambda f: f.__name__)
def test_a_name_rebound_on_every_path_before_its_update_is_differentiated(f, kind):
    """hvp (the jvp of a grad) and hessian of a decorated program whose update `a += v`
    comes after `a` is rebound on every path (both branches, a loop that runs, the
    statement before in a loop's body) were refused as writes into `x`; they match
    finite differences of the gradient, for a float and an array."""
    from transformer import hessian, jvp
    x = POINTS[kind]
    want = _hessian_by_differences(f, x)
    direction = np.ones_like(x)
    tangent = jvp(grad(f), (x, V), (direction, np.zeros_like(V)))[1]
    np.testing.assert_allclose(np.atleast_1d(tangent), want @ np.ones(want.shape[1]),
                               atol=1e-5)
    np.testing.assert_allclose(np.reshape(hessian(f)(x, V), want.shape), want, atol=1e-5)


@shifted
def element_written_after_a_copy_on_every_path(x, v):
    if v[0] > 0.0:
        x = x.copy()
    else:
        x = x * 2.0
    x[0] = x[0] * v[1]        # the caller's x is never written
    return np.sum(x * x)


@pytest.mark.slow
def test_an_element_write_after_a_copy_on_every_path_is_differentiated():
    """hvp and hessian (and grad, whose vjp of a helper runs its forward code again) of a
    helper that writes an element of its parameter after rebinding it on both paths."""
    from transformer import hessian
    x = np.array([0.3, -0.2])
    want = _hessian_by_differences(element_written_after_a_copy_on_every_path, x)
    np.testing.assert_allclose(jvp_of_grad(element_written_after_a_copy_on_every_path, x),
                               want @ np.ones(2), atol=1e-5)
    np.testing.assert_allclose(hessian(element_written_after_a_copy_on_every_path)(x, V),
                               want, atol=1e-5)


@shifted
def updated_where_one_path_keeps_the_argument(x, v):
    a = x
    if v[0] > 0.0:
        a = a + 0.5
    a += 0.25 * v[1]          # on the other path, `a` is still x's array
    return np.sum(a * a)


@shifted
def updated_after_a_loop_that_may_not_run(x, v):
    a = x
    k = 0
    while k < v[0]:
        a = a * 1.5
        k += 1
    a += v[1]
    return np.sum(a * a)


@shifted
def element_written_where_one_path_keeps_the_argument(x, v):
    a = x
    if v[0] > 0.0:
        a = a + 0.5
    a[0] = a[0] * v[1]
    return np.sum(a * a)


# each as the refusal's hint says to write it
@shifted
def updated_where_one_path_keeps_the_argument_rewritten(x, v):
    a = x
    if v[0] > 0.0:
        a = a + 0.5
    a = a + 0.25 * v[1]
    return np.sum(a * a)


@shifted
def updated_after_a_loop_that_may_not_run_rewritten(x, v):
    a = x
    k = 0
    while k < v[0]:
        a = a * 1.5
        k += 1
    a = a + v[1]
    return np.sum(a * a)


@shifted
def element_written_where_one_path_keeps_the_argument_rewritten(x, v):
    a = x.copy()
    if v[0] > 0.0:
        a = a + 0.5
    a[0] = a[0] * v[1]
    return np.sum(a * a)


@pytest.mark.parametrize("f, writes, binds, rewrite, fixed", [
    (updated_where_one_path_keeps_the_argument, "a += 0.25 * v[1]", "a = x",
     "a = a + 0.25 * v[1]", updated_where_one_path_keeps_the_argument_rewritten),
    (updated_after_a_loop_that_may_not_run, "a += v[1]", "a = x", "a = a + v[1]",
     updated_after_a_loop_that_may_not_run_rewritten),
    (element_written_where_one_path_keeps_the_argument, "a[0] = a[0] * v[1]", "a = x",
     "a = x.copy()", element_written_where_one_path_keeps_the_argument_rewritten),
], ids=["branch", "while", "element"])
def test_a_write_on_some_path_is_refused_with_a_hint_naming_the_line_that_works(
        f, writes, binds, rewrite, fixed):
    """A write through a name that holds x's array on some path reaches the caller: hvp
    refuses it at the call, names the writing line and the binding, and the rewrite it
    suggests differentiates, matching finite differences."""
    import inspect
    x = np.array([0.3, -0.2])
    with pytest.raises(TransformError, match=f"{f.__name__} writes into its argument 'x'"
                       ) as info:
        jvp_of_grad(f, x)
    lines, first = inspect.getsourcelines(f.__wrapped__)
    line_of = {text.split("#")[0].strip(): first + k for k, text in enumerate(lines)}
    hint = info.value.hint
    assert f"`{writes}` at {__file__}:{line_of[writes]}:" in hint
    assert f"{__file__}:{line_of[binds]}:" in hint and f"`{rewrite}`" in hint
    want = _hessian_by_differences(fixed, x)
    np.testing.assert_allclose(jvp_of_grad(fixed, x), want @ np.ones(2), atol=1e-5)


def jvp_of_grad(f, x):
    from transformer import jvp
    return jvp(grad(f), (x, V), (np.ones_like(x), np.zeros_like(V)))[1]


# ------------------------------------------------------------- the path-aware reading itself
def rows_updated(X):
    for row in X:
        row += 1.0                # each row is a view of the caller's X
    return X


def copied_on_one_path(x, c):
    if c > 0.0:
        x = x.copy()
    x[0] = 1.0
    return x


def written_after_a_break(x, v):
    a = x
    for i in range(3):
        if v[i] > 0.0:
            break                 # leaves with `a` still x's array
        a = a * 2.0
    a += v
    return a


def rebound_before_every_break(x, v):
    a = x
    for i in range(3):
        a = a * 2.0
        if v[i] > 0.0:
            break
    a += v
    return a


def written_on_the_second_run(x, v):
    a = v * 1.0
    for _ in range(2):
        a[0] = 0.5                # x's array from the second run on
        a = x
    return a


def swapped_away(x, v):
    a = x
    b = v * 1.0
    a, b = b, a
    a += v                        # `a` is v * 1.0 now; `b` holds x's array, unwritten
    return a + b


@pytest.mark.parametrize("f, written", [
    (rows_updated, ["X"]), (copied_on_one_path, ["x"]), (written_after_a_break, ["x"]),
    (rebound_before_every_break, []), (written_on_the_second_run, ["x"]),
    (swapped_away, []), (shifted_then_updated, []), (scale_in_place, ["buf"]),
], ids=lambda p: getattr(p, "__name__", None))
def test_the_arguments_a_function_writes_are_read_along_every_path(f, written):
    from transformer.aliases import written_params_of_source
    from transformer.frontend import parse
    assert written_params_of_source(parse(f)) == written
