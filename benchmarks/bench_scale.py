"""Strong and weak scaling over 1 and 2 CPU workers: threads and a local Dask cluster.

Two workloads: the order-book step (`benchmarks.workloads.book_step`, one message on each
book, as in examples/order_book_dask.py) and data-parallel gradients (the gradient of an
MLP's summed loss over a shard of the batch, `mlp_loss_arrays`; shards' gradients are then
psum-reduced). Each runs

* threads: a ThreadPoolExecutor calling the jitted function on each shard (it scales only
  when the generated functions release the GIL - `nogil` in the module's decorator, which
  the table header says);
* dask: `transformer.distributed.run_sharded` on a LocalCluster of worker processes.

The data-parallel gradients also run as users write them with pmap: `pmap` of a step that
takes `grad` of its shard's loss and `psum`s it over the devices, on CPU worker threads
(`pmap(step, "d")`) and on the Dask cluster (`pmap(step, "d", client=client)`); its stages
and the reduction between them are inside the timing.

Strong scaling splits a fixed problem over P workers (efficiency T1 / (P * TP)); weak
scaling gives each worker the same share (efficiency T1 / TP). The per-task overhead of
the Dask path is measured on a function with next to no work: t(n) = c0 + o * n for runs
of n = 1 and n = 16 tasks. A paper estimate for 64 workers follows from the model
T(P) = T1 / P + c0 + o * P (compute divides, the scheduler handles tasks one by one).

Times are medians of `--repeat` runs after a warm-up (compiles excluded). The machine this
runs on may be shared: quote the ratios of one run, side by side.

    python -m benchmarks.bench_scale [--books N] [--batch N] [--repeat N]
"""
from __future__ import annotations

import argparse
import statistics
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from benchmarks.workloads import book_inputs, book_step, mlp_inputs, mlp_loss_arrays
from codegen.backends import Options
from transformer import grad, jit, pmap, psum, vmap

LEVELS = 8


def step_book(bid, ask, msg_type, side, level, qty):
    """One message on a copy of one book: (filled, resting depth after it)."""
    b, a = bid.copy(), ask.copy()
    filled = book_step(b, a, msg_type, side, level, qty)
    return np.array([filled, np.sum(b) + np.sum(a)])


def batch_loss(W1, b1, W2, b2, X, Y):
    total = 0.0
    for i in range(X.shape[0]):
        total += mlp_loss_arrays(W1, b1, W2, b2, X[i], Y[i])
    return total


def pmapped_grads(W1, b1, W2, b2, X, Y):
    """The gradient of the whole batch's loss: each device's shard, summed over devices."""
    g1, c1, g2, c2 = grad(batch_loss, argnums=(0, 1, 2, 3))(W1, b1, W2, b2, X, Y)
    g1, c1, g2, c2 = psum(g1, "d"), psum(c1, "d"), psum(g2, "d"), psum(c2, "d")
    return g1, c1, g2, c2


def tiny(x):
    return x + 1.0


def _median(fn, repeat: int) -> float:
    fn()                                    # warm-up: compiles here (threads)
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def _split(args: tuple, parts: int) -> list[tuple]:
    return [tuple(np.array_split(a, parts)[k] for a in args) for k in range(parts)]


def book_shards(total: int, parts: int) -> list[tuple]:
    bid, ask, *msg = book_inputs(total, n_messages=1, levels=LEVELS, seed=0)
    return _split((bid, ask) + tuple(m[:, 0] for m in msg), parts)


def grad_shards(total: int, parts: int) -> list[tuple]:
    params, X, Y = mlp_inputs(total, n_in=64, hidden=64, seed=0)
    weights = tuple(params[k].astype(np.float64) for k in ("W1", "b1", "W2", "b2"))
    return [weights + shard for shard in _split((X.astype(np.float64), Y), parts)]


def timings(fun, make_shards, sizes: dict, client, repeat: int) -> dict:
    """{(mode, scaling, P): seconds} for threads and dask at P = 1, 2."""
    from transformer.distributed import run_sharded, warm

    out = {}
    pool = ThreadPoolExecutor(2)
    for scaling, per in sizes.items():
        for workers in (1, 2):
            total = per if scaling == "strong" else per * workers
            shards = make_shards(total, workers)
            warm(fun, shards[0], client)    # every worker compiles before the clock runs
            out["threads", scaling, workers] = _median(
                lambda shards=shards: list(pool.map(lambda s: fun(*s), shards)), repeat)
            out["dask", scaling, workers] = _median(
                lambda shards=shards: run_sharded(fun, shards, client=client), repeat)
    pool.shutdown()
    return out


