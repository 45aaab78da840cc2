"""secant: derivatives and batched versions of NumPy code by source transformation.

    from transformer import grad, vmap, jit
    forces = jit(grad(energy))
    print(transformer.source(grad(energy)))
"""
from . import tree_util
from .api_forward import (custom_jvp, hessian, jacfwd, jacrev, jvp, linearize, show_hessian,
                          show_jvp)
from .errors import TransformError
from .jit import jit
from .inspection import source

__all__ = ["TransformError", "jit", "source", "tree_util"]
__all__ += ["custom_jvp", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "show_hessian",
            "show_jvp"]
