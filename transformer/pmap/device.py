"""A device a pmap shard runs on, named by platform and number."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Device:
    """One device a shard runs on: a CPU core, a CUDA GPU or a Dask worker thread (`id`
    within its platform)."""

    id: int
    platform: str

    def __repr__(self):
        return f"{self.platform.upper()}Device(id={self.id})"
