"""Functions handed to functions, as JAX users write them: a helper called with a NumPy or
module function (`apply(np.sin, x)`), an activation as a default (`def layer(x,
act=np.tanh)`), a function handed down through two helpers; `jit` of a function called
with a function (static without static_argnums); a `jit(..., static_argnums=...)` function
called inside a transformation.

Oracles: central differences of the plain Python function, NumPy, and the analytic
derivative.
"""
import numpy as np
import pytest

from transformer import TransformError, grad, hessian, jacfwd, jacrev, jit, jvp, vmap
from transformer.test_util import numerical_grad

X = np.array([0.3, -0.7, 1.1, 2.0])


def square(v):
    return v * v


def apply(fn, x):
    return np.sum(fn(x))


def layer(x, act=np.tanh):
    return np.sum(act(x) * x)


def twice(x, fn):
    return apply(fn, x) + apply(fn, 2.0 * x)      # the function handed down


def handed(x):
    return apply(np.sin, x) + apply(square, x) + layer(x) + layer(x, act=np.exp) + \
        twice(x, np.cos)


def handed_grad(x):
    return np.cos(x) + 2 * x + (1 - np.tanh(x) ** 2) * x + np.tanh(x) + \
        np.exp(x) * x + np.exp(x) - np.sin(x) - 2 * np.sin(2 * x)


def test_grad_of_helpers_handed_functions_matches_analytic_and_differences():
    got = grad(handed)(X)
    assert np.allclose(got, handed_grad(X))
    assert np.allclose(got, numerical_grad(handed, (X,)), atol=1e-6)


def small(x):
    return apply(np.sin, x) + layer(x)


@pytest.mark.parametrize("transform", ["jvp", "vmap", "hessian"])
def test_helpers_handed_functions_under_each_transformation(transform):
    if transform == "jvp":
        t = np.array([1.0, 0.5, -2.0, 0.25])
        assert np.allclose(jvp(handed, (X,), (t,))[1], handed_grad(X) @ t)
    elif transform == "vmap":
        xs = np.stack([X, 2 * X, -X])
        assert np.allclose(vmap(handed)(xs), [handed(x) for x in xs])
    else:
        def small_grad(v):
            return np.cos(v) + (1 - np.tanh(v) ** 2) * v + np.tanh(v)
        rows = [numerical_grad(lambda v, k=k: small_grad(v)[k], (X,)) for k in range(len(X))]
        assert np.allclose(hessian(small)(X), np.array(rows), atol=1e-5)


def test_each_function_is_its_own_specialization():
    """Two calls of one helper with two functions: each calls its own (no mix-up), also
    compiled."""
    def both(x):
        return apply(np.sin, x) * apply(np.cos, x)
    want = np.cos(X) * np.sum(np.cos(X)) - np.sin(X) * np.sum(np.sin(X))
    assert np.allclose(grad(both)(X), want)
    assert np.allclose(jit(grad(both))(X), want)


def test_calling_a_parameter_under_grad_is_refused_with_a_hint_that_works():
    with pytest.raises(TransformError) as caught:
        grad(layer)(X)
    err = caught.value
    assert err.filename.endswith("test_function_arguments.py") and "act" in err.message
    assert "grad(lambda x: layer(x, np.tanh))" in err.hint
    with pytest.raises(TransformError, match="calls its parameter 'act'"):
        jacfwd(layer)(X)
    followed = grad(lambda x: layer(x, np.tanh))(X)
    assert np.allclose(followed, (1 - np.tanh(X) ** 2) * X + np.tanh(X))


@pytest.mark.slow
def test_jit_takes_a_function_argument_as_static():
    jitted = jit(layer)
    assert np.isclose(jitted(X), layer(X))                    # the default
    assert np.isclose(jitted(X, np.sin), layer(X, np.sin))    # positional
    assert np.isclose(jitted(X, act=square), layer(X, square))
    assert np.isclose(jitted(X), layer(X))
    assert jitted._misses == 3                                # one per function


def power(x, n):
    out = np.ones_like(x)
    for _ in range(n):
        out = out * x
    return out


power_jit = jit(power, static_argnums=1)


def act_of(x, kind):
    if kind == "tanh":
        return np.tanh(x)
    return np.maximum(x, 0.0)


act_jit = jit(act_of, static_argnames="kind")


