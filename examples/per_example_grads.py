"""Per-example gradients of an MLP with vmap(grad), clipped and noised as in DP-SGD.

Needs: nothing beyond secant itself (numpy, numba).

Differentially private SGD needs the gradient of every example separately: each one is
clipped to norm C before they are summed, and Gaussian noise of scale sigma * C is
added. `vmap(grad(loss), in_axes=(None, 0, 0))` (parameters shared, examples mapped)
gives all of them in one batched function, generated as source: the vectorize
strategy turns each matrix-vector product of the backward pass into one product over
the batch, and each weight gradient into one batched outer product.

The per-example gradients are checked against a loop of `grad(loss)` over the examples
and against hand-written batched backpropagation; each comparison is printed, and a
failed one exits with status 1.

    python examples/per_example_grads.py [--batch N]
"""
import argparse

import numpy as np
from checks import check, check_true

from transformer import grad, jit, vmap

N_IN, HIDDEN, N_OUT = 784, 256, 10


def loss(params, x, y):
    """Softmax cross-entropy of a tanh MLP on one example `x` with integer label `y`."""
    h = np.tanh(params["W1"] @ x + params["b1"])
    logits = params["W2"] @ h + params["b2"]
    z = logits - np.max(logits)
    return np.log(np.sum(np.exp(z))) - z[y]


def init(rng):
    return {"W1": (rng.normal(size=(HIDDEN, N_IN)) / np.sqrt(N_IN)).astype(np.float32),
            "b1": (rng.normal(size=HIDDEN) * 0.1).astype(np.float32),
            "W2": (rng.normal(size=(N_OUT, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32),
            "b2": (rng.normal(size=N_OUT) * 0.1).astype(np.float32)}


def hand_batched_grads(params, X, Y):
    """The same per-example gradients by hand-written batched backpropagation."""
    W1, b1, W2, b2 = params["W1"], params["b1"], params["W2"], params["b2"]
    H = np.tanh(X @ W1.T + b1)
    logits = H @ W2.T + b2
    z = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    probs[np.arange(X.shape[0]), Y] -= 1.0
    dpre = (probs @ W2) * (1.0 - H * H)
    return {"W1": dpre[:, :, None] * X[:, None, :], "b1": dpre,
            "W2": probs[:, :, None] * H[:, None, :], "b2": probs}


def private_step(params, grads, clip, sigma, lr, rng):
    """One DP-SGD update: clip each example's gradient to norm `clip`, sum, add noise."""
    batch = grads["W1"].shape[0]
    norms = np.sqrt(sum(np.sum(g.reshape(batch, -1) ** 2, axis=1) for g in grads.values()))
    scale = np.minimum(1.0, clip / np.maximum(norms, 1e-12))
    updated = {}
    for key, p in params.items():
        g = grads[key]
        clipped = np.sum(g * scale.reshape((batch,) + (1,) * (g.ndim - 1)), axis=0)
        noisy = clipped + rng.normal(scale=sigma * clip, size=p.shape)
        updated[key] = (p - lr * noisy / batch).astype(p.dtype)
    return updated, norms


def batch_size(text: str) -> int:
    value = int(text)
    if not 4 <= value <= 4096:
        raise argparse.ArgumentTypeError(f"--batch must be between 4 and 4096, got {value}")
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=batch_size, default=128, metavar="N",
                        help="examples per batch, 4 to 4096 (default 128)")
    batch = parser.parse_args(argv).batch
    rng = np.random.default_rng(0)
    params = init(rng)
    X = rng.normal(size=(batch, N_IN)).astype(np.float32)
    Y = rng.integers(0, N_OUT, size=batch)

    per_example = vmap(grad(loss), in_axes=(None, 0, 0))
    compiled = jit(per_example)
    grads = compiled(params, X, Y)
    print("per-example gradients:", {k: tuple(g.shape) for k, g in grads.items()})

    looped = [grad(loss)(params, X[i], Y[i]) for i in range(4)]
    hand = hand_batched_grads(params, X, Y)
    for key in params:
        check(f"jit(vmap(grad))[{key!r}] of the first 4 examples vs grad(loss) one by one",
              grads[key][:4], np.stack([g[key] for g in looped]), rtol=1e-4, atol=1e-5)
        check(f"jit(vmap(grad))[{key!r}] vs hand-written batched backpropagation",
              grads[key], hand[key], rtol=1e-3, atol=1e-5)
        check_true(f"dtype of [{key!r}]", grads[key].dtype == np.float32,
                   f"{grads[key].dtype} (the parameters are float32)")

    for step in range(3):
        grads = compiled(params, X, Y)
        params, norms = private_step(params, grads, clip=1.0, sigma=1.1, lr=0.1, rng=rng)
        losses = [loss(params, X[i], Y[i]) for i in range(X.shape[0])]
        print(f"step {step}: mean loss {np.mean(losses):.4f}, "
              f"gradient norms {np.min(norms):.3f}..{np.max(norms):.3f}")


if __name__ == "__main__":
    main()
