"""Threads sharing a jitted function: concurrent first calls compile once, all succeed."""
import threading

import numpy as np
import pytest

from gradcheck import assert_gradient_close, central_differences
from transformer import grad, jit

THREADS = 8


def helper(x):
    return np.sin(x) * x


def energy(x):
    return np.sum(helper(x) ** 2)


def double_energy(x):
    return 2.0 * energy(x)


def first_calls_at_once(function, *args):
    """Call `function(*args)` from THREADS threads released together; results and errors."""
    barrier = threading.Barrier(THREADS)
    results, errors = [None] * THREADS, []

    def call(i):
        barrier.wait()
        try:
            results[i] = function(*args)
        except Exception as exc:         # collected: every thread must succeed
            errors.append(exc)
    threads = [threading.Thread(target=call, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(thread.is_alive() for thread in threads), "a thread is stuck"
    return results, errors


@pytest.mark.parametrize("backend", ["python", "cpu"])
def test_concurrent_first_calls_of_a_gradient_compile_once(backend):
    x = np.linspace(0.1, 1.2, 5)
    expected = central_differences(energy, (x,), 0)
    for _ in range(3 if backend == "python" else 1):
        gradient = jit(grad(energy), backend=backend)
        results, errors = first_calls_at_once(gradient, x)
        assert errors == []
        for result in results:
            assert_gradient_close(result, expected)
        info = gradient.cache_info()
        assert (info.misses, info.specializations) == (1, 1)     # compiled once


def test_different_functions_sharing_a_helper_compile_at_once():
    x = np.linspace(0.1, 1.2, 4)
    gradients = [jit(grad(f), backend="python") for f in (energy, double_energy)]
    barrier = threading.Barrier(2)
    results, errors = {}, []

    def call(k):
        barrier.wait()
        try:
            results[k] = gradients[k](x)
        except Exception as exc:
            errors.append(exc)
    threads = [threading.Thread(target=call, args=(k,)) for k in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert errors == []
    expected = central_differences(energy, (x,), 0)
    assert_gradient_close(results[0], expected)
    assert_gradient_close(results[1], 2 * expected)
