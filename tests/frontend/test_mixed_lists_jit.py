"""A list literal mixing a float and arrays, read only at constant indices, unpacked,
measured or returned, compiles under jit (`transformer.const_lists` writes it as a tuple):
Numba refused every one of these with "Cannot __getitem__ on a literal list" before.
A list used otherwise stays a list, and Numba's refusal is a located TransformError that
says how to write it. Oracles: the plain Python run, central differences, and a loop over
the examples."""
import gast
import numpy as np
import pytest

from transformer import TransformError, grad, jit, vmap
from transformer.const_lists import lists_as_tuples
from transformer.frontend import parse
from transformer.test_util import numerical_grad

X = np.linspace(0.1, 0.7, 4)
BATCH = np.stack([X, 1.5 * X - 0.2, 0.3 - X])


def constant_reads(x):
    h = np.tanh(x)
    lst = [np.sum(x), h]
    return lst[0] * np.sum(lst[1])


def unpacked(x):
    lst = [np.sum(x * x), np.sin(x), np.outer(x, x)]
    a, b, m = lst
    return a * np.sum(b) + np.sum(m @ b)


def negative_indices(x):
    lst = [np.max(x), np.exp(x)]
    return lst[-2] * np.sum(lst[-1])


def rebuilt_in_a_loop(x):
    acc = 0.0
    for i in range(3):
        lst = [np.sum(x) * i, np.cos(x * i)]
        acc = acc + lst[0] * np.sum(lst[1] * x)
    return acc


DIFFERENTIABLE = [constant_reads, unpacked, negative_indices, rebuilt_in_a_loop]


@pytest.mark.every_case
@pytest.mark.parametrize("f", DIFFERENTIABLE, ids=lambda f: f.__name__)
def test_jit_of_a_mixed_list(f):
    np.testing.assert_allclose(jit(f)(X), f(X), rtol=1e-12)


@pytest.mark.parametrize("f", DIFFERENTIABLE, ids=lambda f: f.__name__)
def test_jit_grad_of_a_mixed_list(f):
    np.testing.assert_allclose(jit(grad(f))(X), numerical_grad(f, (X,)), rtol=1e-6,
                               atol=1e-9)


@pytest.mark.parametrize("f", DIFFERENTIABLE, ids=lambda f: f.__name__)
def test_jit_vmap_of_a_mixed_list(f):
    expected = np.array([f(row) for row in BATCH])
    np.testing.assert_allclose(jit(vmap(f))(BATCH), expected, rtol=1e-12)


def measured(x):
    lst = [np.sum(x), x * x]
    return len(lst) * lst[0] + np.sum(lst[1])


def test_jit_and_jit_grad_of_len_of_a_mixed_list():
    # (vmap of len of a list is left out: vmap reads it as an array's length, even without jit)
    np.testing.assert_allclose(jit(measured)(X), measured(X), rtol=1e-12)
    np.testing.assert_allclose(jit(grad(measured))(X), numerical_grad(measured, (X,)),
                               rtol=1e-6)


# ---------------------------------------------------------------- items are shared

def put(a, i, v):
    a[i] = v


def item_written(x):
    h = x.copy()
    lst = [np.sum(x), h]
    put(lst[1], 2, 3.0 * lst[0])
    lst[1][0] = -1.0
    return h


def test_a_write_into_an_item_reaches_the_array():
    np.testing.assert_array_equal(jit(item_written)(X), item_written(X))


# ---------------------------------------------------------------- returned lists

def returns_the_list(x):
    lst = [np.sum(x), np.tanh(x)]
    return lst


def returns_it_in_a_tuple(x):
    lst = [np.sum(x), np.tanh(x)]
    return lst[0] * 2.0, lst


def _assert_same_nested(got, expected):
    if isinstance(expected, (list, tuple)):
        assert type(got) is type(expected)
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            _assert_same_nested(g, e)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-12)


@pytest.mark.parametrize("f", [returns_the_list, returns_it_in_a_tuple],
                         ids=lambda f: f.__name__)
