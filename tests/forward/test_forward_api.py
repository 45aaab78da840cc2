"""jvp, linearize, jacfwd and custom_jvp against JAX, with the python backend and under jit."""
from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("NUMBA_OPT", "0")

import transformer  # noqa: E402
from transformer import custom_jvp, jacfwd, jit, jvp, linearize  # noqa: E402

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jnp = jax.numpy


def model(x, w):
    h = np.tanh(w @ x)
    return h * np.sum(x * x)


def model_jax(x, w):
    h = jnp.tanh(w @ x)
    return h * jnp.sum(x * x)


X = np.array([0.3, -0.8, 0.5])
W = np.array([[0.2, -0.4, 1.0], [0.7, 0.1, -0.3]])


def test_jvp_matches_jax_for_all_arguments():
    dx, dw = np.array([1.0, 0.5, -2.0]), np.ones_like(W)
    out, tangent = jvp(model, (X, W), (dx, dw))
    ref_out, ref_tangent = jax.jvp(model_jax, (X, W), (dx, dw))
    np.testing.assert_allclose(out, ref_out, rtol=1e-12)
    np.testing.assert_allclose(tangent, ref_tangent, rtol=1e-12)


def with_aux(x):
    y = np.sin(x)
    return np.sum(y * y), y


def test_jvp_has_aux_returns_aux_untouched():
    out, tangent, aux = jvp(with_aux, (X,), (np.ones(3),), has_aux=True)
    np.testing.assert_allclose(out, np.sum(np.sin(X) ** 2))
    np.testing.assert_allclose(tangent, np.sum(2 * np.sin(X) * np.cos(X)))
    np.testing.assert_allclose(aux, np.sin(X))


def test_jvp_tangent_count_must_match():
    with pytest.raises(TypeError, match="2 primals but 1 tangents"):
        jvp(model, (X, W), (X,))


def test_linearize_reuses_the_point():
    out, f_jvp = linearize(model, X, W)
    ref_out, ref_jvp = jax.linearize(model_jax, X, W)
    np.testing.assert_allclose(out, ref_out, rtol=1e-12)
    for dx in (np.eye(3)[0], np.array([0.3, 0.1, -1.0])):
        np.testing.assert_allclose(f_jvp(dx, np.zeros_like(W)),
                                   ref_jvp(dx, np.zeros_like(W)), rtol=1e-12)


@pytest.mark.slow
def test_jacfwd_matches_jax_for_one_and_several_argnums():
    np.testing.assert_allclose(jacfwd(model)(X, W), jax.jacfwd(model_jax)(X, W), rtol=1e-12)
    jx, jw = jacfwd(model, argnums=(0, 1))(X, W)
    rx, rw = jax.jacfwd(model_jax, argnums=(0, 1))(X, W)
    assert jw.shape == (2, 2, 3)
    np.testing.assert_allclose(jx, rx, rtol=1e-12)
    np.testing.assert_allclose(jw, rw, rtol=1e-12)


def scalar_fn(a, b):
    return a * a * b + np.sin(b)


def test_jacfwd_of_scalars_is_scalar():
    da, db = jacfwd(scalar_fn, argnums=(0, 1))(0.5, 2.0)
    assert np.ndim(da) == 0 and da == pytest.approx(2 * 0.5 * 2.0)
    assert db == pytest.approx(0.25 + np.cos(2.0))


def test_jacfwd_has_aux():
    jac, aux = jacfwd(with_aux, has_aux=True)(X)
    np.testing.assert_allclose(jac, 2 * np.sin(X) * np.cos(X))
    np.testing.assert_allclose(aux, np.sin(X))


def test_argnums_out_of_range_is_an_error():
    with pytest.raises(transformer.TransformError, match="argnums 2 is out of range"):
        jacfwd(model, argnums=2)(X, W)


@custom_jvp
def clipped_log(x):
    return np.log(np.maximum(x, 1e-3))


@clipped_log.defjvp
def clipped_log_jvp(primals, tangents):
    x, = primals
    t, = tangents
    return clipped_log(x), t / (x + 1.0)       # deliberately not the true derivative


