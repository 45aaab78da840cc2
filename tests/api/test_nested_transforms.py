"""Every transformation over a function that itself calls a transformation inline: the grid
{grad, jacfwd, jacrev, hessian, vmap, jvp} of programs calling grad, vmap, jacfwd,
hessian, value_and_grad, jvp and vmap(grad) inside them.

Oracles: central differences of the program run as plain Python (its inline transformation
then runs eagerly), a loop over the examples for vmap, and JAX on the same programs where
it is installed. The grid runs under the Python backend; under jit one cell runs in the
quick set and the rest with --runslow.
"""
import functools

import numpy as np
import pytest

from transformer import (TransformError, grad, hessian, jacfwd, jacrev, jit, jvp, linearize,
                         value_and_grad, vjp, vmap)
from transformer.test_util import numerical_grad, numerical_jacobian, numerical_jvp

SCALES = np.array([1.0, -0.5])
W = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6], [-0.7, 0.2, 0.9]])


def g(x):
    return np.sum(np.sin(x) * x) * np.sum(x * x)


def gv(x):
    return np.sin(x) * np.sum(x * x)


def with_grad(x):
    return np.sum(grad(g)(x) * np.cos(x))


def with_vmap(x):
    xs = np.outer(SCALES, x)
    return np.sum(vmap(g)(xs) * SCALES)


def with_jacfwd(x):
    return np.sum(jacfwd(gv)(x) * W)


def with_hessian(x):
    return np.sum(hessian(g)(x) * W)


def with_value_and_grad(x):
    v, gr = value_and_grad(g)(x)
    return v * np.sum(gr * x)


def with_jvp(x):
    out, dout = jvp(g, (x,), (np.cos(x),))
    return out * dout


def with_vmap_grad(x):
    xs = np.outer(SCALES, x)
    return np.sum(vmap(grad(g))(xs) ** 2)


INNER = [with_grad, with_vmap, with_jacfwd, with_hessian, with_value_and_grad, with_jvp,
         with_vmap_grad]
OUTER = ["grad", "jacfwd", "jacrev", "hessian", "vmap", "jvp", "vmap_grad"]
# derivative order of each: cells of order 3 and more transform slowly (the generated
# derivative code grows with the order), so they run with --runslow
ORDER = {"grad": 1, "jacfwd": 1, "jacrev": 1, "hessian": 2, "vmap": 0, "jvp": 1, "vmap_grad": 1,
         "with_grad": 1, "with_vmap": 0, "with_jacfwd": 1, "with_hessian": 2,
         "with_value_and_grad": 1, "with_jvp": 1, "with_vmap_grad": 1}
GRID = [pytest.param(outer, f, id=f"{outer}-{f.__name__}",
                     marks=[pytest.mark.slow] if ORDER[outer] + ORDER[f.__name__] > 2 else [])
        for outer in OUTER for f in INNER]
X = np.array([0.3, -1.1, 0.8])
V = np.array([0.5, 0.2, -0.4])
XS = np.array([[0.3, -1.1, 0.8], [0.6, 0.2, -0.7]])


def _transformed(outer: str, f):
    if outer == "vmap_grad":                    # per-example gradients
        return vmap(grad(f))
    return {"grad": grad, "jacfwd": jacfwd, "jacrev": jacrev, "hessian": hessian,
            "vmap": vmap, "jvp": jvp}[outer](f)


@functools.lru_cache(maxsize=None)
def _secant(outer: str, f):
    """The grid cell's value under the Python backend (shared by the oracle tests)."""
    return _call(outer, _transformed(outer, f))


def _call(outer: str, fn):
    """The outer transformation's result at the grid's point."""
    if outer in ("vmap", "vmap_grad"):
        return fn(XS)
    if outer == "jvp":
        return fn(X, V)
    return fn(X)


