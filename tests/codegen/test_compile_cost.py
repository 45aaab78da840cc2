"""What a first call costs Numba: a generated function called at one place is inlined into
its caller (one compile instead of two), never into a parallel caller, never when it is
called at several places (by its own caller: a helper inlined into its caller passes
no inlining on to its callees), and never when it calls a generated function itself (Numba would
compile and copy a chain of inlined functions once per level). The numbers stay NumPy's."""
import numba
import numpy as np
import pytest

from codegen import backends
from transformer import ShapeDtypeStruct, jacfwd, jit, pure_callback
from transformer.runtime import examples

SCALE = np.arange(6.0).reshape(2, 3) + 1.0


def wave(x):
    return np.sin(x)


def scaled_wave(x):
    return SCALE * wave(x)


def twice_wave(x):
    return wave(x) + wave(2.0 * x)


VEC3 = ShapeDtypeStruct((3,), np.float64)


def host_sin(a):
    return np.sin(a)


def doubled_host_sin(x):
    return pure_callback(host_sin, VEC3, x) * 2.0


def shifted_host_sin(x):
    return doubled_host_sin(x) + 1.0


def _dependency_decorators(name: str) -> set:
    """The decorator lines of the loaded modules generated from function `name`."""
    return {line for compiled in backends._loaded.values()
            if f"({name})\n" in compiled.text.split("\n", 1)[0] + "\n"
            for line in compiled.text.splitlines() if line.startswith("@numba.njit")}


def _jacobian_of_scaled_wave(x):
    """Hand derivation: d(SCALE[i, j] * sin(x[j])) / dx[k] = SCALE[i, k] cos(x[k]) [j == k]."""
    ref = np.zeros((2, 3, 3))
    for k in range(3):
        ref[:, k, k] = SCALE[:, k] * np.cos(x[k])
    return ref


@pytest.mark.slow
def test_jacfwd_through_a_helper_called_once_inlines_it_and_matches_the_derivation():
    x = np.array([0.3, -0.7, 1.1])
    jacobian = jit(jacfwd(scaled_wave))(x)
    # the value broadcasts the basis to a larger shape: identity_batch_last's column branch
    np.testing.assert_allclose(jacobian, _jacobian_of_scaled_wave(x), rtol=0, atol=1e-15)
    assert _dependency_decorators("wave") == {
        "@numba.njit(nogil=True, no_cfunc_wrapper=True, inline='always')"}


def doubled_scaled_wave(x):
    return 2.0 * scaled_wave(x)


def test_only_the_leaf_of_a_chain_of_helpers_called_once_is_inlined():
    x = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(jit(doubled_scaled_wave)(x), doubled_scaled_wave(x),
                               rtol=1e-15, atol=0)
    assert _dependency_decorators("wave") == {
        "@numba.njit(nogil=True, no_cfunc_wrapper=True, inline='always')"}
    assert _dependency_decorators("scaled_wave") == {
        "@numba.njit(nogil=True, no_cfunc_wrapper=True)"}


def test_a_helper_called_at_two_places_is_compiled_once_on_its_own():
    jit(twice_wave).source(np.ones(3))
    assert _dependency_decorators("wave") == {"@numba.njit(nogil=True, no_cfunc_wrapper=True)"}


def doubled_twice_wave(x):
    return 2.0 * twice_wave(x)


def test_a_helper_called_at_two_places_by_a_helper_called_once_is_not_inlined():
    """The call count of each caller decides: `twice_wave`'s two calls of `wave`, not the
    one call of `twice_wave` (an inherited flag made Numba compile `wave` once per call,
    twice the compile time of a jit(hessian) whose per-example function is called three
    times in vmap's loop)."""
    x = np.array([0.3, -0.7, 1.1])
    np.testing.assert_allclose(jit(doubled_twice_wave)(x), doubled_twice_wave(x),
                               rtol=1e-15, atol=0)
    assert _dependency_decorators("wave") == {"@numba.njit(nogil=True, no_cfunc_wrapper=True)"}


def test_a_parallel_caller_inlines_no_helper():
    jit(scaled_wave, parallel=True).source(np.ones(3))
    assert _dependency_decorators("wave") == {"@numba.njit(nogil=True, no_cfunc_wrapper=True)"}


def test_a_helper_calling_the_host_is_not_inlined_and_runs():
    # Numba's inliner would meet the helper's `with numba.objmode()` block unlifted
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_array_equal(jit(shifted_host_sin)(x), 2.0 * np.sin(x) + 1.0)
    assert _dependency_decorators("doubled_host_sin") == {"@numba.njit(no_cfunc_wrapper=True)"}


@pytest.mark.parametrize("decorator, inlined", [
    ("@numba.njit", "@numba.njit(inline='always')"),
    ("@numba.njit(parallel=True, fastmath=True)",
     "@numba.njit(parallel=True, fastmath=True, inline='always')"),
    (None, None),
])
def test_inlining_adds_one_flag_to_any_decorator(decorator, inlined):
    assert backends._inlined(decorator) == inlined


@pytest.fixture(autouse=True)
def _fresh_module_table(monkeypatch):
    """Each test sees only the modules it loads itself."""
    monkeypatch.setattr(backends, "_loaded", {})


@numba.njit
def _outer_sum(a, b):
    return np.outer(a, b) + a.sum()


@numba.njit
def _dot(a, b):
    return np.dot(a, b)


_outer_each = examples.over_examples(_outer_sum, (True, False))
_dot_each = examples.over_examples(_dot, (True, False))


@numba.njit
def _both_each(a, b):
    return _outer_each(a, b), _dot_each(a, b)


@pytest.mark.slow
def test_compiled_helper_over_examples_stores_each_example_like_numpy():
    a = np.arange(12.0).reshape(4, 3) - 5.0
    b = np.array([0.5, -2.0, 3.0])
    outer, dots = _both_each(a, b)
    np.testing.assert_array_equal(outer, [np.outer(row, b) + row.sum() for row in a])
    np.testing.assert_array_equal(dots, a @ b)
    np.testing.assert_array_equal(outer, _outer_each(a, b))      # the Python form
