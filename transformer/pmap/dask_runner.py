"""The "dask" pmap backend: each shard of each stage is a task on a Dask cluster.

`pmap(f, axis_name, backend="dask", client=c)` (or `client=` alone) runs every stage
through `transformer.distributed.run_sharded`: the stage's module text is built here and
the workers compile it with their own cache, a lost worker's tasks run again, and a
shard's error comes back located at the user's line. The collectives between stages run
here, as for the other backends. The devices are the worker threads of the cluster when
the runner first asks (JAX's rule holds: the mapped axis may not be longer than that; a
worker lost later has its tasks run by the others); `client=None` uses the current
client or starts a LocalCluster (`transformer.distributed.default_client`).
"""
from __future__ import annotations

from typing import Callable, Sequence

from .device import Device


class DaskRunner:
    platform = "dask"

    def __init__(self, client=None):
        self._client = client
        self._devices: list[Device] | None = None

    @property
    def client(self):
        if self._client is None:
            from ..distributed import default_client
            self._client = default_client()
        return self._client

    def compile(self, stage: Callable, static_names: Sequence[str]) -> Callable:
        from ..jit import jit
        return jit(stage, static_argnames=tuple(static_names))

    def run(self, compiled: Callable, shard_args: list, devices: Sequence[Device]) -> list:
        from ..distributed import run_sharded
        return run_sharded(compiled, shard_args, client=self.client)

    def devices(self) -> list[Device]:
        if self._devices is None:       # asked on every call: one scheduler round trip
            workers = self.client.scheduler_info()["workers"].values()
            threads = sum(int(w.get("nthreads", 1)) for w in workers)
            self._devices = [Device(i, "dask") for i in range(threads)]
        return self._devices
