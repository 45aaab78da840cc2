"""secant: derivatives and batched versions of NumPy code by source transformation.

    from transformer import grad, vmap, jit
    forces = jit(grad(energy))
    print(transformer.source(grad(energy)))
"""
import importlib as _importlib

from .collector import paused as _paused

with _paused(keep=True):     # see transformer.collector
    from .primitives.catalog import primitives  # first: fills the primitive registry
    from . import test_util, tree_util
    from . import lax
    from .api_batching import (all_gather, axis_index, pmax, pmean, pmin, psum, show_vmap,
                               vmap)
    from .api_forward import (custom_jvp, hessian, jacfwd, jacrev, jvp, linearize,
                              show_hessian, show_jvp)
    from .callbacks import ShapeDtypeStruct, io_callback, pure_callback
    from . import debug
    from .api_reverse import custom_vjp, defadjoint, grad, stop_gradient, value_and_grad, vjp
    from .checkpoint import (checkpoint, checkpoint_loop, checkpoint_name,
                             checkpoint_policies, checkpoint_range, remat)
    from .errors import TransformError
    from .inspection import source
    from .jit import jit
    from .nan_checks import config
    from .pmap import Mesh, devices, pmap, ppermute, shard_map, show_pmap


def __getattr__(name):
    # `transformer.random` is imported on first use (its samplers register themselves then)
    if name == "random":
        return _importlib.import_module(".random", __name__)
    raise AttributeError(f"module 'transformer' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"random"})


__all__ = [
    "TransformError", "all_gather", "axis_index", "custom_jvp", "custom_vjp", "defadjoint",
    "grad", "hessian", "jacfwd", "jacrev", "jit", "jvp", "linearize", "pmax", "pmean", "pmin",
    "psum", "random", "show_hessian", "show_jvp", "show_vmap", "source", "stop_gradient",
    "test_util", "tree_util", "value_and_grad", "vjp", "vmap",
    "primitives", "lax",
    "ShapeDtypeStruct", "debug", "io_callback", "pure_callback", "config",
    "checkpoint", "checkpoint_loop", "checkpoint_name", "checkpoint_range", "checkpoint_policies",
    "remat",
    "Mesh", "devices", "pmap", "ppermute", "shard_map", "show_pmap",
]
