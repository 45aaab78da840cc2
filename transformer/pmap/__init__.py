"""pmap: one shard per device (CPU cores, CUDA GPUs), collectives between compiled stages.

`api` (pmap, show_pmap), `stages` (the split at collectives), `collectives` (what they
are and the host reductions), `executors` (devices and the runners, one per backend),
`sharding` (shard_map and Mesh over the same machinery).
"""
from .api import Pmapped, pmap, show_pmap
from .collectives import ppermute
from .executors import Device, devices, register_runner
from .sharding import Mesh, P, PartitionSpec, shard_map

__all__ = ["Device", "Mesh", "P", "PartitionSpec", "Pmapped", "devices", "pmap", "ppermute",
           "register_runner", "shard_map", "show_pmap"]
