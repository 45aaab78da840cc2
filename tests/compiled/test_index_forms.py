"""Every NumPy basic-index form under jit gives NumPy's value: integers (negative too),
slices with steps, `None` (np.newaxis) and `...`, alone or mixed, on 1-3 d arrays.

The oracle is the same function called as plain Python (NumPy). An index out of bounds
raises IndexError at the user's line, as NumPy would raise IndexError. The sweep draws
index expressions from a small grammar; one compiled function serves each pattern of
part kinds, its integers and slice bounds being run-time arguments.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from tests.gradcheck import assert_gradient_close, central_differences, write_module
from transformer import grad, jit, vmap
from transformer.errors import TransformError


def pairwise(x):
    return x[:, None] - x[None, :]


def column_outer(x, i):
    return x[..., i, None] * x[None, 1, ...]


def pairwise_energy(x):
    d = x[:, None] - x[None, :]
    return np.sum(d * d * x[None, :])


def two_ellipses(x):
    return x[..., 0, ...]


pairwise_jit = jit(pairwise)
column_outer_jit = jit(column_outer)


@pytest.mark.parametrize("n", [1, 4])
def test_newaxis_mixed_with_slices_matches_numpy(n):
    x = np.linspace(-1.0, 2.0, n)
    np.testing.assert_array_equal(pairwise_jit(x), pairwise(x))


@pytest.mark.parametrize("i", [0, 2, -1, -3])
def test_index_after_ellipsis_counts_axes_from_the_end(i):
    x = np.arange(2 * 3 * 3, dtype=float).reshape(2, 3, 3)
    np.testing.assert_array_equal(column_outer_jit(x, i), column_outer(x, i))


@pytest.mark.parametrize("i", [3, -4])
def test_index_after_ellipsis_out_of_bounds_raises_at_the_users_line(i):
    x = np.ones((2, 3, 3))
    with pytest.raises(IndexError, match=r"out of bounds for axis 2 with size 3") as err:
        column_outer_jit(x, i)
    assert re.search(r"test_index_forms\.py:\d+:\d+: ", str(err.value))
    assert "x[..., i, None]" in str(err.value)


def test_two_ellipses_is_a_located_error():
    with pytest.raises(TransformError, match="single ellipsis") as err:
        jit(two_ellipses)(np.ones((2, 2)))
    assert "test_index_forms.py" in str(err.value) and "^" in str(err.value)


@pytest.mark.slow
def test_grad_and_vmap_of_newaxis_indexing_under_jit():
    x = np.array([0.5, -1.25, 2.0, 0.75])
    expected = central_differences(pairwise_energy, [x])
    assert_gradient_close(jit(grad(pairwise_energy))(x), expected, "jit(grad)")
    batch = np.stack([x, 2.0 * x, x - 1.0])
    np.testing.assert_allclose(jit(vmap(pairwise_energy))(batch),
                               [pairwise_energy(row) for row in batch], rtol=1e-12)


# ---------------------------------------------------------------- generated index forms

def _part_source(kind: str, k: int) -> tuple[str, list[str]]:
    """Source of one index part of `kind` and the run-time arguments it reads."""
    if kind == "int":
        return f"i{k}", [f"i{k}"]
    if kind == "none":
        return "None", []
    if kind == "ellipsis":
        return "...", []
    if kind == "slice":
        return f"a{k}:b{k}:s{k}", [f"a{k}", f"b{k}", f"s{k}"]
    return f"a{k}:", [f"a{k}"]       # "start": an open-ended slice


def _patterns(rng, count: int) -> list[tuple[int, tuple[str, ...]]]:
    """(ndim, part kinds): at most one `...`, at most ndim parts that use an axis."""
    found = set()
    while len(found) < count:
        ndim = int(rng.integers(1, 4))
        length = int(rng.integers(1, ndim + 3))
        kinds = tuple(rng.choice(["int", "none", "slice", "start", "ellipsis"], length))
        used = sum(k in ("int", "slice", "start") for k in kinds)
        if kinds.count("ellipsis") <= 1 and used <= ndim:
            found.add((ndim, kinds))
    return sorted(found)


def _draw(rng, kinds) -> list[int]:
    """Run-time arguments for `kinds` on axes of length 1-3: integers in [-4, 3], so
    sometimes out of bounds; slice bounds past either end, steps of either sign."""
    args = []
    for kind in kinds:
        if kind == "int":
            args.append(int(rng.integers(-4, 4)))
        elif kind == "slice":
            step = int(rng.choice([-2, -1, 1, 2, 3]))
            args += [int(rng.integers(-4, 5)), int(rng.integers(-4, 5)), step]
        elif kind == "start":
            args.append(int(rng.integers(-4, 5)))
    return args


def _pattern_module(directory, ndim: int, kinds):
    """A module defining `indexed(x, ...)`, `x` indexed by the pattern `kinds`, and
    `loss(x, ...)`, the sum of its squares (for grad)."""
    parts, params = zip(*(_part_source(kind, k) for k, kind in enumerate(kinds)))
    params = ", ".join(["x"] + [p for group in params for p in group])
    index = ", ".join(parts) + ("," if len(parts) == 1 else "")
    source = (f"def indexed({params}):\n    return x[{index}] * 2.0\n\n\n"
              f"def loss({params}):\n    return np.sum(indexed({params}) ** 2)\n")
    return write_module(directory, source, {"np": np}), source


PATTERNS = _patterns(np.random.default_rng(20261202), 28)


@pytest.mark.slow
@pytest.mark.parametrize("ndim,kinds", PATTERNS,
                         ids=["%dd-%s" % (n, "-".join(k)) for n, k in PATTERNS])
def test_generated_index_forms_match_numpy(tmp_path, ndim, kinds):
    module, source = _pattern_module(tmp_path, ndim, kinds)
    indexed, compiled = module.indexed, jit(module.indexed)
    rng = np.random.default_rng(len(source))
    for _trial in range(6):
        shape = tuple(int(n) for n in rng.integers(1, 4, ndim))
        x = rng.standard_normal(shape)
        args = _draw(rng, kinds)
        what = f"{source.strip()} on shape {shape} with {args}"
        try:
            expected = indexed(x, *args)
        except IndexError:
            with pytest.raises(IndexError, match="out of bounds"):
                compiled(x, *args)
            continue
        got = compiled(x, *args)
        assert np.shape(got) == np.shape(expected), what
        np.testing.assert_array_equal(got, expected, err_msg=what)


@pytest.mark.slow
@pytest.mark.parametrize("ndim,kinds", PATTERNS[::3],
                         ids=["%dd-%s" % (n, "-".join(k)) for n, k in PATTERNS[::3]])
def test_generated_index_forms_under_vmap_and_grad_match_numpy(tmp_path, ndim, kinds):
    module, source = _pattern_module(tmp_path, ndim, kinds)
    count = len(_draw(np.random.default_rng(0), kinds))
    batched = jit(vmap(module.indexed, in_axes=(0,) + (None,) * count))
    gradient = jit(grad(module.loss))
    rng = np.random.default_rng(len(source))
    checked = 0
    for _attempt in range(40):      # draws in bounds are common: three come well before 40
        if checked == 3:
            break
        shape = tuple(int(n) for n in rng.integers(1, 4, ndim))
        xs, args = rng.standard_normal((2,) + shape), _draw(rng, kinds)
        try:
            expected = np.stack([module.indexed(x, *args) for x in xs])
        except IndexError:
            continue
        what = f"{source.strip()} on shape {shape} with {args}"
        np.testing.assert_allclose(batched(xs, *args), expected, rtol=1e-12, err_msg=what)
        assert_gradient_close(gradient(xs[0], *args),
                              central_differences(module.loss, [xs[0], *args]), what)
        checked += 1
    assert checked == 3, f"{source}: too few draws in bounds"


def _doubled_item(x, i):
    y = np.sin(x)
    return y[i] * 2.0


@pytest.mark.parametrize("transform", ["jit", "grad", "vmap"])
def test_index_error_caret_is_at_the_subscript_under_every_transformation(transform):
    f = {"jit": jit(_doubled_item), "grad": jit(grad(_doubled_item)),
         "vmap": jit(vmap(_doubled_item, in_axes=(0, None)))}[transform]
    x = np.ones((2, 3)) if transform == "vmap" else np.ones(3)
    with pytest.raises(IndexError, match="index 5 is out of bounds") as err:
        f(x, 5)
    first, shown, caret = str(err.value).splitlines()
    assert shown.strip() == "return y[i] * 2.0"
    assert shown[caret.index("^"):].startswith("y[i]")
