"""pmap(backend="cuda") on Numba's CUDA simulator; started by test_pmap_cuda.py in a process
of its own (the simulator must be on before numba is imported). One shard per GPU: the
simulator has one. Oracle: vmap with the same axis_name, as plain Python."""
import numba
import numpy as np
import pytest

import transformer
from transformer import axis_index, pmap, psum, vmap

pytestmark = pytest.mark.skipif(not numba.config.ENABLE_CUDASIM,
                                reason="needs NUMBA_ENABLE_CUDASIM=1 before numba is imported")


def scaled(x, c):
    s = np.sin(x) * c
    return s / psum(np.sum(s), "i") + axis_index("i")


def test_one_shard_per_gpu_with_a_collective_between_kernels():
    assert [d.platform for d in transformer.devices("cuda")] == ["cuda"]
    x = np.array([[0.5, 1.0, 1.5]])
    got = pmap(scaled, "i", in_axes=(0, None), backend="cuda")(x, 2.0)
    want = vmap(scaled, in_axes=(0, None), axis_name="i")(x, 2.0)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_more_shards_than_gpus_is_refused():
    with pytest.raises(ValueError, match="size 2 but only 1 cuda devices"):
        pmap(scaled, "i", in_axes=(0, None), backend="cuda")(np.ones((2, 3)), 2.0)
