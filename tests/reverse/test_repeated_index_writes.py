"""`x[index] = v` with an index array naming a position twice keeps one of the values
there (NumPy keeps the last): only that write has a derivative, the ones it replaced get
none (`runtime.kept_writes`). Oracle: central differences of the same function."""
import numpy as np
import pytest

from tests.gradcheck import assert_gradient_close, central_differences
from transformer import grad, hessian, jit, vjp

IDX = np.array([0, 2, 2, 4])
X = np.random.default_rng(1).normal(size=5)


def set_repeated(x):
    y = np.zeros(5)
    y[IDX] = x[:4] * 2.0
    return np.sum(y ** 2 * x)


def add_repeated(x):
    y = x * 1.0
    y[IDX] += x[1:] ** 2            # `y[IDX] = y[IDX] + ...`: one increment at position 2
    return np.sum(y ** 2)


def set_rows(x):
    y = np.zeros((5, 2))
    y[IDX, :] = np.outer(x[:4], np.ones(2)) * 3.0
    return np.sum(np.sin(y))


def set_one_value(x):
    y = np.zeros(5)
    y[IDX] = np.sum(x)              # broadcast: position 2 holds it once
    return np.sum(y ** 3)


def set_reversed(x):
    y = np.zeros(5)
    y[IDX[::-1]] = x[:4] * x[1:]
    return np.sum(y ** 2)


def set_list(x):
    y = np.zeros(5)
    y[[1, 1, 3]] = x[:3]
    return np.sum(y ** 2)


def set_by_at(x):
    y = np.zeros(5)
    y = y.at[IDX].set(x[:4] * 2.0)   # JAX's form, written as `y[IDX] = ...` on a copy
    return np.sum(y ** 2 * x)


ORACLE = {set_by_at: set_repeated}    # plain NumPy has no `.at`


def set_in_loop(x):
    y = np.zeros(5)
    for k in range(4):
        y[IDX[k]] = x[k] * 2.0      # an int read from an array: may repeat
    return np.sum(y ** 2)


PROGRAMS = [set_repeated, add_repeated, set_rows, set_one_value, set_reversed, set_list,
            set_by_at, set_in_loop]
COMPILED = [f for f in PROGRAMS if f is not set_list]     # Numba refuses a list index


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_grad_gives_only_the_kept_write_a_derivative(fn):
    expected = central_differences(ORACLE.get(fn, fn), (X.copy(),))
    assert_gradient_close(grad(fn)(X.copy()), expected, fn.__name__)


@pytest.mark.parametrize("fn", COMPILED, ids=lambda f: f.__name__)
def test_compiled_grad_gives_only_the_kept_write_a_derivative(fn):
    expected = central_differences(ORACLE.get(fn, fn), (X.copy(),))
    assert_gradient_close(jit(grad(fn))(X.copy()), expected, fn.__name__)


def second_differences(fn, x, h=1e-4):
    n = x.size
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            ei, ej = np.eye(n)[i] * h, np.eye(n)[j] * h
            out[i, j] = (fn(x + ei + ej) - fn(x + ei - ej) - fn(x - ei + ej)
                         + fn(x - ei - ej)) / (4 * h * h)
    return out


@pytest.mark.parametrize("compiled", [False, True])
def test_hessian_through_repeated_writes(compiled):
    h = (jit(hessian(set_repeated)) if compiled else hessian(set_repeated))(X.copy())
    np.testing.assert_allclose(h, second_differences(set_repeated, X.copy()), atol=1e-5)


def test_vjp_of_the_written_array():
    def written(x):
        y = np.zeros(5)
        y[IDX] = x[:4] * 2.0
        return y

    _, pullback = vjp(written, X.copy())
    (cotangent,) = pullback(np.arange(1.0, 6.0))
    # y[2] holds x[2] * 2 (the last write): x[1] reaches nothing
    np.testing.assert_allclose(cotangent, [2.0, 0.0, 6.0, 10.0, 0.0])


def test_a_range_loop_index_keeps_plain_indexing():
    def loop(x):
        out = np.zeros_like(x)
        for i in range(x.shape[0]):
            out[i] = x[i] ** 2
        return np.sum(out * x)

    text = jit(grad(loop)).source(X)
    assert "kept_writes" not in text and "bout[i]" in text
    assert "kept_writes(" in jit(grad(set_repeated)).source(X)


def neighbours(x):
    s = 0.0
    for i in range(x.shape[0] - 1):
        j = i + 1
        s = s + np.sin(x[i]) * x[j] * x[-1] + x[i, ...] * x[0]
    return s


@pytest.mark.parametrize("compiled", [False, True], ids=["python", "jit"])
def test_reads_that_name_one_position_accumulate_by_plain_indexing(compiled):
    """A loop's `x[i]`, `x[i + 1]` and literal `x[-1]` name one position each: their
    derivative is added by `bx[i] = bx[i] + ...` (np.add.at is for what may repeat)."""
    transformed = jit(grad(neighbours)) if compiled else grad(neighbours)
    text = transformed.source(X) if compiled else grad(neighbours).source()
    assert "scatter_add" not in text and "bx[i] = bx[i] + " in text
    assert_gradient_close(transformed(X.copy()), central_differences(neighbours, (X.copy(),)),
                          "neighbours")
    assert "scatter_add(bx, IDX" in grad(lambda x: np.sum(x[IDX] ** 2)).source()


# ------------------------------------------------- reads: every repeat adds its derivative

M = np.random.default_rng(2).normal(size=(3, 4))
ROWS = np.array([0, 2, 2, 1])


def rows_and_slice(x):
    return np.sum(x[ROWS, :] ** 2)


def columns(x):
    return np.sum(np.sin(x[:, ROWS]))


def rows_of_one_column(x):
    return np.sum(x[ROWS[:3], 1] ** 3)


def columns_of_one_row(x):
    return np.sum(x[1, ROWS] ** 2)


def last_axis(x):
    return np.sum(x[..., ROWS] ** 2)


@pytest.mark.parametrize("fn", [rows_and_slice, columns, rows_of_one_column,
                                columns_of_one_row, last_axis], ids=lambda f: f.__name__)
def test_compiled_reads_through_an_index_array_among_slices_add_every_repeat(fn):
    # Numba's `target[index] += values` added a repeated position once
    expected = central_differences(fn, (M.copy(),))
    assert_gradient_close(grad(fn)(M.copy()), expected, fn.__name__)
    assert_gradient_close(jit(grad(fn))(M.copy()), expected, fn.__name__)
