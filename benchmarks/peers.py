"""What secant is timed against: hand-written code, Numba, JAX and autograd, per workload.

Peers named `*_numpy`, `*_numba` or `*_loop` compute the result from arrays. Peers named
`*_jax` or `*_autograd` are factories: they import the library (so this module imports
without it), build the transformed function once and return it, so that a benchmark can
time the first call (compile) apart from the rest. The functions they transform, where
the workload needs rewriting for them, are `lj_energy_vectorized`, `rnn_loss_scan` and
`book_step_lax`. JAX runs in float64 where the workload
is float64 (`jax_enable_x64` is switched on by `_jax()`).

Where a peer can run the workload's own source unchanged, it does, through
`on_array_module`; the Lennard-Jones energy and the recurrence need a vectorized or scanned
rewrite, as users of those libraries write them.
"""

from __future__ import annotations

import types
from collections.abc import Callable

import numba
import numpy as np

from benchmarks import workloads
from benchmarks.workloads import BUY, SELL


def _jax():
    """Import jax with float64 enabled."""
    import jax

    jax.config.update("jax_enable_x64", True)
    return jax


def with_globals(fn: Callable, **names) -> Callable:
    """`fn` with some of its global names rebound; the code object is shared, not copied."""
    namespace = dict(fn.__globals__, **names)
    return types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__,
                              fn.__closure__)


def on_array_module(fn: Callable, xp) -> Callable:
    """`fn` with its global name `np` bound to the array module `xp` (jax.numpy, autograd.numpy).

    The peer then runs exactly the workload's source.
    """
    return with_globals(fn, np=xp)


# ---------------------------------------------------------------------------------------
# W1 Lennard-Jones
# ---------------------------------------------------------------------------------------


@numba.njit(cache=False, fastmath=False)
def lj_forces_numba(pos, eps, sigma, box, rcut) -> np.ndarray:
    """Analytic forces -dE/dpos (n, 3) for `workloads.lj_energy`, pair loop in Numba."""
    n = pos.shape[0]
    rcut2 = rcut * rcut
    sigma2 = sigma * sigma
    forces = np.zeros_like(pos)
    d = np.empty(3)
    for i in range(n):
        for j in range(i + 1, n):
            r2 = 0.0
            for k in range(3):
                dk = pos[i, k] - pos[j, k]
                dk -= box * np.round(dk / box)
                d[k] = dk
                r2 += dk * dk
            if r2 < rcut2:
                s6 = (sigma2 / r2) ** 3
                # force on i = -dE/dd = -2 dE/dr2 * d
                coef = 24.0 * eps * (2.0 * s6 * s6 - s6) / r2
                for k in range(3):
                    forces[i, k] += coef * d[k]
                    forces[j, k] -= coef * d[k]
    return forces


def lj_energy_vectorized(pos, eps, sigma, box, rcut):
    """`workloads.lj_energy` over all (i, j) pairs at once, the cutoff as a mask.

    Written against `np` so `on_array_module` runs it on jax.numpy and autograd.numpy. The
    inner `where` keeps 1/r2 finite on the diagonal and beyond the cutoff, so the masked
    entries also have a finite (zero) gradient.
    """
    d = pos[:, None, :] - pos[None, :, :]
    d = d - box * np.round(d / box)
    r2 = np.sum(d * d, axis=-1)
    n = pos.shape[0]
    inside = (r2 < rcut * rcut) & (np.arange(n)[:, None] != np.arange(n)[None, :])
    s6 = (sigma * sigma / np.where(inside, r2, 1.0)) ** 3
    pair = np.where(inside, 4.0 * eps * (s6 * s6 - s6), 0.0)
    return 0.5 * np.sum(pair)


def lj_grad_jax() -> Callable:
    """jit(grad(energy)) on the vectorized energy; returns dE/dpos, i.e. minus the forces."""
    jax = _jax()
    energy = on_array_module(lj_energy_vectorized, jax.numpy)
    return jax.jit(jax.grad(energy))


def lj_grad_autograd() -> Callable:
    """autograd grad of the vectorized NumPy energy; returns dE/dpos."""
    import autograd
    import autograd.numpy as anp

    return autograd.grad(on_array_module(lj_energy_vectorized, anp))


# ---------------------------------------------------------------------------------------
# W7 recurrence
# ---------------------------------------------------------------------------------------


def rnn_grad_numpy(W, U, b, xs, h0) -> np.ndarray:
    """d rnn_loss / dW by hand-written backpropagation through time."""
    steps = xs.shape[0]
    hs = np.empty((steps + 1, h0.shape[0]))
    hs[0] = h0
    for t in range(steps):
        hs[t + 1] = np.tanh(W @ hs[t] + U @ xs[t] + b)
    dW = np.zeros_like(W)
    dh = np.zeros_like(h0)
    for t in range(steps - 1, -1, -1):
        dh = dh + 2.0 * hs[t + 1]
        dpre = dh * (1.0 - hs[t + 1] ** 2)
        dW += np.outer(dpre, hs[t])
        dh = W.T @ dpre
    return dW


