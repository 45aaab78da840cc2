"""What memory-safe indexing costs: each workload compiled with and without index checks.

W1  jit(grad(lj_energy)) at N = 512 (benchmarks/workloads.py): every index is proved from
    its loop bounds, so the checked build should match the unchecked one.
W6  jit(vmap(book_step), parallel=True) on 100,000 books: the batch loop is proved, the
    price levels (data) are checked per message.

The two builds are timed alternately, run by run, so that a machine busy with other work
slows both alike; the table gives each median and the ratio checked / unchecked (the
target is <= 1.03). Both builds are checked to give the same result first.

Run: python -m benchmarks.bench_bounds [--repeat 41] [--quick]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

if not os.environ.get("SECANT_CACHE_DIR"):
    os.environ["SECANT_CACHE_DIR"] = tempfile.mkdtemp(prefix="secant-bench-")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from benchmarks import timing, workloads  # noqa: E402
from transformer import grad, jit, vmap  # noqa: E402


def _alternate(checked, unchecked, make_args, repeat: int) -> tuple[float, float]:
    """Medians of `checked(*make_args())` and `unchecked(*make_args())`, timed in turns
    (argument construction is not timed)."""
    times = {True: [], False: []}
    for run in range(repeat):
        for with_checks in ((True, False) if run % 2 == 0 else (False, True)):
            fn = checked if with_checks else unchecked
            args = make_args()
            start = time.perf_counter()
            fn(*args)
            times[with_checks].append(time.perf_counter() - start)
    return statistics.median(times[True]), statistics.median(times[False])


def bench_w1(repeat: int, n: int):
    args = workloads.lj_inputs(n)
    checked = jit(grad(workloads.lj_energy))
    unchecked = jit(grad(workloads.lj_energy), boundscheck=False)
    np.testing.assert_allclose(checked(*args), unchecked(*args), rtol=1e-12)
    return ("W1 LJ grad", f"N={n}", *_alternate(checked, unchecked, lambda: args, repeat))


def bench_w6(repeat: int, n_books: int):
    bid, ask, msg_type, side, level, qty = workloads.book_inputs(n_books, 1, seed=0)
    messages = (msg_type[:, 0], side[:, 0], level[:, 0], qty[:, 0])

    def fresh():
        return (bid.copy(), ask.copy(), *messages)

    checked = jit(vmap(workloads.book_step), parallel=True)
    unchecked = jit(vmap(workloads.book_step), parallel=True, boundscheck=False)
    np.testing.assert_array_equal(checked(*fresh()), unchecked(*fresh()))
    return ("W6 book step", f"{n_books} books", *_alternate(checked, unchecked, fresh, repeat))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=41)
    parser.add_argument("--quick", action="store_true", help="smaller inputs, fewer runs")
    args = parser.parse_args(argv)
    repeat = 11 if args.quick else args.repeat
    rows = [bench_w1(repeat, 256 if args.quick else 512),
            bench_w6(repeat, 10_000 if args.quick else 100_000)]
    print(f"{'workload':<14} {'size':<14} {'checked':>10} {'unchecked':>10} {'ratio':>7}")
    for workload, size, with_checks, without in rows:
        print(f"{workload:<14} {size:<14} {timing._seconds(with_checks):>10} "
              f"{timing._seconds(without):>10} {with_checks / without:>6.3f}x")


if __name__ == "__main__":
    main()
