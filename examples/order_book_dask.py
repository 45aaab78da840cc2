"""Ten million limit order books stepped on a local Dask cluster, chunk by chunk.

Needs: the `dask` extra (`pip install -e ".[dask]"`: dask[array] and distributed).

The books live in a dask.array, one row per book - its bid and ask quantities per price
level, then one message (type, side, level, quantity) - generated on the workers chunk by
chunk, so the ten million books (1.6 GB) never sit in this process. `map_blocks` maps a
jitted vmap of the order-book step (`benchmarks.workloads.book_step`) over the chunks: each
worker receives the generated module's text, compiles it once with its own cache, and
steps its chunks. Each book's step returns the quantity filled and the depth left.

A sample of chunks (the first and the last) is checked against the single-process jitted
vmap on the same rows, and a few books of it against a plain Python call of book_step;
`run_sharded` then steps the sample's chunks as two shards and its results are checked
too.

    python examples/order_book_dask.py [--books N] [--chunk N] [--workers N]

Every comparison is printed; a failed one exits with status 1.
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from checks import check  # noqa: E402

from benchmarks.workloads import book_inputs, book_step  # noqa: E402
from transformer import jit, vmap  # noqa: E402

LEVELS = 8
WIDTH = 2 * LEVELS + 4      # bid levels, ask levels, message type, side, level, quantity


def step_row(row):
    """One book's row stepped by its message: (filled, resting depth after the step)."""
    bid = row[:LEVELS].copy()
    ask = row[LEVELS:2 * LEVELS].copy()
    filled = book_step(bid, ask, row[2 * LEVELS], row[2 * LEVELS + 1], row[2 * LEVELS + 2],
                       row[2 * LEVELS + 3])
    return np.array([filled, np.sum(bid) + np.sum(ask)])


def make_rows(block_info=None):
    """The rows of one chunk, generated from the chunk's index (same rows every time)."""
    info = block_info[None]
    start, stop = info["array-location"][0]
    bid, ask, *message = book_inputs(stop - start, n_messages=1, levels=LEVELS,
                                     seed=info["chunk-location"][0])
    return np.concatenate([bid, ask] + message, axis=1)


def book_rows(n_books: int, chunk: int):
    import dask.array as da

    chunks = ((chunk,) * (n_books // chunk) + ((n_books % chunk,) if n_books % chunk else ()),
              (WIDTH,))
    return da.map_blocks(make_rows, chunks=chunks, dtype=np.int64)


def main(n_books: int = 10_000_000, chunk: int = 500_000, workers: int = 2, client=None):
    from distributed import Client, LocalCluster

    from transformer.distributed import compute, map_blocks, run_sharded

    warnings.simplefilter("ignore", category=Warning)     # Dask's notes on large graphs
    own = client is None
    if own:
        client = Client(LocalCluster(processes=True, n_workers=workers, threads_per_worker=1,
                                     dashboard_address=":0"))
    try:
        rows = book_rows(n_books, chunk)
        step = jit(vmap(step_row))
        start = time.perf_counter()
        stepped = compute(map_blocks(step, rows), client=client)
        elapsed = time.perf_counter() - start
        print(f"{n_books:,} books in {rows.numblocks[0]} chunks on {len(client.nthreads())} "
              f"workers: filled {stepped[:, 0].sum():,} in total in {elapsed:.2f} s "
              "(first run: each worker compiles once)")

        last = rows.numblocks[0] - 1
        sample = [rows.blocks[0].compute(), rows.blocks[last].compute()]
        first_rows, last_rows = slice(0, sample[0].shape[0]), slice(n_books - sample[1].shape[0],
                                                                   n_books)
        check("first chunk on the cluster vs the single-process jitted vmap",
              stepped[first_rows], step(sample[0]))
        check("last chunk on the cluster vs the single-process jitted vmap",
              stepped[last_rows], step(sample[1]))
        python = np.array([step_row(row) for row in sample[0][:200]])
        check("200 books of the first chunk vs book_step called from Python",
              stepped[:200], python)
        if sample[0].shape == sample[1].shape:
            shards = run_sharded(step, [(sample[0],), (sample[1],)], client=client)
            check("run_sharded on the two sample chunks vs map_blocks", np.concatenate(shards),
                  np.concatenate([stepped[first_rows], stepped[last_rows]]))
    finally:
        if own:
            client.close()
            client.cluster.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--books", type=int, default=10_000_000, metavar="N")
    parser.add_argument("--chunk", type=int, default=500_000, metavar="N",
                        help="books per chunk (one Dask task each)")
    parser.add_argument("--workers", type=int, default=2, metavar="N",
                        help="worker processes of the local cluster")
    args = parser.parse_args()
    if not 1 <= args.chunk <= args.books:
        parser.error(f"--chunk must be between 1 and --books, got {args.chunk:,}")
    main(args.books, args.chunk, args.workers)