def test_a_returned_list_is_a_list_to_the_caller(f):
    _assert_same_nested(jit(f)(X), f(X))


# ---------------------------------------------------------------- which lists convert

def passed_on(x):
    lst = [np.sum(x), x]
    return helper_reads(lst)


def helper_reads(lst):
    return lst[0]


def aliased(x):
    lst = [np.sum(x), x]
    other = lst
    return other[0]


def iterated(x):
    lst = [np.sum(x), x]
    s = 0.0
    for v in lst:
        s = s + np.sum(v)
    return s


def item_assigned(x):
    lst = [np.sum(x), np.tanh(x)]
    lst[0] = 2.0
    return lst[0] * np.sum(lst[1])


def appended(x):
    lst = [np.sum(x)]
    lst.append(np.tanh(x))
    return lst[0] * np.sum(lst[1])


def computed_index(x):
    lst = [np.sum(x), np.tanh(x)]
    s = 0.0
    for i in range(2):
        s = s + np.sum(lst[i])
    return s


def bound_twice(x):
    lst = [np.sum(x), x]
    if x[0] > 0.0:
        lst = [np.max(x), x]
    return lst[0]


def read_in_a_lambda(x):
    lst = [np.sum(x), x]
    first = lambda: lst[0]  # noqa: E731
    return first()


def _kinds(f, returns=False) -> dict:
    """Name -> 'tuple' or 'list' for each name `f` binds to a literal, after the pass."""
    node = lists_as_tuples(parse(f), returns).node
    return {s.targets[0].id: type(s.value).__name__.lower() for s in gast.walk(node)
            if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name) and
            isinstance(s.value, (gast.List, gast.Tuple))}


@pytest.mark.parametrize("f", [constant_reads, unpacked, negative_indices, measured,
                               rebuilt_in_a_loop, item_written])
def test_lists_read_like_tuples_become_tuples(f):
    assert _kinds(f) == {"lst": "tuple"}


@pytest.mark.parametrize("f", [passed_on, aliased, iterated, item_assigned, appended,
                               computed_index, bound_twice, read_in_a_lambda])
def test_other_lists_stay_lists(f):
    assert set(_kinds(f).values()) == {"list"}


def test_a_returned_list_converts_only_where_the_caller_gets_a_list_back():
    assert _kinds(returns_the_list) == {"lst": "list"}
    assert _kinds(returns_the_list, returns=True) == {"lst": "tuple"}


# ---------------------------------------------------------------- refusals

@pytest.mark.slow
def test_a_mixed_list_iterated_compiles():
    # the loop is written out (`transformer.container_loops`), so the list is read at
    # constant indices and compiles as a tuple; Numba refused it before
    np.testing.assert_allclose(jit(iterated)(X), iterated(X), rtol=1e-12)
    np.testing.assert_allclose(jit(grad(iterated))(X), numerical_grad(iterated, (X,)),
                               rtol=1e-6)
    np.testing.assert_allclose(jit(vmap(iterated))(BATCH), [iterated(r) for r in BATCH],
                               rtol=1e-12)


@pytest.mark.parametrize("f, line", [(item_assigned, "lst[0] = 2.0"),
                                     (appended, "lst.append(np.tanh(x))")],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_a_mixed_list_used_otherwise_is_refused_at_the_users_line(f, line):
    with pytest.raises(TransformError) as info:
        jit(f)(X)
    error = info.value
    assert error.filename == __file__
    assert error.line is not None and error.line.strip() == line
    assert "different types" in str(error)
    assert "reads it at constant indices" in str(error) and "tuple" in str(error)


def tuple_rebuilt(x):
    t = (np.sum(x), np.tanh(x))
    t = (2.0, t[1])
    return t[0] * np.sum(t[1])


def test_the_hint_for_an_item_write_compiles():
    """The refusal of an item write suggests a new tuple instead; that gives the value."""
    with pytest.raises(TransformError) as info:
        jit(item_assigned)(X)
    assert "t = (v, t[1])" in info.value.hint
    np.testing.assert_allclose(jit(tuple_rebuilt)(X), item_assigned(X), rtol=1e-12)
