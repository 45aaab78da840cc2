"""np.linalg.cholesky and np.linalg.eigh: kind, Numba lowering (the keywords Numba's own
forms lack), batching, the transformations they lack and why, and the sample calls the
registry's generated tests run. Derivative templates: ``transformer.rules.decompositions``.
"""
from __future__ import annotations

import numpy as np

from transformer.rules import decompositions  # noqa: F401  (registers the templates)
from transformer.runtime.decompositions import (cholesky, cholesky_grad, cholesky_tangent,
                                                eigh, eigh_grad, eigh_tangent)

from . import registry
from .families import lowered
from .structural_more import per_example

for _key, _equivalent in [(np.linalg.cholesky, cholesky), (np.linalg.eigh, eigh)]:
    lowered(_key, _equivalent, plain_form_ok=True)
    registry.record(_key).kind = "linear algebra"
    registry.unsupported(_key, "cuda", "CUDA kernels are scalar code: no LAPACK there")
per_example(np.linalg.cholesky, cholesky)
per_example(cholesky, cholesky)
for _helper in (cholesky_grad, cholesky_tangent, eigh_grad):
    per_example(_helper, _helper)
for _key in (np.linalg.eigh, eigh, eigh_tangent):
    registry.unsupported(_key, "vmap", "its result is a pair: vmap runs a loop over the "
                         "examples")

registry.add_sample(np.linalg.cholesky, "np.linalg.cholesky(a @ a.T + 3.0 * np.eye(3))",
                    a=(3, 3))
registry.add_sample(np.linalg.cholesky, "np.linalg.cholesky(a @ a.T + 3.0 * np.eye(3), "
                    "upper=True)", a=(3, 3))
registry.add_sample(np.linalg.eigh, "np.linalg.eigh(a + a.T)[0]", a=(3, 3))
registry.add_sample(np.linalg.eigh, "np.linalg.eigh(a + a.T, UPLO='U')[0]", a=(3, 3))
# products of two entries of one eigenvector do not depend on its sign
registry.add_sample(np.linalg.eigh, "np.linalg.eigh(a + a.T + np.diag(np.arange(3.0)) * 4.0)"
                    "[1] * np.linalg.eigh(a + a.T + np.diag(np.arange(3.0)) * 4.0)[1][0]",
                    a=(3, 3))
