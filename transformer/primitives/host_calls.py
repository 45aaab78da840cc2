"""Debug printing and host callbacks as primitives (`transformer.debug`,
`transformer.callbacks`).

`debug.print` and `debug.callback` are *effects*: they return nothing, so grad and jvp
pass no derivative through them (reverse mode keeps them in the forward sweep, once per
call) and vmap runs them once per example (no batching rule: the loop strategy).
`pure_callback` and `io_callback` have no derivative rule: grad and jvp refuse them, with
JAX's words, where an argument depends on the differentiated input (a `custom_vjp`
function around the callback gives the derivative). Under vmap `pure_callback` follows
its `vmap_method` and an unordered `io_callback` loops (`callback_batcher`). All four run
under jit through `numba.objmode` (`transformer.host_calls`), and none in CUDA kernels.
"""
from __future__ import annotations

import gast

from transformer import callbacks, debug
from transformer.rules import batching as batching_rules
from transformer.runtime import host
from transformer.runtime.batching import broadcast_batch
from transformer.syntax import const

from . import registry
from .families import nondifferentiable

EFFECTS = (debug.print, debug.callback)
CALLBACKS = (callbacks.pure_callback, callbacks.io_callback, host.batched_pure_callback)
CUDA_REASON = ("host callbacks and debug printing cannot run in a CUDA kernel: call them "
               "in the CPU code around the kernel, or return the value and print it there")

nondifferentiable(*EFFECTS, kind="effect")
for _key in EFFECTS:
    registry.unsupported(_key, "vmap", "runs once per example: vmap loops over the examples")
for _key in CALLBACKS:
    registry.record(_key).kind = "callback"
for _transform in ("grad", "jvp"):
    registry.unsupported(callbacks.pure_callback, _transform, callbacks.PURE_GRAD_ERROR)
    registry.unsupported(host.batched_pure_callback, _transform,
                         callbacks.PURE_GRAD_ERROR)
    registry.unsupported(callbacks.io_callback, _transform, callbacks.IO_GRAD_ERROR)
for _key in EFFECTS + CALLBACKS:
    registry.unsupported(_key, "cuda", CUDA_REASON)


def _constant_keyword(site, name: str, default):
    found = site.keywords.get(name)
    if found is None:
        return default
    if not isinstance(found, gast.Constant):
        raise batching_rules.Refused(f"{name} must be a constant under vmap",
                                     f"write {name}=... with a literal value")
    return found.value


def callback_batcher(site):
    """vmap of `pure_callback`/`io_callback`: None (loop over the examples) for
    "sequential" and unordered IO; one call of `batched_pure_callback` with the batched
    arguments for "expand_dims"/"broadcast_all"; `Refused` (JAX's words) for the rest."""
    if site.key is callbacks.io_callback:
        if _constant_keyword(site, "ordered", False):
            raise batching_rules.Refused(callbacks.IO_VMAP_ERROR, "use ordered=False to "
                                         "run it once per example")
        return None
    method = _constant_keyword(site, "vmap_method", None)
    if method is None:
        raise batching_rules.Refused(callbacks.PURE_VMAP_ERROR, "vmap_method='sequential' "
                                     "calls it once per example")
    if method in ("sequential", "sequential_unrolled") or not site.any_batched:
        return None
    fun, spec, *args = site.args
    length = const(1) if method == "expand_dims" else site.size

    def batched(atom, is_batched: bool):
        return atom if is_batched else site.helper(broadcast_batch, atom, length)

    args = [batched(a, b) for a, b in zip(args, site.batched[2:])]
    keywords = {k: batched(v, site.kw_batched[k]) for k, v in site.keywords.items()
                if k != "vmap_method"}
    return site.helper(host.batched_pure_callback, fun, spec, site.size, *args,
                       **keywords), True


batching_rules.BATCHERS[callbacks.pure_callback] = callback_batcher
batching_rules.BATCHERS[callbacks.io_callback] = callback_batcher
