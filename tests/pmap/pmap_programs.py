"""Functions the pmap tests map over devices; the oracle of each is vmap with the same
axis_name (identical semantics), NumPy, or single-device code."""
import numpy as np

from transformer import all_gather, axis_index, grad, pmax, pmean, pmin, psum
from transformer.pmap import ppermute

RING = [(0, 1), (1, 0)]


def every_collective(x, c):
    """Three stages: one collective, then a wave of four independent ones."""
    s = np.sum(x * x)
    scale = psum(s, "i") + c
    y = x / scale
    hi, lo, mid, rows = pmax(np.max(y), "i"), pmin(np.min(y), "i"), pmean(y, "i"), \
        all_gather(y, "i")
    return y + (hi - lo) * axis_index("i") + mid + np.sum(rows), rows


def nested(x):
    """The inner collective is reduced at an earlier boundary than the outer one."""
    total = x - psum(pmean(x, "i") * 2.0, "i")
    if psum(np.sum(total), "i") > 0.0:          # a top-level test runs once: split before
        total = total * 3.0
    return total


def ring_shift(x):
    return ppermute(x * 2.0, "i", RING)


def loss(w, b, x, y):
    """Mean squared error of a one-hidden-layer tanh network on a batch."""
    h = np.tanh(x @ w + b)
    r = np.sum(h, axis=1) - y
    return np.mean(r * r)


def data_parallel_grad(w, b, x, y):
    """Each device's gradient on its part of the batch, averaged over the devices."""
    gw, gb = grad(loss, argnums=(0, 1))(w, b, x, y)
    return pmean(gw, "i"), pmean(gb, "i")


def per_example_loss(w, b, x, y):
    """The squared error of one example."""
    r = np.sum(np.tanh(x @ w + b)) - y
    return r * r


def branchy(x):
    if np.sum(x) > 0:
        x = x * 2.0
    return x


# ------------------------------------------------------------------ refused forms
def collective_in_loop(x):
    for _ in range(2):
        x = psum(x, "i")
    return x


def collective_in_branch(x):
    if np.sum(x) > 0:
        x = pmean(x, "i")
    return x


def return_before_collective(x):
    if np.sum(x) > 0:
        return x
    return psum(x, "i")


def other_axis(x):
    return psum(x, "j")


def sum_over_devices(x):
    return psum(x, "i")


def collective_in_helper(x):
    return sum_over_devices(x) * 2.0


def perm_out_of_range(x):
    return ppermute(x, "i", [(0, 5)])


def block_normalize(x):
    """Under shard_map: each device's block divided by the total over all blocks."""
    return x / psum(np.sum(x), "i")


def block_stats(x, w):
    """Under shard_map: a replicated total and the blocks gathered on every device."""
    local = x @ w
    return psum(np.sum(local), "i"), all_gather(local, "i")


def out_of_bounds(x, k):
    """Shard 1 indexes past its slice's end (k = 3 + shard index)."""
    return x[k + axis_index("i")]


def powers(x, n):
    """`n` is static: range(n) is unrolled knowledge of the compiled stages."""
    acc = 0.0
    for k in range(n):
        acc += np.sum(x ** k)
    return x * psum(acc, "i")


def scaled_by_tree(p, x):
    """A dict argument read in two stages (containers never cross a stage whole)."""
    s = psum(p["a"] * x, "i")
    return s + p["b"]


def accumulate(x, acc):
    """Writes into an unmapped argument: each device writes its own copy."""
    acc[0] += np.sum(x)
    return acc[0]


def with_default(x, c=2.0):
    return x * c + psum(x, "i")
