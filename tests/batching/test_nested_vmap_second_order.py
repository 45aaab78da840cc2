"""Second derivatives of a function summing a vmap inside a vmap whose pair function is
not symmetric (`np.inner(a, b) * np.sum(a)`). The outer vmap's vjp takes the batched
result's adjoint apart (`bresult[i] = 0.0`); it copies that cotangent first, so forward mode
takes it (hessian, jacfwd(grad) were refused) and a second reverse pass leaves the
caller's cotangent as it was (jacrev(grad) and vjp(grad) gave wrong numbers). Oracles:
second central differences of the plain double loop, and jax.hessian of it."""
import numpy as np
import pytest

from tests.batching.test_nested_vmap_grad import POS, loop_total, pair_inner, summed
from tests.gradcheck import assert_hessian_matches_differences, jax_with_x64
from transformer import grad, hessian, jacfwd, jacrev, vjp

X = POS[:3]


def vjp_of_grad_row_by_row(f):
    def rows(x):
        _, back = vjp(grad(f), x)
        return np.stack([back(e.reshape(x.shape))[0]
                         for e in np.eye(x.size)]).reshape(x.shape * 2)
    return rows


@pytest.mark.slow
@pytest.mark.parametrize("second", [hessian, lambda f: jacfwd(grad(f)),
                                    lambda f: jacrev(grad(f)), vjp_of_grad_row_by_row],
                         ids=["hessian", "jacfwd_of_grad", "jacrev_of_grad", "vjp_of_grad"])
def test_second_derivatives_of_a_summed_asymmetric_pairwise_product(second):
    assert_hessian_matches_differences(second(summed(pair_inner)), loop_total(pair_inner), X)


@pytest.mark.slow
def test_hessian_of_a_summed_asymmetric_pairwise_product_matches_jax():
    jax = jax_with_x64()
    jnp = jax.numpy

    def total(x):
        return sum(jnp.inner(a, b) * jnp.sum(a) for a in x for b in x)
    np.testing.assert_allclose(hessian(summed(pair_inner))(X), jax.hessian(total)(X),
                               rtol=1e-10, atol=1e-12)
