"""Held-out check: for every function of the corpus, vmap over a stack of inputs equals
a Python loop over the examples (python backend for all, Numba for every function in one
compiled module per strategy)."""
import numpy as np
import pytest

from tests import vmap_corpus as corpus
from transformer import jit, show_vmap, vmap


def stack(seed=0, batch=5, n=6):
    return np.random.default_rng(seed).uniform(0.05, 1.0, size=(batch, n))


def loop(f, xs):
    results = [f(x) for x in xs]
    if isinstance(results[0], tuple):
        return tuple(np.array(r) for r in zip(*results))
    return np.array(results)


def assert_same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("f", corpus.CORPUS, ids=lambda f: f.__name__)
def test_vmap_equals_python_loop(f):
    xs = stack()
    assert_same(vmap(f)(xs), loop(f, xs))


@pytest.mark.parametrize("f", corpus.MATRIX_CORPUS, ids=lambda f: f.__name__)
def test_vmap_of_matrix_functions_equals_python_loop(f):
    xs = np.random.default_rng(1).normal(size=(4, 3, 5))
    assert_same(vmap(f)(xs), loop(f, xs))


@pytest.mark.parametrize("f", corpus.CORPUS, ids=lambda f: f.__name__)
def test_strategy_chosen_per_function(f):
    text = show_vmap(f)
    expected = "loop" if f in corpus.LOOPED else "vectorize"
    assert f"vmap: {expected} strategy" in text


@pytest.mark.parametrize("f", [corpus.elementwise, corpus.prefix_sums, corpus.branchy],
                         ids=lambda f: f.__name__)
def test_forced_loop_strategy_agrees(f):
    xs = stack(2)
    assert "vmap: loop strategy" in show_vmap(f, method="loop")
    assert_same(vmap(f, method="loop")(xs), loop(f, xs))


def test_vectorize_refuses_batched_control_flow_at_the_users_line():
    from transformer import TransformError
    with pytest.raises(TransformError) as info:
        vmap(corpus.branchy, method="vectorize")(stack())
    assert "vmap_corpus.py" in str(info.value) and "if" in str(info.value)


def all_vectorized(x):
    return (corpus.elementwise(x), corpus.scalar_times_vector(x), corpus.reductions(x),
            corpus.matvec_fixed(x), corpus.vecmat(x), corpus.indexing(x),
            corpus.accumulate_loop(x), corpus.prefix_sums(x), corpus.fixed_while(x),
            corpus.math_builtins(x), corpus.where_clip(x), corpus.argmax_gather(x),
            corpus.shapes(x), corpus.calls_helper(x), corpus.self_outer(x))


def all_looped(x):
    return (corpus.branchy(x), corpus.newton_sqrt(x), corpus.data_dependent_count(x),
            corpus.scatter_write(x), corpus.pick_by_first(x))


@pytest.fixture(scope="module")
def compiled():
    return jit(vmap(all_vectorized)), jit(vmap(all_looped), parallel=True)


@pytest.mark.slow
def test_compiled_vectorized_corpus_equals_python_loop(compiled):
    xs = stack(3)
    assert "vmap: vectorize strategy" in show_vmap(all_vectorized)
    assert_same(compiled[0](xs), loop(all_vectorized, xs))


@pytest.mark.slow
def test_compiled_looped_corpus_with_prange_equals_python_loop(compiled):
    xs = stack(4)
    for f in (corpus.branchy, corpus.newton_sqrt, corpus.data_dependent_count):
        text = show_vmap(f)
        assert "vmap: loop strategy" in text and "prange(" in text
    assert_same(compiled[1](xs), loop(all_looped, xs))


def guarded_log(x):
    if x > 0.0:
        y = np.log(x)
    else:
        y = -x
    return y


def test_batched_if_never_runs_both_branches_for_an_example():
    xs = np.array([2.0, -1.0, 0.5, -3.0])
    with np.errstate(all="raise"):       # log of a negative example would raise
        got = vmap(guarded_log)(xs)
        compiled = jit(vmap(guarded_log), parallel=True)(xs)
    want = [guarded_log(x) for x in xs]
    np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(compiled, want)
