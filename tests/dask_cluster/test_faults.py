"""Faults on a Dask cluster: a worker killed mid-run, and a shard that raises."""
import os
import signal
import threading
import time

import numpy as np
import pytest

pytest.importorskip("distributed")

from transformer import jit  # noqa: E402
from transformer.distributed import run_sharded  # noqa: E402


def long_sum(x, n):
    total = 0.0
    for i in range(n):
        total += np.sin(x[i % x.shape[0]] + 1e-7 * i)
    return total


def take_doubled(x, i):
    return x[i] * 2.0


def positive_log(x):
    if x[0] <= 0.0:
        raise ValueError("positive_log needs a positive first entry")
    return np.log(x[0])


long_sum_jit = jit(long_sum)
positive_log_jit = jit(positive_log)
take_doubled_jit = jit(take_doubled)


def _kill_a_busy_worker(client, deadline: float) -> bool:
    """SIGKILL one worker process while it runs a shard task; whether one was killed."""
    pids = client.run(os.getpid)
    while time.monotonic() < deadline:
        busy = [addr for addr, keys in client.processing().items()
                if any("shard" in str(k) for k in keys)]
        if busy:
            time.sleep(0.3)         # into the task: loading, compiling or running
            os.kill(pids[busy[0]], signal.SIGKILL)
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow
def test_a_worker_killed_mid_run_still_gives_every_shard(client):
    rng = np.random.default_rng(1)
    n = 3_000_000
    shards = [(rng.normal(size=7), n) for _ in range(4)]
    killed = []
    killer = threading.Thread(target=lambda: killed.append(
        _kill_a_busy_worker(client, time.monotonic() + 120)))
    killer.start()
    parts = run_sharded(long_sum_jit, shards, client=client, retries=2)
    killer.join()
    assert killed == [True]
    assert parts == [long_sum_jit(*args) for args in shards]
    x = shards[0][0]
    reference = np.sum(np.sin(x[np.arange(n) % 7] + 1e-7 * np.arange(n)))
    np.testing.assert_allclose(parts[0], reference, rtol=1e-9)
    client.wait_for_workers(2, timeout=120)


@pytest.mark.slow
def test_a_shard_that_raises_brings_back_the_users_error(client):
    shards = [(np.array([2.0]),), (np.array([-1.0]),), (np.array([3.0]),)]
    with pytest.raises(ValueError, match="^positive_log needs a positive first entry$"):
        run_sharded(positive_log_jit, shards, client=client)
    good = run_sharded(positive_log_jit, [shards[0], shards[2]], client=client)
    np.testing.assert_allclose(good, np.log([2.0, 3.0]), rtol=1e-15)


@pytest.mark.slow
def test_a_failed_index_check_on_a_worker_is_located_at_the_users_line(client):
    # One shard, so one worker compiles take_doubled: a process that loads a function
    # with a failed index check from secant's disk cache raises Numba's "Error creating
    # Python tuple from runtime exception arguments" instead (a cache bug, open).
    with pytest.raises(IndexError) as info:
        run_sharded(take_doubled_jit, [(np.arange(4.0), 9)], client=client)
    line = take_doubled.__code__.co_firstlineno + 1
    assert str(info.value) == (f"{__file__}:{line}:12: index 9 is out of bounds for axis 0 "
                               "with size 4\n        return x[i] * 2.0\n               ^")
