"""`transformer.random`'s rejection and linear-algebra samplers as primitives.

Under jit `gamma`, `beta`, `dirichlet` (`transformer.runtime.random_gamma`), `poisson`
(`random_poisson`), `multivariate_normal` and `orthogonal` (`random_linalg`) run their
runtime forms: the same key splits and draws as plain NumPy (bit for bit, LAPACK factors
to rounding). A draw whose parameters are constants of the differentiated function is a
constant too; a differentiated parameter is refused, never given a silent zero:
`gamma`/`beta`/`dirichlet` have no reparameterization rule, and a `multivariate_normal`
written with a factor differentiates through its product. `poisson` counts and
`orthogonal` matrices (integer parameters) carry no derivative, as `bernoulli`'s booleans.
vmap over keys runs the loop strategy, one example per key. In CUDA kernels `gamma`, `beta`
and `poisson` with scalar parameters, `orthogonal` with literal sizes,
`multivariate_normal` with one covariance and `dirichlet` with a 1-D alpha run as loops of
per-element device functions (`transformer.cuda.random_heavy_forms`); other call forms are
refused at the user's line.
"""
from __future__ import annotations

from transformer import random
from transformer.runtime import random_gamma, random_linalg, random_poisson

from . import registry
from .families import lowered, nondifferentiable

RUNTIME = {random.gamma: random_gamma.gamma, random.beta: random_gamma.beta,
           random.dirichlet: random_gamma.dirichlet, random.poisson: random_poisson.poisson,
           random.multivariate_normal: random_linalg.multivariate_normal,
           random.orthogonal: random_linalg.orthogonal}
GAMMA_FAMILY = (random.gamma, random.beta, random.dirichlet)
STOP_GRADIENT_HINT = ("{name} has no derivative rule in its parameters (no implicit "
                      "reparameterization); if the draw may be a constant of the "
                      "derivative, pass the parameter through transformer.stop_gradient")
FACTOR_HINT = ("multivariate_normal has no derivative rule in mean or cov; draw through a "
               "factor L with cov = L @ L.T, the same numbers as method='cholesky': "
               "mean + random.normal(key, shape + mean.shape[-1:]) @ L.T")

for _key, _runtime in RUNTIME.items():
    lowered(_key, _runtime)
    registry.record(_key).kind = "random"
    registry.unsupported(_key, "vmap", "vmap over keys runs a loop, one example per key")
    registry.record(_key).cuda = "random"            # element loops (transformer.cuda)
nondifferentiable(random.poisson, random.orthogonal)
for _transform in ("grad", "jvp"):
    for _key in GAMMA_FAMILY:
        registry.unsupported(_key, _transform,
                             STOP_GRADIENT_HINT.format(name=f"random.{_key.__name__}"))
    registry.unsupported(random.multivariate_normal, _transform, FACTOR_HINT)