def _expected(outer: str, f):
    """Finite differences (a loop over the examples for vmap) of `f` run as Python."""
    if outer == "vmap":
        return np.array([f(x) for x in XS])
    if outer == "vmap_grad":
        return np.array([numerical_grad(f, (x,)) for x in XS])
    if outer == "jvp":
        return f(X), numerical_jvp(f, (X,), (V,))
    if outer == "hessian":
        return numerical_jacobian(lambda x: numerical_grad(f, (x,), eps=1e-5), X, eps=1e-4)
    return numerical_grad(f, (X,))


def _assert_close(got, expected, outer):
    tolerance = dict(rtol=1e-5, atol=1e-5) if outer == "hessian" else dict(rtol=1e-6,
                                                                           atol=1e-7)
    if outer == "jvp":
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, **tolerance)
    else:
        np.testing.assert_allclose(got, expected, **tolerance)


@pytest.mark.parametrize("outer, f", GRID)
def test_transformation_of_inline_transformation_matches_finite_differences(outer, f):
    _assert_close(_secant(outer, f), _expected(outer, f), outer)


def with_vjp(x):
    out, pullback = vjp(g, x)
    return out * np.sum(pullback(1.0)[0] * x)


def with_vjp_as_hinted(x):               # the hint's rewrite of with_vjp
    out, gr = value_and_grad(g)(x)
    return out * np.sum(gr * x)


def with_linearize(x):
    out, pushforward = linearize(g, x)
    return out * pushforward(np.cos(x))


def with_linearize_as_hinted(x):         # the hint's rewrite of with_linearize
    out, dout = jvp(g)(x, np.cos(x))
    return out * dout


@pytest.mark.parametrize("outer", OUTER)
@pytest.mark.parametrize("f, hinted, message, hint", [
    (with_vjp, with_vjp_as_hinted, "vjp inside a transformed function is not supported",
     "use grad(f) or value_and_grad(f) inside it"),
    (with_linearize, with_linearize_as_hinted,
     "linearize inside a transformed function is not supported",
     "use jvp(f)(*primals, *tangents) inside it")], ids=["vjp", "linearize"])
def test_inline_pullback_under_a_transformation_is_a_located_error_whose_hint_works(
        outer, f, hinted, message, hint):
    with pytest.raises(TransformError) as info:
        _call(outer, _transformed(outer, f))
    text = str(info.value)
    assert message in text and hint in text
    assert f"test_nested_transforms.py:{f.__code__.co_firstlineno + 1}:" in text
    if outer == "grad":                  # the rewrite the hint asks for differentiates
        _assert_close(_call(outer, _transformed(outer, hinted)),
                      _expected(outer, hinted), outer)


@pytest.mark.slow            # a compile of tens of seconds; CI runs it
def test_jit_hessian_of_inline_vmap_matches_finite_differences():
    got = jit(hessian(with_vmap))(X)
    _assert_close(got, _expected("hessian", with_vmap), "hessian")


# Under jit, a covering of the grid rather than all 49 cells (each a compile of up to a
# minute on CI's machine): every outer transformation over one inner one and every inner one
# under one outer one, cell (i, i + 1) mod 7. The Python-mode tests above run every cell
# against finite differences and JAX.
JIT_GRID = [pytest.param(OUTER[i], INNER[(i + 1) % len(INNER)],
                         id=f"{OUTER[i]}-{INNER[(i + 1) % len(INNER)].__name__}")
            for i in range(len(OUTER))]


@pytest.mark.slow
@pytest.mark.parametrize("outer, f", JIT_GRID)
def test_jit_of_transformation_of_inline_transformation_matches_python(outer, f):
    fn = _transformed(outer, f)
    _assert_close(_call(outer, jit(fn)), _call(outer, fn), "jit")


