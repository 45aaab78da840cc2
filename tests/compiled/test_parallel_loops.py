"""`jit(f, parallel=True)` runs a user's `range` loop whose trips are independent as a
`prange` loop (`transformer/parallel_loops.py`): the same values as the serial loop, and
every loop whose trips depend on each other, or might, stays serial."""
import math

import numpy as np
import pytest
from numba import prange

from transformer import jit

ALPHA, SCALE = 1.6732632423543772, 1.0507009873554805
X = np.random.default_rng(0).normal(size=1000)


def selu_loop(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        v = x[i]
        out[i] = SCALE * v if v > 0 else SCALE * (ALPHA * math.exp(v) - ALPHA)
    return out


def from_one(x):
    out = np.zeros_like(x)
    out[0] = -1.0
    for i in range(1, x.shape[0]):
        if x[i] > 0.5:
            t = x[i] * 2.0
        else:
            t = np.tanh(x[i])
        out[i] = t + i
    return out


def rows_and_columns(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            out[i, j] = abs(x[i, j]) * 2.0 + j
    return out


def by_length(x, y):
    out = np.zeros_like(x)
    for i in range(len(x)):
        out[i] = x[i] * y[i] + 1.0
    return out


def index_arithmetic(x):
    out = np.zeros_like(x)
    for i in range(2, x.shape[0]):
        k = i - 4                           # negative for the first trips
        out[i] = k * 1.5 + (-i) + x[i]
    return out


def gathered(x, idx):
    out = np.empty(idx.shape[0])
    for i in range(idx.shape[0]):
        out[i] = x[idx[i]] * 2.0
    return out


def elementwise_rows(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = np.exp(x[i])               # rows of a matrix: arrays, not numbers
    return out


def added_rows(x, y):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] + y[i]
    return out


def test_an_independent_loop_runs_as_prange_with_the_serial_values():
    parallel = jit(selu_loop, parallel=True)
    np.testing.assert_allclose(parallel(X), jit(selu_loop)(X), rtol=1e-15)
    np.testing.assert_allclose(parallel(X), selu_loop(X), rtol=1e-13)
    text = parallel.source(X)
    assert "for i in prange(x.shape[0]):" in text and "scalar_elements(" in text
    assert "prange" not in jit(selu_loop).source(X)


@pytest.mark.parametrize("fn, args", [
    (from_one, (X,)),
    (rows_and_columns, (X.reshape(40, 25),)),
    (by_length, (X, X[::-1].copy())),
    (index_arithmetic, (X,)),
])
def test_loops_that_run_in_parallel(fn, args):
    parallel = jit(fn, parallel=True)
    np.testing.assert_allclose(parallel(*args), fn(*args), rtol=1e-13)
    assert "prange(" in parallel.source(*args)


def test_a_start_past_zero_keeps_the_index_unsigned_and_arithmetic_signed():
    text = jit(from_one, parallel=True).source(X)
    assert "for i in prange(x.shape[0]):\n            i_signed = intp(i)\n" \
        "            if i_signed >= 1:" in text
    assert "out[i] = t + i_signed" in text    # x[i] indexes with the unsigned index


def test_a_loop_with_an_index_its_bounds_do_not_prove_stays_serial_and_located():
    # the check would raise inside the prange, which Numba then runs serially (and warns)
    parallel = jit(gathered, parallel=True)
    idx = np.arange(999, -1, -3)
    np.testing.assert_allclose(parallel(X, idx), gathered(X, idx), rtol=1e-13)
    assert "prange" not in parallel.source(X, idx)
    idx = np.arange(10)
    idx[7] = 5000
    with pytest.raises(IndexError, match=r"test_parallel_loops.py:\d+:\d+: index 5000 is "
                                         r"out of bounds for axis 0 with size 1000"):
        jit(gathered, parallel=True)(X, idx)


def test_rows_of_arrays_keep_the_serial_loop_at_run_time():
    matrix = X.reshape(100, 10)
    parallel = jit(elementwise_rows, parallel=True)
    np.testing.assert_allclose(parallel(matrix), np.exp(matrix), rtol=1e-13)
    # broadcasting fails, not silently, with NumPy's error at the user's line (Numba's
    # parallel array expressions assert the sizes, tests/compiled/test_broadcast_errors.py)
    with pytest.raises(ValueError, match=r"test_parallel_loops.py:\d+:\d+: operands could "
                                         r"not be broadcast together with shapes"):
        jit(added_rows, parallel=True)(np.ones((4, 3)), np.ones((4, 2)))
    np.testing.assert_array_equal(jit(added_rows, parallel=True)(X, X), 2 * X)


def own_prange_negated(x):
    out = np.empty_like(x)
    for i in prange(x.shape[0]):
        out[i] = -i + x[i] * (2 - i)
    return out


def own_prange_rebinding(x):
    out = np.zeros_like(x)
    for i in prange(x.shape[0]):
        i = i - 3                           # the body rebinds its variable
        out[i + 3] = -i * x[i + 3]
    return out


def own_prange_inside_converted(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i, 0] = x[i, 0]
        for j in prange(x.shape[1]):
            out[i, j] = x[i, j] * (-j)
    return out


@pytest.mark.parametrize("fn, args", [
    (own_prange_negated, (X,)),
    (own_prange_rebinding, (X,)),
    (own_prange_inside_converted, (X.reshape(40, 25),)),
])
def test_a_users_own_prange_reads_its_index_signed(fn, args):
    # Numba types the index of a one-argument prange unsigned: -i was 1.8e19
    np.testing.assert_allclose(jit(fn, parallel=True)(*args), fn(*args), rtol=1e-13)
    np.testing.assert_allclose(jit(fn)(*args), fn(*args), rtol=1e-13)


def test_a_users_prange_keeps_the_unsigned_index_for_items():
    text = jit(own_prange_negated, parallel=True).source(X)
    assert "i_signed = intp(i)" in text
    assert "out[i] = -i_signed + x[i] * (2 - i_signed)" in text


# ------------------------------------------------------------------ loops that stay serial

def reduction(x):
    total = 0.0
    for i in range(x.shape[0]):
        total += x[i]
    return total


def carried(x):
    out = np.zeros_like(x)
    for i in range(1, x.shape[0]):
        out[i] = out[i - 1] + x[i]
    return out


def into_parameter(x):
    for i in range(x.shape[0]):
        x[i] = x[i] * 2.0
    return x


def through_alias(x):
    out = np.zeros_like(x)
    alias = out
    for i in range(x.shape[0] - 1):
        out[i] = alias[i + 1] + x[i]
    return out


def through_view(x):
    out = np.zeros_like(x)
    view = out[1:]
    for i in range(x.shape[0] - 1):
        out[i] = view[i] + x[i]
    return out


def alias_in_trip(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        row = x
        out[i] = row[i] * 2.0
    return out


def helper(v):
    return v * 2.0


def calls_a_helper(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = helper(x[i])
    return out


def draws(x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] + np.random.normal()
    return out


def breaks(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        if x[i] > 2.0:
            break
        out[i] = x[i]
    return out


def index_after(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i]
    return out, i


def value_after(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        last = x[i] * 2.0
        out[i] = last
    return out, last


def bound_on_one_path(x):
    out = np.zeros_like(x)
    t = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:
            t = x[i]
        out[i] = t
    return out


def floor_divides(x):
    out = np.zeros_like(x)
    for i in range(x.shape[0]):
        out[i] = x[i] // 0.5
    return out


def step(x):
    out = np.zeros_like(x)
    for i in range(0, x.shape[0], 2):
        out[i] = x[i]
    return out


SERIAL = [alias_in_trip, reduction, carried, into_parameter, through_alias, through_view,
          calls_a_helper, breaks, index_after, value_after, bound_on_one_path, floor_divides,
          step]


@pytest.mark.parametrize("fn", SERIAL, ids=lambda f: f.__name__)
def test_dependent_or_uncertain_loops_stay_serial(fn):
    parallel = jit(fn, parallel=True)
    assert "prange" not in parallel.source(X.copy())
    want = fn(X.copy())
    got = parallel(X.copy())
    for g, w in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        np.testing.assert_allclose(g, w, rtol=1e-13)


def test_a_loop_drawing_random_numbers_stays_serial():
    assert "prange" not in jit(draws, parallel=True).source(X)


# ------------------------------------------------------------------ generated programs

def run_generated(directory, seeds, hazard=None) -> tuple[list, int]:
    """(findings, how many programs ran their loop as prange) for the programs of `seeds`
    (tests/parallel_loop_generator.py), each against Python running its text."""
    import importlib.util

    from tests import parallel_loop_generator as generator

    findings, parallel = [], 0
    for seed in seeds:
        rng = np.random.default_rng(seed)
        text = "import math\nimport numpy as np\nfrom numba import prange\n\n\n" + \
            generator.program_text(rng, hazard)
        path = directory / f"parallel_program_{seed}.py"
        path.write_text(text)
        spec = importlib.util.spec_from_file_location(f"parallel_program_{seed}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        args = generator.arguments(rng, int(rng.integers(3, 40)))
        compiled = jit(module.program, parallel=True)
        parallel += "prange(" in compiled.source(*args)
        want, got = module.program(*args), compiled(*args)
        for w, g in zip(want, got):
            if not np.allclose(g, w, rtol=1e-12, atol=1e-12, equal_nan=True):
                findings.append(f"seed {seed}:\n{text}\nwant {w}\ngot {g}")
                break
    return findings, parallel


def test_generated_loops_agree_with_python(tmp_path):
    findings, parallel = run_generated(tmp_path, range(2000, 2004), hazard="none")
    more, _ = run_generated(tmp_path, range(2004, 2008))
    assert not findings + more, (findings + more)[0]
    assert parallel >= 1                    # the drawn programs include independent loops


@pytest.mark.slow
def test_more_generated_loops_agree_with_python(tmp_path):
    findings, parallel = run_generated(tmp_path, range(2100, 2130))
    assert not findings, findings[0]
    assert parallel >= 5
