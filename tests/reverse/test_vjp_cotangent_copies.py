"""A helper's vjp leaves the cotangents it is passed as they were.

A helper that returns a vector and a value read from it (`return np.tanh(h[1]), h`) has a
vjp whose reverse sweep accumulates into the vector's cotangent element by element
(`bh[1] = bh[1] + v`). That accumulation works on a copy of the cotangent passed in, so
forward mode can take the vjp (hessian, jacfwd(jacrev), jvp(grad) of a function calling the
helper were refused: "vjp_body writes into its argument 'b_h0'"), and a cotangent the user
passes to `vjp`'s function is left unchanged (it was written into). Second derivatives are
checked against central differences of central differences; JAX in the last test.
"""
from __future__ import annotations

import numpy as np
import pytest

import transformer
from tests.gradcheck import central_differences, jax_with_x64
from transformer.test_util import numerical_jacobian


def body_read_second(w, x):
    h0 = w @ x
    return np.tanh(h0[1]), h0


def f_read_second(w, x):
    return body_read_second(w, x)[0]


def body_vector_first(w, x):
    h = np.sin(w @ x)
    return h, h[0] * h[2]


def f_vector_first(w, x):
    out = body_vector_first(w, x)
    return out[1] + 0.5 * np.sum(out[0] * out[0])


def body_matrix(w, x):
    m = np.outer(w @ x, x)
    return m, np.exp(m[1, 0]) * m[0, 2]


def f_matrix(w, x):
    return body_matrix(w, x)[1] + np.sum(np.cos(body_matrix(w, x)[0]))


def body_two_reads(w, x):
    h = np.tanh(w @ x)
    return h[0] * h[1], h, h[2] ** 2


def f_two_reads(w, x):
    a, h, c = body_two_reads(w, x)
    return a + c * np.sum(h)


W23 = np.arange(6.0).reshape(2, 3) / 7 - 0.3
W33 = np.array([[0.2, -0.4, 0.1], [0.5, 0.3, -0.2], [-0.1, 0.6, 0.4]])
X3 = np.array([0.3, -0.2, 0.5])

CASES = [
    pytest.param(f_read_second, W23, id="tanh-of-an-item-and-the-vector"),
    pytest.param(f_vector_first, W33, id="vector-first-then-a-product-of-items"),
    pytest.param(f_matrix, W23, id="matrix-and-an-item-of-it"),
    pytest.param(f_two_reads, W33, id="three-outputs-two-read-from-the-vector"),
]


def second_differences(f, args, argnum):
    """The Hessian of `f` in argument `argnum` by central differences of the central
    difference gradient."""
    def gradient(v):
        moved = list(args)
        moved[argnum] = v
        return central_differences(f, moved, argnum, eps=1e-4)
    return numerical_jacobian(gradient, args[argnum], eps=1e-4)


def assert_second_close(got, expected, what):
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5, err_msg=what)


@pytest.mark.slow
@pytest.mark.parametrize("argnum", [0, 1])
@pytest.mark.parametrize("f, w", CASES)
def test_hessian_of_a_helper_returning_a_vector_and_its_item(f, w, argnum):
    args = (w, X3)
    expected = second_differences(f, args, argnum)
    assert_second_close(transformer.hessian(f, argnums=argnum)(*args), expected, "hessian")
    assert_second_close(transformer.jacfwd(transformer.jacrev(f, argnums=argnum),
                                           argnums=argnum)(*args), expected, "jacfwd(jacrev)")


