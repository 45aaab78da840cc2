"""Every corpus function's gradient against central finite differences (python backend)."""
import numpy as np
import pytest

from transformer import grad
from transformer.test_util import check_grads, real_positions

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
        eps = 1e-6
        arg = np.asarray(args[position], dtype=float)
        numeric = np.zeros_like(arg)
        for index in np.ndindex(arg.shape):
            step = np.zeros_like(arg)
            step[index] = eps
            plus = list(args)
            minus = list(args)
            plus[position] = arg + step if arg.shape else float(arg + step)
            minus[position] = arg - step if arg.shape else float(arg - step)
            numeric[index] = (fun(*plus) - fun(*minus)) / (2 * eps)
        np.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-6)
