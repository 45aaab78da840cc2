"""An `out_axes` outside the rank of a batched result is refused, as JAX refuses it, in
plain vmap and under jit (where it used to wrap around silently: out_axes=2 of a rank-2
result gave axis 0), for both strategies."""
import numpy as np
import pytest

from transformer import jit, vmap
from transformer.errors import TransformError


def doubled(x):
    return x * 2.0


def branchy(x):
    if x[0] > 0.0:                  # a batched `if`: the loop strategy
        return np.sum(x), x * 2.0
    return np.sum(x) - 1.0, x


X = np.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize("fn, out_axes, message", [
    (doubled, 2, "out_axes 2 is out of range for a result of rank 2"),
    (doubled, -3, "out_axes -3 is out of range for a result of rank 2"),
    (branchy, (1, 0), "out_axes 1 is out of range for a result of rank 1"),
])
def test_an_out_axes_past_the_result_rank_is_refused(fn, out_axes, message):
    with pytest.raises(ValueError, match=message):
        vmap(fn, out_axes=out_axes)(X)
    with pytest.raises(TransformError, match=message) as info:
        jit(vmap(fn, out_axes=out_axes))(X)
    assert "test_vmap_out_axes_range.py" in str(info.value)


def test_negative_out_axes_within_the_rank_still_work():
    np.testing.assert_array_equal(jit(vmap(doubled, out_axes=-1))(X), (X * 2.0).T)
    got = jit(vmap(branchy, out_axes=(-1, 1)))(X)
    np.testing.assert_array_equal(got[1], np.stack([branchy(x)[1] for x in X], axis=1))
