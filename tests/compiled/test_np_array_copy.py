"""`np.array(x)` of an array under `jit`: a copy of any rank (Numba's own `np.array`
takes an array only as a sequence of numbers, and refused a matrix with an error inside
Numba's sources), written without touching the caller's array."""
from __future__ import annotations

import numpy as np
import pytest

from transformer import grad, jit, vmap
from transformer.test_util import numerical_grad

M = np.linspace(-1.0, 2.0, 6).reshape(2, 3)


def first_set_to_one(m):
    y = np.array(m)
    y[0, 0] = 1.0
    return np.sum(y * m)


def sum_of_squares_of_copy(v):
    y = np.array(v)
    return np.sum(y * y) + 0.5


def test_jit_of_np_array_of_a_matrix_copies_it():
    m = M.copy()
    assert jit(first_set_to_one)(m) == first_set_to_one(M.copy())
    np.testing.assert_array_equal(m, M)                  # the caller's array is untouched


@pytest.mark.slow
def test_jit_of_grad_and_of_vmap_through_np_array_of_a_matrix():
    np.testing.assert_allclose(jit(grad(first_set_to_one))(M),
                               numerical_grad(first_set_to_one, (M,)), rtol=1e-6, atol=1e-9)
    batch = np.stack([M, 2.0 * M, M - 1.0])
    np.testing.assert_allclose(jit(vmap(first_set_to_one))(batch),
                               [first_set_to_one(m) for m in batch], rtol=1e-12)


def test_np_array_of_a_vector_a_number_and_a_list_still_compile():
    assert jit(sum_of_squares_of_copy)(np.arange(4.0)) == 14.5
    assert jit(sum_of_squares_of_copy)(2.5) == 6.75

    def from_list(a, b):
        pair = np.array([a, b])
        return np.sum(pair * pair)
    assert jit(from_list)(1.5, 2.0) == 6.25
