"""vmap benchmarks: secant's generated batched code against hand-written code and JAX.

    W3  vmap(matvec), 512x512 matrix, B = 256 vectors, float32
        secant jit(vmap(matvec, in_axes=(None, 0)))  vs NumPy V @ M.T  vs JAX jit(vmap)
    W2  per-example gradients of the MLP 784-256-10, B = 128, float32
        secant jit(vmap(grad(loss)))  vs hand-batched NumPy backprop  vs JAX jit(vmap(grad))
    W2b the batch gradient of the same MLP as JAX's tutorial writes it, the mean of a vmap
        of the one-example loss: secant jit(grad(batch_loss))  vs NumPy backprop with one
        product per layer  vs JAX jit(grad)
    W6  one order-book message on each of 100,000 books
        secant jit(vmap(book_step), parallel=True)  vs hand Numba prange  vs JAX jit(vmap)

One process; medians over repeated runs after a warm-up call (compile excluded; the
compile column is the first call). Ratios are to the baseline named in each table.

    PYTHONPATH=. python benchmarks/bench_vmap.py [--json out.json] [--quick] [--only W2]
"""
from __future__ import annotations

import argparse
import sys
import statistics
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from benchmarks import peers, timing, workloads  # noqa: E402
from benchmarks.timing import Row  # noqa: E402
from transformer import grad, jit, vmap  # noqa: E402


def _first_call(fn, *args):
    start = time.perf_counter()
    timing._wait(fn(*args))
    return time.perf_counter() - start


def bench_w3(repeat: int) -> list[Row]:
    M, V = workloads.matvec_inputs(512, 256)
    size = "512x512 B=256"
    secant = jit(vmap(workloads.matvec, in_axes=(None, 0)))
    fns = {"numpy V @ M.T": peers.matvec_batched_numpy, "secant jit(vmap)": secant,
           "secant vmap (python)": vmap(workloads.matvec, in_axes=(None, 0))}
    compile_s = _first_call(secant, M, V)
    np.testing.assert_allclose(secant(M, V), V @ M.T, rtol=1e-3, atol=1e-3)
    for fn in fns.values():
        fn(M, V)
    # JAX is timed on its own: its thread pool keeps spinning after a call and would
    # slow down whichever implementation runs next
    medians = timing.interleaved_medians(fns, (M, V), repeat, 10)
    rows = [Row("W3 matvec", size, label, medians[label],
                compile_s if label == "secant jit(vmap)" else None) for label in fns]
    return rows + _jax_row("W3 matvec", size, peers.matvec_batched_jax, (M, V), repeat, 10)


def bench_w2(repeat: int) -> list[Row]:
    params, X, Y = workloads.mlp_inputs(batch=128)
    size = "784-256-10 B=128"
    hand = peers.mlp_per_example_grads_numpy
    per_example = vmap(grad(workloads.mlp_loss), in_axes=(None, 0, 0))
    secant = jit(per_example)
    compile_s = _first_call(secant, params, X, Y)
    py_first = _first_call(per_example, params, X, Y)
    expected = hand(params, X, Y)
    for got in (secant(params, X, Y), per_example(params, X, Y)):
        for key in expected:
            np.testing.assert_allclose(got[key], expected[key], rtol=2e-3, atol=1e-5)
    fns = {"numpy hand-batched": hand, "secant jit(vmap(grad))": secant,
           "secant vmap(grad) (py)": per_example}
    medians = timing.interleaved_medians(fns, (params, X, Y), repeat, 3)
    firsts = {"secant jit(vmap(grad))": compile_s, "secant vmap(grad) (py)": py_first}
    rows = [Row("W2 per-ex grad", size, label, medians[label], firsts.get(label))
            for label in fns]
    rows += _jax_row("W2 per-ex grad", size, peers.mlp_per_example_grads_jax, (params, X, Y),
                     repeat, 3)
    return rows


example_losses = vmap(workloads.mlp_loss, in_axes=(None, 0, 0))


def batch_loss(params, X, Y):
    """W2b: the mean of the per-example losses, through a vmap (JAX's MLP tutorial)."""
    return np.mean(example_losses(params, X, Y))


