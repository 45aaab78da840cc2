"""`checkpoint_name` (transformer.checkpoint): the identity, so its derivative passes the
cotangent / tangent through, and vmap keeps the batch axis where it is."""
from __future__ import annotations

from transformer.checkpoint import checkpoint_name
from transformer.rules import batching as batching_rules

from .families import linear

linear(checkpoint_name, adjoint="g", tangent="g", params="x, name", kind="checkpoint")
batching_rules.preserving(checkpoint_name)
