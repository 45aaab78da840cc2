"""Arguments bind exactly as Python binds them, under every transformation.

Keyword-only parameters, defaults and keyword calls reach the generated code with the
values a plain call of the function would see: defaults are the function object's
(`__defaults__` / `__kwdefaults__`, evaluated once when `def` ran), never the source text
evaluated again. Calls Python refuses raise Python's TypeError. Oracles: the plain
Python call, and central differences of it.
"""
import numpy as np
import pytest

from tests.gradcheck import assert_gradient_close, central_differences
from transformer import (grad, hessian, jacfwd, jacrev, jit, jvp, linearize, value_and_grad,
                         vjp, vmap)

SCALE = 2.0
_calls = []


def _counted_default():
    """A default with a side effect: Python evaluates it once, at `def`."""
    _calls.append(1)
    return 0.5 * len(_calls) + 1.0


def keyword_only(x, *, k=2.0):
    return k * x * x


def module_constant_default(x, k=SCALE):
    return k * x * x


def expression_default(x, k=SCALE * 1.5 + _counted_default()):  # noqa: B008 - the case
    return k * x * x


def rebound_defaults(x, y=1.0, *, z=0.5):
    return x * y + z * x * x


def _factory(scale):
    def closure_default(x, k=scale * 2.0):     # `scale` is not a free name of the body
        return k * x * x
    return closure_default


closure_default = _factory(4.0)
SCALE = 10.0        # after the defs: their defaults keep the value 2.0 had at `def`
rebound_defaults.__defaults__ = (3.0,)
rebound_defaults.__kwdefaults__ = {"z": 2.0}

DEFAULTED = [keyword_only, module_constant_default, expression_default, rebound_defaults,
             closure_default]
X = 1.5


def _fd(fn, **kw):
    return central_differences(lambda x: fn(x, **kw), (X,), 0)


# ---------------------------------------------------------------- defaults


@pytest.mark.parametrize("fn", DEFAULTED, ids=lambda f: f.__name__)
def test_grad_uses_the_defaults_the_function_object_holds(fn):
    assert_gradient_close(grad(fn)(X), _fd(fn), fn.__name__)


@pytest.mark.parametrize("fn", DEFAULTED, ids=lambda f: f.__name__)
def test_vmap_and_jacobians_use_the_function_objects_defaults(fn):
    xs = np.array([X, -0.5])
    np.testing.assert_allclose(vmap(fn)(xs), [fn(x) for x in xs], rtol=1e-12)
    assert_gradient_close(jacfwd(fn)(X), _fd(fn))
    assert_gradient_close(jacrev(fn)(X), _fd(fn))


def test_python_jit_uses_the_function_objects_defaults():
    assert jit(expression_default, backend="python")(X) == pytest.approx(expression_default(X))
    assert jit(rebound_defaults, backend="python")(X) == pytest.approx(rebound_defaults(X))


def test_forward_mode_with_fewer_primals_than_parameters_takes_the_defaults():
    out, tangent = jvp(rebound_defaults, (X,), (1.0,))
    assert out == pytest.approx(rebound_defaults(X))
    assert tangent == pytest.approx(_fd(rebound_defaults))
    out, f_jvp = linearize(rebound_defaults, X)
    assert f_jvp(1.0) == pytest.approx(_fd(rebound_defaults))
    out, pullback = vjp(rebound_defaults, X)
    assert pullback(1.0)[0] == pytest.approx(_fd(rebound_defaults))


# ---------------------------------------------------------------- keyword-only arguments

_slope = grad(keyword_only)


def _slope_at_three(x):
    return _slope(x, k=3.0)



@pytest.mark.parametrize("transform", [grad, lambda f: (lambda *a, **k: value_and_grad(f)(
    *a, **k)[1]), jacfwd, jacrev], ids=["grad", "value_and_grad", "jacfwd", "jacrev"])
def test_keyword_only_argument_reaches_the_derivative(transform):
    assert_gradient_close(transform(keyword_only)(X, k=3.0), _fd(keyword_only, k=3.0))
    assert_gradient_close(transform(keyword_only)(X), _fd(keyword_only))


def test_keyword_only_argument_under_compositions():
    assert hessian(keyword_only)(X, k=3.0) == pytest.approx(6.0)
    assert jit(grad(keyword_only), backend="python")(X, k=3.0) == pytest.approx(9.0)
    xs = np.array([X, 0.5])
    np.testing.assert_allclose(vmap(grad(keyword_only))(xs, k=np.array([3.0, 5.0])),
                               [2.0 * 3.0 * X, 2.0 * 5.0 * 0.5])
    assert grad(_slope_at_three)(X) == pytest.approx(6.0)


def test_keyword_only_argument_of_a_pytree_call():
    def loss(params, *, k=2.0):
        return k * np.sum(params["w"] * params["w"])
    w = np.array([1.0, -2.0])
    np.testing.assert_allclose(grad(loss)({"w": w}, k=3.0)["w"], 6.0 * w)
    np.testing.assert_allclose(grad(loss)({"w": w})["w"], 4.0 * w)


# ---------------------------------------------------------------- compiled calls


@pytest.fixture(scope="module")
def compiled():
    return jit(keyword_only)


def test_compiled_call_relying_on_a_keyword_only_default(compiled):
    assert compiled(X) == pytest.approx(keyword_only(X))
    assert compiled(X, k=3.0) == pytest.approx(keyword_only(X, k=3.0))


@pytest.mark.parametrize("backend", ["cpu", "python"])
def test_invalid_calls_raise_pythons_type_error(backend, compiled):
    fn = compiled if backend == "cpu" else jit(keyword_only, backend="python")
    for args, kwargs in [((X, 3.0), {}), ((), {"k": 3.0}), ((X,), {"q": 1.0}),
                         ((X,), {"x": X})]:
        with pytest.raises(TypeError) as expected:
            keyword_only(*args, **kwargs)
        with pytest.raises(TypeError) as got:
            fn(*args, **kwargs)
        assert str(got.value).split("() ", 1)[1] == str(expected.value).split("() ", 1)[1]


def helper(x, y=0.5, *, k=SCALE):
    return k * x * x + y * x


def calls_helper(x):
    return np.sum(helper(x, 1.5, k=4.0)) + np.sum(helper(y=2.0, x=x)) + np.sum(helper(x))


@pytest.mark.slow
def test_compiled_calls_bind_keyword_only_and_keyword_arguments_of_helpers():
    xs = np.array([0.5, -1.0])
    assert jit(calls_helper)(xs) == pytest.approx(calls_helper(xs))
    assert_gradient_close(jit(grad(calls_helper))(xs), central_differences(calls_helper,
                                                                            (xs,), 0))


def test_compiled_gradient_with_a_keyword_only_argument():
    assert jit(grad(keyword_only))(X, k=3.0) == pytest.approx(9.0)
