"""Arrays the function does not own, written in place after it read them: a global array
written by the function itself (`W[0, 0] += 10.0` after `y = W @ x`), an argument or a
global written by a helper it calls (`bump(M)`, `bump()`). Reverse mode reads such an
array when the gradient runs, after the write: the function's own writes are recorded
and undone in the reverse sweep, as for a parameter; a call's writes are refused at the
call, with a hint that works. Checked against central differences of the function run
from the same start each time."""
import os

os.environ.setdefault("NUMBA_OPT", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from transformer import (TransformError, grad, jacfwd, jacrev, jit, jvp,  # noqa: E402
                         value_and_grad, vjp)

START = np.array([[1.0, 2.0], [3.0, 4.0]])
W = START.copy()
X = np.array([0.5, -1.0])


@pytest.fixture(autouse=True)
def fresh_w():
    W[...] = START
    yield
    W[...] = START


def from_start(f, x):
    """Central differences of `f`, each run starting from W = START."""
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = 1e-6
        W[...] = START
        up = f(x + e)
        W[...] = START
        down = f(x - e)
        g[i] = (up - down) / 2e-6
    W[...] = START
    return g


def writes_the_global(x):
    y = W @ x
    W[0, 0] += 10.0          # after W was read: the gradient needs the value before
    return np.sum(y * x)


def test_a_global_array_written_after_it_is_read():
    want = from_start(writes_the_global, X)
    np.testing.assert_allclose(grad(writes_the_global)(X), want, rtol=1e-6)
    value, g = value_and_grad(writes_the_global)(X)
    np.testing.assert_allclose(g, want, rtol=1e-6)
    W[...] = START
    np.testing.assert_allclose(jacfwd(writes_the_global)(X), want, rtol=1e-6)
    assert W[0, 0] == 11.0                     # forward mode writes as the function does
    W[...] = START
    np.testing.assert_allclose(jvp(writes_the_global, (X,), (np.eye(2)[0],))[1], want[0],
                               rtol=1e-6)


@pytest.mark.slow
def test_a_global_array_written_after_it_is_read_under_jit():
    np.testing.assert_allclose(jit(grad(writes_the_global))(X),
                               from_start(writes_the_global, X), rtol=1e-6)


def test_jacrev_and_vjp_of_a_function_writing_a_global_array_are_refused():
    # each runs the function more than once: a run would start where the last one left W
    with pytest.raises(TransformError, match="jacrev of writes_the_global.*'W'") as info:
        jacrev(writes_the_global)(X)
    assert "jacfwd" in info.value.hint
    with pytest.raises(TransformError, match="vjp of writes_the_global.*'W'") as info:
        vjp(writes_the_global, X)
    assert "value_and_grad" in info.value.hint
    assert W[0, 0] == 1.0                      # refused before it ran


def bump_argument(a):
    a[0, 0] += 10.0


def bump_global():
    W[0, 0] += 10.0


def helper_writes_the_argument(x, M):
    y = M @ x
    bump_argument(M)
    return np.sum(y * x)


def helper_writes_the_global(x):
    y = W @ x
    bump_global()
    return np.sum(y * x)


def helper_writes_in_the_loop(x, M):
    s = 0.0
    for _ in range(2):
        bump_argument(M)    # the next trip's read comes after this trip's write
        s = s + np.sum((M @ x) * x)
    return s


@pytest.mark.parametrize("f, args, name", [
    (helper_writes_the_argument, (X, START.copy()), "M"),
    (helper_writes_the_global, (X,), "W"),
    (helper_writes_in_the_loop, (X, START.copy()), "M"),
], ids=["argument", "global", "loop"])
def test_a_call_writing_an_array_read_before_it_is_refused_at_the_call(f, args, name):
    with pytest.raises(TransformError, match=f"writes into '{name}' here") as info:
        grad(f)(*args)
    err = info.value
    assert err.filename == __file__ and "bump_" in err.line
    assert f"{name}.copy()" in err.hint


def helper_writes_the_argument_on_a_copy(x, M):
    y = M @ x
    bump_argument(M.copy())                    # the hint's form
    return np.sum(y * x)


def bumps_in_this_function(x, M):
    y = M @ x
    M[0, 0] += 10.0                            # the hint's other form
    return np.sum(y * x)


def writes_before_reading(x, M):
    bump_argument(M)                           # no read before: the values are the new ones
    return np.sum((M @ x) * x)


@pytest.mark.parametrize("f", [helper_writes_the_argument_on_a_copy, bumps_in_this_function,
                               writes_before_reading], ids=lambda f: f.__name__)
def test_the_forms_the_hint_names_and_a_write_before_any_read(f):
    def fresh(x):
        return f(x, START.copy())

    g = np.zeros(2)
    for i in range(2):
        e = np.eye(2)[i] * 1e-6
        g[i] = (fresh(X + e) - fresh(X - e)) / 2e-6
    np.testing.assert_allclose(grad(f)(X, START.copy()), g, rtol=1e-6)
