"""Limit order books, one per market, stepped in parallel by vmap.

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

    python examples/order_book.py [--backend cpu|cuda]
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from benchmarks.workloads import book_inputs, book_replay, book_step  # noqa: E402
from transformer import jit, show_vmap, vmap  # noqa: E402

N_BOOKS = 10_000


def python_loop(fn, books, messages):
    bid, ask = books
    return np.array([fn(bid[k], ask[k], *(m[k] for m in messages))
                     for k in range(bid.shape[0])])


def main():
    warnings.simplefilter("ignore", category=Warning)   # Numba's notes on parallel=True
    print(show_vmap(book_step))

    bid, ask, msg_type, side, level, qty = book_inputs(N_BOOKS, n_messages=50, seed=1)
    first = (msg_type[:, 0], side[:, 0], level[:, 0], qty[:, 0])

    step = jit(vmap(book_step), parallel=True)
    books = (bid.copy(), ask.copy())
    start = time.perf_counter()
    filled = step(*books, *first)
    elapsed = time.perf_counter() - start
    reference_books = (bid.copy(), ask.copy())
    expected = python_loop(book_step, reference_books, first)
    np.testing.assert_array_equal(filled, expected)
    np.testing.assert_array_equal(books[0], reference_books[0])
    np.testing.assert_array_equal(books[1], reference_books[1])
    print(f"one message on each of {N_BOOKS} books: filled {filled.sum()} in total, "
          f"same books as the Python loop (first call, with compile: {elapsed:.2f} s)")

    replay = jit(vmap(book_replay), parallel=True)
    books = (bid.copy(), ask.copy())
    totals = replay(*books, msg_type, side, level, qty)
    reference_books = (bid.copy(), ask.copy())
    expected = python_loop(book_replay, reference_books, (msg_type, side, level, qty))
    np.testing.assert_array_equal(totals, expected)
    np.testing.assert_array_equal(books[0], reference_books[0])
    print(f"{msg_type.shape[1]} messages on each of {N_BOOKS} books: filled {totals.sum()} "
          "in total, same as the Python loop")

    books = (bid.copy(), ask.copy())
    start = time.perf_counter()
    step(*books, *first)
    print(f"compiled step over {N_BOOKS} books: {1e3 * (time.perf_counter() - start):.2f} ms")


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
    np.testing.assert_array_equal(filled, expected)
    np.testing.assert_array_equal(books[0], reference_books[0])
    np.testing.assert_array_equal(books[1], reference_books[1])
    print(f"one message on each of {n_books:,} books on the GPU: filled {filled.sum()} in "
          f"total, same books as the CPU backend (first call, with compile: {first:.2f} s)")
    start = time.perf_counter()
    step(*books, *message)
    print(f"CUDA step over {n_books:,} books, with copies to and from the device: "
          f"{1e3 * (time.perf_counter() - start):.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("cpu", "cuda"), default="cpu")
    if parser.parse_args().backend == "cuda":
        main_cuda()
    else:
        main()