@pytest.mark.slow
@pytest.mark.parametrize("f, w", CASES)
def test_jvp_of_grad_and_the_gradient_itself(f, w):
    args = (w, X3)
    np.testing.assert_allclose(transformer.grad(f, argnums=1)(*args),
                               central_differences(f, args, 1), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(transformer.grad(f)(*args),
                               central_differences(f, args, 0), rtol=1e-6, atol=1e-8)
    t = np.array([0.7, -0.3, 0.2])
    g = transformer.grad(f, argnums=1)
    gradient, tangent = transformer.jvp(lambda v: g(w, v), (X3,), (t,))
    np.testing.assert_allclose(gradient, central_differences(f, args, 1), rtol=1e-6,
                               atol=1e-8)
    assert_second_close(tangent, second_differences(f, args, 1) @ t, "jvp(grad)")


@pytest.mark.slow
@pytest.mark.parametrize("body, w", [(body_read_second, W23), (body_two_reads, W33)])
def test_jacrev_and_vmap_of_grad_of_a_vector_function_calling_the_helper(body, w):
    def vector(x):
        out = body(w, x)
        return out[1] * out[0]
    np.testing.assert_allclose(transformer.jacrev(vector)(X3), numerical_jacobian(vector, X3),
                               rtol=1e-6, atol=1e-8)
    xs = np.stack([X3, 0.5 * X3[::-1], X3 - 0.1])
    def scalar(x):
        return np.sum(vector(x) ** 2)
    np.testing.assert_allclose(transformer.vmap(transformer.grad(scalar))(xs),
                               [central_differences(scalar, (x,)) for x in xs],
                               rtol=1e-6, atol=1e-8)


def test_vjp_leaves_the_cotangent_it_is_given_unchanged():
    out, pullback = transformer.vjp(body_read_second, W23, X3)
    cotangent = np.array([1.0, 2.0])
    first = pullback((0.5, cotangent))
    np.testing.assert_array_equal(cotangent, [1.0, 2.0])
    second = pullback((0.5, cotangent))          # the same cotangent again, same result
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    h0 = W23 @ X3
    dh = cotangent + np.array([0.0, 0.5 * (1 - np.tanh(h0[1]) ** 2)])
    np.testing.assert_allclose(first[0], np.outer(dh, X3), rtol=1e-12)
    np.testing.assert_allclose(first[1], W23.T @ dh, rtol=1e-12)


def test_grad_of_a_function_without_helpers_keeps_its_vjp_free_source():
    """Only a vjp's cotangent parameters are ever copied: a gradient has none."""
    def plain(x):
        h = np.sin(x)
        h[1] = h[1] * 2.0
        return np.sum(h * h)
    assert "copy_array" not in str(transformer.source(transformer.grad(plain)))


def test_the_copy_is_taken_only_for_a_cotangent_written_into():
    from codegen.emit import to_source
    from transformer.frontend import parse_callee
    from transformer.reverse import VJP, reverse_function
    text = to_source(reverse_function(parse_callee(body_two_reads), (1,), VJP).node)
    copies = [line.strip() for line in text.splitlines() if "copy_array(" in line]
    assert len(copies) == 1 and copies[0].endswith("(b_h)"), text


@pytest.mark.slow
@pytest.mark.parametrize("f, w", CASES[:2])
def test_jit_hessian_matches_the_python_backend(f, w):
    args = (w, X3)
    expected = transformer.hessian(f, argnums=1)(*args)
    assert_second_close(expected, second_differences(f, args, 1), "hessian")
    np.testing.assert_allclose(transformer.jit(transformer.hessian(f, argnums=1))(*args),
                               expected, rtol=1e-12, atol=1e-14)


@pytest.mark.slow
def test_hessian_matches_jax():
    jax = jax_with_x64()
    jnp = jax.numpy

    def f_jax(w, x):
        h = jnp.tanh(w @ x)
        return h[0] * h[1] + h[2] ** 2 * jnp.sum(h)

    for argnum in (0, 1):
        np.testing.assert_allclose(
            transformer.hessian(f_two_reads, argnums=argnum)(W33, X3),
            jax.hessian(f_jax, argnums=argnum)(jnp.asarray(W33), jnp.asarray(X3)),
            rtol=1e-10, atol=1e-12)

    def read_second_jax(w, x):
        return jnp.tanh((w @ x)[1])

    np.testing.assert_allclose(
        transformer.hessian(f_read_second, argnums=1)(W23, X3),
        jax.hessian(read_second_jax, argnums=1)(jnp.asarray(W23), jnp.asarray(X3)),
        rtol=1e-10, atol=1e-12)
