"""One local Dask cluster for the distributed tests: two worker processes, one thread each.

Started by the first test that asks for it and closed at the end of the session; the
workers inherit the test environment (NUMBA_OPT, the private SECANT_CACHE_DIR) and the
parent's sys.path, so they load this checkout's secant. Tests skip when the `dask` extra
is not installed.
"""
import pytest


@pytest.fixture(scope="session")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1,
                                       dashboard_address=":0")
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()
