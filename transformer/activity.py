"""Activity analysis: which variables carry a derivative from the inputs to the output.

A variable is *varied* when its value depends differentiably on a differentiated input,
and *useful* when the output depends differentiably on it; it is *active* when both.
Only active variables get adjoints, so integer index arithmetic, `x.shape`, `len(x)`,
comparisons, flags and anything behind `stop_gradient` never appear in the reverse sweep.

The analysis is flow-insensitive over *flows*: one `(target, sources)` pair per
statement that passes a derivative (a differentiable primitive, a copy, a call, an
in-place write `y[i] = v` as `(y, (v,))`). Statements that pass none (comparisons,
attributes, non-differentiable primitives) contribute no flow. Both fixed points are
computed over all flows until nothing changes, so loops need no special handling.
"""
from __future__ import annotations

from typing import Iterable

Flow = tuple[str, tuple[str, ...]]


def varied(flows: Iterable[Flow], inputs: Iterable[str]) -> set[str]:
    found = set(inputs)
    flows = list(flows)
    changed = True
    while changed:
        changed = False
        for target, sources in flows:
            if target not in found and any(s in found for s in sources):
                found.add(target)
                changed = True
    return found


def useful(flows: Iterable[Flow], outputs: Iterable[str]) -> set[str]:
    found = set(outputs)
    flows = list(flows)
    changed = True
    while changed:
        changed = False
        for target, sources in flows:
            if target in found:
                new = set(sources) - found
                if new:
                    found |= new
                    changed = True
    return found


def active(flows: Iterable[Flow], inputs: Iterable[str], outputs: Iterable[str]) -> set[str]:
    """Variables on a differentiable path from `inputs` to `outputs`."""
    flows = list(flows)
    return varied(flows, inputs) & useful(flows, outputs)
