"""grad of a vmap inside a vmap (the pairwise idiom) where the pair function is a product:
the outer vmap applies the inner one's `dot_left`, `outer_both`, ... example by example,
and those per-example helpers take their rules from the helper's own. Oracles: finite
differences of the plain double loop, and the outer vmap with method='loop'."""
import numpy as np
import pytest

from transformer import TransformError, grad, hessian, jacrev, jit, psum, vmap
from transformer.primitives.each_rules import per_example_rule
from transformer.templates import rule_from_source
from transformer.test_util import numerical_grad

rng = np.random.default_rng(11)
POS = rng.normal(size=(4, 3))
M = np.array([[1.0, 0.2, 0.0], [0.1, 2.0, 0.3], [0.0, 0.4, 1.5]])


def pair_dot(a, b):
    return np.dot(a, b)


def pair_form(a, b):
    return a @ M @ b


def pair_outer(a, b):
    return np.sum(np.outer(a, b) ** 2)


def pair_gauss(a, b):
    return np.exp(-np.dot(a - b, a - b))


def pair_inner(a, b):
    return np.inner(a, b) * np.sum(a)


def pairwise(pair, **options):
    return vmap(vmap(pair, in_axes=(0, None)), in_axes=(None, 0), **options)


def summed(pair, **options):
    mapped = pairwise(pair, **options)

    def total(x):
        return np.sum(mapped(x, x))
    return total


def loop_total(pair):
    return lambda x: sum(pair(a, b) for a in x for b in x)


PAIRS = [pair_dot, pair_form, pair_outer, pair_gauss, pair_inner]


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.__name__)
def test_grad_of_a_summed_pairwise_product_matches_finite_differences_and_the_loop(pair):
    got = grad(summed(pair))(POS)
    np.testing.assert_allclose(got, numerical_grad(loop_total(pair), (POS,)),
                               rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got, grad(summed(pair, method="loop"))(POS), rtol=1e-12)


@pytest.mark.slow                          # Numba compiles the per-example loops (~5 s)
@pytest.mark.parametrize("pair", [pair_form, pair_gauss, pair_outer], ids=lambda p: p.__name__)
def test_jit_of_grad_of_a_pairwise_product_matches_the_python_gradient(pair):
    np.testing.assert_allclose(jit(grad(summed(pair)))(POS), grad(summed(pair))(POS),
                               rtol=1e-12)


@pytest.mark.parametrize("pair", [pair_form, pair_inner], ids=lambda p: p.__name__)
def test_jacrev_of_pairwise_row_sums_of_an_asymmetric_product(pair):
    mapped = pairwise(pair)

    def row_sums(x):                       # row i: the pairs (x[i], b) for every b
        return np.sum(mapped(x, x), axis=0)
    want = np.stack([numerical_grad(lambda x, i=i: sum(pair(x[i], b) for b in x), (POS,))
                     for i in range(len(POS))])
    np.testing.assert_allclose(jacrev(row_sums)(POS), want, rtol=1e-6, atol=1e-8)


def pair_through(a, b, w):
    return np.tanh(np.dot(w @ a, b))


@pytest.mark.parametrize("inner, outer", [((0, None, None), (None, 0, None)),
                                          ((None, 0, None), (0, None, None))])
def test_grad_wrt_a_matrix_both_levels_share_sums_over_every_pair(inner, outer):
    mapped = vmap(vmap(pair_through, in_axes=inner), in_axes=outer)

    def total(x, w):
        return np.sum(mapped(x, x, w) ** 2)

    def loop(x, w):
        return sum(pair_through(a, b, w) ** 2 for a in x for b in x)
    got = grad(total, argnums=(0, 1))(POS, M)
    for argnum, g in enumerate(got):
        np.testing.assert_allclose(g, numerical_grad(loop, (POS, M), argnum),
                                   rtol=1e-6, atol=1e-8)


def test_hessian_of_a_summed_pairwise_bilinear_form_matches_finite_differences_of_grad():
    gradient = grad(summed(pair_form))
    x = POS[:3]
    want = np.stack([numerical_grad(lambda x, i=i: gradient(x).ravel()[i], (x,))
                     for i in range(x.size)]).reshape(x.shape * 2)
    np.testing.assert_allclose(hessian(summed(pair_form))(x), want, rtol=1e-6, atol=1e-8)


