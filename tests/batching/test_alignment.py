"""vmap's operand alignment in compiled code (`transformer/runtime/alignment.py`): `align`
and `align_batched` typed and lowered as views, against their NumPy form, for every layout
a batched operand arrives in; and the inlined forms a `parallel=True` function binds."""
from __future__ import annotations

import numba
import numpy as np
import pytest

from transformer import jit, source, vmap
from transformer.runtime.alignment import _pad, align, align_batched


@numba.njit
def _aligned(x, ref):
    return align(x, ref)


@numba.njit
def _aligned_batched(x, ref):
    return align_batched(x, ref)


@numba.njit
def _difference(x, ref):            # the form batched code writes: one array expression
    return align_batched(x, ref) - align_batched(ref, x)


def _operands():
    rng = np.random.default_rng(0)
    c = rng.normal(size=(4, 3, 2))
    yield "C", c
    yield "F", np.asfortranarray(c)
    yield "strided", c[::2, :, ::-1]
    yield "transposed", rng.normal(size=(3, 4)).T
    yield "vector", rng.normal(size=5)
    yield "empty batch", np.zeros((0, 3))
    readonly = c.copy()
    readonly.flags.writeable = False
    yield "read-only", readonly


OPERANDS = list(_operands())


@pytest.mark.parametrize("name, x", OPERANDS, ids=[name for name, _ in OPERANDS])
@pytest.mark.parametrize("ref_rank", [0, 1, 2, 3, 4])
def test_padding_matches_numpy(name, x, ref_rank):
    ref = np.ones((2,) * ref_rank)
    for compiled, rank in ((_aligned, ref_rank), (_aligned_batched, ref_rank - 1)):
        want = _pad(x, rank)
        got = compiled(x, ref)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)
        # a view of x, as NumPy's reshape of it; never a copy
        assert np.shares_memory(got, x) or x.size == 0


def test_padded_c_array_is_c_ordered_and_writes_through():
    x = np.arange(12.0).reshape(4, 3)
    got = _aligned_batched(x, np.ones((4, 2, 2, 3)))
    assert got.shape == (4, 1, 1, 3) and got.flags.c_contiguous
    assert got.strides == np.ascontiguousarray(got).strides
    got[2, 0, 0, 1] = -1.0
    assert x[2, 1] == -1.0


@pytest.mark.parametrize("name, x", OPERANDS[:4], ids=[name for name, _ in OPERANDS[:4]])
def test_example_by_example_difference(name, x):
    ref = np.random.default_rng(1).normal(size=(x.shape[0], 5) + x.shape[1:])
    np.testing.assert_allclose(_difference(x, ref), x[:, None] - ref)


def test_a_number_is_not_padded():
    with pytest.raises(numba.core.errors.TypingError):
        _aligned(1.0, np.ones(3))


def _centered(row):
    return row - np.max(row)


@pytest.mark.parametrize("parallel", [False, True])
def test_parallel_functions_bind_the_inlined_forms(parallel):
    batched = jit(vmap(_centered), parallel=parallel)
    x = np.random.default_rng(2).normal(size=(64, 7))
    np.testing.assert_allclose(batched(x), x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(batched(np.asfortranarray(x)), x - x.max(axis=1, keepdims=True))
    text = source(batched)
    assert "align_batched" in text
    assert ("align_batched_for_parfors" in text) == parallel


@numba.njit
def _uses_alignments(x, ref):
    return (align_batched(x, ref) - ref).sum() + align(x, ref[0]).sum() + \
        align_batched(ref, x).sum()


def test_views_keep_reference_counts():
    """Each view takes a reference to its array's memory and gives it back: as many
    frees as allocations over many calls (a missing one leaks, an extra one frees early)."""
    from numba.core.runtime import _nrt_python, rtsys
    x, ref = np.ones((4, 3)), np.ones((4, 2, 3))
    forms = (x, np.asfortranarray(x), x[:, ::-1])
    for form in forms:
        _uses_alignments(form, ref)
    was_enabled = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        for _ in range(200):
            for form in forms:
                assert _uses_alignments(form, ref) == 0.0 + 12.0 + 24.0
        after = rtsys.get_allocation_stats()
    finally:
        if not was_enabled:
            _nrt_python.memsys_disable_stats()
    assert after.alloc - before.alloc == after.free - before.free > 0
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