def rnn_loss_scan(W, U, b, xs, h0):
    """`workloads.rnn_loss` with the time loop as `lax.scan`, as JAX users write it."""
    jax = _jax()
    jnp = jax.numpy

    def step(h, x):
        h = jnp.tanh(W @ h + U @ x + b)
        return h, jnp.sum(h * h)

    _, losses = jax.lax.scan(step, h0, xs)
    return jnp.sum(losses)


def rnn_grad_jax() -> Callable:
    """jit(grad(rnn_loss_scan)) with respect to W."""
    jax = _jax()
    return jax.jit(jax.grad(rnn_loss_scan))


# ---------------------------------------------------------------------------------------
# W4 Hessians
# ---------------------------------------------------------------------------------------


def hessian_sum_tanh_numpy(x) -> np.ndarray:
    """Analytic Hessian of sum(tanh(x)): diag(-2 tanh(x) sech^2(x))."""
    t = np.tanh(x)
    return np.diag(-2.0 * t * (1.0 - t * t))


def hessian_sum_tanh_linear_numpy(x, A) -> np.ndarray:
    """Analytic Hessian of sum(tanh(A @ x)) in x: A.T @ diag(-2 t sech^2) @ A, t = tanh(A x)."""
    t = np.tanh(A @ x)
    return A.T @ ((-2.0 * t * (1.0 - t * t))[:, None] * A)


def hessian_jax(fn: Callable) -> Callable:
    """jit(hessian(fn)) in the first argument, running the workload source on jax.numpy."""
    jax = _jax()
    return jax.jit(jax.hessian(on_array_module(fn, jax.numpy)))


def hessian_autograd(fn: Callable) -> Callable:
    """autograd.hessian(fn) in the first argument, on the workload source."""
    import autograd
    import autograd.numpy as anp

    return autograd.hessian(on_array_module(fn, anp))


def hvp_jax(fn: Callable) -> Callable:
    """jit of the Hessian-vector product (x, v, *rest) -> H(x) v, forward over reverse."""
    jax = _jax()
    grad_fn = jax.grad(on_array_module(fn, jax.numpy))

    def hvp(x, v, *rest):
        return jax.jvp(lambda y: grad_fn(y, *rest), (x,), (v,))[1]

    return jax.jit(hvp)


# ---------------------------------------------------------------------------------------
# W3 matvec
# ---------------------------------------------------------------------------------------


def matvec_batched_numpy(M, V) -> np.ndarray:
    """Every row of V times M: (batch, n)."""
    return V @ M.T


def matvec_batched_jax() -> Callable:
    """jit(vmap(matvec, in_axes=(None, 0))) on the workload source."""
    jax = _jax()
    return jax.jit(jax.vmap(on_array_module(workloads.matvec, jax.numpy), in_axes=(None, 0)))


# ---------------------------------------------------------------------------------------
# W2 per-example gradients
# ---------------------------------------------------------------------------------------


def _mlp_backprop(params, X, Y, scale: float):
    """(hidden activations H, d loss / d logits, d loss / d pre-activations) of
    `workloads.mlp_loss` for every example, each example's loss weighted by `scale`."""
    H = np.tanh(X @ params["W1"].T + params["b1"])
    logits = H @ params["W2"].T + params["b2"]
    z = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(z)
    probs /= probs.sum(axis=1, keepdims=True)
    dlogits = probs
    dlogits[np.arange(X.shape[0]), Y] -= 1.0
    dlogits *= scale
    dpre = (dlogits @ params["W2"]) * (1.0 - H * H)
    return H, dlogits, dpre


def mlp_per_example_grads_numpy(params, X, Y) -> dict[str, np.ndarray]:
    """Gradients of `workloads.mlp_loss` for each example, batched backprop by hand.

    Returns a dict shaped like `params` with a leading batch axis on every array.
    """
    H, dlogits, dpre = _mlp_backprop(params, X, Y, 1.0)
    return {
        "W1": dpre[:, :, None] * X[:, None, :],
        "b1": dpre,
        "W2": dlogits[:, :, None] * H[:, None, :],
        "b2": dlogits,
    }


def mlp_per_example_grads_jax() -> Callable:
    """jit(vmap(grad(mlp_loss), in_axes=(None, 0, 0))) on the workload source."""
    jax = _jax()
    loss = on_array_module(workloads.mlp_loss, jax.numpy)
    return jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0, 0)))


def mlp_batch_grad_numpy(params, X, Y) -> dict[str, np.ndarray]:
    """The gradient of the mean of `workloads.mlp_loss` over the batch, backprop by hand
    with one matrix product per layer (W2b)."""
    H, dlogits, dpre = _mlp_backprop(params, X, Y, 1.0 / X.shape[0])
    return {"W1": dpre.T @ X, "b1": dpre.sum(axis=0), "W2": dlogits.T @ H,
            "b2": dlogits.sum(axis=0)}


