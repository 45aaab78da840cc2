"""secant: derivatives and batched versions of NumPy code by source transformation.

    from transformer import grad, vmap, jit
    forces = jit(grad(energy))
    print(transformer.source(grad(energy)))
"""
from . import tree_util
from .api_forward import (custom_jvp, hessian, jacfwd, jacrev, jvp, linearize, show_hessian,
                          show_jvp)
from .errors import TransformError
from .api_batching import all_gather, axis_index, pmax, pmean, pmin, psum, show_vmap, vmap
from .jit import jit
from .inspection import source

__all__ = ["TransformError", "jit", "source", "tree_util"]
__all__ += ["custom_jvp", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "show_hessian",
            "show_jvp"]
__all__ += ["vmap", "show_vmap", "psum", "pmean", "pmax", "pmin", "all_gather", "axis_index"]
