"""Lowering for Numba: NumPy forms Numba lacks compile, with their derivatives.

Einsum becomes loops generated from its subscripts: the loops themselves are checked
against np.einsum under the python backend for many subscripts (no compile); the
compiled path is checked through a few shared jit(grad(...)) / jit(jvp(...)) compiles
against finite differences.
"""
import os

os.environ.setdefault("NUMBA_OPT", "0")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from gradcheck import assert_gradient_close, central_differences  # noqa: E402

from codegen.backends import Options  # noqa: E402
from transformer import einsum, grad, jit, jvp, runtime  # noqa: E402
from transformer.materialize import compile_function  # noqa: E402
from transformer.errors import TransformError  # noqa: E402

rng = np.random.default_rng(7)

# subscripts -> operand shapes
EINSUMS = {
    "ii": [(3, 3)], "ii->i": [(3, 3)], "ij->": [(2, 3)], "ij->ji": [(2, 3)],
    "i,i": [(4,), (4,)], "i,j->ij": [(2,), (3,)], "ij,j->i": [(2, 3), (3,)],
    "ij,jk->ik": [(2, 3), (3, 4)], "ij,jk": [(2, 3), (3, 4)],
    "bij,bjk->bik": [(2, 2, 3), (2, 3, 4)], "ij,ij->i": [(2, 3), (2, 3)],
    "iij,j->i": [(2, 2, 3), (3,)], "ba": [(2, 3)], "ij,jk,kl->il": [(2, 3), (3, 2), (2, 2)],
}


def _python(fn):
    return compile_function(fn, Options(backend="python")).function


@pytest.mark.parametrize("subscripts", list(EINSUMS))
def test_einsum_loops_match_numpy(subscripts):
    operands = [rng.normal(size=s) for s in EINSUMS[subscripts]]
    spec = einsum.parse(subscripts, len(operands))
    expected = np.einsum(subscripts, *operands)
    np.testing.assert_allclose(_python(einsum.forward_function(spec))(*operands), expected)
    g = rng.normal(size=np.shape(expected)) if np.ndim(expected) else 0.7
    for k in range(len(operands)):
        loops = _python(einsum.adjoint_function(spec, k))(g, *operands)
        with_numpy = runtime.einsum_grad(subscripts, k, g, operands)

        def contraction(x, k=k):
            return np.sum(g * np.einsum(subscripts, *operands[:k], x, *operands[k + 1:]))
        assert_gradient_close(loops, central_differences(contraction, [operands[k]], 0))
        np.testing.assert_allclose(with_numpy, loops, atol=1e-12)


@pytest.mark.parametrize("subscripts,message", [
    ("...i,i", "ellipsis"), ("ij,jk->iq", "output subscripts"), ("ij->ii", "output"),
    ("i1", "letters"), ("ij,jk", "name 2 operands")])
def test_einsum_unsupported_subscripts_are_refused(subscripts, message):
    with pytest.raises(ValueError, match=message):
        einsum.parse(subscripts, 3 if subscripts == "ij,jk" else None)


def contractions(A, B, v):
    t = np.einsum("ii", A) + np.einsum("ij,jk->", A, B) + np.einsum("i,i", v, v)
    M = np.einsum("ij,jk->ik", A, B) + np.einsum("i,j->ij", v, v)
    w = np.einsum("ij,j->i", A, v) * np.einsum("ii->i", B)
    C = np.stack((A, B))
    D = np.einsum("bij,bjk->bik", C, C)
    return t * np.sum(M * M) + np.sum(np.sin(w)) + np.einsum("ij->", np.tanh(M)) \
        + np.sum(D ** 2)


def _contraction_args():
    return [rng.normal(size=(3, 3)), rng.normal(size=(3, 3)), rng.normal(size=3)]


@pytest.fixture(scope="module")
def compiled_contractions():
    return jit(grad(contractions, argnums=(0, 1, 2)))


@pytest.mark.slow
def test_jit_grad_of_einsum_matches_finite_differences(compiled_contractions):
    args = _contraction_args()
    got = compiled_contractions(*args)
    for k in range(3):
        assert_gradient_close(got[k], central_differences(contractions, args, k),
                              f"d/d{'ABv'[k]}")


@pytest.mark.slow
def test_jit_of_einsum_runs_generated_loops(compiled_contractions):
    args = _contraction_args()
    code = "\n".join(line for line in compiled_contractions.source().splitlines()
                     if not line.strip().startswith("#"))     # comments quote the source
    assert "np.einsum" not in code and "einsum_grad(" not in code
    assert "einsum_grad0_ii_to(" in code
    np.testing.assert_allclose(jit(contractions)(*args), contractions(*args))


