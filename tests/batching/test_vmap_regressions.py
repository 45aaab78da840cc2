"""Regressions for batching under jit: compiled batched transformations against a Python
loop over the unbatched transformation (the oracle)."""
import numpy as np
import pytest

from benchmarks.workloads import lj_energy
from transformer import grad, jit, jvp, vmap
from transformer.test_util import numerical_grad


rng = np.random.default_rng(3)
CONFIGS = rng.uniform(0.0, 3.0, size=(4, 6, 3))


@pytest.mark.slow
def test_parallel_jit_of_batched_gradient_compiles_helpers_serially():
    # Helpers the top function calls used to be compiled parallel too; the nested
    # parfors crashed Numba ("key already in dictionary: 'd_1'").
    per = jit(vmap(grad(lj_energy), in_axes=(0, None, None, None, None)), parallel=True)
    got = per(CONFIGS, 1.0, 1.0, 3.0, 2.5)
    single = grad(lj_energy)
    for i, pos in enumerate(CONFIGS):
        np.testing.assert_allclose(got[i], single(pos, 1.0, 1.0, 3.0, 2.5), rtol=1e-10)


def piecewise(x):
    if x > 1.0:
        return np.sin(x) * x
    return x * x


@pytest.mark.slow
def test_vmap_of_jvp_under_a_batched_branch_returns_a_tuple():
    # The returned tuple is built under a branch that depends on the batch; its structure
    # used to be lost, so the outputs came back stacked as one (B, 2) array (python) or
    # failed to compile (cpu).
    xs, dxs = np.linspace(-1.0, 2.5, 5), rng.normal(size=5)
    single = jvp(piecewise)
    want = [single(x, dx) for x, dx in zip(xs, dxs)]
    batched = vmap(jvp(piecewise))
    for got in (batched(xs, dxs), jit(batched)(xs, dxs)):
        assert isinstance(got, tuple) and len(got) == 2
        for k in range(2):
            assert got[k].shape == (5,)
            np.testing.assert_allclose(got[k], [w[k] for w in want], rtol=1e-12)


def rnn_cell(carry, x):
    h, c = carry
    h = np.tanh(h * 0.5 + x + c)
    return (h, c + 0.1 * h), h


def cell_twice(h0, x):
    state = (h0, 0.25)
    state, y = rnn_cell(state, x)
    (h, c), y2 = rnn_cell(state, -x)
    return y + y2 * h - c


@pytest.mark.parametrize("compiled", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_vmap_of_a_helper_taking_a_tuple_of_batched_values(compiled):
    # The batched helper took the tuple for one array with a batch axis (`carry[:, 0]`)
    # and failed with AttributeError inside the generated code; such a call now runs the
    # loop strategy, one example per row.
    hs = np.array([0.3, -0.4, 1.2])
    batched = vmap(cell_twice, in_axes=(0, None))
    got = (jit(batched) if compiled else batched)(hs, 0.7)
    np.testing.assert_allclose(got, [cell_twice(h, 0.7) for h in hs], rtol=1e-13)


def pair_product(a, b):
    return a * b + np.sin(a)


def pair_overlap(a, b):
    d = a - b
    return np.exp(-np.dot(d, d)) * np.sum(a * b)


PAIR_PRODUCTS = vmap(vmap(pair_product, in_axes=(0, None)), in_axes=(None, 0))
PAIR_OVERLAPS = vmap(vmap(pair_overlap, in_axes=(0, None)), in_axes=(None, 0))
PAIR_OVERLAPS_LOOP = vmap(vmap(pair_overlap, in_axes=(0, None)), in_axes=(None, 0),
                          method="loop")


def all_pair_products(x):
    return np.sum(PAIR_PRODUCTS(x, x))


def all_pair_overlaps(pos):
    return np.sum(PAIR_OVERLAPS(pos, pos))


def all_pair_overlaps_loop(pos):
    return np.sum(PAIR_OVERLAPS_LOOP(pos, pos))


def _pairwise_sum(pair):
    return lambda x: sum(pair(a, b) for a in x for b in x)


def test_grad_of_a_vmap_inside_a_vmap_matches_finite_differences():
    # the outer vmap applies the inner one's operand alignment example by example
    # (`align_each`); grad found no rule for it
    x = np.array([0.3, -0.5, 0.9])
    np.testing.assert_allclose(grad(all_pair_products)(x),
                               numerical_grad(_pairwise_sum(pair_product), (x,)), rtol=1e-6)


def test_grad_of_a_pairwise_dot_product_agrees_with_the_loop_strategy():
    # np.dot per pair is the inner vmap's `dot_both` applied example by example
    # (`dot_both_each`): its rules come from those of `dot_both` (the refusal of a helper
    # still without a rule: tests/batching/test_nested_vmap_grad.py)
    pos = rng.normal(size=(4, 3))
    want = numerical_grad(_pairwise_sum(pair_overlap), (pos,))
    np.testing.assert_allclose(grad(all_pair_overlaps)(pos), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(grad(all_pair_overlaps_loop)(pos), want, rtol=1e-6, atol=1e-9)
