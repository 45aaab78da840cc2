"""pmap(..., backend="dask"): the stages of a pmapped function run as tasks on the
two-worker cluster and give what the thread backend gives (collectives, grad inside),
a shard's error comes back located, and the mapped axis may not exceed the workers."""
import numpy as np
import pytest

pytest.importorskip("distributed")

from transformer import grad, pmap, pmean, psum, vmap  # noqa: E402


def normalized(x):
    return x / psum(np.sum(x), "i")


def loss(w, x):
    return np.sum((x @ w) ** 2)


def averaged_gradient(w, x):
    return pmean(grad(loss)(w, x), "i")


def take(x, k):
    return x[k]


@pytest.mark.slow
def test_psum_over_the_cluster_equals_threads_and_numpy(client):
    xs = np.random.default_rng(1).uniform(1.0, 2.0, size=(2, 5))
    on_dask = pmap(normalized, "i", backend="dask", client=client)
    got = on_dask(xs)
    np.testing.assert_allclose(got, xs / xs.sum(), rtol=1e-14)
    np.testing.assert_array_equal(got, pmap(normalized, "i")(xs))
    assert len(on_dask.devices()) == 2                  # one per worker thread


@pytest.mark.slow
def test_pmean_of_gradients_on_the_cluster(client):
    rng = np.random.default_rng(2)
    w, xs = rng.normal(size=3), rng.normal(size=(2, 4, 3))
    got = pmap(averaged_gradient, "i", in_axes=(None, 0), client=client)(w, xs)
    want = np.mean([2 * x.T @ (x @ w) for x in xs], axis=0)
    np.testing.assert_allclose(got, np.stack([want, want]), rtol=1e-12)


@pytest.mark.slow
def test_a_shards_error_is_located_and_the_axis_is_bounded(client):
    bad = pmap(take, "i", in_axes=(0, None), client=client)
    with pytest.raises(IndexError, match=r"test_pmap_dask\.py:\d+"):
        bad(np.ones((2, 3)), 7)
    with pytest.raises(ValueError, match="only 2 dask devices"):
        pmap(normalized, "i", client=client)(np.ones((3, 2)))


def test_client_names_the_dask_backend():
    with pytest.raises(ValueError, match="client= is for backend='dask'"):
        pmap(normalized, "i", backend="cpu", client=object())


def example_loss(w, b, x):
    return np.sum(np.tanh(w @ x + b) ** 2)


def batch_gradient(w, b, xs):
    gw, gb = vmap(grad(example_loss, argnums=(0, 1)), in_axes=(None, None, 0))(w, b, xs)
    return psum(np.sum(gw, axis=0), "i"), psum(np.sum(gb, axis=0), "i")


@pytest.mark.slow
def test_per_example_gradients_compile_on_the_workers(client):
    # vmap(grad) of a broadcasting loss calls helpers made at run time (unbroadcast of
    # each example): the workers must make them again, not unpickle them without their
    # Numba overloads
    rng = np.random.default_rng(3)
    w, b, xs = rng.normal(size=(3, 4)), rng.normal(size=3), rng.normal(size=(2, 5, 4))
    gw, gb = pmap(batch_gradient, "i", in_axes=(None, None, 0), out_axes=None,
                  client=client)(w, b, xs)
    flat = xs.reshape(-1, 4)
    h = np.tanh(flat @ w.T + b)
    dz = 2 * h * (1 - h ** 2)
    np.testing.assert_allclose(gw, dz.T @ flat, rtol=1e-12)
    np.testing.assert_allclose(gb, dz.sum(axis=0), rtol=1e-12)


def test_helpers_made_at_run_time_travel_as_their_recipe():
    import cloudpickle

    from codegen import distributed as engine
    from transformer.runtime.broadcasting import unbroadcast
    from transformer.runtime.examples import over_examples

    made = over_examples(unbroadcast, (True, False))
    shipped = cloudpickle.loads(cloudpickle.dumps(engine._shippable(made)))
    assert isinstance(shipped, engine.Rebuilt)
    assert engine._made(shipped) is made        # this process: the same function
