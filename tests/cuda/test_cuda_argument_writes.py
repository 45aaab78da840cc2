"""Which arguments a CUDA kernel writes is read path by path: a write that reaches the
caller's array on some path is copied back into it (and refused where every thread shares
the array: the writes would race); a name rebound to a new array on every path before
the write leaves the caller's array as it was, and is neither copied back nor refused.

The cases named `test_kernel_*` run kernels on Numba's CUDA simulator:
`test_argument_write_kernels_on_the_simulator` (slow) runs this file again with
NUMBA_ENABLE_CUDASIM=1, selecting only them. Their oracle is the function called in plain
Python on each element in turn, on copies of the arguments. The other tests build the
kernel's source, which needs numba-cuda but no GPU.
"""
import inspect
from pathlib import Path

import numpy as np
import pytest

from cuda_support import launches_simulator, needs_numba_cuda, on_simulator, run_on_simulator
from transformer import TransformError, jit, vmap



@pytest.mark.slow
@launches_simulator
def test_argument_write_kernels_on_the_simulator(tmp_path):
    run_on_simulator(tmp_path, "--runslow", "-k", "test_kernel_", str(Path(__file__)))


# ---------------------------------------------------------------- the functions

def rebound_in_both_branches(x, h, flag):
    if flag > 0.0:
        h = h.copy()
    else:
        h = h * 2.0
    h[0] = x
    return h[0] + h[2]


def rebound_through_an_alias(x, h):
    a = h
    a = a * 2.0
    a[0] = x
    return a[0] + a[1]


def copied_on_one_path(x, h, flag):
    if flag > 0.0:
        h = h.copy()
    h[0] = h[0] + x
    return h[0] * 2.0


def add_to_all(h, v):
    h += v


def adds_through_a_helper(x, h):
    add_to_all(h, x)
    return h[1] * 2.0


def rebinding_helper(h, v):
    if v > 100.0:
        h = h * 1.0
    else:
        h = h + 0.0
    h[1] = v
    return h[1] + h[2]


def calls_a_rebinding_helper(x, h):
    return rebinding_helper(h, x) + h[1]


def _inputs(shared: bool, n: int = 6):
    rng = np.random.default_rng(11)
    return rng.normal(size=n), rng.normal(size=3) if shared else rng.normal(size=(n, 3))


def _loop(f, args, in_axes):
    """(results, arguments afterwards) of `f` run on each element in turn, on copies."""
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    n = next(a.shape[0] for a, axis in zip(args, in_axes) if axis is not None)
    results = [f(*[a[k] if axis is not None else a for a, axis in zip(args, in_axes)])
               for k in range(n)]
    return np.array(results), args


def _assert_like_loop(f, args, in_axes):
    want, want_args = _loop(f, args, in_axes)
    got_args = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = jit(vmap(f, in_axes=in_axes), backend="cuda")(*got_args)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    for g, w in zip(got_args, want_args):
        np.testing.assert_allclose(g, w, rtol=1e-12)


REBOUND = {
    "both_branches": (rebound_in_both_branches, (1.0,), (None,)),
    "both_branches_else": (rebound_in_both_branches, (-1.0,), (None,)),
    "alias_rebound": (rebound_through_an_alias, (), ()),
    "helper_rebinds": (calls_a_rebinding_helper, (), ()),
}


# ---------------------------------------------------------------- kernel source

@needs_numba_cuda
@pytest.mark.every_case
@pytest.mark.parametrize("case", sorted(REBOUND))
def test_a_shared_argument_rebound_on_every_path_is_not_refused(case):
    f, extra, extra_axes = REBOUND[case]
    x, h = _inputs(shared=True)
    assert "def " in jit(vmap(f, in_axes=(0, None, *extra_axes)), backend="cuda").source(
        x, h, *extra)


@needs_numba_cuda
@pytest.mark.every_case
@pytest.mark.parametrize("f, extra, line", [
    (copied_on_one_path, (-1.0,), "h[0] = h[0] + x"),
    (adds_through_a_helper, (), "add_to_all(h, x)")])
def test_a_shared_argument_written_on_some_path_is_refused_at_the_write(f, extra, line):
    x, h = _inputs(shared=True)
    in_axes = (0, None) + (None,) * len(extra)
    with pytest.raises(TransformError, match="would race") as caught:
        jit(vmap(f, in_axes=in_axes), backend="cuda").source(x, h, *extra)
    lines, start = inspect.getsourcelines(f)
    assert caught.value.lineno == start + next(k for k, text in enumerate(lines) if line in text)


# ---------------------------------------------------------------- simulator

@on_simulator
@pytest.mark.parametrize("case", sorted(REBOUND))
@pytest.mark.parametrize("shared", [True, False])
def test_kernel_rebound_arguments_are_left_as_they_were(case, shared):
    f, extra, extra_axes = REBOUND[case]
    x, h = _inputs(shared)
    _assert_like_loop(f, (x, h, *extra), (0, None if shared else 0, *extra_axes))


@on_simulator
def test_kernel_a_write_on_some_path_reaches_the_callers_rows():
    x, h = _inputs(shared=False)
    flags = np.array([1.0, -1.0, -1.0, 1.0, -1.0, 1.0])
    _assert_like_loop(copied_on_one_path, (x, h, flags), (0, 0, 0))


@on_simulator
def test_kernel_a_helpers_augmented_write_reaches_the_callers_rows():
    x, h = _inputs(shared=False)
    _assert_like_loop(adds_through_a_helper, (x, h), (0, 0))
