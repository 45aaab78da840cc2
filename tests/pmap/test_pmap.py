"""pmap over CPU worker threads: collectives between compiled stages with JAX's semantics
(the oracle: vmap with the same axis_name, run as plain Python), the stage listing, the
devices, and every refusal located at the user's line. One pmapped function is compiled."""
import os
import re

import numpy as np
import pytest

import pmap_programs as P
import transformer
from codegen import cli
from transformer import TransformError, jit, pmap, show_pmap, vmap
from transformer.pmap import Device

N = 2                                   # shards: at most one per core
needs_cores = pytest.mark.skipif(len(transformer.devices()) < N,
                                 reason=f"pmap maps one slice per core: needs {N} cores")
X = np.random.default_rng(0).normal(size=(N, 3))


@pytest.fixture(scope="module")
def collectives_pmapped():
    return pmap(P.every_collective, "i", in_axes=(0, None))


@pytest.mark.slow
@needs_cores
def test_every_collective_equals_vmap_with_the_same_axis_name(collectives_pmapped):
    got = collectives_pmapped(X, 1.5)
    want = vmap(P.every_collective, in_axes=(0, None), axis_name="i")(X, 1.5)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    np.testing.assert_allclose(got[1], np.broadcast_to(X / (np.sum(X * X) + 1.5),
                                                       (N, N, 3)), rtol=1e-12)


@needs_cores
def test_jit_of_pmap_is_the_pmap_and_vmap_of_pmap_is_refused(collectives_pmapped):
    assert jit(collectives_pmapped) is collectives_pmapped
    with pytest.raises(TransformError, match="cannot be transformed") as info:
        vmap(collectives_pmapped, in_axes=(0, None))(X[None], 1.5)
    assert "pmap(vmap(f))" in str(info.value)


def test_show_pmap_lists_the_stages_and_the_reductions_between_them():
    text = show_pmap(P.every_collective, X, 1.5, axis_name="i", in_axes=(0, None))
    assert text.count("# ==== pmap stage") == 3
    assert "psum_out_1 = psum(psum_in_1)" in text
    assert "all_gather_out_5 = all_gather(all_gather_in_5)" in text
    assert "def every_collective_stage3(" in text
    assert "pmap_axis_index" in text and "@numba.njit(nogil=True, no_cfunc_wrapper=True)" in text


def test_devices_are_the_cores_of_this_process():
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else os.cpu_count()
    assert [d.id for d in transformer.devices()] == list(range(cores))
    assert {d.platform for d in transformer.devices("cpu")} == {"cpu"}
    assert all(d.platform == "cuda" for d in transformer.devices("cuda"))


@pytest.mark.every_case
@pytest.mark.parametrize("fun, message, line", [
    (P.collective_in_loop, "psum(..., 'i') inside a for loop", "x = psum(x, \"i\")"),
    (P.collective_in_branch, "pmean(..., 'i') inside an if", "x = pmean(x, \"i\")"),
    (P.return_before_collective, "return before a collective", "return x"),
    (P.other_axis, "psum names the axis 'j'", "return psum(x, \"j\")"),
    (P.perm_out_of_range, "destination outside range(2)", "ppermute(x, \"i\", [(0, 5)])"),
    (P.collective_in_helper, "sum_over_devices calls psum(..., 'i')",
     "return sum_over_devices(x) * 2.0"),
], ids=["loop", "branch", "early-return", "other-axis", "perm", "helper"])
def test_a_collective_pmap_cannot_split_at_is_located(fun, message, line):
    with pytest.raises(TransformError, match=re.escape(message)) as info:
        pmap(fun, "i", devices=[Device(i, "cpu") for i in range(N)])(X)
    assert "pmap_programs.py" in str(info.value) and line in str(info.value)
    assert "hint" in str(info.value) or fun is P.perm_out_of_range


def test_mismatched_shard_sizes_name_the_arguments():
    with pytest.raises(ValueError, match=r"'w' has size 2, 'x' has size 3"):
        pmap(P.loss, in_axes=(0, None, 0, None))(np.ones((2, 3, 4)), np.ones(4),
                                                 np.ones((3, 5, 3)), np.ones(5))


def test_more_shards_than_devices_is_refused_as_in_jax():
    cores = len(transformer.devices())
    with pytest.raises(ValueError, match=f"size {cores + 1} but only {cores} cpu devices"):
        pmap(P.branchy)(np.ones((cores + 1, 2)))


def test_in_axes_must_match_the_arguments():
    with pytest.raises(ValueError, match="has 2 entries but 4 positional arguments were"):
        pmap(P.loss, in_axes=(0, None))(np.ones((2, 3, 4)), np.ones(4), np.ones((2, 5, 3)),
                                        np.ones(5))
    with pytest.raises(ValueError, match="at least one argument with a mapped axis"):
        pmap(P.branchy, in_axes=None)(np.ones(2))


def test_secant_show_pmap_prints_the_stages(capsys):
    assert cli.main(["show", f"{P.__file__}:every_collective", "--pmap", "i"]) == 0
    out = capsys.readouterr().out
    assert out == show_pmap(P.every_collective, axis_name="i")
    assert out.count("# ==== pmap stage") == 3
    assert cli.main(["show", f"{P.__file__}:every_collective", "--pmap", "i", "--jit"]) == 2
    assert "--pmap shows the stages" in capsys.readouterr().err
