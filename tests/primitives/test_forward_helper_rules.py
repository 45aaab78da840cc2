"""Rules for the runtime helpers derivative code calls, against finite differences.

Second-order derivatives differentiate generated code, which calls these helpers; the
harness is the one the built-in rules are tested with.
"""
from __future__ import annotations

import numpy as np
import pytest
import test_adjoint_rules as adjoints
from test_adjoint_rules import check_vjp, normal
from test_tangent_rules import check_jvp

import transformer.helper_rules  # noqa: F401  (registers the rules under test)
from transformer import runtime

adjoints.NAMESPACE.update({n: getattr(runtime, n) for n in runtime.__all__})


def case(program, consts=None, **inputs):
    return pytest.param(program, inputs, consts or {}, id=program)


CASES = [
    case("z = unbroadcast(g, x)", consts={"x": normal(3)}, g=normal(2, 3)),
    case("z = unbroadcast(g, x)", consts={"x": 1.0}, g=normal(2, 3)),
    case("z = broadcast_like(t, w)", consts={"w": normal(2, 3)}, t=normal(3)),
    case("z = broadcast_reduced(g, x, 0, False)", consts={"x": normal(2, 3)}, g=normal(3)),
    case("z = broadcast_reduced(g, x)", consts={"x": normal(2, 3)}, g=1.5),
    case("z = cast_like(v, x)", consts={"x": normal(3)}, v=normal(3)),
    case("z = reshape_like(g, x)", consts={"x": normal(2, 3)}, g=normal(6)),
    case("z = reshape(a, (3, 2))", a=normal(2, 3)),
    case("z = reduce_sum(a, 1, None, None, False)", a=normal(2, 3)),
    case("z = reduce_sum(a)", a=normal(2, 3)),
    case("z = reduce_mean(a, 0, None, None, True)", a=normal(2, 3)),
    case("z = transpose(a)", a=normal(2, 3)),
    case("z = untranspose(g, (1, 0, 2))", g=normal(2, 3, 4)),
    case("z = squeeze(a)", a=normal(2, 1, 3)),
    case("z = flip(a, 0)", a=normal(4, 2)),
    case("z = moveaxis(a, 0, 2)", a=normal(2, 3, 4)),
    case("z = cumsum(a, 0)", a=normal(4, 2)),
    case("z = cumsum_adjoint(g, x, 0)", consts={"x": normal(4, 2)}, g=normal(4, 2)),
    case("z = matmul(a, b)", a=normal(2, 3), b=normal(3, 4)),
    case("z = matmul(a, b)", a=normal(2, 3), b=normal(3)),
    case("z = matmul_grad_left(g, a, b)", consts={"a": normal(2, 3)}, g=normal(2, 4),
         b=normal(3, 4)),
    case("z = matmul_grad_left(g, a, b)", consts={"a": normal(2, 3)}, g=normal(2),
         b=normal(3)),
    case("z = matmul_grad_right(g, a, b)", consts={"b": normal(3, 4)}, g=normal(2, 4),
         a=normal(2, 3)),
    case("z = matmul_grad_right(g, a, b)", consts={"b": normal(3)}, g=normal(2),
         a=normal(2, 3)),
]


@pytest.mark.parametrize("program, inputs, consts", CASES)
def test_helper_tangent_matches_finite_differences(program, inputs, consts):
    check_jvp(program, inputs, consts)


@pytest.mark.parametrize("program, inputs, consts", CASES)
def test_helper_adjoint_matches_finite_differences(program, inputs, consts):
    check_vjp(program, inputs, consts)


def test_outer_or_matmul_tangent():
    check_jvp("z = outer_or_matmul(t, w)", {"t": normal(3), "w": normal(2)})
    check_jvp("z = outer_or_matmul(t, w)", {"t": normal(3, 2), "w": normal(4, 2)})


def test_batched_matrix_times_vectors_with_and_without_the_identity_basis():
    import numba

    from transformer.helper_rules import grad_right_of_batch, matmul_of_batch
    m, x = normal(3, 4), normal(5, 4)
    compiled = numba.njit(lambda m, x: matmul_of_batch(m, x))
    for batch in (x, np.eye(4), np.eye(4)[::-1].copy()):
        want = np.stack([m @ v for v in batch])
        np.testing.assert_allclose(matmul_of_batch(m, batch), want, rtol=1e-12)
        np.testing.assert_allclose(compiled(m, batch), want, rtol=1e-12)
    g, a = normal(5, 3), normal(3, 4)
    want = np.stack([runtime.matmul_grad_right(row, a, normal(4)) for row in g])
    np.testing.assert_allclose(grad_right_of_batch(g, a, normal(4)), want, rtol=1e-12)
    np.testing.assert_allclose(numba.njit(lambda g, a, b: grad_right_of_batch(g, a, b))(
        g, a, normal(4)), want, rtol=1e-12)