def _jax_programs(jax):
    """The grid's programs written with jax.numpy, by name."""
    jnp = jax.numpy

    def jg(x):
        return jnp.sum(jnp.sin(x) * x) * jnp.sum(x * x)

    def jgv(x):
        return jnp.sin(x) * jnp.sum(x * x)

    def outer_scaled(x):
        return jnp.outer(SCALES, x)

    def j_value_and_grad(x):
        v, gr = jax.value_and_grad(jg)(x)
        return v * jnp.sum(gr * x)

    def j_jvp(x):
        out, dout = jax.jvp(jg, (x,), (jnp.cos(x),))
        return out * dout

    return {
        "with_grad": lambda x: jnp.sum(jax.grad(jg)(x) * jnp.cos(x)),
        "with_vmap": lambda x: jnp.sum(jax.vmap(jg)(outer_scaled(x)) * SCALES),
        "with_jacfwd": lambda x: jnp.sum(jax.jacfwd(jgv)(x) * W),
        "with_hessian": lambda x: jnp.sum(jax.hessian(jg)(x) * W),
        "with_value_and_grad": j_value_and_grad,
        "with_jvp": j_jvp,
        "with_vmap_grad": lambda x: jnp.sum(jax.vmap(jax.grad(jg))(outer_scaled(x)) ** 2),
    }


@pytest.mark.parametrize("outer, f", GRID)
def test_transformation_of_inline_transformation_matches_jax(outer, f):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    program = _jax_programs(jax)[f.__name__]
    if outer == "jvp":
        expected = jax.jvp(program, (X,), (V,))
    elif outer == "vmap_grad":
        expected = jax.vmap(jax.grad(program))(XS)
    else:
        transform = {"grad": jax.grad, "jacfwd": jax.jacfwd, "jacrev": jax.jacrev,
                     "hessian": jax.hessian, "vmap": jax.vmap}[outer]
        expected = transform(program)(XS if outer == "vmap" else X)
    got = _secant(outer, f)
    pairs = zip(got, expected) if outer == "jvp" else [(got, expected)]
    for a, b in pairs:
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- the identity-basis helpers
# identity_batch (jacfwd's basis pushed through vmap), identity_batch_grad (its adjoint) and
# identity_batch_spread (the adjoint of that): each pair satisfies <A v, w> = <v, A^T w>

IDENTITY_CASES = [((3,), (3,)), ((2, 2), (2, 2)), ((3,), (4, 3)), ((3,), ())]


def _identity_pairs(batch, grad_of, spread):
    rng = np.random.default_rng(7)
    pairs = []
    for basis_shape, v_shape in IDENTITY_CASES:
        basis, v = rng.standard_normal(basis_shape), rng.standard_normal(v_shape)
        v = v if v_shape else float(v)           # a scalar tangent is a float in Numba
        forward = batch(v, basis)
        w = rng.standard_normal(np.shape(forward))
        back = grad_of(w, v, basis)
        pairs.append((np.sum(forward * w), np.sum(v * back), np.shape(back), np.shape(v)))
        u = rng.standard_normal(np.shape(back))
        pairs.append((np.sum(back * u), np.sum(w * spread(u, w, basis)), (), ()))
    return pairs


def test_identity_basis_helpers_are_adjoint_pairs():
    from transformer.runtime.batching import identity_batch
    from transformer.runtime.examples import identity_batch_grad, identity_batch_spread
    for left, right, shape, expected_shape in _identity_pairs(
            identity_batch, identity_batch_grad, identity_batch_spread):
        assert np.isclose(left, right) and shape == expected_shape


@pytest.mark.slow
def test_identity_basis_helpers_compiled_match_python():
    from numba import njit

    from transformer.runtime.batching import identity_batch
    from transformer.runtime.examples import identity_batch_grad, identity_batch_spread
    for left, right, shape, expected_shape in _identity_pairs(
            njit(lambda v, b: identity_batch(v, b)),
            njit(lambda w, v, b: identity_batch_grad(w, v, b)),
            njit(lambda u, w, b: identity_batch_spread(u, w, b))):
        assert np.isclose(left, right) and shape == expected_shape


def with_inline_grad_of_jacfwd(x):      # three levels: grad ∘ inline grad ∘ inline jacfwd
    return np.sum(grad(with_jacfwd)(x) * x)


@pytest.mark.slow
def test_grad_through_two_levels_of_inline_transformations_matches_finite_differences():
    f = with_inline_grad_of_jacfwd
    _assert_close(grad(f)(X), numerical_grad(f, (X,)), "grad")