def mlp_batch_grad_jax() -> Callable:
    """jit(grad(mean of vmap(mlp_loss))): JAX's MLP tutorial form."""
    jax = _jax()
    loss = on_array_module(workloads.mlp_loss, jax.numpy)

    def batch_loss(params, X, Y):
        return jax.numpy.mean(jax.vmap(loss, in_axes=(None, 0, 0))(params, X, Y))
    return jax.jit(jax.grad(batch_loss))


# ---------------------------------------------------------------------------------------
# W6 order book
# ---------------------------------------------------------------------------------------
# Batched peers take books (B, L) and one message per book (B,) for a step, or a stream
# (B, M) for a replay. The loop and Numba peers update the books in place and return the
# filled quantities (B,); the JAX peers return (bid_qty, ask_qty, filled).


def _over_books_loop(per_book: Callable) -> Callable:
    """Oracle: a Python loop over books calling the workload function `per_book`."""
    def batched(bid_qty, ask_qty, msg_type, side, price_level, qty) -> np.ndarray:
        return np.array([
            per_book(bid_qty[k], ask_qty[k], msg_type[k], side[k], price_level[k], qty[k])
            for k in range(bid_qty.shape[0])
        ], dtype=np.int64)
    return batched


def _over_books_numba(per_book: Callable) -> Callable:
    """A `prange` over books, each running `per_book` (a Numba-compiled workload)."""
    @numba.njit(parallel=True)
    def batched(bid_qty, ask_qty, msg_type, side, price_level, qty):
        filled = np.zeros(bid_qty.shape[0], dtype=np.int64)
        for k in numba.prange(bid_qty.shape[0]):
            filled[k] = per_book(bid_qty[k], ask_qty[k], msg_type[k], side[k], price_level[k],
                                 qty[k])
        return filled
    return batched


_book_step_numba = numba.njit(workloads.book_step)
_book_replay_numba = numba.njit(with_globals(workloads.book_replay, book_step=_book_step_numba))

book_step_batch_loop = _over_books_loop(workloads.book_step)
book_replay_batch_loop = _over_books_loop(workloads.book_replay)
book_step_batch_numba = _over_books_numba(_book_step_numba)
book_replay_batch_numba = _over_books_numba(_book_replay_numba)


def book_step_lax(bid_qty, ask_qty, msg_type, side, price_level, qty):
    """`workloads.book_step` for JAX: `lax.switch` on the type, `lax.while_loop` to fill.

    Returns (bid_qty, ask_qty, filled) as new arrays. The two sides are stacked into one
    (2, L) book so that `side` selects a row instead of a branch. Cells are updated through
    a one-hot mask rather than `.at[...]`: under vmap the scatter runs at half the speed.
    """
    jax = _jax()
    jnp, lax = jax.numpy, jax.lax
    book = jnp.stack([bid_qty, ask_qty])
    levels = bid_qty.shape[0]
    rows, cols = jnp.arange(2)[:, None], jnp.arange(levels)[None, :]
    nothing = jnp.zeros_like(qty)

    def cell(row, level):
        return (rows == row) & (cols == level)

    def limit(book):
        return book + jnp.where(cell(side, price_level), qty, 0), nothing

    def cancel(book):
        return book - jnp.where(cell(side, price_level), jnp.minimum(qty, book), 0), nothing

    def market(book):
        # A buy takes asks (row 1) upward from level 0, a sell takes bids (row 0) downward.
        row = jnp.where(side == BUY, SELL, BUY)
        step = jnp.where(side == BUY, 1, -1)
        start = jnp.where(side == BUY, 0, levels - 1)

        def unfilled(state):
            _, level, filled = state
            return (filled < qty) & (level >= 0) & (level < levels)

        def take(state):
            book, level, filled = state
            here = cell(row, level)
            taken = jnp.minimum(qty - filled, jnp.sum(jnp.where(here, book, 0)))
            return book - jnp.where(here, taken, 0), level + step, filled + taken

        book, _, filled = lax.while_loop(unfilled, take, (book, start, nothing))
        return book, filled

    # The branch list is indexed by the message type: LIMIT, CANCEL, MARKET are 0, 1, 2.
    book, filled = lax.switch(msg_type, [limit, cancel, market], book)
    return book[0], book[1], filled


def book_step_batch_jax() -> Callable:
    """jit(vmap(book_step_lax)) over books, one message each."""
    jax = _jax()
    return jax.jit(jax.vmap(book_step_lax))


def book_replay_batch_jax() -> Callable:
    """jit(vmap(scan of book_step_lax)) over books, a message stream each."""
    jax = _jax()

    def replay(bid_qty, ask_qty, msg_type, side, price_level, qty):
        def step(books, msg):
            bid, ask, filled = book_step_lax(*books, *msg)
            return (bid, ask), filled

        (bid, ask), filled = jax.lax.scan(step, (bid_qty, ask_qty),
                                          (msg_type, side, price_level, qty))
        return bid, ask, filled.sum()

    return jax.jit(jax.vmap(replay))

