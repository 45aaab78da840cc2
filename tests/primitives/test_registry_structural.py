"""Tests generated from the registry's sample calls (`Primitive.samples`), for the
non-elementwise primitives: each sample's adjoint and tangent against finite differences
(`transformer.test_util`), its batching against a loop over examples, and its compiled form
against NumPy. The samples are written as source into one module, one `def` per sample;
the compiled check runs every sample in one jitted function (one compile), and the full
cross-product (jit of grad, jit of vmap) is marked slow.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import transformer
from transformer import grad, jit, vmap
from transformer.primitives import registry
from transformer.test_util import check_jvp, check_vjp

registry.load_all()                      # the records of scipy.special, when installed
SAMPLES = [(r, s) for r in sorted((r for r in registry.records() if r.samples),
                                  key=lambda r: r.name) for s in r.samples]


def _label(item) -> str:
    return f"{item[0].name}:{item[1].call}"


def _params(sample) -> str:
    return ", ".join(sample.shapes)


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    """A module with `sample_<k>(...)` per sample, `total_<k>` (a scalar of it, for grad)
    and `every_sample(...)`: all samples in one function, their results in a tuple."""
    lines = ["import numpy as np", "import scipy.special  # noqa: F401", ""]
    every, every_params = [], []
    for k, (_, s) in enumerate(SAMPLES):
        params = _params(s)
        lines += [f"def sample_{k}({params}):", f"    return {s.call}", "",
                  f"def total_{k}({params}):",
                  f"    return np.sum(np.sin(sample_{k}({params}) + 0.5))", ""]
        every.append(f"sample_{k}({', '.join(f'{n}_{k}' for n in s.shapes)})")
        every_params += [f"{n}_{k}" for n in s.shapes]
    lines += [f"def every_sample({', '.join(every_params)}):",
              f"    return ({', '.join(every)},)", ""]
    quick = [k for k, (_, s) in enumerate(SAMPLES) if s.call in QUICK]
    quick_params = ", ".join(f"{n}_{k}" for k in quick for n in SAMPLES[k][1].shapes)
    lines += [f"def quick_samples({quick_params}):",
              f"    return ({', '.join(every[k] for k in quick)},)", ""]
    path = tmp_path_factory.mktemp("structural") / "registry_samples.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("registry_samples", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _inputs(sample, seed=0):
    rng = np.random.default_rng(seed)
    lo, hi = sample.domain
    return [float(rng.uniform(lo, hi)) if shape == () else rng.uniform(lo, hi, shape)
            for shape in sample.shapes.values()]


# ---------------------------------------------------------------- derivatives


@pytest.mark.parametrize("item", SAMPLES, ids=_label)
def test_adjoint_matches_finite_differences(calls, item):
    k = SAMPLES.index(item)
    check_vjp(getattr(calls, f"sample_{k}"), _inputs(item[1]))


@pytest.mark.parametrize("item", SAMPLES, ids=_label)
def test_tangent_matches_finite_differences(calls, item):
    k = SAMPLES.index(item)
    check_jvp(getattr(calls, f"sample_{k}"), _inputs(item[1]))


# ---------------------------------------------------------------- batching


def _batched(sample, f, examples=3):
    inputs = [_inputs(sample, seed=j) for j in range(examples)]
    first = np.stack([np.asarray(e[0]) for e in inputs])
    expected = np.stack([np.asarray(f(first[j], *inputs[0][1:])) for j in range(examples)])
    in_axes = (0,) + (None,) * (len(inputs[0]) - 1)
    return first, inputs[0][1:], in_axes, expected


@pytest.mark.parametrize("item", SAMPLES, ids=_label)
def test_batching_matches_a_loop_over_examples(calls, item):
    r, sample = item
    f = getattr(calls, f"sample_{SAMPLES.index(item)}")
    first, rest, in_axes, expected = _batched(sample, f)
    got = vmap(f, in_axes=in_axes)(first, *rest)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    if r.supports("vmap"):
        assert "prange" not in transformer.source(vmap(f, in_axes=in_axes)), \
            "batched by the registry's rule, not the loop strategy"


@pytest.mark.parametrize("item", SAMPLES, ids=_label)
def test_batched_gradient_matches_a_loop_of_gradients(calls, item):
    total = getattr(calls, f"total_{SAMPLES.index(item)}")
    first, rest, in_axes, expected = _batched(item[1], grad(total))
    got = vmap(grad(total), in_axes=in_axes)(first, *rest)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- compiled forms


# the quick set compiles two samples (an axis moved through rows, a mode string);
# --runslow compiles every one
QUICK = ("np.diff(x, n=2, axis=0)", "np.convolve(a, v, mode='same')")


@pytest.mark.slow
@pytest.mark.parametrize("group", ["quick", pytest.param("every", marks=pytest.mark.slow)])
def test_samples_compiled_match_numpy(calls, group):
    chosen = [(r, s) for r, s in SAMPLES if group == "every" or s.call in QUICK]
    assert group == "every" or len(chosen) == len(QUICK)
    args = [x for _, s in chosen for x in _inputs(s)]
    function = calls.every_sample if group == "every" else calls.quick_samples
    got, expected = jit(function)(*args), function(*args)
    assert len(got) == len(chosen)
    for k, (r, s) in enumerate(chosen):
        np.testing.assert_allclose(got[k], expected[k], rtol=1e-10, atol=1e-12,
                                   err_msg=f"{r.name}: {s.call}")


@pytest.mark.slow
@pytest.mark.parametrize("item", SAMPLES, ids=_label)
def test_compiled_gradient_matches_the_python_one(calls, item):
    k = SAMPLES.index(item)
    total = getattr(calls, f"total_{k}")
    args = _inputs(item[1])
    argnums = tuple(range(len(args)))
    expected = grad(total, argnums=argnums)(*args)
    got = jit(grad(total, argnums=argnums))(*args)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("item", SAMPLES, ids=_label)
def test_compiled_batching_matches_a_loop(calls, item):
    f = getattr(calls, f"sample_{SAMPLES.index(item)}")
    first, rest, in_axes, expected = _batched(item[1], f)
    got = jit(vmap(f, in_axes=in_axes))(first, *rest)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- the table


def test_every_sampled_primitive_lists_each_transformation_or_a_reason():
    rows = {row["name"]: row for row in transformer.primitives()}
    for r, _ in SAMPLES:
        row = rows[r.name]
        assert row["grad"] and row["jvp"] and row["jit"], row
        for t in registry.TRANSFORMS:
            assert row[t] or r.reasons.get(t), f"{r.name} lacks {t} without a reason"