def test_grad_of_a_vmap_of_an_outer_product_matches_finite_differences():
    # vmap's per-example np.outer (outer_left) takes np.outer's adjoint for each example
    shared = np.array([0.5, -1.0, 2.0])
    mapped = vmap(pair_outer, in_axes=(0, None))

    def total(x, b):
        return np.sum(mapped(x, b))
    got = grad(total, argnums=(0, 1))(POS, shared)
    for argnum, g in enumerate(got):
        want = numerical_grad(lambda x, b: sum(pair_outer(a, b) for a in x), (POS, shared),
                              argnum)
        np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-8)


def share_of_pair(a, b):
    w = np.dot(a, b)
    return w / psum(w, "i")


def test_a_per_example_collective_without_a_rule_names_the_loop_strategy_which_differentiates():
    # psum over the inner axis is sum_batch of each outer example: its rule reads
    # `x.shape[0]`, which has no per-example form, so it is refused rather than guessed
    x = POS + 2.0

    def total(options):
        mapped = vmap(vmap(share_of_pair, in_axes=(0, None), axis_name="i"),
                      in_axes=(None, 0), **options)
        return lambda x: np.sum(mapped(x, x) ** 2)

    def loop(x):
        out = 0.0
        for b in x:
            w = np.array([np.dot(a, b) for a in x])
            out += np.sum((w / np.sum(w)) ** 2)
        return out
    with pytest.raises(TransformError, match="which a vmap inside a vmap makes") as info:
        grad(total({}))(x)
    assert "method='loop'" in info.value.hint and info.value.filename == __file__
    np.testing.assert_allclose(grad(total({"method": "loop"}))(x),
                               numerical_grad(loop, (x,)), rtol=1e-6, atol=1e-9)


XP = np.array([0.0, 0.5, 1.0, 2.0])


def ranked(a):
    return np.sum(np.sort(a) * np.arange(3.0))


def sampled(a):
    return np.sum(np.interp(a[:2], XP, a[2] * XP))


def pair_ranked(a, b):
    return ranked(a * b)


def diagonal(a):
    return np.sum(np.diag(a) @ a)


def kronecker(a):
    return np.sum(np.kron(a, a) ** 2)


def differences(a):
    return np.sum(np.diff(a) ** 2)


def convolved(a):
    return np.sum(np.convolve(a, np.array([0.5, -1.0])) ** 2)


trapezoid = getattr(np, "trapezoid", None) or np.trapz      # NumPy 2 renamed it


def integrated(a):
    return trapezoid(a ** 2)


def lower(a):
    return np.sum(np.tril(np.outer(a, a)) ** 2)


@pytest.mark.parametrize("fn", [ranked, sampled, diagonal, kronecker, differences, convolved,
                                integrated, lower], ids=lambda f: f.__name__)
def test_grad_of_a_vmap_of_a_structural_function_matches_finite_differences(fn):
    # vmap runs np.sort, np.interp, np.diag, ... example by example (sort_each, ...), whose
    # rules come from the function's own; np.outer of a batch (outer_both) takes np.outer's
    x = rng.uniform(0.1, 1.9, size=(4, 3))
    mapped = vmap(fn)

    def total(x):
        return np.sum(mapped(x) ** 2)
    np.testing.assert_allclose(grad(total)(x),
                               numerical_grad(lambda x: sum(fn(a) ** 2 for a in x), (x,)),
                               rtol=1e-6, atol=1e-8)


def test_grad_of_a_summed_pairwise_sort_matches_finite_differences():
    np.testing.assert_allclose(grad(summed(pair_ranked))(POS),
                               numerical_grad(loop_total(pair_ranked), (POS,)),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("body", ["d[x] += d[z] * x.shape[0]",
                                  "d[x] += d[z] if x > 0.0 else 0.0",
                                  "d[x] += d[z][0]",
                                  "d[x] += np.sum(d[z], axis=0)"])
def test_a_rule_without_a_per_example_form_derives_none(body):
    # the batch axis would read as an example axis: such a helper keeps the refusal
    rule = rule_from_source(f"def rule(z, x):\n    {body}\n", {"np": np})
    assert per_example_rule(rule, (True,)) is None


def test_a_derived_adjoint_sums_what_a_shared_parameter_receives_over_the_batch():
    rule = rule_from_source("def rule(z, x, y):\n    d[x] += np.dot(d[z], y)\n"
                            "    d[y] += np.dot(x, d[z])\n", {"np": np})
    source = per_example_rule(rule, (True, False))._source
    shared = source.splitlines()[2]
    assert shared.startswith("    d[y] += sum_batch") and "dot_each" in shared
