"""A short literal loop (`for k in range(3)`) is written out before reverse mode
(reverse/unroll.py): the reverse sweep then recomputes the per-component values instead of
recording them, and the forward loops of a pair loop go. Loops whose index is observed
after them, that break, or that are long keep their loop and still differentiate right.

Everything here runs the generated Python (no compile); the jitted gradient of the same
k-loop energy is checked in test_reverse_accumulators.py."""
import numpy as np
import pytest

from benchmarks.natural import lj_energy_components
from gradcheck import assert_gradient_close, central_differences
from transformer import grad
from transformer.api_reverse import show_grad
from transformer.test_util import check_grads


def _positions(n=6, box=3.0):
    rng = np.random.default_rng(11)
    return rng.uniform(0.0, box, (n, 3)), 1.0, 1.0, box, 2.5


def _lj_forces(pos, eps, sigma, box, rcut):
    """-dE/dpos by the analytic pair force, all pairs at once in NumPy (the oracle)."""
    d = pos[:, None, :] - pos[None, :, :]
    d = d - box * np.round(d / box)
    r2 = np.sum(d * d, axis=-1)
    np.fill_diagonal(r2, np.inf)
    inside = r2 < rcut * rcut
    s6 = np.where(inside, (sigma * sigma / r2) ** 3, 0.0)
    coef = np.where(inside, 24.0 * eps * (2.0 * s6 * s6 - s6) / r2, 0.0)
    return np.sum(coef[:, :, None] * d, axis=1)


def _loops(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().startswith("for ")]


def test_k_loop_energy_gradient_records_nothing_and_keeps_only_the_reverse_pair_loop():
    text = show_grad(lj_energy_components)
    assert "push(" not in text and "_tape" not in text
    assert len(_loops(text)) == 2 and not any("range(3)" in loop for loop in _loops(text))


def test_k_loop_energy_gradient_is_minus_the_analytic_forces():
    args = _positions()
    forces = _lj_forces(*args)
    assert np.abs(forces).max() > 1e-3                      # some pairs inside the cutoff
    np.testing.assert_allclose(grad(lj_energy_components)(*args), -forces,
                               rtol=1e-10, atol=1e-12)


def descending_with_index_arithmetic(x, w):
    t = 0.0
    for i in range(x.shape[0]):
        acc = 1.0
        for k in range(2, -1, -1):                   # 2, 1, 0
            acc = acc * np.sin(x[i, k]) + w[k] * k
            if acc > 0.5:
                t += acc * x[i, k]
        t += acc * acc
    return t


def grows_over_the_copies(x, w):
    """A value that changes shape from trip to trip: one name per copy once written out
    (a loop over `range(w.shape[0])` is refused instead, test_reverse_tape.py)."""
    acc = x[0]
    for _ in range(3):
        acc = acc + w * x[1]
    return np.sum(acc * acc)


def index_read_after(x, w):
    t = 0.0
    for k in range(3):
        t += x[k] * w[k]
    return t * x[k]                                  # the last trip's k: 2


def breaks_early(x, w):
    t = 0.0
    for k in range(3):
        if x[k] > 10.0:
            break
        t += np.sin(x[k]) * w[k]
    return t


def long_loop(x, w):
    t = 0.0
    for k in range(5):                               # more trips than unroll.MAX_TRIPS
        t += np.tanh(x[k % 3] * w[k % 3]) * k
    return t


def writes_in_place(x, w):
    y = np.zeros(3)
    for k in range(3):
        y[k] = np.sin(x[k]) * w[k]
    return np.sum(y * y)


def index_assigned(x, w):
    """The body assigns the loop's index: the loop keeps it apart (prepare.separate_index)."""
    t = 0.0
    for k in range(3):
        t += x[k] * w[k]
        k = 0
        t += x[k]
    return t


@pytest.mark.slow
@pytest.mark.parametrize("f, unrolled", [
    (descending_with_index_arithmetic, True), (grows_over_the_copies, True),
    (index_read_after, False),
    (breaks_early, False), (long_loop, False), (writes_in_place, False),
    (index_assigned, False)])
def test_unrolled_or_not_the_gradient_matches_finite_differences(f, unrolled):
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 3)) if f is descending_with_index_arithmetic else rng.normal(size=3)
    w = rng.normal(size=3)
    text = show_grad(f, argnums=(0, 1))
    assert any(loop.startswith("for k") for loop in _loops(text)) is not unrolled
    check_grads(f, (x, w), order=2 if unrolled else 1)   # grad of the unrolled grad too
    for argnum in (0, 1):
        got = grad(f, argnums=(0, 1))(x, w)[argnum]
        assert_gradient_close(got, central_differences(f, (x, w), argnum), f.__name__)
