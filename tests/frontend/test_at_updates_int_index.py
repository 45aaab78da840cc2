"""`x.at[i].<method>(v)` with an index held in a name known to be an int (a `for`
index over `range`, int arithmetic of one, `len(...)`): the plain write on a copy, under
every transformation; an index array or a parameter: the write after a run-time check that
no element is selected twice; and forward mode of `np.add.at(y, i, v)`. Oracles: the same update
written by hand in NumPy and central differences of it (no JAX needed here;
tests/frontend/test_at_updates.py compares with JAX where it is installed)."""
import inspect

import numpy as np
import pytest

from transformer import TransformError, grad, hessian, jacfwd, jit, jvp, vmap
from transformer.frontend import parse
from transformer.int_names import IntNames
from transformer.test_util import numerical_grad

X = np.array([0.7, -1.3, 0.4, 1.1])
DIRECTION = np.array([0.3, -0.2, 0.5, -0.4])


def scaled(x):                           # the JAX idiom: a loop index as the update's index
    for i in range(3):
        x = x.at[i].multiply(2.0 + x[3])
    return np.sum(x ** 2)


def scaled_by_hand(x):
    y = x.copy()
    for i in range(3):
        y[i] = y[i] * (2.0 + x[3])
    return np.sum(y ** 2)


def added(x):
    y = x
    for i in range(3):
        y = y.at[i].add(x[i] * x[i + 1])
    return np.sum(y ** 2)


def added_by_hand(x):
    y = x.copy()
    for i in range(3):
        y[i] = y[i] + x[i] * x[i + 1]
    return np.sum(y ** 2)


