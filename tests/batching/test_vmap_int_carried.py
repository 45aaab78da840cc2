"""`a = n` for an int argument `n`, then floats in a loop that reads `a`: `jit(f)` compiles
it (Numba makes the number a float), but under `jit(vmap(f))` `a` is an int array that
becomes a float array, which compiled code refuses. The refusal used to point at a line
of the generated module (`tanh_a = vector_tanh(a)`); it is now at the user's `a = n`,
with a hint whose form compiles and agrees with the per-example loop."""
import functools
import inspect

import numpy as np
import pytest

from transformer import TransformError, jit, vmap


def carried(n, v):
    a = n
    c = 0.5 - v[1]
    for _ in range(2):
        a, c = c, np.tanh(c + v[0])
        c = np.tanh(a) + c
    return a + c


def doubled(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return 2.0 * fn(*args, **kwargs)
    return wrapper


@doubled
def carried_decorated(n, v):
    a = n
    for _ in range(2):
        a = np.tanh(a + v[0])
    return a


def carried_as_float(n, v):
    a = n * 1.0
    c = 0.5 - v[1]
    for _ in range(2):
        a, c = c, np.tanh(c + v[0])
        c = np.tanh(a) + c
    return a + c


_N = np.array([0, -1, 2])
_V = np.linspace(-0.9, 0.8, 12).reshape(3, 4)


def test_the_refusal_is_at_the_users_first_binding_of_the_variable():
    with pytest.raises(TransformError) as caught:
        jit(vmap(carried))(_N, _V)
    error = caught.value
    lines, first = inspect.getsourcelines(carried)
    assert error.filename == __file__
    assert error.lineno == first + 1            # `a = n`
    assert "'a' is array(int64" in str(error) and "x * 1.0" in str(error)


def test_inlined_under_a_decorator_the_refusal_names_the_users_variable():
    # the batched function is inlined into the wrapper's: Numba calls `a` `..._v<id>_a`
    with pytest.raises(TransformError) as caught:
        jit(vmap(carried_decorated))(_N, _V)
    error = caught.value
    lines, first = inspect.getsourcelines(carried_decorated)
    stripped = [line.strip() for line in lines]
    # where `a` starts, or the loop that carries it (where Numba types it)
    at = {first + stripped.index("a = n"), first + stripped.index("for _ in range(2):")}
    assert error.filename == __file__ and error.lineno in at
    assert f"{__file__}:{error.lineno}:5: 'a' is array(int64" in str(error)


def test_the_hints_form_compiles_and_matches_each_example():
    got = jit(vmap(carried_as_float))(_N, _V)
    want = [carried(n, v) for n, v in zip(_N, _V)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    # and plain jit, where Numba makes the number a float, needed no change
    np.testing.assert_allclose([jit(carried)(n, v) for n, v in zip(_N, _V)], want,
                               rtol=1e-12)
