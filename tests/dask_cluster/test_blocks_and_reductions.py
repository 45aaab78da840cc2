"""map_blocks over a dask.array's chunks, and the psum/pmean/pmax/pmin/all_gather
reductions, here and on the cluster; a jitted grad with a dict of parameters per shard."""
import numpy as np
import pytest

pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from transformer import grad, jit, vmap  # noqa: E402
from transformer.distributed import compute, map_blocks, reduce, run_sharded  # noqa: E402

SCALE = np.array([1.0, 2.0, -0.5])


def row_features(x):
    return np.tanh(x) * SCALE


def loss(params, x, y):
    pred = x @ params["w"] + params["b"]
    return np.sum((pred - y) ** 2)


PARTS = [np.array([1.0, -2.0, 3.5]), np.array([0.5, 4.0, -1.0]), np.array([2.0, 2.0, 9.0])]
EXPECTED = {"psum": PARTS[0] + PARTS[1] + PARTS[2],
            "pmean": (PARTS[0] + PARTS[1] + PARTS[2]) / 3,
            "pmax": np.max(PARTS, axis=0), "pmin": np.min(PARTS, axis=0),
            "all_gather": np.stack(PARTS)}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
@pytest.mark.every_case
def test_reductions_of_arrays_here_equal_numpy(kind):
    np.testing.assert_allclose(reduce(kind, PARTS), EXPECTED[kind], rtol=1e-15)


def test_reductions_of_containers_and_unknown_kinds():
    parts = [{"a": p, "b": (p[0],)} for p in PARTS]
    total = reduce("psum", parts)
    np.testing.assert_allclose(total["a"], EXPECTED["psum"], rtol=1e-15)
    assert total["b"] == (sum(p[0] for p in PARTS),)
    with pytest.raises(ValueError, match="unknown reduction 'psumm'"):
        reduce("psumm", PARTS)
    with pytest.raises(ValueError, match="psum of no parts"):
        reduce("psum", [])


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(EXPECTED))
@pytest.mark.every_case
def test_reductions_of_futures_run_on_the_cluster(client, kind):
    futures = [client.scatter(p, hash=False) for p in PARTS]   # fresh keys per case
    result = reduce(kind, futures, client=client)
    np.testing.assert_allclose(result.result(), EXPECTED[kind], rtol=1e-15)


@pytest.mark.slow
def test_map_blocks_over_uneven_chunks_equals_numpy(client):
    x = np.random.default_rng(2).normal(size=(11, 3))
    darray = da.from_array(x, chunks=((4, 4, 3), (2, 1)))
    mapped = map_blocks(jit(vmap(row_features)), darray)
    assert mapped.shape == (11, 3) and mapped.dtype == np.float64
    np.testing.assert_allclose(compute(mapped, client=client), np.tanh(x) * SCALE,
                               rtol=1e-15)


@pytest.mark.slow
def test_map_blocks_refuses_arrays_in_memory_and_plain_functions():
    with pytest.raises(TypeError, match="use run_sharded for arrays in memory"):
        map_blocks(jit(vmap(row_features)), np.ones((4, 3)))
    with pytest.raises(TypeError, match="wrap it with jit"):
        map_blocks(vmap(row_features), da.ones((4, 3)))


@pytest.mark.slow
def test_per_shard_gradients_with_dict_parameters_and_their_pmean(client):
    rng = np.random.default_rng(3)
    params = {"w": rng.normal(size=3), "b": np.array(0.5)}
    x, y = rng.normal(size=(8, 3)), rng.normal(size=8)
    shards = [(params, x[:4], y[:4]), (params, x[4:], y[4:])]
    grads = run_sharded(jit(grad(loss)), shards, client=client)
    for (p, xs, ys), g in zip(shards, grads):
        residual = xs @ p["w"] + p["b"] - ys
        np.testing.assert_allclose(g["w"], 2 * xs.T @ residual, rtol=1e-12)
        np.testing.assert_allclose(g["b"], 2 * residual.sum(), rtol=1e-12)
    mean = reduce("pmean", grads)
    residual = x @ params["w"] + params["b"] - y
    np.testing.assert_allclose(mean["w"], x.T @ residual, rtol=1e-12)