def uses_custom(x):
    return np.sum(clipped_log(x) * 2.0)


def test_custom_jvp_rule_is_used_inside_and_at_top_level():
    out, tangent = jvp(uses_custom, (X + 1.0,), (np.ones(3),))
    np.testing.assert_allclose(out, np.sum(np.log(X + 1.0) * 2.0))
    np.testing.assert_allclose(tangent, np.sum(2.0 / (X + 2.0)))
    _, direct = jvp(clipped_log, (2.0,), (1.0,))
    assert direct == pytest.approx(1.0 / 3.0)
    assert clipped_log(2.0) == pytest.approx(np.log(2.0))


# ---------------------------------------------------------------- compiled

@pytest.fixture(scope="module")
def compiled_jacobian():
    return jit(jacfwd(model, argnums=(0, 1)))


@pytest.mark.slow
def test_jit_jacfwd_matches_python(compiled_jacobian):
    for got, want in zip(compiled_jacobian(X, W), jacfwd(model, argnums=(0, 1))(X, W)):
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.slow
def test_jit_jvp_function_and_custom_rule():
    out, tangent = jit(jvp(uses_custom))(X + 1.0, np.ones(3))
    np.testing.assert_allclose(tangent, np.sum(2.0 / (X + 2.0)))
    out, tangent, aux = jit(jvp(with_aux, has_aux=True))(X, np.ones(3))
    np.testing.assert_allclose(aux, np.sin(X))


def test_jacfwd_pushes_all_basis_vectors_in_one_batched_call():
    text = transformer.source(jacfwd(model))
    assert "mapped_x(x, w, basis_ones(x))" in text
    assert text.count("def ") == 1


def unbatchable(x):
    y = x * 1.0
    for i in range(x.shape[0]):
        if x[i] > 0.0:               # the branch depends on the tangent's primal only
            y[i] = np.sin(x[i]) * x[0]
    return y


def test_jacfwd_through_branches_and_inplace_writes():
    x = np.array([0.5, -0.3, 1.2])
    ref = jax.jacfwd(lambda v: v.at[:].set(jnp.where(v > 0, jnp.sin(v) * v[0], v)))(x)
    np.testing.assert_allclose(jacfwd(unbatchable)(x), ref, rtol=1e-12)


# ---------------------------------------------------------------- pytrees

def layer(params, x):
    return np.tanh(params["W"] @ x + params["b"])


def layer_jax(params, x):
    return jnp.tanh(params["W"] @ x + params["b"])


def two_outputs(params, x):
    h = np.tanh(params["W"] @ x + params["b"])
    return np.sum(h * h), h * 2.0


def two_outputs_jax(params, x):
    h = jnp.tanh(params["W"] @ x + params["b"])
    return jnp.sum(h * h), h * 2.0


PARAMS = {"W": W, "b": np.array([0.1, -0.2])}


@pytest.mark.slow
@pytest.mark.parametrize("ours, theirs", [(jacfwd, jax.jacfwd), (transformer.jacrev,
                                                                 jax.jacrev)])
def test_jacobian_of_a_dict_argument_has_the_tree_product_structure(ours, theirs):
    got = ours(layer)(PARAMS, X)
    want = theirs(layer_jax)(PARAMS, X)
    assert set(got) == {"W", "b"}
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-12)
    (got_p, got_x) = ours(layer, argnums=(0, 1))(PARAMS, X)
    (want_p, want_x) = theirs(layer_jax, argnums=(0, 1))(PARAMS, X)
    np.testing.assert_allclose(got_x, want_x, rtol=1e-12)
    np.testing.assert_allclose(got_p["W"], want_p["W"], rtol=1e-12)


def test_jacfwd_of_a_tuple_output_nests_output_then_argument():
    got = jacfwd(two_outputs)(PARAMS, X)
    want = jax.jacfwd(two_outputs_jax)(PARAMS, X)
    assert isinstance(got, tuple) and len(got) == 2
    for i in range(2):
        for key in ("W", "b"):
            np.testing.assert_allclose(got[i][key], want[i][key], rtol=1e-12)


