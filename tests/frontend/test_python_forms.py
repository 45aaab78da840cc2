"""Python as people write it inside transformed functions: comprehensions, local lambdas
and nested defs, `*args` forwarding, list literals mixing numbers and arrays, names
rebound to another shape, np.atleast_*d. Every transformation is checked against finite
differences or NumPy; what cannot be rewritten is a located TransformError."""
import numpy as np
import pytest

from transformer import TransformError, grad, hessian, jacfwd, jit, vmap
from transformer.test_util import numerical_grad, numerical_jacobian

SCALE = (1.0, 2.0, 3.0)


def helper(a, b):
    return a * b + a


def comprehension_sum(x):
    pairs = [x[i] * x[j] for i in range(3) for j in range(i) if (i + j) % 2 == 1]
    return np.sum([x[i] * x[i] * i for i in range(3)]) + np.sum(pairs)


def test_comprehension_keeps_python_order_and_conditions():
    x = np.array([2.0, 3.0, 5.0])
    # pairs (1, 0) and (2, 1) pass the condition; (2, 0) does not
    assert comprehension_sum(x) == 3.0 ** 2 + 2 * 5.0 ** 2 + 3.0 * 2.0 + 5.0 * 3.0
    np.testing.assert_allclose(grad(comprehension_sum)(x),
                               [3.0, 2 * 3.0 + 2.0 + 5.0, 4 * 5.0 + 3.0])


def comprehension_array(x):
    ys = np.array([np.sin(x[i]) * s for i, s in enumerate(SCALE)])
    return np.sum(ys * ys)


def dict_comprehension(x):
    d = {"a": x[0], "b": x[1] * x[2]}
    doubled = {k: v * 2.0 for k, v in d.items()}
    return doubled["a"] * doubled["b"]


def closure_lambda(x):
    c = x[0]
    g = lambda v: np.sin(v) * c     # noqa: E731 - the form under test
    return np.sum(g(x) * g(x[1]))


def closure_def(x):
    def scaled(v, k=2.0):
        return v * x[2] * k
    return np.sum(scaled(x) + scaled(x, k=0.5) * x)


def star_forwarding(x):
    pair = (x, x * x)
    return np.sum(helper(*pair))


def forward_all(*args):
    return helper(*args)


def scaled_first(scale, *xs):
    return scale * xs[0] + len(xs)


def forwarding_helpers(x):
    return np.sum(forward_all(x, x * x)) + np.sum(scaled_first(2.0, x, x))


def mixed_list(x):
    return np.sum([1, x[0] * x[1], 2.0, np.exp(x[2])])


def rebound_shape(x):
    x = np.sum(x * x)
    x = x * x
    return x


def atleast(x):
    m = np.atleast_2d(x) * np.atleast_1d(np.sum(x))
    return np.sum(np.atleast_3d(m) ** 2)


CASES = [comprehension_sum, comprehension_array, dict_comprehension, closure_lambda, closure_def,
         star_forwarding, forwarding_helpers, mixed_list, rebound_shape, atleast]
X = np.array([0.3, -1.2, 0.7])
XS = np.array([[0.3, -1.2, 0.7], [1.1, 0.4, -0.5]])


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_value_and_grad_match_numpy_and_finite_differences(f):
    np.testing.assert_allclose(grad(f)(X), numerical_grad(f, [X]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_vmap_and_vmap_grad_match_a_python_loop(f):
    np.testing.assert_allclose(vmap(f)(XS), [f(x) for x in XS], rtol=1e-12)
    np.testing.assert_allclose(vmap(grad(f))(XS), [numerical_grad(f, [x]) for x in XS],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jacfwd_and_hessian_match_finite_differences(f):
    np.testing.assert_allclose(jacfwd(f)(X), numerical_grad(f, [X]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(hessian(f)(X), numerical_jacobian(grad(f), X),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f", [comprehension_array, closure_def, forwarding_helpers, mixed_list,
                               rebound_shape],
                         ids=lambda f: f.__name__)
@pytest.mark.slow
def test_jit_and_jit_grad_compile_and_match(f):
    np.testing.assert_allclose(jit(f)(X), f(X), rtol=1e-12)
    np.testing.assert_allclose(jit(grad(f))(X), numerical_grad(f, [X]), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_dict_read_whole_stays_a_dict():
    def keys_total(x):
        d = {k: x[i] * x[i] for i, k in enumerate(("a", "b"))}
        return d, np.sum(x)
    value, _ = keys_total(X)
    got, _ = jit(keys_total)(X)
    assert set(got) == {"a", "b"}
    np.testing.assert_allclose([got["a"], got["b"]], [value["a"], value["b"]])


# ---------------------------------------------------------------- refusals, located


def over_parameter(x):
    return np.sum([v * 2.0 for v in x])


def condition_on_values(x):
    return np.sum([x[i] for i in range(3) if x[i] > 0])


def star_of_parameter(x):
    return np.add(*x)


def local_passed_on(x):
    g = lambda v: v * 2.0       # noqa: E731
    return np.sum(np.vectorize(g)(x))


def forward_with_statements(*args):
    total = helper(*args)
    return total


def calls_forwarder_with_statements(x):
    return np.sum(forward_with_statements(x, x))


@pytest.mark.parametrize("f, words, caret", [
    (over_parameter, "length is not known before the run", "x]"),
    (condition_on_values, "condition that depends on array values", "x[i] > 0"),
    (star_of_parameter, "star-arguments", "*x"),
    (local_passed_on, "used as a value", "g)"),
    (calls_forwarder_with_statements, "*args / **kwargs parameters", "args"),
], ids=lambda v: getattr(v, "__name__", None))
def test_unsupported_forms_are_located_errors_with_hints(f, words, caret):
    with pytest.raises(TransformError) as info:
        grad(f)(X)
    err = info.value
    assert words in err.message
    assert err.line[err.col:].startswith(caret), (err.line, err.col)
    assert err.hint
