"""`len` under vmap: of an array it is the example's length, of a list or tuple built
from batched values it is the item count (it used to read the array's shape from the
list and fail inside the generated code)."""
from __future__ import annotations

import numpy as np
import pytest

from transformer import grad, jit, vmap
from transformer.test_util import numerical_grad

XS = np.linspace(-1.0, 1.5, 12).reshape(4, 3)


def scaled_by_list_length(x):
    parts = [x, x * 2.0, np.sin(x)]
    return parts[0] * len(parts) + parts[2]


def scaled_by_tuple_length(x):
    parts = (np.tanh(x), x * x)
    return np.sum(parts[1]) * len(parts) + np.sum(parts[0])


def scaled_by_row_length(x):
    return np.sum(x * x) * len(x)


@pytest.mark.parametrize("fn", [scaled_by_list_length, scaled_by_tuple_length,
                                scaled_by_row_length], ids=lambda f: f.__name__)
def test_vmap_of_len_matches_the_per_example_loop(fn):
    want = np.stack([fn(x) for x in XS])
    np.testing.assert_allclose(vmap(fn)(XS), want, rtol=1e-12)
    np.testing.assert_allclose(vmap(fn, method="loop")(XS), want, rtol=1e-12)


@pytest.mark.parametrize("fn", [scaled_by_tuple_length, scaled_by_row_length],
                         ids=lambda f: f.__name__)
def test_vmap_of_grad_through_len_matches_central_differences(fn):
    want = np.stack([numerical_grad(fn, (x,)) for x in XS])
    np.testing.assert_allclose(vmap(grad(fn))(XS), want, rtol=1e-6, atol=1e-9)


def test_jit_of_vmap_of_len_of_a_list_matches_the_plain_run():
    want = np.stack([scaled_by_list_length(x) for x in XS])
    np.testing.assert_allclose(jit(vmap(scaled_by_list_length))(XS), want, rtol=1e-12)