def test_show_hessian_prints_the_hessian_and_the_functions_it_calls():
    text = transformer.show_hessian(scalar_fn, argnums=1)
    assert "def grad_scalar_fn_hessian(a, b):" in text
    assert "jvp(active=b) | vmap(" in text
    assert "def grad_scalar_fn_jvp_vmap(a, b, db):" in text


def test_jvp_of_dict_arguments_matches_jax_and_compiles():
    tangent_params = {"W": np.ones_like(W), "b": np.array([0.5, -1.0])}
    dx = np.array([1.0, 0.0, -1.0])
    out, tangent = jvp(layer, (PARAMS, X), (tangent_params, dx))
    ref_out, ref_tangent = jax.jvp(layer_jax, (PARAMS, X), (tangent_params, dx))
    np.testing.assert_allclose(tangent, ref_tangent, rtol=1e-12)
    compiled_out, compiled_tangent = jit(jvp(layer))(PARAMS, X, tangent_params, dx)
    np.testing.assert_allclose(compiled_tangent, ref_tangent, rtol=1e-12)


# ---------------------------------------------------------------- hessian in several arguments

def mixed(x, a, w):
    return np.sum(np.tanh(w @ x) * a) + a * a * np.sum(x * x * x)


def mixed_jax(x, a, w):
    return jnp.sum(jnp.tanh(w @ x) * a) + a * a * jnp.sum(x * x * x)


MIXED = (X, 0.7, W)


def _assert_blocks_match_jax(got, argnums):
    want = jax.hessian(mixed_jax, argnums=argnums)(*MIXED)
    assert isinstance(got, tuple) and len(got) == len(argnums)
    for i, a in enumerate(argnums):
        assert isinstance(got[i], tuple) and len(got[i]) == len(argnums)
        for j, b in enumerate(argnums):
            assert np.shape(got[i][j]) == np.shape(MIXED[a]) + np.shape(MIXED[b])
            np.testing.assert_allclose(got[i][j], want[i][j], rtol=1e-12, atol=1e-14)


@pytest.fixture(scope="module")
def compiled_mixed_hessian():
    return jit(transformer.hessian(mixed, argnums=(0, 1, 2)))


@pytest.mark.slow
def test_hessian_with_tuple_argnums_nests_blocks_like_jax(compiled_mixed_hessian):
    _assert_blocks_match_jax(transformer.hessian(mixed, argnums=(0, 1, 2))(*MIXED),
                             (0, 1, 2))
    _assert_blocks_match_jax(compiled_mixed_hessian(*MIXED), (0, 1, 2))
    _assert_blocks_match_jax(transformer.hessian(mixed, argnums=(2, 1))(*MIXED), (2, 1))


@pytest.mark.slow
def test_hessian_blocks_are_differences_of_the_gradient():
    from gradcheck import central_differences
    blocks = transformer.hessian(mixed, argnums=(0, 1))(*MIXED)
    for i in range(2):
        def gradient_i(*args, i=i):
            return transformer.grad(mixed, argnums=i)(*args)
        for j in range(2):
            fd = np.stack([central_differences(lambda *a, k=k: np.ravel(gradient_i(*a))[k],
                                               MIXED, j)
                           for k in range(np.size(MIXED[i]))])
            np.testing.assert_allclose(np.reshape(blocks[i][j], fd.shape), fd, rtol=1e-6,
                                       atol=1e-8)


@pytest.mark.slow
def test_hessian_tuple_argnums_without_batching_loops_over_basis_vectors(monkeypatch):
    from transformer import api_forward

    def no_batching(*args):
        raise transformer.TransformError("no batching in this test")
    monkeypatch.setattr(api_forward, "_batched_body", no_batching)
    text = transformer.source(transformer.hessian(mixed, argnums=(0, 1)))
    assert "set_column(" in text and "mapped_" not in text
    _assert_blocks_match_jax(transformer.hessian(mixed, argnums=(0, 1))(*MIXED), (0, 1))


