"""CUDA benchmarks: secant's kernels against secant on the CPU and JAX on the GPU.

    W6  one order-book message on each of 1,000,000 books (int64, 32 levels)
        secant jit(vmap(book_step), backend="cuda")  vs  jit(vmap(book_step), parallel=True)
        vs JAX jit(vmap(book_step_lax)) on the GPU
    W1  Lennard-Jones forces, N = 16384 particles, float32, periodic box, cutoff 2.5
        secant jit(vmap(grad(particle_energy)), backend="cuda"), one thread per particle
        vs the same vmap(grad) on the CPU (parallel=True)  vs JAX jit(grad(energy)) on the GPU
    W2  per-example gradients of a tanh MLP, B = 4096, float32
        784-256-10 is refused by backend="cuda" (one thread's gradient of W1 alone is
        802,816 bytes of local memory, over CUDA's 512 KiB per thread); the script records
        that and measures 64-32-10 instead, against the CPU and JAX jit(vmap(grad)).

CUDA rows time kernels on device-resident inputs (launch + `cuda.synchronize()`); the
"numpy in/out" row of each workload adds the copies to and from the device. Medians
over repeated runs after a warm-up call; the compile column is the first call. Ratios
are to secant's CUDA kernel. The order-book steps update the books in place, so each
repeat applies the same messages to books that drift slowly (the work stays similar).

Without a GPU (and numba-cuda) this prints why and exits 0: no figures are made up.
`--small` runs tiny sizes, which also works on the CUDA simulator
(NUMBA_ENABLE_CUDASIM=1) as a check of the script itself - those times mean nothing.

    PYTHONPATH=. python benchmarks/bench_cuda.py [--json bench_cuda.json] [--small]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
import time

import numpy as np

from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from anywhere

from benchmarks import peers, timing, workloads  # noqa: E402
from benchmarks.timing import Row  # noqa: E402
from codegen import cuda as secant_cuda  # noqa: E402
from transformer import TransformError, grad, jit, vmap  # noqa: E402

CUDA = "secant cuda"


particle_energy = workloads.lj_particle_energy
mlp_loss = workloads.mlp_loss_arrays


# ---------------------------------------------------------------- helpers

def synchronized(fn):
    """`fn` whose call returns only when the GPU has finished its work."""
    from numba import cuda

    def call(*args):
        result = fn(*args)
        cuda.synchronize()
        return result
    return call


def first_call(fn, *args) -> float:
    start = time.perf_counter()
    timing._wait(fn(*args))
    return time.perf_counter() - start


def to_device(*arrays):
    from numba import cuda
    return tuple(cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in arrays)


def host(value):
    if isinstance(value, tuple):
        return tuple(host(v) for v in value)
    return value.copy_to_host() if hasattr(value, "copy_to_host") else np.asarray(value)


def jax_gpu():
    """jax when it has a GPU backend here, else None."""
    try:
        jax = peers._jax()
        return jax if any(d.platform == "gpu" for d in jax.devices()) else None
    except Exception:  # not installed, or no GPU plugin
        return None


def cuda_rows(workload, size, kernel, device_args, host_args, repeat) -> list[Row]:
    compile_s = first_call(synchronized(kernel), *device_args)
    rows = [Row(workload, size, CUDA, timing.median_time(synchronized(kernel), *device_args,
                                                          repeat=repeat), compile_s)]
    rows.append(Row(workload, size, CUDA + " numpy in/out",
                    timing.median_time(kernel, *host_args, repeat=repeat)))
    return rows


def cpu_version(batched, args, notes, workload):
    """jit(batched, parallel=True), or the serial jit where Numba cannot parallelize it."""
    parallel = jit(batched, parallel=True)
    try:
        return parallel, "secant cpu parallel", first_call(parallel, *copies(args))
    except Exception as exc:  # a Numba parfors failure: fall back, and say so
        notes.append(f"{workload}: jit(..., parallel=True) failed on the CPU "
                     f"({type(exc).__name__}: {str(exc).splitlines()[-1][:120]}); "
                     "the CPU row is the serial jit")
        serial = jit(batched)
        return serial, "secant cpu", first_call(serial, *copies(args))


def copies(args):
    return tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)


def cpu_row(workload, size, cpu, args, repeat) -> Row:
    fn, label, compile_s = cpu
    return Row(workload, size, label, timing.median_time(fn, *args, repeat=repeat),
               compile_s)


def jax_rows(workload, size, label, build, repeat, notes) -> list[Row]:
    """The JAX GPU row of a workload; `build(jax)` gives the function and its device
    arguments. No row, and a note, where JAX has no GPU backend."""
    jax = jax_gpu()
    if jax is None:
        notes.append(f"{workload.split()[0]}: JAX has no GPU backend here; no JAX row")
        return []
    fn, args = build(jax)
    compile_s = first_call(fn, *args)
    return [Row(workload, size, label, timing.median_time(fn, *args, repeat=repeat),
                compile_s)]


# ---------------------------------------------------------------- workloads

def bench_order_book(n_books: int, repeat: int, notes: list) -> list[Row]:
    bid, ask, msg_type, side, level, qty = workloads.book_inputs(n_books, 1, seed=1)
    message = (msg_type[:, 0], side[:, 0], level[:, 0], qty[:, 0])
    size = f"{n_books:,} books"
    kernel = jit(vmap(workloads.book_step), backend="cuda")
    cpu = cpu_version(vmap(workloads.book_step), (bid, ask, *message), notes, "W6")
    check = (bid.copy(), ask.copy())
    expected = cpu[0](*check, *message)
    books = (bid.copy(), ask.copy())
    np.testing.assert_array_equal(kernel(*books, *message), expected)
    np.testing.assert_array_equal(books[0], check[0])
    rows = cuda_rows("W6 book step", size, kernel, to_device(bid, ask, *message),
                     (bid.copy(), ask.copy(), *message), repeat)
    rows.append(cpu_row("W6 book step", size, cpu, (bid.copy(), ask.copy(), *message),
                        repeat))
    return rows + jax_rows("W6 book step", size, "jax gpu jit(vmap)", lambda jax: (
        peers.book_step_batch_jax(), tuple(jax.device_put(a) for a in (bid, ask, *message))),
        repeat, notes)


def bench_lj_forces(n: int, repeat: int, notes: list) -> list[Row]:
    pos, eps, sigma, box, rcut = workloads.lj_inputs(n)
    pos32 = pos.astype(np.float32)
    scalars = tuple(np.float32(v) for v in (eps, sigma, box, rcut))
    args = (pos32, pos32, np.arange(n), *scalars)
    size = f"N={n} f32"
    in_axes = (0, None, 0, None, None, None, None)
    kernel = jit(vmap(grad(particle_energy), in_axes=in_axes), backend="cuda")
    cpu = cpu_version(vmap(grad(particle_energy), in_axes=in_axes), args, notes, "W1")
    reference = cpu[0](*args)
    np.testing.assert_allclose(host(kernel(*args)), reference, rtol=2e-3, atol=2e-3)
    device = to_device(pos32, np.arange(n))
    rows = cuda_rows("W1 LJ forces", size, kernel,
                     (device[0], device[0], device[1], *scalars), args, repeat)
    rows.append(cpu_row("W1 LJ forces", size, cpu, args, repeat))
    return rows + jax_rows("W1 LJ forces", size, "jax gpu jit(grad)", lambda jax: (
        peers.lj_grad_jax(), (jax.device_put(pos32), *scalars)), repeat, notes)


def bench_mlp(batch: int, shape: tuple, repeat: int, notes: list) -> list[Row]:
    n_in, hidden, n_out = shape
    params, X, Y = workloads.mlp_inputs(batch, n_in, hidden, n_out)
    weights = (params["W1"], params["b1"], params["W2"], params["b2"])
    in_axes = (None, None, None, None, 0, 0)
    per_example = vmap(grad(mlp_loss, argnums=(0, 1, 2, 3)), in_axes=in_axes)
    kernel = jit(per_example, backend="cuda")
    size = f"B={batch} {n_in}-{hidden}-{n_out}"
    try:
        kernel.source(*weights, X, Y)
    except TransformError as exc:
        notes.append(f"W2 {size}: refused by backend='cuda': {exc.message}")
        return []
    args = (*weights, X, Y)
    cpu = cpu_version(per_example, args, notes, "W2")
    for got, want in zip(host(kernel(*args)), cpu[0](*args)):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4)
    rows = cuda_rows("W2 per-ex grad", size, kernel, to_device(*args), args, repeat)
    rows.append(cpu_row("W2 per-ex grad", size, cpu, args, repeat))
    return rows + jax_rows("W2 per-ex grad", size, "jax gpu jit(vmap(grad))", lambda jax: (
        peers.mlp_per_example_grads_jax(),
        ({k: jax.device_put(v) for k, v in params.items()}, jax.device_put(X),
         jax.device_put(Y))), repeat, notes)


# ---------------------------------------------------------------- main

def device_description() -> str:
    from numba import cuda
    if secant_cuda.simulated():
        return "CUDA simulator (CPU): times are not GPU times"
    device = cuda.get_current_device()
    name = device.name.decode() if isinstance(device.name, bytes) else device.name
    return f"{name}, compute capability {device.compute_capability}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results to this JSON file")
    parser.add_argument("--small", action="store_true",
                        help="tiny sizes: a check of the script (also on the simulator)")
    args = parser.parse_args()
    reason = secant_cuda.unavailable_reason()
    if reason:
        print(f"No CUDA device here, so no GPU timings were measured: {reason}")
        return 0
    small = args.small
    repeat = 3 if small else 7
    notes: list = []
    print(f"device: {device_description()}")
    rows = bench_order_book(64 if small else 1_000_000, repeat, notes)
    rows += bench_lj_forces(64 if small else 16384, repeat, notes)
    batch = 32 if small else 4096
    rows += bench_mlp(batch, (784, 256, 10), repeat, notes)
    rows += bench_mlp(batch, (64, 32, 10), repeat, notes)
    timing.print_table(rows, CUDA)
    for note in notes:
        print("note:", note)
    if args.json:
        payload = {"device": device_description(), "python": platform.python_version(),
                   "small": small, "notes": notes,
                   "rows": [dataclasses.asdict(r) for r in rows]}
        with open(args.json, "w") as handle:
            json.dump(payload, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
