"""Limit order books, one per market, stepped in parallel by vmap.

Needs: nothing beyond secant itself for the cpu backend; the `cuda` extra
(`pip install -e ".[cuda]"`) and a GPU for `--backend cuda`.

Each book is two arrays of resting quantity per price level (bids and asks). A message
is a limit order (rest quantity at a level), a cancel (remove up to a quantity) or a
market order, which consumes levels in a `while` loop until it is filled or the book
side is empty (`benchmarks.workloads.book_step`). The message type is dispatched with
if/elif, so which branch runs - and how many levels a market order walks - depends on
each book's data. secant's vmap sees that the batch changes the control flow and picks
the loop strategy: a `prange` over books around the per-book function, so every book
runs only its own branch (JAX's vmap would turn the branches into a select and run all
of them, and the while loop until the slowest book is done).

Runs one message on each of 10,000 books, then a stream of 50 messages per book, and
checks both against a Python loop over the books.

With `--backend cuda` the same vmap(book_step) becomes a CUDA kernel, one GPU thread per
book, over 1,000,000 books (checked against the CPU backend); each thread runs only its
own branch and walks only its own levels.

    python examples/order_book.py [--backend cpu|cuda] [--books N]

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

from benchmarks.workloads import book_inputs, book_replay, book_step  # noqa: E402
from transformer import jit, show_vmap, vmap  # noqa: E402

N_BOOKS = 10_000


def python_loop(fn, books, messages):
    bid, ask = books
    return np.array([fn(bid[k], ask[k], *(m[k] for m in messages))
                     for k in range(bid.shape[0])])


def same(what, got, expected):
    check(what, got, expected)          # integers: exactly equal


def main(n_books: int = N_BOOKS):
    warnings.simplefilter("ignore", category=Warning)   # Numba's notes on parallel=True
    print(show_vmap(book_step))

    bid, ask, msg_type, side, level, qty = book_inputs(n_books, n_messages=50, seed=1)
    first = (msg_type[:, 0], side[:, 0], level[:, 0], qty[:, 0])

    step = jit(vmap(book_step), parallel=True)
    books = (bid.copy(), ask.copy())
    start = time.perf_counter()
    filled = step(*books, *first)
    elapsed = time.perf_counter() - start
    reference_books = (bid.copy(), ask.copy())
    expected = python_loop(book_step, reference_books, first)
    same("filled quantities, one message per book, vs a Python loop", filled, expected)
    same("bid books after it vs the Python loop's", books[0], reference_books[0])
    same("ask books after it vs the Python loop's", books[1], reference_books[1])
    print(f"one message on each of {n_books} books: filled {filled.sum()} in total "
          f"(first call, with compile: {elapsed:.2f} s)")

    replay = jit(vmap(book_replay), parallel=True)
    books = (bid.copy(), ask.copy())
    totals = replay(*books, msg_type, side, level, qty)
    reference_books = (bid.copy(), ask.copy())
    expected = python_loop(book_replay, reference_books, (msg_type, side, level, qty))
    same(f"filled totals, {msg_type.shape[1]} messages per book, vs a Python loop", totals,
         expected)
    same("bid books after them vs the Python loop's", books[0], reference_books[0])
    same("ask books after them vs the Python loop's", books[1], reference_books[1])

    books = (bid.copy(), ask.copy())
    start = time.perf_counter()
    step(*books, *first)
    print(f"compiled step over {n_books} books: {1e3 * (time.perf_counter() - start):.2f} ms")


def main_cuda(n_books: int = 1_000_000):
    """One message on each of `n_books` books, as a CUDA kernel (a thread per book)."""
    from codegen.cuda import CudaUnavailableError

    bid, ask, msg_type, side, level, qty = book_inputs(n_books, n_messages=1, seed=1)
    message = (msg_type[:, 0], side[:, 0], level[:, 0], qty[:, 0])
    step = jit(vmap(book_step), backend="cuda")
    books = (bid.copy(), ask.copy())
    try:
        start = time.perf_counter()
        filled = step(*books, *message)
    except CudaUnavailableError as exc:
        raise SystemExit(str(exc)) from None
    first = time.perf_counter() - start
    reference_books = (bid.copy(), ask.copy())
    expected = jit(vmap(book_step), parallel=True)(*reference_books, *message)
    same("filled quantities on the GPU vs the CPU backend", filled, expected)
    same("bid books on the GPU vs the CPU backend", books[0], reference_books[0])
    same("ask books on the GPU vs the CPU backend", books[1], reference_books[1])
    print(f"one message on each of {n_books:,} books on the GPU: filled {filled.sum()} in "
          f"total (first call, with compile: {first:.2f} s)")
    start = time.perf_counter()
    step(*books, *message)
    print(f"CUDA step over {n_books:,} books, with copies to and from the device: "
          f"{1e3 * (time.perf_counter() - start):.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--books", type=int, default=None, metavar="N",
                        help=f"number of books, 1 to 10,000,000 (default {N_BOOKS:,} on cpu, "
                             "1,000,000 on cuda)")
    args = parser.parse_args()
    if args.books is not None and not 1 <= args.books <= 10_000_000:
        parser.error(f"--books must be between 1 and 10,000,000, got {args.books:,}")
    if args.backend == "cuda":
        main_cuda(args.books or 1_000_000)
    else:
        main(args.books or N_BOOKS)
