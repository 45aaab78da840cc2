"""Accumulators updated in a loop are recorded once after it when the reverse sweep reads
only their final value (tape.summarize_loops), and at every update when it reads more.

The loops here run over `range(w.shape[0])`: a loop over a short literal range
(`range(3)`) is unrolled before reverse mode (reverse/unroll.py) and records nothing."""
import numpy as np
import pytest

from benchmarks.natural import lj_energy_components
from gradcheck import assert_gradient_close, central_differences
from transformer import grad, jit
from transformer.api_reverse import show_grad
from transformer.test_util import check_grads


def _positions(n=7, box=3.0):
    rng = np.random.default_rng(3)
    return rng.uniform(0.0, box, (n, 3)), 1.0, 1.0, box, 2.5


def components_any_dim(pos, eps, sigma, box, rcut):
    """`lj_energy_components` over `range(pos.shape[1])`: a loop that stays a loop."""
    n = pos.shape[0]
    energy = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            r2 = 0.0
            for k in range(pos.shape[1]):
                dk = pos[i, k] - pos[j, k]
                dk = dk - box * np.round(dk / box)
                r2 += dk * dk
            if r2 < rcut * rcut:
                s6 = (sigma * sigma / r2) ** 3
                energy += 4.0 * eps * (s6 * s6 - s6)
    return energy


def test_components_energy_records_r2_once_per_pair_after_the_k_loop():
    lines = show_grad(components_any_dim).splitlines()
    pushes = [line for line in lines if "push(" in line]
    assert len(pushes) == 1 and pushes[0].strip().startswith("r2_tape = push(")
    loop = next(line for line in lines if line.strip().startswith("for k in range("))
    indent = len(loop) - len(loop.lstrip())
    assert len(pushes[0]) - len(pushes[0].lstrip()) == indent     # after, not inside
    assert sum("r2_tape[" in line for line in lines) == 1            # one restore


@pytest.fixture(scope="module")
def components_grads():
    return grad(lj_energy_components), jit(grad(lj_energy_components))


@pytest.mark.parametrize("backend", [0, 1], ids=["python", "jit"])
def test_components_energy_gradient_matches_finite_differences(components_grads, backend):
    args = _positions()
    got = components_grads[backend](*args)
    expected = central_differences(lj_energy_components, args, 0)
    assert_gradient_close(got, expected, "lj_energy_components")
    assert np.abs(expected).max() > 1e-3           # some pairs inside the cutoff


def read_inside(x, w):
    t = 0.0
    for i in range(x.shape[0]):
        r2 = 0.0
        for k in range(w.shape[0]):
            dk = x[i, k] * w[k]
            r2 += dk * dk
            t += r2 * dk                 # the reverse reads every value of r2
        t += np.sin(r2)
    return t


def recomputed_inside(x, w):
    t = 0.0
    for i in range(x.shape[0]):
        r2 = 0.0
        for k in range(w.shape[0]):
            r2 += x[i, k] * w[k]
            q = r2 * r2                  # re-run in the reverse of the k body
            t += np.cos(q)
    return t


def read_before_loop(x, w):
    t = 0.0
    for i in range(x.shape[0]):
        r2 = x[i, 0] * w[0]
        if r2 > 0.0:                     # the reverse re-tests the value before the loop
            t += r2 * r2
        for k in range(1, w.shape[0]):
            r2 = r2 + x[i, k] * w[k]
        t += r2 ** 3
    return t


def nested_accumulation(x, w, m):
    t = 0.0
    for i in range(x.shape[0]):
        r2 = 1.0
        for k in range(m):               # zero trips when m == 0
            for j in range(3):
                r2 = r2 * 0.5 + np.tanh(x[i, j] * w[k % 3])
        t += np.log(r2 * r2 + 1.0)
    return t


def test_updates_whose_values_the_reverse_reads_are_still_recorded():
    assert "r2_tape = push(" in show_grad(read_inside).split("for k in range(")[1]
    # the value before the loop is read (the branch), its updates in the loop are not
    before, loop = show_grad(read_before_loop).split("for k in range(1, ")[:2]
    assert before.count("r2_tape = push(") == 1
    assert loop.split("for i in range(")[0].count("r2_tape = push(") == 1   # after it


@pytest.mark.parametrize("f, extra", [(read_inside, ()), (recomputed_inside, ()),
                                      (read_before_loop, ()), (nested_accumulation, (3,)),
                                      (nested_accumulation, (0,))])
def test_accumulator_gradients_match_finite_differences(f, extra):
    rng = np.random.default_rng(5)
    x, w = rng.normal(size=(4, 3)), rng.normal(size=3)
    check_grads(f, (x, w) + extra)
    if f is nested_accumulation:
        got = jit(grad(f, argnums=(0, 1)))(x, w, *extra)
        for argnum in (0, 1):
            assert_gradient_close(got[argnum], central_differences(f, (x, w) + extra,
                                                                    argnum), f.__name__)


def grows_in_loop(x, v):
    t = 0.0
    for i in range(2):
        s = x * (i + 1)
        for k in range(v.shape[0]):
            s = s + v * k                # a scalar becomes an array
        t += np.sum(np.sin(s))           # the reverse reads the value after the loop
    return t * x


def test_an_unrecorded_update_that_changes_shape_is_an_error():
    text = show_grad(grows_in_loop)
    assert text.count("s_tape = push(") == 1 and "check_shape(s, s_shape," in text
    with pytest.raises(ValueError, match="changed shape"):
        grad(grows_in_loop)(2.0, np.ones(3))


def index_in_loop(x, w):
    y = np.zeros(4)
    t = 0.0
    for i in range(3):
        m = 0
        for k in range(i + 1):
            m = m + 1
            y[m] = y[m] * w[k] + x[k]      # the reverse restores y[m]: reads each m
        t += np.sum(np.sin(y)) * m
    return t


def test_indices_read_by_restored_writes_are_recorded_per_update():
    rng = np.random.default_rng(7)
    check_grads(index_in_loop, (rng.normal(size=3), rng.normal(size=3)))
