"""vmap as a source transformation: a per-example function in, a batched function out.

Input: any Function (a user's function or the output of another transformation); it is
normalized with `anf(desugar(...))` first. Output invariant: a Function with the same
parameters whose mapped arguments carry the batch along their `in_axes` and whose
outputs carry it along `out_axes`. Its first statement is annotated with the strategy
used and why, and it takes one of two shapes:

- *vectorize*: the original statements, each rewritten by its batching rule
  (`transformer.rules.batching`) to work on all examples at once over a leading batch
  axis: `np.dot(W, x)` with `x` batched is one matrix-matrix product, reductions shift
  their axes, a batched index gathers. Control flow stays as written and never depends
  on the batch.
- *loop*: a loop over the examples calling the original function on each one
  (`prange`, so `jit(..., parallel=True)` runs the examples in parallel). Used when the
  batch changes control flow (a batched `if`/`while` condition or loop bound), when a
  batched index is used in a write, or when a primitive has no batching rule. A batched
  `if` therefore never runs both branches for an example. A function that may write into
  an array every example shares (an argument with in_axes None, a global array) loops
  over the examples in order (`range`, never `prange`), so each example sees the writes
  of those before it, as in a Python loop; `method='vectorize'` refuses it.

Per example, `a[i]` of a vector is a number, and a later write into `a` leaves it as it
was; the batched `a[:, i]` is a view, so where such a write may follow (`aliases.py`) the
read is copied (`example_values`). An augmented assignment to a parameter writes the
caller's array in place (`analysis.prepare`).

Which values are batched is decided by a flow-insensitive analysis: a variable is
batched if any assignment to it is; assignments of unbatched values to such a variable
broadcast them. Names that may share an array written in place (`aliases.py`) are
batched alike; a view other than a name or an item at an unbatched index, an unbatched
argument written through another name, or a call writing into its argument takes the
loop. A flag is `False`, `True`, or a structure for containers: a tuple or
dict of flags, or `Each(flag)` for a container whose every leaf has one flag.

Identity batches (jacfwd's basis push, `Spec.identity`): the mapped argument is passed as
one example-shaped array `d` standing for the batch `e_k * d` over the unit vectors `e_k`.
A variable flagged `IDENTITY` holds such a `d`; the statements that keep a value identity-
batched (`rules.LINEAR`: a product with unbatched values, sums of identity batches) run
as written, on `d`. Any other use first expands it to an ordinary batch
(`rules.identity_batch`), and so does an output, so the batched function's results are
those of the ordinary batch.

Modules, in the order the pass uses them: `flags` (batch flags, `Spec`, `NeedsLoop`),
`analysis` (which values are batched, why a loop is needed, parameter flags), `emitter`
(what both strategies emit alike), `vectorize` and `loop` (the two strategies); `batch`
below picks the strategy.
"""
from __future__ import annotations

from ..function import Function
from .analysis import Analysis, param_flags, prepare
from .flags import NeedsLoop, Spec
from .loop import _Looper
from .vectorize import _Vectorizer

__all__ = ["Spec", "batch"]


# ====================================================================== the pass


def batch(fn: Function, spec: Spec) -> Function:
    """The batched Function of `fn` for `spec` (strategy chosen by `spec.method`)."""
    prepared = prepare(fn)
    params = param_flags(prepared, spec)
    analysis = Analysis(prepared, params, spec.axis_name)
    reason = analysis.reason
    if analysis.shared_write is not None and spec.identity is None:
        return _in_order(prepared, spec, analysis, fn.name)
    if spec.method == "vectorize" and reason:
        raise prepared.origin.error(reason[1], f"vmap(method='vectorize') cannot batch "
                                    f"{fn.name}: {reason[0]}",
                                    "use method='loop' or method='auto'")
    if spec.identity is not None and reason:
        raise prepared.origin.error(reason[1], f"vmap of an identity batch cannot batch "
                                    f"{fn.name}: {reason[0]}")
    if spec.method != "loop" and reason is None:
        try:
            return _Vectorizer(prepared, spec, analysis, batch).build()
        except NeedsLoop as need:
            if spec.method == "vectorize" or spec.identity is not None:
                raise prepared.origin.error(need.node, f"vmap(method='vectorize') cannot "
                                            f"batch {fn.name}: {need.reason}",
                                            "use method='loop' or method='auto'") from None
            reason = (need.reason, need.node)
    if reason is None:
        reason = ("method='loop' was requested", None)
    return _Looper(prepared, spec, analysis, reason[0]).build()


def _in_order(prepared: Function, spec: Spec, analysis: Analysis, name: str) -> Function:
    """The batched Function of a function writing into an array every example shares:
    the examples run in order, each seeing the writes of those before it, and the caller
    sees them all, as in a Python loop over the examples; method='vectorize' refuses."""
    why, node = analysis.shared_write
    if spec.method == "vectorize":
        raise prepared.origin.error(
            node, f"vmap(method='vectorize') cannot batch {name}: {why}; each example "
            "must see the writes of the examples before it",
            "use method='loop' (the examples run in order), or return each example's "
            "update and combine them after the call: vmap(...)(...).sum(0)")
    return _Looper(prepared, spec, analysis, f"{why}: the examples run in order",
                   ordered=True).build()
