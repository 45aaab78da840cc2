"""shard_map over a one-dimensional Mesh: each device gets a block (not a slice), the
collectives reduce over the mesh axis, out_specs concatenate or replicate, uneven blocks
are refused naming the argument. Oracle: NumPy on the whole array."""
import numpy as np
import pytest

import pmap_programs as P
import transformer
from transformer import Mesh, shard_map
from transformer.pmap import P as Spec, Device

N = 2
needs_cores = pytest.mark.skipif(len(transformer.devices()) < N,
                                 reason=f"shard_map runs one block per core: needs {N} cores")
X = np.random.default_rng(2).normal(size=(6, 3))


@needs_cores
def test_blocks_see_the_total_over_every_block():
    mesh = Mesh(transformer.devices()[:N], ("i",))
    got = shard_map(P.block_normalize, mesh, in_specs=(Spec("i"),), out_specs=Spec("i"))(X)
    np.testing.assert_allclose(got, X / X.sum(), rtol=1e-12)


def test_uneven_blocks_name_the_argument():
    mesh = Mesh([Device(0, "cpu"), Device(1, "cpu")], "i")
    normalize = shard_map(P.block_normalize, mesh, in_specs=Spec(None, "i"),
                          out_specs=Spec(None, "i"))
    with pytest.raises(ValueError, match=r"argument 'x' of shape \(6, 3\) along dimension 1 "
                                         r"into 2 equal blocks"):
        normalize(X)


def test_a_spec_naming_another_axis_is_refused():
    mesh = Mesh([Device(0, "cpu"), Device(1, "cpu")], "i")
    with pytest.raises(ValueError, match="the mesh's only axis is 'i'"):
        shard_map(P.block_normalize, mesh, in_specs=Spec("j"), out_specs=Spec("i"))(X)
    with pytest.raises(ValueError, match="one-dimensional"):
        Mesh([Device(0, "cpu")], ("i", "j"))
    with pytest.raises(ValueError, match="names a device twice"):
        Mesh([Device(0, "cpu"), Device(0, "cpu")], "i")


@pytest.mark.slow
@needs_cores
def test_replicated_outputs_and_gathered_blocks():
    mesh = Mesh(transformer.devices()[:N], "i")
    w = np.arange(3.0)
    total, gathered = shard_map(P.block_stats, mesh, in_specs=(Spec("i"), Spec()),
                                out_specs=(Spec(), Spec("i")))(X, w)
    np.testing.assert_allclose(total, np.sum(X @ w), rtol=1e-12)
    blocks = (X @ w).reshape(N, -1)
    np.testing.assert_allclose(gathered, np.concatenate([blocks] * N), rtol=1e-12)
