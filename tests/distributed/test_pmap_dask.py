"""pmap(..., backend="dask"): the stages of a pmapped function run as tasks on the
two-worker cluster and give what the thread backend gives (collectives, grad inside),
a shard's error comes back located, and the mapped axis may not exceed the workers."""
import numpy as np
import pytest

pytest.importorskip("distributed")

from transformer import grad, pmap, psum, pmean  # noqa: E402


def normalized(x):
    return x / psum(np.sum(x), "i")


def loss(w, x):
    return np.sum((x @ w) ** 2)


def averaged_gradient(w, x):
    return pmean(grad(loss)(w, x), "i")


def take(x, k):
    return x[k]


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
