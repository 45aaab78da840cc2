"""pmap composed with grad, vmap and jit, ppermute, nested collectives, and a failing shard.
Oracles: vmap with the same axis_name (identical semantics), the gradient of the whole
batch on one device, NumPy. Every test compiles stages of its own: all are slow."""
import numpy as np
import pytest

import pmap_programs as P
import transformer
from transformer import grad, pmap, vmap

N = 2
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(len(transformer.devices()) < N,
                                 reason=f"pmap maps one slice per core: needs {N} cores")]
rng = np.random.default_rng(1)
W, B = rng.normal(size=(3, 4)), rng.normal(size=4)
XS, YS = rng.normal(size=(N, 5, 3)), rng.normal(size=(N, 5))
DATA = (None, None, 0, 0)


def test_data_parallel_gradient_equals_the_whole_batch_gradient():
    gw, gb = pmap(P.data_parallel_grad, "i", in_axes=DATA)(W, B, XS, YS)
    whole = grad(P.loss, argnums=(0, 1))(W, B, XS.reshape(-1, 3), YS.reshape(-1))
    oracle = vmap(P.data_parallel_grad, in_axes=DATA, axis_name="i")(W, B, XS, YS)
    for got, want, same in zip((gw, gb), whole, oracle):
        assert got.shape == (N,) + want.shape           # every device holds the mean
        np.testing.assert_allclose(got, same, rtol=1e-12)
        np.testing.assert_allclose(got[0], want, rtol=1e-12)
        np.testing.assert_array_equal(got[0], got[1])


def test_pmap_of_grad_and_of_vmap_of_grad_equal_vmap():
    per_device = pmap(grad(P.loss), in_axes=DATA)(W, B, XS, YS)
    np.testing.assert_allclose(per_device, vmap(grad(P.loss), in_axes=DATA)(W, B, XS, YS),
                               rtol=1e-12)
    inner = vmap(grad(P.per_example_loss), in_axes=DATA)
    per_example = pmap(inner, in_axes=DATA)(W, B, XS, YS)
    assert per_example.shape == (N, 5, 3, 4)
    np.testing.assert_allclose(per_example, vmap(inner, in_axes=DATA)(W, B, XS, YS),
                               rtol=1e-12)


def test_ppermute_sends_each_shard_along_the_ring():
    x = rng.normal(size=(N, 4))
    np.testing.assert_array_equal(pmap(P.ring_shift, "i")(x), 2.0 * x[[1, 0]])


def test_nested_collectives_and_a_top_level_test_equal_vmap():
    x = rng.normal(size=(N, 3))
    want = vmap(P.nested, axis_name="i")(x)
    np.testing.assert_allclose(pmap(P.nested, "i")(x), want, rtol=1e-12)
    np.testing.assert_allclose(pmap(P.nested, "i")(-x), vmap(P.nested, axis_name="i")(-x),
                               rtol=1e-12)


def test_out_axes_and_a_failing_shard():
    x = rng.normal(size=(N, 4))
    f = pmap(P.out_of_bounds, "i", in_axes=(0, None), out_axes=None)
    assert f(x, 2) == x[0, 2]                   # out_axes=None: shard 0's value
    with pytest.raises(IndexError, match="pmap_programs.py"):
        f(x, 3)                                 # shard 1 reads x[4] of a length-4 slice


def test_static_broadcast_argument_and_a_dict_argument_equal_vmap():
    x = rng.normal(size=(N, 3))
    got = pmap(P.powers, "i", static_broadcasted_argnums=1)(x, 3)
    np.testing.assert_allclose(got, vmap(P.powers, in_axes=(0, None), axis_name="i")(x, 3),
                               rtol=1e-12)
    p = {"a": rng.normal(size=(N, 3)), "b": np.arange(float(N))}
    np.testing.assert_allclose(pmap(P.scaled_by_tree, "i")(p, x),
                               vmap(P.scaled_by_tree, axis_name="i")(p, x), rtol=1e-12)


def test_writes_into_an_unmapped_argument_stay_on_each_device():
    x = rng.normal(size=(N, 3))
    acc = np.array([1.0])
    got = pmap(P.accumulate, in_axes=(0, None))(x, acc)
    np.testing.assert_allclose(got, 1.0 + x.sum(axis=1), rtol=1e-12)
    assert acc[0] == 1.0                        # the caller's array is left as it was


def test_a_default_is_unmapped_and_a_keyword_argument_is_mapped_as_in_jax():
    x, c = rng.normal(size=(N, 3)), rng.normal(size=N)
    np.testing.assert_allclose(pmap(P.with_default, "i", in_axes=(0,))(x),
                               x * 2.0 + x.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(pmap(P.with_default, "i")(x, c=c),
                               x * c[:, None] + x.sum(axis=0), rtol=1e-12)
