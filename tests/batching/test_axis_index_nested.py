"""`axis_index` of an outer vmap read inside an inner vmap that runs as a loop over its
examples (a batched `if`): each example sees its own position on both axes, as a loop of
loops computes it, in plain Python and under jit."""
import numpy as np
import pytest

from transformer import axis_index, jit, vmap


def outer_inside_branch(x):
    s = x * axis_index("j")
    if x > 0.5:                     # batched condition: the inner vmap loops
        s = s + 100.0 * axis_index("i")
    return s


def outer_outside_branch(x):
    s = x * axis_index("i")
    if x > 0.5:
        s = s + 100.0 * axis_index("j")
    return s


X = np.arange(12.0).reshape(3, 4) / 10 + 0.2


def loop_of_loops(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = x[i, j]
            out[i, j] = v * j + (100.0 * i if v > 0.5 else 0.0)
    return out


def loop_of_loops_outside(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            v = x[i, j]
            out[i, j] = v * i + (100.0 * j if v > 0.5 else 0.0)
    return out


@pytest.mark.parametrize("fun, oracle", [(outer_inside_branch, loop_of_loops),
                                         (outer_outside_branch, loop_of_loops_outside)])
def test_outer_axis_index_inside_a_looped_inner_vmap_matches_a_loop_of_loops(fun, oracle):
    nested = vmap(vmap(fun, axis_name="j"), axis_name="i")
    np.testing.assert_array_equal(nested(X), oracle(X))


def test_the_inner_axis_mapped_over_the_other_array_axis():
    nested = vmap(vmap(outer_inside_branch, axis_name="j"), axis_name="i", in_axes=1)
    np.testing.assert_array_equal(nested(X.T.copy()), loop_of_loops(X))


@pytest.mark.slow
def test_jit_of_the_nested_loops_reads_both_indices():
    nested = jit(vmap(vmap(outer_inside_branch, axis_name="j"), axis_name="i"))
    np.testing.assert_array_equal(nested(X), loop_of_loops(X))
