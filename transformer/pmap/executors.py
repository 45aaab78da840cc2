"""Devices and the runners that execute one compiled stage on every shard.

A *runner* is what a pmap backend is: `compile(stage_callable, static_names)` turns one
stage (`transformer.pmap.stages`) into something it can run, and
`run(compiled, shard_args, devices)` runs it once per shard (shard i on devices[i]) and
returns the per-shard results in shard order, raising the first shard's error (in shard
order) when any fails. The collectives between stages are the caller's part
(`transformer.pmap.api`), so a runner only maps.

Runners are looked up by backend name in `RUNNERS`; `register_runner` adds one. The
built-in ones: "cpu" (one worker thread per shard running the Numba function, compiled
with nogil so the shards run in parallel) and "cuda" (one shard per GPU, each run as a
one-element `jit(vmap(stage), backend="cuda")` kernel on its GPU) and "dask"
(`transformer.pmap.dask_runner`: each shard a task on a Dask cluster, through
`transformer.distributed.run_sharded`).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import numpy as np

from .. import tree_util
from .device import Device


def cpu_count() -> int:
    """The cores this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def cuda_count() -> int:
    """The CUDA GPUs numba sees (the simulator's one under NUMBA_ENABLE_CUDASIM=1); 0 when
    numba-cuda, a driver or a GPU is missing."""
    from codegen.cuda import simulated, unavailable_reason
    if unavailable_reason() is not None:
        return 0
    if simulated():
        return 1
    from numba import cuda
    return len(cuda.gpus)


# ====================================================================== runners
class ThreadRunner:
    """Shards of a cpu-compiled stage on worker threads, one per shard."""

    platform = "cpu"
    _pools: dict = {}
    _lock = threading.Lock()

    def compile(self, stage: Callable, static_names: Sequence[str]) -> Callable:
        from ..jit import jit
        return jit(stage, static_argnames=tuple(static_names))

    def run(self, compiled: Callable, shard_args: list, devices: Sequence[Device]) -> list:
        if len(shard_args) == 1:
            return [compiled(*shard_args[0])]
        futures = [self._pool(len(shard_args)).submit(compiled, *args) for args in shard_args]
        return [f.result() for f in futures]       # the first failing shard's error

    def _pool(self, workers: int) -> ThreadPoolExecutor:
        with self._lock:
            if workers not in self._pools:
                self._pools[workers] = ThreadPoolExecutor(workers,
                                                          thread_name_prefix="secant-pmap")
            return self._pools[workers]


class CudaRunner:
    """Each shard as a one-element batched CUDA kernel on its own GPU."""

    platform = "cuda"

    def compile(self, stage: Callable, static_names: Sequence[str]) -> Callable:
        from ..api_batching import vmap
        from ..jit import jit
        return jit(vmap(stage), backend="cuda", static_argnames=tuple(static_names))

    def run(self, compiled, shard_args: list, devices: Sequence[Device]) -> list:
        from codegen.cuda import simulated
        results = []
        for args, device in zip(shard_args, devices):
            batched = tuple(tree_util.tree_map(lambda leaf: np.asarray(leaf)[None], a)
                            for a in args)
            if simulated():
                out = compiled(*batched)
            else:
                from numba import cuda
                with cuda.gpus[device.id]:
                    out = compiled(*batched)
            results.append(tree_util.tree_map(lambda leaf: _first(leaf), out))
        return results


def _first(leaf) -> Any:
    value = np.asarray(leaf)[0]
    return value if value.ndim else value[()]


def _dask_runner(client=None):
    from .dask_runner import DaskRunner     # imports dask only when asked for
    return DaskRunner(client)


RUNNERS: dict = {"cpu": ThreadRunner, "cuda": CudaRunner, "dask": _dask_runner}


def register_runner(backend: str, factory: Callable[[], Any]) -> None:
    """Make `pmap(..., backend=backend)` run its stages with `factory()` (see module doc)."""
    RUNNERS[backend] = factory


def runner_for(backend: str, client=None):
    if backend not in RUNNERS:
        raise ValueError(f"unknown pmap backend {backend!r}; choose from {sorted(RUNNERS)}")
    if client is None:
        return RUNNERS[backend]()
    if backend != "dask":
        raise ValueError(f"pmap client= is for backend='dask', not {backend!r}")
    return RUNNERS[backend](client)


def devices(backend: str | None = None) -> list[Device]:
    """The devices pmap maps over: one per CPU core of this process (backend None or
    "cpu"), or the CUDA GPUs (backend "cuda"; empty when there are none)."""
    backend = backend or "cpu"
    if backend == "cpu":
        return [Device(i, "cpu") for i in range(cpu_count())]
    if backend == "cuda":
        return [Device(i, "cuda") for i in range(cuda_count())]
    counter = getattr(RUNNERS.get(backend), "devices", None)
    if counter is None:
        raise ValueError(f"unknown backend {backend!r}; choose from {sorted(RUNNERS)}")
    return counter()
