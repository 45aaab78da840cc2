"""Host callbacks and debug callbacks under compositions of grad and vmap, compared with
what JAX itself does for the same program (values reaching the host, results)."""
import numpy as np
import pytest

from transformer import (ShapeDtypeStruct, custom_vjp, debug, grad, io_callback,
                         pure_callback, vmap)

VEC3 = ShapeDtypeStruct((3,), np.float64)
SEEN: list = []
XS = np.array([[0.25, 0.5, 1.0], [1.5, -0.5, 2.0]])


def host_sin(a):
    SEEN.append(np.asarray(a).tolist())
    return np.sin(a)


def record(*values):
    SEEN.append([np.asarray(v).tolist() for v in values])


@custom_vjp
def hsin(x):
    return pure_callback(host_sin, VEC3, x, vmap_method="sequential")


def _hsin_fwd(x):
    return hsin(x), x


def _hsin_bwd(x, g):
    return (g * np.cos(x),)


hsin.defvjp(_hsin_fwd, _hsin_bwd)


def through_custom_vjp(x):
    return np.sum(hsin(x) * x)


@pytest.fixture(autouse=True)
def _fresh():
    SEEN.clear()
    yield


def _jax():
    jax_ = pytest.importorskip("jax")
    return jax_, pytest.importorskip("jax.numpy")


@pytest.mark.slow
def test_vmap_of_grad_through_a_custom_vjp_callback_matches_jax():
    jax_, jnp = _jax()
    spec = jax_.ShapeDtypeStruct((3,), jnp.float32)

    @jax_.custom_vjp
    def jsin(x):
        return jax_.pure_callback(lambda a: np.sin(a).astype(np.float32), spec, x,
                                  vmap_method="sequential")

    jsin.defvjp(lambda x: (jsin(x), x), lambda x, g: (g * jnp.cos(x),))
    expected = jax_.vmap(jax_.grad(lambda x: jnp.sum(jsin(x) * x)))(XS.astype(np.float32))
    got = vmap(grad(through_custom_vjp))(XS)
    np.testing.assert_allclose(got, np.asarray(expected), rtol=1e-5)
    np.testing.assert_allclose(got, np.sin(XS) + XS * np.cos(XS))
    assert all(v in SEEN for v in XS.tolist())      # the host saw each example itself


@pytest.mark.slow
def test_debug_and_io_callbacks_under_vmap_of_grad_see_what_jax_shows():
    jax_, jnp = _jax()
    from jax.experimental import io_callback as jax_io
    theirs: list = []

    def jax_record(*values):
        theirs.append([np.asarray(v).astype(np.float64).round(5).tolist() for v in values])

    def jax_watched(x):
        y = jnp.sin(x) * 2.0
        jax_.debug.callback(jax_record, y)
        return jnp.sum(y * x)

    def jax_logged(x):
        jax_io(jax_record, None, x)
        return jnp.sum(x)

    jax_.vmap(jax_.grad(jax_watched))(XS.astype(np.float32))
    jax_.vmap(jax_logged)(XS.astype(np.float32))
    got = vmap(grad(watched))(XS)
    np.testing.assert_allclose(got, [2 * np.sin(x) + 2 * x * np.cos(x) for x in XS])
    vmap(logged_only)(XS)
    ours = [[np.round(np.asarray(v), 5).tolist() for v in values] for values in SEEN]
    assert ours == theirs


def watched(x):
    y = np.sin(x) * 2.0
    debug.callback(record, y)
    return np.sum(y * x)


def logged_only(x):
    io_callback(record, None, x)
    return np.sum(x)


def test_grad_through_a_custom_vjp_callback_calls_the_host_once_per_evaluation():
    x = np.array([0.25, 0.5, 1.0])
    grad(through_custom_vjp)(x)
    assert len(SEEN) == 1
