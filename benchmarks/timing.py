"""A small timing harness: median wall time, first-call (compile) time, a table, JSON.

Results are waited for before the clock stops: anything with a `block_until_ready` method
(JAX arrays), also inside tuples, lists and dicts, is blocked on, so asynchronous dispatch
does not make a peer look faster than it is.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterable


@dataclasses.dataclass
class Row:
    """One timed implementation of one workload at one size."""

    workload: str
    size: str
    impl: str
    median_s: float
    compile_s: float | None = None


def _wait(result):
    """Block until `result` (or every leaf of a tuple/list/dict of results) is computed."""
    if isinstance(result, dict):
        result = list(result.values())
    if isinstance(result, (tuple, list)):
        for leaf in result:
            _wait(leaf)
        return
    block = getattr(result, "block_until_ready", None)
    if block is not None:
        block()


def _call(fn: Callable, args: tuple) -> float:
    start = time.perf_counter()
    _wait(fn(*args))
    return time.perf_counter() - start


def median_time(fn: Callable, *args, repeat: int = 7, number: int = 1,
                warmup: int = 1) -> float:
    """Median over `repeat` runs of the mean seconds per call of `fn(*args)`.

    Each run makes `number` calls; `warmup` calls before the first run are not timed, so
    compilation is excluded. Functions that update their arguments in place (the order
    book peers) must be given fresh copies by the caller, or timed with number=1 on inputs
    whose work does not change.
    """
    for _ in range(warmup):
        _call(fn, args)
    runs = [sum(_call(fn, args) for _ in range(number)) / number for _ in range(repeat)]
    return statistics.median(runs)


def compile_time(fn: Callable, *args) -> float:
    """Seconds taken by the first call of `fn(*args)`: compilation plus one run.

    Meaningful only for a function not called before in this process with these types.
    """
    return _call(fn, args)


def interleaved_medians(fns: dict, args: tuple, repeat: int, number: int = 1) -> dict:
    """Median seconds per call of each of `fns` {label: fn}, the functions timed in turn
    within every round, so that a change in the machine's load hits all of them alike."""
    times: dict = {label: [] for label in fns}
    for _ in range(repeat):
        for label, fn in fns.items():
            start = time.perf_counter()
            for _ in range(number):
                _wait(fn(*args))
            times[label].append((time.perf_counter() - start) / number)
    return {label: statistics.median(t) for label, t in times.items()}


def print_table(rows: Iterable[Row], baseline: str) -> None:
    """Print rows grouped by (workload, size) with each median's ratio to `baseline`.

    The ratio is median / baseline median within the group (so > 1 is slower than the
    baseline); it is left blank where the group has no row for `baseline`.
    """
    rows = list(rows)
    base = {(r.workload, r.size): r.median_s for r in rows if r.impl == baseline}
    versus = f"vs {baseline}"
    width = max(8, len(versus))
    header = f"{'workload':<12} {'size':<12} {'impl':<22} {'median':>10} {'compile':>9} " \
             f"{versus:>{width}}"
    print(header)
    print("-" * len(header))
    for r in rows:
        ref = base.get((r.workload, r.size))
        ratio = f"{r.median_s / ref:.2f}x" if ref else ""
        compiled = f"{r.compile_s:.2f}s" if r.compile_s is not None else ""
        print(f"{r.workload:<12} {r.size:<12} {r.impl:<22} {_seconds(r.median_s):>10} "
              f"{compiled:>9} {ratio:>{width}}")


def _seconds(t: float) -> str:
    """A duration with a unit that keeps three significant digits readable."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if t >= scale:
            return f"{t / scale:.3g} {unit}"
    return f"{t / 1e-9:.3g} ns"


def write_json(path: str | os.PathLike, rows: Iterable[Row]) -> None:
    """Write the rows and the machine they ran on to `path` as JSON."""
    payload = {
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        },
        "rows": [dataclasses.asdict(r) for r in rows],
    }
    with open(path, "w") as f:
        json.dump(payload, f, indent=2)