@pytest.mark.slow
def test_jit_with_static_arguments_called_inside_transformations():
    assert np.allclose(grad(lambda x: np.sum(power_jit(x, 3)))(X), 3 * X ** 2)
    assert np.allclose(jit(grad(lambda x: np.sum(power_jit(x, 3))))(X), 3 * X ** 2)
    assert np.isclose(jit(lambda x: np.sum(power_jit(x, 2)))(X), np.sum(X ** 2))
    assert np.allclose(vmap(lambda x: power_jit(x, 2))(np.stack([X, X])), [X ** 2] * 2)
    assert np.allclose(grad(lambda x: np.sum(act_jit(x, kind="tanh")))(X),
                       1 - np.tanh(X) ** 2)
    assert np.isclose(grad(power_jit)(2.0, 3), 12.0)


def energy(x):
    return np.sum(np.sin(x) * x)


force = grad(energy)


def force_norm(fn, x):
    return np.sum(fn(x) ** 2)


def test_a_transformation_handed_to_a_helper_by_name_or_inline():
    want = numerical_grad(lambda v: np.sum((np.cos(v) * v + np.sin(v)) ** 2), (X,))
    assert np.allclose(grad(lambda x: force_norm(force, x))(X), want, atol=1e-5)
    assert np.allclose(grad(lambda x: force_norm(grad(energy), x))(X), want, atol=1e-5)
    assert np.allclose(vmap(grad(lambda x: force_norm(force, x)))(np.stack([X, X]))[1], want,
                       atol=1e-5)


def test_a_helper_handed_a_numpy_function_without_a_rule_names_the_missing_rule():
    """np.median has no adjoint rule: the helper is still specialized to it, so grad names
    the rule it lacks (not the parameter call), and jit computes what NumPy does."""
    def use_median(x):
        return apply(np.median, x)
    with pytest.raises(TransformError, match="no adjoint rule for numpy.median") as caught:
        grad(use_median)(X)
    assert caught.value.filename.endswith("test_function_arguments.py")
    assert np.isclose(jit(use_median)(X), np.median(X))


def test_a_helper_is_parsed_once_however_many_calls_hand_it_functions(monkeypatch):
    """`handed` calls `apply` twice and `twice` calls it twice more: one parse of `handed`
    (a build of its own) parses `apply` once and reuses it for every call site."""
    from transformer import frontend
    parsed = []
    parse = frontend.parse

    def counting(fn):
        parsed.append(fn)
        return parse(fn)
    monkeypatch.setattr(frontend, "parse", counting)
    frontend.parse(handed)
    assert sum(fn is apply for fn in parsed) == 1
    assert sum(fn is layer for fn in parsed) == 1


SCALE = 2.0


def scaled_apply(fn, x):
    return SCALE * np.sum(fn(x))


def test_a_helper_handed_a_function_reads_a_rebound_global_at_the_next_call():
    global SCALE
    g = grad(lambda x: scaled_apply(np.sin, x))
    try:
        assert np.allclose(g(X), 2.0 * np.cos(X))
        SCALE = 3.0
        assert np.allclose(g(X), 3.0 * np.cos(X))
    finally:
        SCALE = 2.0


def layer_of(x, act):
    y = act(x)
    return np.sum(y * x)


def test_calling_a_parameter_is_refused_alike_by_every_derivative_and_mapped_by_vmap():
    """grad, jacrev (reverse) and jvp, jacfwd (forward) refuse the active call of parameter
    `act` with one located message and hint; vmap and jit, which see the function at the
    call, compute it; a call of the parameter on an inactive value is differentiated."""
    errors = []
    for run in (lambda: grad(layer_of)(X, np.tanh), lambda: jacrev(layer_of)(X, np.tanh),
                lambda: jvp(layer_of, (X, np.tanh), (X, np.tanh)),
                lambda: jacfwd(layer_of)(X, np.tanh)):
        with pytest.raises(TransformError, match="calls its parameter 'act'") as caught:
            run()
        err = caught.value
        errors.append((err.message, err.filename, err.lineno, err.col, err.hint))
    assert len(set(errors)) == 1 and errors[0][1].endswith("test_function_arguments.py")
    xs = np.stack([X, -X, 0.5 * X])
    want = [layer_of(x, np.tanh) for x in xs]
    assert np.allclose(vmap(layer_of, in_axes=(0, None))(xs, np.tanh), want)
    assert np.isclose(jit(layer_of)(X, np.tanh), want[0])

    def scaled_by_a_call(x, g):
        return np.sum(x) * g(1.0)
    assert np.allclose(grad(scaled_by_a_call)(X, np.tanh), np.tanh(1.0) * np.ones_like(X))
