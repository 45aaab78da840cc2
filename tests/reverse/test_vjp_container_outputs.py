"""vjp of a function returning nested tuples, lists or dicts: the cotangent is structured
like the output, as in JAX, and pulled back leaf by leaf; checked against the cotangents
written out by hand (and JAX's where it is installed)."""
from __future__ import annotations

import numpy as np
import pytest

from transformer import vjp

try:
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
except ImportError:                                     # pragma: no cover
    jax = None

X = np.linspace(0.1, 0.9, 4)
Y = X[::-1].copy()


def nested(x):
    return x * 3.0, (np.sin(x), x * 2.0)


def as_dict(x, y):
    return {"b": np.sin(x) * y, "a": [x * y, np.sum(x)]}


def test_a_nested_tuple_output():
    out, pull = vjp(nested, X)
    np.testing.assert_allclose(out[1][0], np.sin(X))
    (g,) = pull((Y, (X, 2.0 * Y)))
    np.testing.assert_allclose(g, 3.0 * Y + np.cos(X) * X + 4.0 * Y, rtol=1e-12)


def test_a_dict_output_with_a_list_inside():
    out, pull = vjp(as_dict, X, Y)
    assert set(out) == {"a", "b"} and isinstance(out["a"], list)
    gx, gy = pull({"b": X, "a": [Y, 2.0]})
    np.testing.assert_allclose(gx, np.cos(X) * Y * X + Y * Y + 2.0, rtol=1e-12)
    np.testing.assert_allclose(gy, np.sin(X) * X + X * Y, rtol=1e-12)


def test_a_cotangent_of_another_structure_is_refused():
    _, pull = vjp(as_dict, X, Y)
    with pytest.raises(ValueError, match="cotangent is structured"):
        pull({"b": X})


@pytest.mark.skipif(jax is None, reason="JAX is not installed")
def test_matches_jax():
    ct = {"b": X, "a": [Y, 2.0]}
    ours = vjp(as_dict, X, Y)[1](ct)
    theirs = jax.vjp(lambda x, y: {"b": jnp.sin(x) * y, "a": [x * y, jnp.sum(x)]},
                     X, Y)[1](ct)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12)
