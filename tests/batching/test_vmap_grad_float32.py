"""vmap(grad(f)) keeps float32 gradients float32, under jit too, as grad does.

Under `jit`, Numba types `1.0 + b` for float32 `b` as float64, so the cotangents reaching
an argument are float64; grad accumulates them in place into the argument's float32
adjoint. vmap batches that accumulation as `bb = bb + e`; the gradient came back float64
(the unmapped argument's gradient first). Each case checks the dtype and the values against
central differences of `f` in float64.
"""
import numpy as np
import pytest

from transformer import grad, jit, vmap

rng = np.random.default_rng(39)


def offset_sum(b, x):
    return np.sum(1.0 + b) + np.sum(x)


def squashed(b, x):
    c = b * b
    h = c / (1.0 + c) * 0.5
    return np.sum(h ** 2) + np.sum(x * b)


def two_params(w, b, x):
    h = np.tanh(0.5 * (w @ x) + b)
    return np.sum(h ** 2) + 0.1 * np.sum(b * b)


def central_differences(f, args, argnum, h=1e-6):
    """df/d args[argnum] of `f` on float64 copies of `args`."""
    args = [np.asarray(a, np.float64) for a in args]
    out = np.zeros_like(args[argnum])
    for i in np.ndindex(out.shape):
        up = [a.copy() for a in args]
        down = [a.copy() for a in args]
        up[argnum][i] += h
        down[argnum][i] -= h
        out[i] = (f(*up) - f(*down)) / (2 * h)
    return out


def per_example_reference(f, args, in_axes, argnum):
    size = next(a.shape[0] for a, ax in zip(args, in_axes) if ax is not None)
    return np.stack([central_differences(f, [a[k] if ax is not None else a
                                             for a, ax in zip(args, in_axes)], argnum)
                     for k in range(size)])


CASES = [
    ("offset_sum_shared_b", offset_sum, (None, 0), [(3,), (4, 3)]),
    ("squashed_shared_b", squashed, (None, 0), [(3,), (4, 3)]),
    ("squashed_mapped_b", squashed, (0, None), [(4, 3), (3,)]),
    ("squashed_both_mapped", squashed, (0, 0), [(4, 3), (4, 3)]),
]


def _args(shapes):
    return [rng.uniform(0.2, 1.5, shape).astype(np.float32) for shape in shapes]


@pytest.mark.parametrize("jitted", [False, True], ids=["python", "jit"])
@pytest.mark.parametrize("label,f,in_axes,shapes", CASES, ids=[c[0] for c in CASES])
def test_vmap_grad_keeps_float32(label, f, in_axes, shapes, jitted):
    args = _args(shapes)
    batched = vmap(grad(f), in_axes=in_axes)
    got = (jit(batched) if jitted else batched)(*args)
    assert got.dtype == np.float32
    want = per_example_reference(f, args, in_axes, 0)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("jitted", [False, True], ids=["python", "jit"])
def test_vmap_grad_of_two_arguments_keeps_float32(jitted):
    w, b, xs = _args([(2, 3), (2,), (5, 3)])
    batched = vmap(grad(two_params, argnums=(0, 1)), in_axes=(None, None, 0))
    gw, gb = (jit(batched) if jitted else batched)(w, b, xs)
    assert gw.dtype == np.float32 and gb.dtype == np.float32
    in_axes = (None, None, 0)
    np.testing.assert_allclose(gw, per_example_reference(two_params, [w, b, xs], in_axes, 0),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(gb, per_example_reference(two_params, [w, b, xs], in_axes, 1),
                               rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_jit_vmap_grad_float64_stays_float64():
    b, xs = rng.uniform(0.2, 1.5, 3), rng.uniform(0.2, 1.5, (4, 3))
    got = jit(vmap(grad(squashed), in_axes=(None, 0)))(b, xs)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, per_example_reference(squashed, [b, xs], (None, 0), 0),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_the_narrowing_copies_nothing_where_the_type_agrees_and_keeps_vmap_vectorized():
    """The per-call cost of keeping the type: none where the gradient already has it (a
    copy of each per-example gradient would double the work of a batched MLP gradient),
    and vmap keeps its vectorized strategy (the narrowing has a batching rule)."""
    import numba

    from transformer import runtime, source

    a = rng.normal(size=(3, 4))
    assert runtime.keep_float_type(a, a) is a
    narrowed = runtime.keep_float_type(a, a.astype(np.float32))
    assert narrowed.dtype == np.float32 and np.array_equal(narrowed, a.astype(np.float32))

    @numba.njit
    def same(value, x):
        return runtime.keep_float_type(value, x)
    assert np.shares_memory(same(a, a), a)
    assert same(a, a.astype(np.float32)).dtype == np.float32

    b, xs = rng.normal(size=5).astype(np.float32), rng.normal(size=(3, 5)).astype(np.float32)
    mapped = jit(vmap(grad(squashed), in_axes=(None, 0)))
    assert mapped(b, xs).dtype == np.float32
    text = source(mapped)
    assert "keep_float_type" in text and "vectorize strategy" in text


def scaled_transposed_layer(w, x):
    return np.sum(np.tanh(w.T @ x) * 0.5)


@pytest.mark.parametrize("batched", [False, True], ids=["grad", "vmap_grad"])
def test_jit_gradient_through_a_product_whose_cotangent_a_python_float_widened(batched):
    # `* 0.5` makes the cotangent float64 under jit while `w` stays float32: the product's
    # adjoint met np.dot of mixed float types, which Numba refuses ("missing a required
    # argument: 'out'"); it now computes in the common type, as NumPy does
    w, xs = _args([(3, 2), (4, 3)])
    if batched:
        got = jit(vmap(grad(scaled_transposed_layer, argnums=1), in_axes=(None, 0)))(w, xs)
        want = per_example_reference(scaled_transposed_layer, [w, xs], (None, 0), 1)
    else:
        got = jit(grad(scaled_transposed_layer, argnums=1))(w, xs[0])
        want = central_differences(scaled_transposed_layer, [w, xs[0]], 1)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def product_of_a_widened_vector(w, x):
    return np.sum(np.tanh(w @ (x * 0.5)))


def test_jit_product_of_float32_and_a_vector_a_python_float_widened():
    # under jit `x * 0.5` is float64 beside float32 `w`: Numba's np.dot refused the pair
    # ("missing a required argument: 'out'"); it computes in the common type, as NumPy
    w, x = _args([(3, 2), (2,)])
    assert np.isclose(jit(product_of_a_widened_vector)(w, x),
                      product_of_a_widened_vector(w.astype(np.float64), x.astype(np.float64)),
                      rtol=1e-6)
    for argnum in (0, 1):
        got = jit(grad(product_of_a_widened_vector, argnums=argnum))(w, x)
        assert got.dtype == np.float32
        np.testing.assert_allclose(
            got, central_differences(product_of_a_widened_vector, [w, x], argnum),
            rtol=1e-4, atol=1e-5)