def int_arithmetic(x):
    n = len(x)
    k = 0
    while k < n - 1:
        j = n - 1 - k
        x = x.at[j].divide(1.5 + x[0] * x[0]).at[k // 2].max(x[j] - 0.5)
        k += 2
    last = x.shape[0] - 1
    return np.sum(np.sin(x.at[min(last, 2)].power(2.0).at[last].apply(np.cos)))


def int_arithmetic_by_hand(x):
    x = x.copy()
    n, k = len(x), 0
    while k < n - 1:
        j, old = n - 1 - k, x.copy()                # the update's operands read the old x
        x[j] = x[j] / (1.5 + old[0] * old[0])
        x[k // 2] = np.maximum(x[k // 2], old[j] - 0.5)
        k += 2
    x[2] = x[2] ** 2.0
    x[3] = np.cos(x[3])
    return np.sum(np.sin(x))


def differences_of(gradient):
    """The Jacobian of `gradient` at X by central differences, one row per component."""
    return np.array([numerical_grad(lambda v, k=k: float(gradient(v)[k]), (X,))
                     for k in range(len(X))])


CASES = [(scaled, scaled_by_hand), (added, added_by_hand),
         (int_arithmetic, int_arithmetic_by_hand)]


@pytest.mark.slow
@pytest.mark.parametrize("form, by_hand", CASES, ids=lambda f: f.__name__)
def test_grad_jvp_and_hessian_match_the_numpy_form(form, by_hand):
    x = X.copy()
    expected = numerical_grad(by_hand, (X,))
    np.testing.assert_allclose(grad(form)(x), expected, rtol=1e-6, atol=1e-8)
    value, tangent = jvp(form, (x,), (DIRECTION.copy(),))
    assert float(value) == pytest.approx(by_hand(X), rel=1e-12)
    assert float(tangent) == pytest.approx(float(expected @ DIRECTION), rel=1e-6)
    np.testing.assert_allclose(jacfwd(form)(x), grad(form)(x), rtol=1e-12)
    np.testing.assert_allclose(hessian(form)(x), differences_of(grad(form)), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_array_equal(x, X)           # the argument is not written


@pytest.mark.parametrize("form, by_hand", CASES, ids=lambda f: f.__name__)
def test_vmap_and_jit_match_the_numpy_form(form, by_hand):
    batch = np.stack([X, X - 1.0, 0.5 * X])
    np.testing.assert_allclose(vmap(form)(batch.copy()), [by_hand(b) for b in batch],
                               rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(form))(batch.copy()),
                               [grad(form)(b) for b in batch], rtol=1e-12)
    assert float(jit(form)(X.copy())) == pytest.approx(by_hand(X), rel=1e-12)


@pytest.mark.slow
def test_jit_of_grad_matches_the_plain_gradient():
    np.testing.assert_allclose(jit(grad(added))(X.copy()), grad(added)(X.copy()), rtol=1e-12)


def accumulated(x, index):
    y = x * 1.0
    np.add.at(y, index, x[0] * x[2])        # repeated entries add each update
    y = x.at[index].add(x[1] * x[3])
    return np.sum(y * np.cos(y))


def accumulated_by_hand(x, index):
    y = x.copy()
    for i in index:
        y[i] += x[1] * x[3]
    return np.sum(y * np.cos(y))


@pytest.mark.slow
def test_forward_mode_of_np_add_at_matches_finite_differences():
    index = np.array([1, 1, 3])
    x, direction = X.copy(), DIRECTION.copy()
    expected = numerical_grad(lambda v: accumulated_by_hand(v, index), (X,))
    value, tangent = jvp(lambda v: accumulated(v, index), (x,), (direction,))
    assert float(value) == pytest.approx(accumulated_by_hand(X, index), rel=1e-12)
    assert float(tangent) == pytest.approx(float(expected @ DIRECTION), rel=1e-6)
    np.testing.assert_allclose(jacfwd(accumulated)(x, index), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hessian(accumulated)(x, index),
                               differences_of(lambda v: grad(accumulated)(v, index)),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(direction, DIRECTION)     # the caller's tangent is kept
    np.testing.assert_array_equal(x, X)


def rows_accumulated(x):
    y = x * 2.0
    np.add.at(y, np.array([0, 0]), x[1] * x[1])
    return y


def written_argument(x):
    np.add.at(x, np.array([2, 2]), x[0] * x[1])
    return x * x


def test_jacfwd_of_an_accumulation_and_of_an_argument_written_in_place():
    x0, x1 = X[0], X[1]
    expected = 2.0 * np.eye(4)
    expected[0, 1] += 2.0 * 2 * x1
    np.testing.assert_allclose(jacfwd(rows_accumulated)(X.copy()), expected, rtol=1e-12)
    x, direction = X.copy(), DIRECTION.copy()
    value, tangent = jvp(written_argument, (x,), (direction,))
    written = X.copy()
    written[2] += 2 * x0 * x1
    d_written = DIRECTION.copy()
    d_written[2] += 2 * (DIRECTION[0] * x1 + x0 * DIRECTION[1])
    np.testing.assert_allclose(value, written * written, rtol=1e-12)
    np.testing.assert_allclose(tangent, 2 * written * d_written, rtol=1e-12)
    np.testing.assert_array_equal(direction, DIRECTION)     # written on a copy


def index_parameter(x, i):              # an int or an index array: checked at run time
    return np.sum(np.sin(x.at[..., i].multiply(x[0, 0] + 2.0).at[:, i].max(x[1, 1])))


def index_parameter_by_hand(x, i):
    y = x.copy()
    y[..., i] = y[..., i] * (x[0, 0] + 2.0)
    y[:, i] = np.maximum(y[:, i], x[1, 1])
    return np.sum(np.sin(y))


M = np.array([[0.7, -1.3, 0.4], [1.1, -0.6, 0.2]])


@pytest.mark.slow
@pytest.mark.parametrize("i", [1, np.array([2, -2]), np.array([True, False, True])],
                         ids=["int", "array", "mask"])
def test_an_index_held_in_a_parameter_is_checked_at_run_time(i):
    m = M.copy()
    expected = numerical_grad(lambda v: index_parameter_by_hand(v, i), (M,))
    np.testing.assert_allclose(grad(index_parameter)(m, i), expected, rtol=1e-6, atol=1e-8)
    direction = np.arange(6.0).reshape(2, 3) / 7
    _, tangent = jvp(lambda v: index_parameter(v, i), (m,), (direction,))
    assert float(tangent) == pytest.approx(float(np.sum(expected * direction)), rel=1e-6)
    assert float(jit(index_parameter)(m, i)) == pytest.approx(index_parameter_by_hand(M, i),
                                                              rel=1e-12)
    np.testing.assert_array_equal(m, M)


@pytest.mark.slow
@pytest.mark.parametrize("i", [np.array([0, 2, 0]), np.array([1, -2])], ids=["twice", "negative"])
def test_an_index_array_with_a_repeated_entry_raises_at_the_users_line(i):
    line = inspect.getsourcelines(index_parameter)[1] + 1

    def at_fixed_index(v):       # a def: Python 3.10 cannot tell lambdas on a line apart
        return index_parameter(v, i)

    for run in (lambda: grad(index_parameter)(M.copy(), i),
                lambda: jvp(at_fixed_index, (M.copy(),), (M.copy(),)),
                lambda: vmap(index_parameter, in_axes=(0, None))(np.stack([M, M]), i),
                lambda: jit(index_parameter)(M.copy(), i)):
        with pytest.raises(ValueError, match=f":{line}:.*selects an element twice") as info:
            run()
        assert "x.at[..., i]" in str(info.value)            # the line, with a caret


def batched_index(x, i):
    return np.sum(x.at[i].divide(1.0 + x[0] ** 2) * x)


def batched_index_by_hand(x, i):
    y = x.copy()
    y[i] = y[i] / (1.0 + x[0] ** 2)
    return np.sum(y * x)


def test_vmap_over_the_index_checks_each_example():
    batch, indices = np.stack([X, X - 1.0]), np.array([[1, 3], [0, 2]])
    np.testing.assert_allclose(vmap(batched_index)(batch, indices),
                               [batched_index_by_hand(b, i) for b, i in zip(batch, indices)],
                               rtol=1e-12)
    np.testing.assert_allclose(
        vmap(grad(batched_index))(batch, indices),
        [numerical_grad(lambda v, i=i: batched_index_by_hand(v, i), (b,))
         for b, i in zip(batch, indices)], rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="selects an element twice"):
        vmap(batched_index)(batch, np.array([[1, 3], [2, 2]]))


def two_index_arrays(x, i, j):
    return np.sum(x.at[i, j].multiply(2.0))


def test_two_index_arrays_are_refused_at_their_line():
    with pytest.raises(TransformError, match="index array") as info:
        grad(two_index_arrays)(M.copy(), np.array([0, 1]), np.array([1, 1]))
    assert info.value.lineno == inspect.getsourcelines(two_index_arrays)[1] + 1


LIMIT = 3


def names_of_every_kind(x, p):
    n = len(x)
    k = 0
    for i in range(3):
        j = n - 1 - i
        k += 2
        m = x.shape[0] // 2 + LIMIT
        q = p + 1
        r = i / 2
        s = min(i, LIMIT)
        for a, b in enumerate(x):
            c = a * b
        u, w = 1, 2
        h = 0
        h = x[0]
        z = [t for t in range(3)]
        f = True
    return x + q + r + s + u + w + h + z[0] + c + f + m + k + j


def test_int_names_follow_every_binding():
    fn = parse(names_of_every_kind)
    assert IntNames(fn, fn.node).names == {"n", "k", "i", "j", "m", "s", "a"}


def nested_scopes(x):
    for i in range(2):
        x = x * (1.0 + i)
    k = 0
    z = [n for n in range(3)]
    n = 1

    def scaled_at(i):                  # its own `i`: an index array below
        return x.at[i].multiply(2.0)
    return np.sum(scaled_at(np.array([1, 1]))) + z[0] + n + k


def test_a_name_a_nested_scope_binds_is_not_known_to_be_an_int():
    fn = parse(nested_scopes)
    assert IntNames(fn, fn.node).names == {"k"}
    with pytest.raises(ValueError, match="selects an element twice"):
        grad(nested_scopes)(X.copy())
