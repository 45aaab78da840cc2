"""secant: derivatives and batched versions of NumPy code by source transformation.

    from transformer import grad, vmap, jit
    forces = jit(grad(energy))
    print(transformer.source(grad(energy)))
"""
from . import random, tree_util
from .errors import TransformError
from .jit import jit
from .inspection import source

__all__ = ["TransformError", "jit", "random", "source", "tree_util"]