@pytest.mark.slow
def test_one_element_tuple_argnums_gives_a_one_element_tuple():
    (jx,) = jacfwd(model, argnums=(0,))(X, W)
    np.testing.assert_allclose(jx, jax.jacfwd(model_jax)(X, W), rtol=1e-12)
    (jw,) = transformer.jacrev(model, argnums=(1,))(X, W)
    np.testing.assert_allclose(jw, jax.jacrev(model_jax, argnums=1)(X, W), rtol=1e-12)
    ((h,),) = transformer.hessian(mixed, argnums=(1,))(*MIXED)
    assert np.ndim(h) == 0
    assert h == pytest.approx(jax.hessian(mixed_jax, argnums=1)(*MIXED), rel=1e-12)


# ---------------------------------------------------------------- identity batches
# jacfwd pushes a basis as an identity batch: linear elementwise steps stay one array,
# everything else (reductions, products, outputs) expands it to an ordinary batch.

M = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]])


def widened(x, m):
    return np.tanh(x * m) / 3.0 - x * m          # (2, 3) from x of shape (3,)


def widened_jax(x, m):
    return jnp.tanh(x * m) / 3.0 - x * m


def reduced(x, m):
    return np.sum(np.tanh(x * m), axis=0) * x    # a reduction expands the identity batch


def reduced_jax(x, m):
    return jnp.sum(jnp.tanh(x * m), axis=0) * x


def of_scalar(a, v):
    return np.sin(a * v) + a


def of_scalar_jax(a, v):
    return jnp.sin(a * v) + a


def branchy(x):
    if x[0] > 0.0:
        y = x * 2.0
    else:
        y = -x
    return np.cos(y) * y


def branchy_jax(x):
    y = jnp.where(x[0] > 0.0, x * 2.0, -x)
    return jnp.cos(y) * y


def matrix_elementwise(w):
    return np.sin(w) * w + w / 2.0


IDENTITY_CASES = [
    (widened, widened_jax, (X, M)),
    (reduced, reduced_jax, (X, M)),
    (of_scalar, of_scalar_jax, (0.7, X)),
    (branchy, branchy_jax, (X,)),
    (branchy, branchy_jax, (-X,)),
    (matrix_elementwise, lambda w: jnp.sin(w) * w + w / 2.0, (W,)),
]


@pytest.mark.parametrize("fn, fn_jax, args", IDENTITY_CASES)
def test_jacfwd_through_identity_batches_matches_jax(fn, fn_jax, args):
    got = jacfwd(fn)(*args)
    want = jax.jacfwd(fn_jax)(*args)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_an_elementwise_chain_stays_one_array_until_the_output():
    def body(fn):
        return transformer.source(jacfwd(fn).function.env["mapped_x"]).split("\ndef ")[1]
    assert "identity_batch(" not in body(widened)
    assert "return result, identity_batch_last(dresult, basis)" in body(widened)
    assert "identity_batch(" in body(reduced)
    # read by index in a loop: the batch is built once, before the loop
    looped = body(unbatchable)
    assert looped.count("identity_batch(") == 1
    assert looped.index("identity_batch(") < looped.index("for ")


@pytest.fixture(scope="module")
def compiled_identity_jacobians():
    return jit(jacfwd(widened)), jit(jacfwd(reduced)), jit(jacfwd(of_scalar))


@pytest.mark.slow
def test_compiled_identity_batches_match_jax(compiled_identity_jacobians):
    wide, red, scalar = compiled_identity_jacobians
    np.testing.assert_allclose(wide(X, M), jax.jacfwd(widened_jax)(X, M), rtol=1e-12)
    np.testing.assert_allclose(red(X, M), jax.jacfwd(reduced_jax)(X, M), rtol=1e-12)
    np.testing.assert_allclose(scalar(0.7, X), jax.jacfwd(of_scalar_jax)(0.7, X), rtol=1e-12)


@pytest.mark.slow
def test_compiled_hessian_of_an_elementwise_sum_is_its_diagonal():
    from benchmarks import peers, workloads
    x, _, _ = workloads.hessian_inputs(40, seed=3)
    h = jit(transformer.hessian(workloads.sum_tanh))
    np.testing.assert_allclose(h(x), peers.hessian_sum_tanh_numpy(x), rtol=1e-12,
                               atol=1e-15)
