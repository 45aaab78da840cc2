"""Every corpus function's gradient against central finite differences (python backend)."""
import numpy as np
import pytest

from transformer import grad
from transformer.test_util import check_grads, numerical_grad, real_positions

from reverse_corpus import CORPUS


@pytest.mark.parametrize("fun, make", CORPUS,
                         ids=[f"{f.__name__}-{k}" for k, (f, _) in enumerate(CORPUS)])
def test_vjp_matches_finite_differences(fun, make):
    check_grads(fun, make(np.random.default_rng(1)))


@pytest.mark.parametrize("fun, make", CORPUS[:12],
                         ids=[f.__name__ for f, _ in CORPUS[:12]])
def test_grad_of_every_argument_matches_finite_differences(fun, make):
    args = make(np.random.default_rng(2))
    wrt = real_positions(args)
    grads = grad(fun, argnums=wrt)(*args)
    for position, g in zip(wrt, grads):
        np.testing.assert_allclose(g, numerical_grad(fun, args, position), rtol=1e-5, atol=1e-6)