def bench_w2b(repeat: int) -> list[Row]:
    params, X, Y = workloads.mlp_inputs(batch=128)
    size = "784-256-10 B=128"
    hand = peers.mlp_batch_grad_numpy
    secant = jit(grad(batch_loss))
    compile_s = _first_call(secant, params, X, Y)
    expected, got = hand(params, X, Y), secant(params, X, Y)
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=2e-3, atol=1e-6)
    fns = {"numpy hand backprop": hand, "secant jit(grad)": secant}
    medians = timing.interleaved_medians(fns, (params, X, Y), repeat, 3)
    rows = [Row("W2b batch grad", size, label, medians[label],
                compile_s if label.startswith("secant") else None) for label in fns]
    try:
        jax_grad = peers.mlp_batch_grad_jax()
    except ImportError:
        return rows
    compile_s = _first_call(jax_grad, params, X, Y)
    rows.append(Row("W2b batch grad", size, "jax jit(grad)",
                    timing.median_time(jax_grad, params, X, Y, repeat=repeat, number=3),
                    compile_s))
    return rows


def _median_fresh_books(fn, books, messages, repeat: int) -> float:
    """Median time of `fn` on fresh copies of the books (the copy is not timed)."""
    times = []
    for _ in range(repeat):
        bid, ask = books[0].copy(), books[1].copy()
        start = time.perf_counter()
        timing._wait(fn(bid, ask, *messages))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_w6(repeat: int, n_books: int) -> list[Row]:
    bid, ask, msg_type, side, level, qty = workloads.book_inputs(n_books, 1, seed=0)
    books, messages = (bid, ask), (msg_type[:, 0], side[:, 0], level[:, 0], qty[:, 0])
    size = f"{n_books} books"
    hand = peers.book_step_batch_numba
    hand(bid.copy(), ask.copy(), *messages)
    rows = [Row("W6 book step", size, "hand numba prange",
                _median_fresh_books(hand, books, messages, repeat))]
    secant = jit(vmap(workloads.book_step), parallel=True)
    compile_s = _first_call(secant, bid.copy(), ask.copy(), *messages)
    ours, theirs = (bid.copy(), ask.copy()), (bid.copy(), ask.copy())
    np.testing.assert_array_equal(secant(*ours, *messages), hand(*theirs, *messages))
    np.testing.assert_array_equal(ours[0], theirs[0])
    rows.append(Row("W6 book step", size, "secant jit(vmap) par",
                    _median_fresh_books(secant, books, messages, repeat), compile_s))
    try:
        jax_step = peers.book_step_batch_jax()
    except ImportError:
        return rows
    compile_s = _first_call(jax_step, *books, *messages)
    rows.append(Row("W6 book step", size, "jax jit(vmap)",
                    timing.median_time(jax_step, *books, *messages, repeat=repeat), compile_s))
    return rows


def _jax_row(workload, size, factory, args, repeat, number) -> list[Row]:
    try:
        fn = factory()
    except ImportError:
        return []
    compile_s = _first_call(fn, *args)
    return [Row(workload, size, "jax jit(vmap)",
                timing.median_time(fn, *args, repeat=repeat, number=number), compile_s)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the rows to this JSON file")
    parser.add_argument("--quick", action="store_true", help="fewer repeats, fewer books")
    parser.add_argument("--only", nargs="*", choices=["W2", "W2b", "W3", "W6"],
                        help="run only these workloads")
    args = parser.parse_args()
    warnings.simplefilter("ignore")     # Numba's notes on parallel=True and caching
    repeat = 5 if args.quick else 15
    benches = [("W3", lambda: bench_w3(repeat), "numpy V @ M.T"),
               ("W2", lambda: bench_w2(repeat), "numpy hand-batched"),
               ("W2b", lambda: bench_w2b(repeat), "numpy hand backprop"),
               ("W6", lambda: bench_w6(repeat, 10_000 if args.quick else 100_000),
                "hand numba prange")]
    tables = [(name, bench(), baseline) for name, bench, baseline in benches
              if not args.only or name in args.only]
    rows = []
    for _, table, baseline in tables:
        timing.print_table(table, baseline)
        print()
        rows += table
    if args.json:
        timing.write_json(args.json, rows)


if __name__ == "__main__":
    main()
