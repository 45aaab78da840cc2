"""Derivative templates of np.linalg.cholesky and np.linalg.eigh, as JAX defines them
(the formulas and their conventions are in ``transformer.runtime.decompositions``)."""

# ruff: noqa: F821  (``d`` is template syntax, never evaluated)

from __future__ import annotations

import numpy as np

from transformer.runtime.decompositions import (cholesky, cholesky_grad, cholesky_tangent,
                                                eigh, eigh_grad, eigh_tangent)
from transformer.templates import adjoint, tangent


@adjoint(np.linalg.cholesky, cholesky)
def cholesky_(z, a, upper=False):
    d[a] += cholesky_grad(d[z], z, upper)


@tangent(np.linalg.cholesky, cholesky)
def cholesky_t(z, a, upper=False):
    d[z] = cholesky_tangent(d[a], z, upper)


@adjoint(np.linalg.eigh, eigh)
def eigh_(z, a, UPLO="L"):     # noqa: N803  (NumPy's keyword)
    d[a] += eigh_grad(d[z][0], d[z][1], z[0], z[1])


@tangent(np.linalg.eigh, eigh)
def eigh_t(z, a, UPLO="L"):    # noqa: N803
    d[z] = eigh_tangent(d[a], z[0], z[1])
