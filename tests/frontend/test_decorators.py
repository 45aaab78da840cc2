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


# ---------------------------------------------------------------- named parameters and *args
# The decorated function binds the wrapper's named parameters, then the wrapped function's
# parameters the forwarded *args / **kwargs fill: its defaults and keyword-only ones too.


def nudged(fn):
    """The common shape: name the parameter the decorator changes, forward the rest."""
    @functools.wraps(fn)
    def wrapper(x, *args, **kwargs):
        return fn(x + 0.25, *args, **kwargs)
    return wrapper


def gained(fn):
    """A named parameter of the wrapper's own, then the wrapped function's from its 2nd."""
    @functools.wraps(fn)
    def wrapper(x, gain, *args, **kwargs):
        return gain * fn(x, *args, **kwargs)
    return wrapper


def by_keyword(fn):
    """Only **kwargs: what it forwards can only be passed by keyword."""
    @functools.wraps(fn)
    def wrapper(x, **kwargs):
        return fn(2.0 * x, **kwargs)
    return wrapper


@doubled
@nudged
def nudged_energy(x, v, s=0.5, *, k=1.5):
    return s * np.sum(np.sin(x) * v) + k * np.sum(x * x)


@gained
def gained_energy(x, v, s=0.5, *, k=1.5):
    return s * np.sum(x * x * v) + k * np.sum(x)


@by_keyword
def keyword_energy(x, v=1.0, *, k=1.5):
    return np.sum(v * x * x) + k * np.sum(x)


V = np.array([1.5, -0.5, 2.0])
CALLS = [
    (nudged_energy, (X, V), {}),
    (nudged_energy, (X, V, 2.0), {"k": -0.5}),
    (nudged_energy, (X,), {"v": V, "k": 3.0}),
    (gained_energy, (X, 3.0, V), {}),
    (gained_energy, (X,), {"gain": -2.0, "v": V, "s": 1.25}),
    (keyword_energy, (X,), {}),
    (keyword_energy, (X,), {"v": V, "k": 0.5}),
]
CALL_IDS = ["nudged", "nudged-s-k", "nudged-keywords", "gained", "gained-keywords",
            "keyword-defaults", "keyword"]


@pytest.mark.parametrize("fn, args, kwargs", CALLS, ids=CALL_IDS)
@pytest.mark.slow
def test_wrapper_with_named_parameters_and_forwarded_rest_binds_like_python(fn, args, kwargs):
    expected = fn(*args, **kwargs)
    assert jit(fn, backend="python")(*args, **kwargs) == pytest.approx(expected, rel=1e-12)
    assert jit(fn)(*args, **kwargs) == pytest.approx(expected, rel=1e-12)
    oracle = central_differences(lambda x: fn(x, *args[1:], **kwargs), args[:1], 0)
    assert_gradient_close(grad(fn)(*args, **kwargs), oracle, fn.__name__)
    assert_gradient_close(jit(grad(fn))(*args, **kwargs), oracle, fn.__name__)


@pytest.mark.parametrize("fn, args", [(nudged_energy, (X, V, 2.0)), (gained_energy, (X, 3.0, V))],
                         ids=["nudged", "gained"])
@pytest.mark.slow
def test_vmap_of_wrapper_with_named_parameters_maps_like_python(fn, args):
    batch, ks = np.stack([X, 2.0 * X, -X]), np.array([0.5, -1.0, 2.0])
    expected = [fn(row, *args[1:], k=k) for row, k in zip(batch, ks)]
    in_axes = (0,) + (None,) * (len(args) - 1)      # keyword arguments map over axis 0
    np.testing.assert_allclose(vmap(fn, in_axes)(batch, *args[1:], k=ks), expected,
                               rtol=1e-12)
    expected = [fn(row, *args[1:]) for row in batch]
    np.testing.assert_allclose(jit(vmap(fn, in_axes))(batch, *args[1:]), expected,
                               rtol=1e-12)


@nudged
@nudged
def nudged_twice(x, v, *, k=1.5):
    return np.sum(np.sin(x) * v) + k * np.sum(x * x)


