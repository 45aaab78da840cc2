"""A decorated function is transformed with its wrapper, never silently unwrapped.

The oracle for every value is the decorated function called as plain Python (and
central differences of it for gradients): a decorator that scales or shifts the result
must change what jit, grad and vmap return exactly as it changes the plain call.
"""
import functools

import numba
import numpy as np
import pytest

from tests.gradcheck import assert_gradient_close, central_differences
from transformer import custom_vjp, grad, jit, value_and_grad, vmap
from transformer.errors import TransformError


def doubled(fn):
    """The usual shape of a decorator: forwards *args / **kwargs, changes the value."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return 2.0 * fn(*args, **kwargs)
    return wrapper


def shifted(fn):
    """A wrapper written with the wrapped function's own parameter."""
    @functools.wraps(fn)
    def wrapper(x):
        return fn(x) + 1.0
    return wrapper


def squared_input(fn):
    """Forwards only *args, after transforming them: the wrapper's body matters."""
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args) * fn(*args)
    return wrapper


@doubled
def energy(x):
    return np.sum(x * x * x)


@shifted
@doubled
def stacked(x):
    return np.sum(np.sin(x) * x)


@squared_input
def squared(x):
    return np.sum(x * x)


def with_offset(fn):
    """A wrapper with a parameter (and default) the wrapped function does not have."""
    @functools.wraps(fn)
    def wrapper(x, offset=0.25):
        return fn(x) + offset * np.sum(x)
    return wrapper


@doubled
@with_offset
def offset_energy(x):
    return np.sum(x * x)


@doubled
def scaled(x, *, k=3.0):
    return k * np.sum(x * x)


@numba.njit
def kernel(x):
    return x * x + 1.0


@doubled
def calls_kernel(x):
    return np.sum(kernel(x))


DECORATED = [energy, stacked, squared, calls_kernel, offset_energy]
X = np.array([0.3, -1.2, 0.7])


@pytest.mark.parametrize("fn", DECORATED, ids=lambda f: f.__name__)
def test_jit_of_decorated_function_runs_the_wrapper(fn):
    np.testing.assert_allclose(jit(fn, backend="python")(X), fn(X), rtol=1e-12)


@pytest.mark.parametrize("fn", [energy, stacked], ids=lambda f: f.__name__)
def test_compiled_jit_of_decorated_function_runs_the_wrapper(fn):
    np.testing.assert_allclose(jit(fn)(X), fn(X), rtol=1e-12)


@pytest.mark.parametrize("fn", DECORATED, ids=lambda f: f.__name__)
def test_grad_of_decorated_function_differentiates_the_wrapper(fn):
    assert_gradient_close(grad(fn)(X), central_differences(fn, (X,), 0), fn.__name__)


@pytest.mark.parametrize("fn", DECORATED, ids=lambda f: f.__name__)
def test_vmap_of_decorated_function_maps_the_wrapper(fn):
    batch = np.stack([X, 2.0 * X, -X])
    np.testing.assert_allclose(vmap(fn)(batch), [fn(row) for row in batch], rtol=1e-12)


def test_compiled_grad_of_stacked_decorators():
    assert_gradient_close(jit(grad(stacked))(X), central_differences(stacked, (X,), 0))


def test_forwarding_wrapper_binds_keyword_only_arguments_like_the_wrapped_function():
    value, gradient = value_and_grad(scaled)(X, k=5.0)
    assert value == pytest.approx(scaled(X, k=5.0))
    assert_gradient_close(gradient, central_differences(lambda x: scaled(x, k=5.0), (X,), 0))
    assert grad(scaled)(X) == pytest.approx(2.0 * 3.0 * 2.0 * X)


def test_forwarding_wrapper_takes_the_parameters_of_the_wrapper_under_it():
    gradient = grad(offset_energy)(X, offset=1.5)
    assert_gradient_close(gradient, central_differences(
        lambda x: offset_energy(x, offset=1.5), (X,), 0))
    assert jit(offset_energy, backend="python")(X, 1.5) == pytest.approx(offset_energy(X, 1.5))


def test_generated_code_is_named_after_the_decorated_function():
    assert "def grad_energy(" in grad(energy).source()


# ---------------------------------------------------------------- refused wrappers


def counted(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(args[0]) + len(args)
    return wrapper


@counted
def reads_args(x):
    return np.sum(x)


def with_extra(fn):
    @functools.wraps(fn)
    def wrapper(x, *args):
        return fn(x, *args)
    return wrapper


@with_extra
def mixed(x):
    return np.sum(x)


@doubled
def named_like_the_closure(x, fn=2.0):
    return fn * np.sum(x)


class Memo:
    """A class-based decorator: an object, not a function, wraps the function."""

    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, x):
        return 3.0 * self.fn(x)


@Memo
def object_wrapped(x):
    return np.sum(x)


@pytest.mark.parametrize("fn, message", [
    (reads_args, "uses 'args' other than to forward it"),
    (mixed, "mixes named parameters with *args"),
    (named_like_the_closure, "parameter 'fn' has the name of a variable"),
], ids=["reads-args", "mixed", "parameter-named-like-closure"])
def test_wrapper_using_args_otherwise_is_refused_at_its_line(fn, message):
    with pytest.raises(TransformError) as info:
        grad(fn)(X)
    error = info.value
    assert message in error.message
    assert error.filename == __file__ and error.line is not None
    assert "def wrapper(x): return 2.0 * fn(x)" in error.hint


def test_object_returned_by_a_decorator_is_refused_not_unwrapped():
    with pytest.raises(TransformError) as info:
        jit(object_wrapped, backend="python")(X)
    error = info.value
    assert "Memo object" in error.message
    assert error.filename == __file__
    assert "def object_wrapped" in error.line or "@Memo" in error.line


def test_unsupported_construct_in_a_wrapper_names_the_decorated_function():
    with pytest.raises(TransformError) as info:
        vmap(_logging_wrapped)(np.stack([X, X]))
    assert "in the wrapper a decorator put around _logging_wrapped" in info.value.message
    assert info.value.line.strip().startswith("try:")


def logging(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ValueError:
            raise
    return wrapper


@logging
def _logging_wrapped(x):
    return np.sum(x)


# ---------------------------------------------------------------- wrappers that stay


def test_lru_cache_returns_what_the_function_returns():
    @functools.lru_cache(maxsize=None)
    def cubed(x):
        return x * x * x
    assert grad(cubed)(2.0) == pytest.approx(12.0)


def test_secant_wrappers_and_numba_kernels_are_still_read_through():
    @custom_vjp
    def clipped(x):
        return np.sum(x)
    clipped.defvjp(lambda x: (np.sum(x), None), lambda _, g: (0.5 * g * np.ones(3),))
    np.testing.assert_allclose(grad(clipped)(X), 0.5 * np.ones(3))
    np.testing.assert_allclose(grad(lambda x: np.sum(kernel(x)))(X), 2.0 * X)
    assert jit(grad(grad(lambda x: x * x * x)), backend="python")(2.0) == pytest.approx(12.0)