def pmap_timings(sizes: dict, client, repeat: int) -> dict:
    """{(mode, scaling, P): seconds} for pmap over threads and over the Dask cluster."""
    shared = (None, None, None, None, 0, 0)
    steps = {"pmap threads": pmap(pmapped_grads, "d", in_axes=shared, out_axes=None),
             "pmap dask": pmap(pmapped_grads, "d", in_axes=shared, out_axes=None,
                               client=client)}
    out = {}
    for scaling, per in sizes.items():
        for workers in (1, 2):
            total = per if scaling == "strong" else per * workers
            (*weights, X, Y), = grad_shards(total, 1)
            args = (*weights, X.reshape(workers, -1, X.shape[1]), Y.reshape(workers, -1))
            for mode, step in steps.items():
                out[mode, scaling, workers] = _median(
                    lambda step=step, args=args: step(*args), repeat)
    return out


def overhead(client, repeat: int) -> tuple[float, float]:
    """(c0, o): the fixed cost of a run_sharded call and the cost of each task."""
    from transformer.distributed import run_sharded, warm

    f = jit(tiny)
    x = np.ones(4)
    warm(f, (x,), client)
    t1 = _median(lambda: run_sharded(f, [(x,)], client=client), repeat)
    t16 = _median(lambda: run_sharded(f, [(x,)] * 16, client=client), repeat)
    o = max((t16 - t1) / 15, 0.0)
    return t1 - o, o


def report(name: str, table: dict, c0: float, o: float) -> None:
    print(f"\n{name}")
    print(f"{'mode':12} {'scaling':7} {'P=1 s':>9} {'P=2 s':>9} {'efficiency':>10}")
    for mode in dict.fromkeys(m for m, _, _ in table):
        for scaling in ("strong", "weak"):
            t1, t2 = table[mode, scaling, 1], table[mode, scaling, 2]
            eff = t1 / (2 * t2) if scaling == "strong" else t1 / t2
            print(f"{mode:12} {scaling:7} {t1:9.4f} {t2:9.4f} {eff:10.2f}")
    if ("dask", "strong", 1) not in table:
        return
    t1 = table["dask", "strong", 1]
    compute = max(t1 - c0 - o, 1e-9)       # the one-worker run's own work
    t64 = compute / 64 + c0 + o * 64
    print(f"paper estimate, dask strong scaling to 64 workers: {t64:.4f} s, speed-up "
          f"{t1 / t64:.1f}, efficiency {t1 / (64 * t64):.2f}")


def main(books: int, batch: int, repeat: int) -> None:
    from distributed import Client, LocalCluster

    warnings.simplefilter("ignore", category=Warning)
    nogil = "nogil=True" in (Options().decorator() or "")
    client = Client(LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                 dashboard_address=":0"))
    try:
        c0, o = overhead(client, repeat)
        print(f"generated functions release the GIL (nogil): {nogil}")
        print(f"dask per-run overhead c0 = {1e3 * c0:.1f} ms, per-task overhead "
              f"o = {1e3 * o:.2f} ms")
        steps = jit(vmap(step_book))
        report(f"order-book step, {books:,} books (strong) / per worker (weak)",
               timings(steps, book_shards, {"strong": books, "weak": books}, client,
                       repeat), c0, o)
        grads = jit(grad(batch_loss, argnums=(0, 1, 2, 3)))
        report(f"data-parallel MLP gradients, batch {batch:,} (strong) / per worker (weak)",
               timings(grads, grad_shards, {"strong": batch, "weak": batch}, client,
                       repeat), c0, o)
        report(f"pmap(grad) + psum, batch {batch:,} (strong) / per device (weak)",
               pmap_timings({"strong": batch, "weak": batch}, client, repeat), c0, o)
    finally:
        client.close()
        client.cluster.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--books", type=int, default=1_000_000)
    parser.add_argument("--batch", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    main(args.books, args.batch, args.repeat)
