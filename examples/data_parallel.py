"""Data-parallel training of an MLP with pmap(grad) + pmean over CPU cores and Dask.

Needs: secant itself (numpy, numba); the `dask` extra for the Dask half
(`pip install -e ".[dask]"`; skipped with a message without it, or with --no-dask).

Each device (a CPU core running one worker thread; the compiled code releases the GIL)
holds a slice of every batch, computes the gradient of each of its examples with
`vmap(grad(loss))`, averages them, and `pmean` over the devices gives every device the
gradient of the whole batch, so all devices apply the same update and their parameters
stay identical. pmap splits the step at the `pmean` into two compiled stages with the
reduction between them (`secant show --pmap` prints them).

The same pmapped step then runs with `client=` a local Dask cluster of one worker process
per device (`pmap(..., client=client)`): every shard of every stage is a Dask task, the
workers compile the generated module with their own cache. The trained parameters are
checked against the same training on one device (one
compiled function over the whole batch) to rtol 1e-12 in float64; each comparison is
printed and a failed one exits with status 1.

    python examples/data_parallel.py [--devices D] [--batch N] [--steps S] [--no-dask]
"""
import argparse

import numpy as np
from checks import check, check_true

import transformer
from transformer import grad, jit, pmap, pmean, vmap

N_IN, HIDDEN, N_OUT = 16, 32, 4
EXAMPLES = (None, None, None, None, 0, 0)          # parameters shared, examples mapped


def loss(w1, b1, w2, b2, x, y):
    """Softmax cross-entropy of a tanh MLP on one example `x` with integer label `y`."""
    h = np.tanh(w1 @ x + b1)
    logits = w2 @ h + b2
    z = logits - np.max(logits)
    return np.log(np.sum(np.exp(z))) - z[y]


def per_example_grads(w1, b1, w2, b2, xs, ys):
    return vmap(grad(loss, argnums=(0, 1, 2, 3)), in_axes=EXAMPLES)(w1, b1, w2, b2, xs, ys)


def sgd(w1, b1, w2, b2, g1, c1, g2, c2, lr):
    return w1 - lr * g1, b1 - lr * c1, w2 - lr * g2, b2 - lr * c2


def device_step(w1, b1, w2, b2, xs, ys, lr):
    """One step on one device's slice; `pmean` makes the batch's gradient on every one."""
    g1, c1, g2, c2 = per_example_grads(w1, b1, w2, b2, xs, ys)
    n = xs.shape[0]
    # one statement: the four reductions happen at one boundary between two stages
    g1, c1, g2, c2 = (pmean(np.sum(g1, axis=0) / n, "devices"),
                      pmean(np.sum(c1, axis=0) / n, "devices"),
                      pmean(np.sum(g2, axis=0) / n, "devices"),
                      pmean(np.sum(c2, axis=0) / n, "devices"))
    return sgd(w1, b1, w2, b2, g1, c1, g2, c2, lr)


def single_step(w1, b1, w2, b2, xs, ys, lr):
    """The same step on one device: the whole batch's per-example gradients, averaged."""
    g1, c1, g2, c2 = per_example_grads(w1, b1, w2, b2, xs, ys)
    n = xs.shape[0]
    return sgd(w1, b1, w2, b2, np.sum(g1, axis=0) / n, np.sum(c1, axis=0) / n,
               np.sum(g2, axis=0) / n, np.sum(c2, axis=0) / n, lr)


def init(rng):
    return (rng.normal(size=(HIDDEN, N_IN)) / np.sqrt(N_IN), rng.normal(size=HIDDEN) * 0.1,
            rng.normal(size=(N_OUT, HIDDEN)) / np.sqrt(HIDDEN), rng.normal(size=N_OUT) * 0.1)


def mean_loss(params, X, Y) -> float:
    w1, b1, w2, b2 = params
    return float(np.mean([loss(w1, b1, w2, b2, X[i], Y[i]) for i in range(X.shape[0])]))


def train(params, X, Y, devices: int, steps: int, lr: float, client=None):
    """pmap over `devices` CPU cores (or the workers of a Dask `client`): every device
    gets batch // devices examples."""
    step = pmap(device_step, axis_name="devices", in_axes=(0, 0, 0, 0, 0, 0, None),
                client=client)
    replicated = tuple(np.stack([p] * devices) for p in params)
    xs = X.reshape(devices, -1, N_IN)
    ys = Y.reshape(devices, -1)
    for _ in range(steps):
        replicated = step(*replicated, xs, ys, lr)
    same = all(bool(np.all(p == p[0])) for p in replicated)     # pmean kept them equal
    check_true("every device holds the same parameters", same,
               f"{len(replicated)} arrays, {devices} copies each, compared exactly")
    return tuple(p[0] for p in replicated)


def local_cluster(devices: int):
    """A Dask client on a LocalCluster of `devices` worker processes, or None (with the
    reason printed) when the `dask` extra is missing."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("skipping the Dask half: pip install -e \".[dask]\" to run it")
        return None
    cluster = LocalCluster(n_workers=devices, threads_per_worker=1, processes=True,
                           dashboard_address=":0")
    return Client(cluster)


def positive(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 4096:
        raise argparse.ArgumentTypeError(f"must be between 1 and 4096, got {value}")
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cores = len(transformer.devices())
    parser.add_argument("--devices", type=positive, default=min(cores, 4),
                        help=f"CPU devices to train on (default min(cores, 4); {cores} here)")
    parser.add_argument("--batch", type=positive, default=64, help="examples per device")
    parser.add_argument("--steps", type=positive, default=20, help="training steps")
    parser.add_argument("--no-dask", action="store_true",
                        help="train over the CPU cores only, not also over a Dask cluster")
    args = parser.parse_args(argv)
    if args.devices > cores:
        parser.error(f"--devices {args.devices}: this process may run on {cores} cores")
    rng = np.random.default_rng(0)
    params = init(rng)
    X = rng.normal(size=(args.devices * args.batch, N_IN))
    Y = rng.integers(0, N_OUT, size=X.shape[0])
    print(f"{args.devices} devices x {args.batch} examples, {args.steps} steps; "
          f"loss before {mean_loss(params, X, Y):.4f}")

    single = jit(single_step)
    reference = params
    for _ in range(args.steps):
        reference = single(*reference, X, Y, 0.5)
    trained = train(params, X, Y, args.devices, args.steps, lr=0.5)
    for name, got, want in zip(("w1", "b1", "w2", "b2"), trained, reference):
        check(f"pmap(grad)+pmean over {args.devices} cores vs one device, {name}", got, want,
              rtol=1e-12, atol=1e-14)
    client = None if args.no_dask else local_cluster(args.devices)
    if client is not None:
        with client:
            on_dask = train(params, X, Y, args.devices, args.steps, lr=0.5, client=client)
            client.cluster.close()
        for name, got, want in zip(("w1", "b1", "w2", "b2"), on_dask, reference):
            check(f"pmap(grad)+pmean on {args.devices} Dask workers vs one device, {name}",
                  got, want, rtol=1e-12, atol=1e-14)
    after = mean_loss(trained, X, Y)
    check_true("training lowered the loss", after < mean_loss(params, X, Y),
               f"loss after {after:.4f}")
    print(f"loss after {after:.4f}")


if __name__ == "__main__":
    main()
