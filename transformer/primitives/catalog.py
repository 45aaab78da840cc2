"""Loads every registration and answers `transformer.primitives()`: the table of the
functions users call and which transformations support each.

Importing this module fills the registry (the family modules, then the hand-written rules
of `transformer.rules`); `import transformer` does it before any pass runs.
"""
from __future__ import annotations

import json

from transformer.rules import adjoints, batching, lowering, tangents  # noqa: F401

from . import (binary, elementwise, per_example, random_numbers, registry,  # noqa: F401
               structural)
from . import host_calls  # noqa: F401
from . import checkpoints  # noqa: F401
from .registry import TRANSFORMS


def primitives() -> list[dict]:
    """Every registered function users call, sorted by name, as
    `{"name": "numpy.sin", "kind": "elementwise", "grad": True, "jvp": True, "vmap": True,
    "jit": True, "cuda": True, "reason": ""}`; `reason` says why a transformation is missing
    (`transform: why; ...`)."""
    rows = {}
    for r in registry.records():
        if not registry.is_user_facing(r.key) or r.name in rows:
            continue
        row = {"name": r.name, "kind": r.kind or "function"}
        row.update({t: r.supports(t) for t in TRANSFORMS})
        row["reason"] = "; ".join(f"{t}: {r.reason(t)}" for t in TRANSFORMS
                                  if not r.supports(t))
        rows[r.name] = row
    return [rows[name] for name in sorted(rows)]


def format_table(rows: list[dict], fmt: str = "text") -> str:
    """`rows` of `primitives()` as JSON or as an aligned text table."""
    if fmt == "json":
        return json.dumps(rows, indent=1)
    header = ["name", "kind", *TRANSFORMS, "reason"]
    cells = [header] + [[row["name"], row["kind"],
                         *("yes" if row[t] else "no" for t in TRANSFORMS), row["reason"]]
                        for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(header) - 1)]
    return "\n".join("  ".join([c.ljust(w) for c, w in zip(line, widths)] + [line[-1]]).rstrip()
                     for line in cells)
