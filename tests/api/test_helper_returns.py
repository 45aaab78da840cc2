"""A helper returning a dict or a nested tuple (`return loss, {"mse": m}`), read by its
caller with constant keys, under every transformation: against finite differences and
the plain run. Reads the rewrite cannot follow leave the function as written."""
from __future__ import annotations

import numpy as np
import pytest

from transformer import grad, hessian, jit, jvp, value_and_grad, vmap


def stats(x):
    total = np.sum(x ** 2)
    return {"loss": total, "parts": (np.sin(x[0]), x[1] * total)}


def step(x):
    s = np.tanh(x)
    return np.sum(s), {"s": s, "top": np.max(s)}


def pair_of_lists(x):
    return [x[0] * x[1], np.cos(x[2])], x[1]


def uses_every_read(x):
    r = stats(x)
    loss, aux = step(x)
    a, b = r["parts"]
    (c, d), e = pair_of_lists(x)
    return r["loss"] + a * b + loss * aux["top"] + np.sum(aux["s"] ** 2) + \
        stats(2.0 * x)["parts"][1] + c * d - e


def returns_it_whole(x):
    r = stats(x)
    return r


def _differences(f, x, eps=1e-6):
    return np.array([(f(x + eps * d) - f(x - eps * d)) / (2 * eps) for d in np.eye(len(x))])


X = np.array([0.3, -0.7, 1.1])


@pytest.mark.slow
def test_grad_and_jit_grad_match_finite_differences():
    want = _differences(uses_every_read, X)
    np.testing.assert_allclose(grad(uses_every_read)(X), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(jit(grad(uses_every_read))(X), want, rtol=1e-6, atol=1e-8)
    assert jit(uses_every_read)(X) == pytest.approx(uses_every_read(X), rel=1e-13)


@pytest.mark.slow
def test_jvp_vmap_and_hessian():
    tangent = np.array([1.0, -0.5, 0.25])
    slope = (uses_every_read(X + 1e-6 * tangent) - uses_every_read(X - 1e-6 * tangent)) / 2e-6
    assert jvp(uses_every_read, (X,), (tangent,))[1] == pytest.approx(slope, rel=1e-6)
    xs = np.stack([X, 2.0 * X, -X])
    np.testing.assert_allclose(vmap(uses_every_read)(xs), [uses_every_read(x) for x in xs],
                               rtol=1e-13)
    rows = [_differences(lambda v, i=i: grad(uses_every_read)(v)[i], X) for i in range(3)]
    np.testing.assert_allclose(hessian(uses_every_read)(X), np.array(rows), rtol=1e-5,
                               atol=1e-7)


def test_value_and_grad_with_an_aux_dict_from_a_helper():
    def loss(x):
        value, aux = step(x)
        return value, {"top": aux["top"]}

    (value, aux), g = value_and_grad(loss, has_aux=True)(X)
    assert value == pytest.approx(np.sum(np.tanh(X)))
    assert aux["top"] == pytest.approx(np.max(np.tanh(X)))
    np.testing.assert_allclose(g, 1.0 - np.tanh(X) ** 2, rtol=1e-12)


def test_jit_returns_a_helpers_dict_whole():
    got = jit(returns_it_whole)(X)
    want = stats(X)
    assert got["loss"] == pytest.approx(want["loss"])
    assert isinstance(got["parts"], tuple)
    np.testing.assert_allclose(got["parts"], want["parts"])