@pytest.mark.slow
def test_one_decorator_stacked_twice_is_two_functions_not_a_recursion():
    assert jit(nudged_twice)(X, V, k=0.5) == pytest.approx(nudged_twice(X, V, k=0.5))
    oracle = central_differences(lambda x: nudged_twice(x, V, k=0.5), (X,), 0)
    assert_gradient_close(jit(grad(nudged_twice))(X, V, k=0.5), oracle)
    assert_gradient_close(grad(nudged_twice)(X, V, k=0.5), oracle)


def test_wrapper_with_named_parameters_has_the_signature_python_binds():
    assert "def grad_nudged_energy(x, v, s=0.5, *, k=1.5):" in grad(nudged_energy).source()
    assert "(x, gain, v, s=0.5, *, k=1.5)" in grad(gained_energy).source()
    with pytest.raises(TypeError):          # v can only be passed through **kwargs
        keyword_energy(X, V)
    with pytest.raises(TypeError):
        grad(keyword_energy)(X, V)


def twice_forwarded(fn):
    @functools.wraps(fn)
    def wrapper(x, *args):
        return fn(x, *args) + fn(2.0 * x, 1.0, *args)
    return wrapper


@twice_forwarded
def forwarded_differently(x, y=1.0, z=2.0):
    return np.sum(x * y * z)


def too_many(fn):
    @functools.wraps(fn)
    def wrapper(x, *args, **kwargs):
        return fn(x, 1.0, *args, **kwargs)
    return wrapper


@too_many
def takes_one(x):
    return np.sum(x)


def defaulted(fn):
    @functools.wraps(fn)
    def wrapper(x, gain=2.0, *args, **kwargs):
        return gain * fn(x, *args, **kwargs)
    return wrapper


@defaulted
def needs_v(x, v):
    return np.sum(x * v)


@pytest.mark.parametrize("fn, message", [
    (forwarded_differently, "differs from call to call"),
    (takes_one, "passes 2 positional arguments before *args, but the wrapped function "
                "takes 1"),
    (needs_v, "has a default, but a parameter of the wrapped function"),
], ids=["different-offsets", "too-many-positional", "default-before-required"])
def test_wrapper_whose_forwarded_parameters_cannot_be_bound_is_refused(fn, message):
    with pytest.raises(TransformError) as info:
        grad(fn)(X, V)
    error = info.value
    assert message in error.message
    assert error.filename == __file__ and error.line is not None
    assert "def wrapper(x): return 2.0 * fn(x)" in error.hint


# ---------------------------------------------------------------- refused wrappers


def counted(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(args[0]) + len(args)
    return wrapper


@counted
def reads_args(x):
    return np.sum(x)


def after_args(fn):
    @functools.wraps(fn)
    def wrapper(x, *args):
        return fn(*args, x)
    return wrapper


@after_args
def passes_after_args(x, y):
    return np.sum(x * y)


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
    (passes_after_args, "after its other positional arguments"),
    (named_like_the_closure, "parameter 'fn' has the name of a variable"),
], ids=["reads-args", "argument-after-args", "parameter-named-like-closure"])
def test_wrapper_using_args_otherwise_is_refused_at_its_line(fn, message):
    with pytest.raises(TransformError) as info:
        grad(fn)(X)
    error = info.value
    assert message in error.message
    assert error.filename == __file__ and error.line is not None
    assert "def wrapper(x): return 2.0 * fn(x)" in error.hint


def test_an_object_returned_by_a_decorator_is_transformed_through_its_call_method():
    assert jit(object_wrapped, backend="python")(X) == pytest.approx(3.0 * np.sum(X))
    np.testing.assert_allclose(grad(object_wrapped)(X), np.full_like(X, 3.0))


class Opaque:
    """A class-based decorator whose __call__ is not a Python function of its own."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)

    __call__ = staticmethod(np.negative)


@Opaque
def opaque_wrapped(x):
    return np.sum(x)


def test_an_object_returned_by_a_decorator_without_python_call_is_refused_not_unwrapped():
    with pytest.raises(TransformError) as info:
        jit(opaque_wrapped, backend="python")(X)
    error = info.value
    assert "Opaque object" in error.message
    assert error.filename == __file__
    assert "def opaque_wrapped" in error.line or "@Opaque" in error.line


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