@pytest.mark.slow
def test_jit_jvp_of_einsum_matches_finite_differences():
    args = _contraction_args()
    tangents = [rng.normal(size=np.shape(a)) for a in args]
    value, tangent = jit(jvp(contractions))(*args, *tangents)
    expected = sum(np.sum(central_differences(contractions, args, k) * tangents[k])
                   for k in range(3))
    np.testing.assert_allclose(value, contractions(*args))
    np.testing.assert_allclose(tangent, expected, rtol=1e-6)


def test_einsum_with_unsupported_subscripts_is_refused_at_the_call():
    A = np.ones((2, 2))
    for transform in (lambda f: grad(f)(A), lambda f: jvp(f, (A,), (A,)),
                      lambda f: jit(f)(A)):
        with pytest.raises(TransformError) as info:
            transform(ellipsis_einsum)
        assert info.value.lineno == ellipsis_einsum.__code__.co_firstlineno + 1
        assert "ellipsis" in info.value.message


def ellipsis_einsum(A):
    return np.sum(np.einsum("...i,i", A, A[0]))


# ------------------------------------------------------------------ other lowered forms
def masked_by_argument(A, keep):
    return np.sum(A[keep] ** 2) + np.sum(np.exp(A[~keep]))


def inner_products(A, B, v):
    return np.sum(np.inner(A, B) ** 2) + np.sum(np.inner(v, A)) * np.inner(v, v)


@pytest.fixture(scope="module")
def compiled_lowered():
    return jit(grad(masked_by_argument)), jit(grad(inner_products, argnums=(0, 1, 2)))


@pytest.mark.slow
def test_jit_grad_through_a_two_dimensional_mask_argument(compiled_lowered):
    A = rng.normal(size=(3, 4))
    keep = A > 0.2
    expected = central_differences(lambda a: masked_by_argument(a, keep), [A], 0)
    assert_gradient_close(compiled_lowered[0](A, keep), expected)


@pytest.mark.slow
def test_jit_grad_of_inner_on_matrices(compiled_lowered):
    args = [rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=3)]
    got = compiled_lowered[1](*args)
    for k in range(3):
        assert_gradient_close(got[k], central_differences(inner_products, args, k))


def test_inner_tangent_and_second_derivative_match_finite_differences():
    from transformer import hessian
    args = [rng.normal(size=(2, 3)), rng.normal(size=(4, 3)), rng.normal(size=3)]
    tangents = [rng.normal(size=a.shape) for a in args]
    _, tangent = jvp(inner_products, tuple(args), tuple(tangents))
    expected = sum(np.sum(central_differences(inner_products, args, k) * tangents[k])
                   for k in range(3))
    np.testing.assert_allclose(tangent, expected, rtol=1e-6)
    v = args[2]
    got = hessian(inner_products, argnums=2)(*args)
    gradient = grad(inner_products, argnums=2)
    by_differences = np.stack([central_differences(
        lambda w, k=k: gradient(args[0], args[1], w)[k], [v], 0) for k in range(3)])
    np.testing.assert_allclose(got, by_differences, atol=1e-6)


def squeeze_unknown_axis(A):
    return np.sum(np.squeeze(A))


def squeeze_after_expand_dims(x):
    return np.sum(np.squeeze(np.expand_dims(x, 0)) * 2.0)


@pytest.mark.slow
def test_squeeze_without_an_axis_needs_a_known_one_under_jit():
    with pytest.raises(TransformError) as info:
        jit(squeeze_unknown_axis)(np.ones((1, 3)))
    assert info.value.lineno == squeeze_unknown_axis.__code__.co_firstlineno + 1
    assert "axis" in info.value.hint
    compiled = jit(squeeze_after_expand_dims)
    np.testing.assert_allclose(compiled(np.arange(3.0)), 6.0)
    with pytest.raises(ValueError, match="length-1 axis"):   # NumPy would squeeze it too
        compiled(np.ones((1, 3)))


def copies_its_dict(d, x):
    e = d.copy()
    return np.sum(e["a"] * x)


def test_copy_of_a_dict_argument_is_refused_at_the_line():
    d = {"a": np.ones(2)}
    for compiled in (jit(copies_its_dict), jit(copies_its_dict, backend="python"),
                     grad(copies_its_dict, argnums=1)):
        with pytest.raises(TransformError) as info:
            compiled(d, 2.0)
        assert info.value.lineno == copies_its_dict.__code__.co_firstlineno + 1


def clipped_through_mask(A):
    B = A * 1.5
    low = B < -0.2
    B[low] = 0.1 * A[low]
    B[B > 1.0] = 1.0
    B[low] += 0.5 * A[low]
    return np.sum(B * B)


@pytest.mark.slow
def test_jit_grad_of_writes_through_a_two_dimensional_mask():
    A = rng.normal(size=(3, 4))
    np.testing.assert_allclose(jit(clipped_through_mask)(A), clipped_through_mask(A))
    expected = central_differences(clipped_through_mask, [A], 0)
    assert_gradient_close(jit(grad(clipped_through_mask))(A), expected)
