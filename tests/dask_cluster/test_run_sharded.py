"""run_sharded: a jitted function run once per shard as Dask tasks, results in order.

The quick test runs one jitted vmap with a captured array on the two-worker cluster and
checks it against NumPy and the single-process call; the argument checks need no cluster.
"""
import numpy as np
import pytest

pytest.importorskip("distributed")

from transformer import jit, vmap  # noqa: E402
from transformer.distributed import run_sharded  # noqa: E402
from transformer.errors import TransformError  # noqa: E402

WEIGHTS = np.array([0.5, -1.0, 2.0, 0.25])


def weighted_sines(x):
    return np.sum(np.sin(x) * WEIGHTS)


def take_doubled(x, i):
    return x[i] * 2.0


def writes_argument(x):
    x[0] = 1.0
    return x.sum()


weighted_rows = jit(vmap(weighted_sines))


@pytest.mark.slow
def test_shards_equal_numpy_and_the_single_process_call(client):
    xs = np.random.default_rng(0).normal(size=(10, 4))
    shards = [(xs[:5],), (xs[5:],)]
    parts = run_sharded(weighted_rows, shards, client=client)
    assert len(parts) == 2
    np.testing.assert_allclose(np.concatenate(parts), np.sin(xs) @ WEIGHTS, rtol=1e-12)
    np.testing.assert_array_equal(np.concatenate(parts), weighted_rows(xs))


def test_mismatched_shard_shapes_name_the_argument():
    shards = [(np.ones(3), 1), (np.ones(4), 2)]
    with pytest.raises(ValueError, match=r"argument 'x' of take_doubled: shard 1 gives "
                                         r"shape \(4,\) float64, shard 0 gives shape \(3,\)"):
        run_sharded(jit(take_doubled), shards, client=None)


def test_mismatched_dtypes_and_argument_counts_are_refused():
    with pytest.raises(ValueError, match=r"argument 'x' .* shard 1 gives shape \(3,\) int64"):
        run_sharded(jit(take_doubled), [(np.ones(3), 1), (np.ones(3, np.int64), 2)])
    with pytest.raises(ValueError, match="shard 1 passes 3 arguments to take_doubled, "
                                         "shard 0 passes 2"):
        run_sharded(jit(take_doubled), [(np.ones(3), 1), (np.ones(3), 2, 3)])
    with pytest.raises(ValueError, match="at least one shard"):
        run_sharded(jit(take_doubled), [])


def test_shards_with_different_static_values_are_refused():
    scaled = jit(take_doubled, static_argnums=1)
    with pytest.raises(ValueError, match="shard 1 specializes take_doubled differently"):
        run_sharded(scaled, [(np.ones(3), 0), (np.ones(3), 2)])


def test_a_plain_function_is_refused_with_a_hint():
    with pytest.raises(TypeError, match=r"wrap it with jit\(\.\.\.\) first"):
        run_sharded(take_doubled, [(np.ones(3), 1)])


def test_writing_into_an_argument_is_refused_located():
    with pytest.raises(TransformError) as info:
        run_sharded(jit(writes_argument), [(np.ones(3),)], client=None)
    text = str(info.value)
    assert "test_run_sharded.py:" in text and "writes into its argument 'x'" in text
    assert "def writes_argument(x):" in text and "return the updated array" in text


@pytest.mark.slow
def test_warm_loads_the_module_on_every_worker_before_a_run(client):
    from codegen import distributed as engine
    from transformer.distributed import warm
    from transformer.jit import prepared

    xs = np.random.default_rng(4).normal(size=(6, 4))
    warm(weighted_rows, (xs[:3],), client)
    function = prepared(weighted_rows, (xs[:3],), {})[1]
    key = engine.spec_of(engine.backends.loaded_for(function)).key
    assert set(client.run(lambda: key in engine._loaded).values()) == {True}
    parts = run_sharded(weighted_rows, [(xs[:3],), (xs[3:],)], client=client)
    np.testing.assert_allclose(np.concatenate(parts), np.sin(xs) @ WEIGHTS, rtol=1e-12)
