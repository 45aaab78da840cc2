"""The functions secant's benchmarks transform, and the inputs they run on.

Each workload is written the way a scientist writes it: plain Python and NumPy with real
`for`/`while` loops, `if` branches and in-place writes, no concession to any tool. The
input makers take a fixed seed so every implementation sees the same numbers.

Workloads:
    W1  Lennard-Jones energy with a pair loop, minimum image and cutoff   lj_energy,
                                                                        lj_particle_energy
    W2  MLP loss for one example (per-example gradients)                  mlp_loss,
                                                                        mlp_loss_arrays
    W3  matrix-vector product (batched by vmap)                           matvec
    W4  scalar functions for Hessians                                     sum_tanh, sum_tanh_linear
    W6  one message applied to a limit order book                         book_step, book_replay
    W7  tanh recurrence unrolled over time                                rnn_loss
"""

from __future__ import annotations

import numpy as np

# ---------------------------------------------------------------------------------------
# W1 Lennard-Jones
# ---------------------------------------------------------------------------------------


def lj_energy(pos, eps, sigma, box, rcut):
    """Total Lennard-Jones energy of `pos` (n, 3) in a cubic periodic box of side `box`."""
    n = pos.shape[0]
    rcut2 = rcut * rcut
    sigma2 = sigma * sigma
    energy = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[i] - pos[j]
            d = d - box * np.round(d / box)
            r2 = np.sum(d * d)
            if r2 < rcut2:
                s6 = (sigma2 / r2) ** 3
                energy += 4.0 * eps * (s6 * s6 - s6)
    return energy


def lj_particle_energy(xi, pos, i, eps, sigma, box, rcut):
    """Lennard-Jones energy of particle `i` placed at `xi` against all the others (minimum
    image, cutoff): its gradient in `xi` is minus the force on particle `i`, one particle per
    GPU thread under `vmap`."""
    rcut2 = rcut * rcut
    sigma2 = sigma * sigma
    e = 0.0
    for j in range(pos.shape[0]):
        if j != i:
            d = xi - pos[j]
            d = d - box * np.round(d / box)
            r2 = np.sum(d * d)
            if r2 < rcut2:
                s6 = (sigma2 / r2) ** 3
                e += 4.0 * eps * (s6 * s6 - s6)
    return e


def lj_inputs(n: int, seed: int = 0, density: float = 0.8):
    """(pos, eps, sigma, box, rcut) for `n` particles on a jittered cubic lattice.

    Reduced units (sigma = eps = 1) at a liquid-like density, so with rcut = 2.5 each
    particle has ~50 neighbours inside the cutoff and most pairs lie outside it.
    """
    rng = np.random.default_rng(seed)
    box = (n / density) ** (1.0 / 3.0)
    per_side = int(np.ceil(n ** (1.0 / 3.0)))
    spacing = box / per_side
    grid = np.arange(per_side) * spacing
    lattice = np.stack(np.meshgrid(grid, grid, grid, indexing="ij"), axis=-1).reshape(-1, 3)
    pos = lattice[:n] + rng.uniform(-0.1, 0.1, size=(n, 3)) * spacing
    return pos, 1.0, 1.0, box, 2.5


# ---------------------------------------------------------------------------------------
# W7 recurrence
# ---------------------------------------------------------------------------------------


def rnn_loss(W, U, b, xs, h0):
    """Sum over time of |h_t|^2 for h_t = tanh(W h_{t-1} + U x_t + b)."""
    h = h0
    loss = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(W @ h + U @ xs[t] + b)
        loss += np.sum(h * h)
    return loss


def rnn_inputs(steps: int = 1000, hidden: int = 32, n_in: int = 8, seed: int = 0):
    """(W, U, b, xs, h0) in float64; W is scaled so the recurrence neither explodes nor dies."""
    rng = np.random.default_rng(seed)
    W = rng.normal(size=(hidden, hidden)) * (0.9 / np.sqrt(hidden))
    U = rng.normal(size=(hidden, n_in)) / np.sqrt(n_in)
    b = rng.normal(size=hidden) * 0.1
    xs = rng.normal(size=(steps, n_in))
    h0 = np.zeros(hidden)
    return W, U, b, xs, h0


# ---------------------------------------------------------------------------------------
# W4 Hessians
# ---------------------------------------------------------------------------------------


def sum_tanh(x):
    """f1(x) = sum(tanh(x)); its Hessian is diagonal."""
    return np.sum(np.tanh(x))


def sum_tanh_linear(x, A):
    """f2(x) = sum(tanh(A @ x)); its Hessian is dense. Differentiate with respect to x."""
    return np.sum(np.tanh(A @ x))


