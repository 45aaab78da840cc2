"""secant: derivatives and batched versions of NumPy code by source transformation.

    from transformer import grad, vmap, jit
    forces = jit(grad(energy))
    print(transformer.source(grad(energy)))
"""
from . import random, test_util, tree_util
from .api_forward import (custom_jvp, hessian, jacfwd, jacrev, jvp, linearize, show_hessian,
                          show_jvp)
from .api_reverse import custom_vjp, defadjoint, grad, stop_gradient, value_and_grad, vjp
from .errors import TransformError
from .api_batching import all_gather, axis_index, pmax, pmean, pmin, psum, show_vmap, vmap
from .jit import jit
from .inspection import source

__all__ = ["TransformError", "custom_vjp", "defadjoint", "grad", "jit", "random", "source",
           "stop_gradient", "test_util", "tree_util", "value_and_grad", "vjp"]
__all__ += ["custom_jvp", "hessian", "jacfwd", "jacrev", "jvp", "linearize", "show_hessian",
            "show_jvp"]
__all__ += ["vmap", "show_vmap", "psum", "pmean", "pmax", "pmin", "all_gather", "axis_index"]
