"""secant: derivatives and batched versions of NumPy code by source transformation.

    from transformer import grad, vmap, jit
    forces = jit(grad(energy))
    print(transformer.source(grad(energy)))
"""
from . import test_util, tree_util
from .api_reverse import custom_vjp, defadjoint, grad, stop_gradient, value_and_grad, vjp
from .errors import TransformError
from .jit import jit
from .inspection import source

__all__ = ["TransformError", "custom_vjp", "defadjoint", "grad", "jit", "source",
           "stop_gradient", "test_util", "tree_util", "value_and_grad", "vjp"]
