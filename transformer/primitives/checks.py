"""Run-time checks that rewritten user code calls, as primitives: each returns its first
argument unchanged or raises, so it carries no derivative (grad and jvp pass nothing
through it) and runs wherever its arguments are (vmap batches it as any primitive without
a vectorized rule: once per example where an argument is batched)."""
from __future__ import annotations

from transformer.runtime.distinct import distinct_entries

from . import registry
from .families import nondifferentiable

nondifferentiable(distinct_entries, kind="check")
registry.unsupported(distinct_entries, "cuda", "a CUDA kernel cannot check an at-update's "
                     "index array for repeated entries: index with ints, slices or masks")
