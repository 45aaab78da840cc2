"""jit never loses a write through an alias of a short vector: scalarization (which turns a
vector of <= 4 elements into scalars) must leave aliased vectors as arrays, so every result
equals NumPy's on the same function."""
import numpy as np
import pytest

from transformer import jit


def augment_alias(y):
    z = y
    z += 1.0
    return y


def augment_row_view(y):
    z = y[0]
    z += 1.0
    z *= 2.0
    return y


def augment_whole_slice(y):
    y[:] += 1.0
    return y


def store_through_alias(y):
    z = y
    z[1] = 5.0
    return y[0] + y[1]


def unpacked_alias(y, w):
    a, b = y, w
    a += b
    return y * 1.0


def _bump(v):
    v += 1.0
    return v


def through_helper(y):
    w = _bump(y)
    return y + w


def fresh_vector(y):
    d = y * 2.0                 # a fresh vector: scalarizing its += is right and kept
    d += 1.0
    return np.sum(d) + y[0]


def scalar_from_fresh_vector(y):
    d = y * 2.0
    s = d[0]                    # a scalar: its += writes no array, d stays scalars
    s += 1.0
    return s + np.sum(d)


CASES = [
    (augment_alias, [(3,)]),
    (augment_alias, [(4,)]),
    (augment_row_view, [(2, 3)]),
    (augment_whole_slice, [(3,)]),
    (store_through_alias, [(3,)]),
    (unpacked_alias, [(3,), (3,)]),
    (through_helper, [(2,)]),
    (fresh_vector, [(3,)]),
    (scalar_from_fresh_vector, [(3,)]),
]


def _arguments(shapes):
    rng = np.random.default_rng(7)
    return [rng.standard_normal(shape) for shape in shapes]


@pytest.mark.parametrize("fun,shapes", CASES,
                         ids=[f"{f.__name__}-{s}" for f, s in CASES])
def test_jit_keeps_writes_through_aliases_of_short_vectors(fun, shapes):
    args = _arguments(shapes)
    expected = fun(*[a.copy() for a in args])
    got_args = [a.copy() for a in args]
    got = jit(fun)(*got_args)
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    # the caller's arrays are changed exactly as NumPy changes them
    changed = [a.copy() for a in args]
    fun(*changed)
    for g, c in zip(got_args, changed):
        np.testing.assert_allclose(g, c, rtol=1e-13)


def test_augmented_alias_of_a_parameter_is_not_split_into_scalars():
    text = jit(augment_alias).source(np.zeros(3))
    assert "z_0" not in text and "z0" not in text


@pytest.mark.parametrize("fun", [fresh_vector, scalar_from_fresh_vector])
def test_fresh_vector_with_augmented_assignment_is_still_split_into_scalars(fun):
    text = jit(fun).source(np.zeros(3))
    assert "d_0" in text or "d0" in text