def hessian_inputs(n: int, seed: int = 0):
    """(x, A, v): a point, a dense (n, n) matrix and a direction for Hessian-vector products."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    A = rng.normal(size=(n, n)) / np.sqrt(n)
    v = rng.normal(size=n)
    return x, A, v


# ---------------------------------------------------------------------------------------
# W3 matvec
# ---------------------------------------------------------------------------------------


def matvec(M, v):
    """M @ v for one vector; vmap over v gives the batched product."""
    return M @ v


def matvec_inputs(n: int = 512, batch: int = 256, seed: int = 0):
    """(M, V): an (n, n) matrix and a (batch, n) stack of vectors, float32."""
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, n)).astype(np.float32)
    V = rng.normal(size=(batch, n)).astype(np.float32)
    return M, V


# ---------------------------------------------------------------------------------------
# W2 per-example gradients
# ---------------------------------------------------------------------------------------


def mlp_loss(params, x, y):
    """Softmax cross-entropy of a tanh MLP on one example `x` (784,) with integer label `y`."""
    h = np.tanh(params["W1"] @ x + params["b1"])
    logits = params["W2"] @ h + params["b2"]
    z = logits - np.max(logits)
    return np.log(np.sum(np.exp(z))) - z[y]


def mlp_loss_arrays(W1, b1, W2, b2, x, y):
    """`mlp_loss` with the four weights as separate arrays (the CUDA backend takes no dicts)."""
    h = np.tanh(W1 @ x + b1)
    logits = W2 @ h + b2
    z = logits - np.max(logits)
    return np.log(np.sum(np.exp(z))) - z[y]


def mlp_inputs(batch: int = 128, n_in: int = 784, hidden: int = 256, n_out: int = 10,
               seed: int = 0):
    """(params, X, Y): float32 weights {"W1", "b1", "W2", "b2"}, inputs (batch, n_in), labels."""
    rng = np.random.default_rng(seed)
    params = {
        "W1": (rng.normal(size=(hidden, n_in)) / np.sqrt(n_in)).astype(np.float32),
        "b1": (rng.normal(size=hidden) * 0.1).astype(np.float32),
        "W2": (rng.normal(size=(n_out, hidden)) / np.sqrt(hidden)).astype(np.float32),
        "b2": (rng.normal(size=n_out) * 0.1).astype(np.float32),
    }
    X = rng.normal(size=(batch, n_in)).astype(np.float32)
    Y = rng.integers(0, n_out, size=batch)
    return params, X, Y


# ---------------------------------------------------------------------------------------
# W6 order book
# ---------------------------------------------------------------------------------------
# A book is two arrays of resting quantity per integer price level, bids and asks, with
# level 0 the lowest price. Side 0 is buy (bid), side 1 is sell (ask). A limit order rests
# at its level without matching: the message generator keeps bids below the mid and asks
# at or above it, so the book never crosses.

LIMIT, CANCEL, MARKET = 0, 1, 2
BUY, SELL = 0, 1


def book_step(bid_qty, ask_qty, msg_type, side, price_level, qty):
    """Apply one message to the book in place and return the quantity filled.

    A market buy takes asks from the lowest level upward, a market sell takes bids from
    the highest level downward, until it is filled or that side of the book is empty.
    """
    filled = 0
    if msg_type == LIMIT:
        if side == BUY:
            bid_qty[price_level] += qty
        else:
            ask_qty[price_level] += qty
    elif msg_type == CANCEL:
        if side == BUY:
            bid_qty[price_level] -= min(qty, bid_qty[price_level])
        else:
            ask_qty[price_level] -= min(qty, ask_qty[price_level])
    elif msg_type == MARKET:
        levels = bid_qty.shape[0]
        if side == BUY:
            level = 0
            while filled < qty and level < levels:
                take = min(qty - filled, ask_qty[level])
                ask_qty[level] -= take
                filled += take
                level += 1
        else:
            level = levels - 1
            while filled < qty and level >= 0:
                take = min(qty - filled, bid_qty[level])
                bid_qty[level] -= take
                filled += take
                level -= 1
    return filled


def book_replay(bid_qty, ask_qty, msg_type, side, price_level, qty):
    """Apply a stream of messages (arrays of length M) in order; return the total filled."""
    total = 0
    for m in range(msg_type.shape[0]):
        total += book_step(bid_qty, ask_qty, msg_type[m], side[m], price_level[m], qty[m])
    return total


def book_inputs(n_books: int, n_messages: int = 1, levels: int = 32, seed: int = 0):
    """(bid_qty, ask_qty, msg_type, side, price_level, qty) for `n_books` independent books.

    Books are int64 arrays (n_books, levels), half-filled on each side of the mid; the
    message arrays are int64 (n_books, n_messages): half limit orders, 30 % cancels and
    20 % market orders, with levels drawn near the mid.
    """
    rng = np.random.default_rng(seed)
    mid = levels // 2
    bid_qty = np.zeros((n_books, levels), dtype=np.int64)
    ask_qty = np.zeros((n_books, levels), dtype=np.int64)
    bid_qty[:, :mid] = rng.integers(1, 100, size=(n_books, mid))
    ask_qty[:, mid:] = rng.integers(1, 100, size=(n_books, levels - mid))

    shape = (n_books, n_messages)
    msg_type = rng.choice([LIMIT, CANCEL, MARKET], size=shape, p=[0.5, 0.3, 0.2])
    side = rng.integers(0, 2, size=shape)
    depth = np.minimum(rng.geometric(0.25, size=shape) - 1, mid - 1)
    price_level = np.where(side == BUY, mid - 1 - depth, mid + depth)
    # Sizes chosen so that a book does not drain over thousands of messages (it slowly
    # deepens), while a market order often walks past the first level.
    max_qty = np.array([100, 40, 150])[msg_type]
    qty = rng.integers(1, max_qty + 1)
    return (bid_qty, ask_qty, msg_type.astype(np.int64), side.astype(np.int64),
            price_level.astype(np.int64), qty.astype(np.int64))
