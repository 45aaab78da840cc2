"""Tests generated from the primitive registry, not written per primitive.

For every registered elementwise function users call (`numpy.*`, `math.*`, builtins): its
adjoint and tangent against finite differences (`transformer.test_util`), its batching
rule against a loop over examples, and its compiled form against NumPy. The functions
under test are written as source into one module (transformations read source), one
`def` per primitive; the compiled check batches every primitive into one jitted function.
"""
from __future__ import annotations

import importlib.util
import json
import math

import numpy as np
import pytest

import transformer
from codegen import cli
from transformer import grad, jit, vmap
from transformer.primitives import registry
from transformer.test_util import check_jvp, check_vjp

ELEMENTWISE_KINDS = ("elementwise", "binary elementwise")
# inputs inside every function's domain: (0.2, 0.8), except where the function needs more
DOMAIN = {"arccosh": (1.2, 2.0), "acosh": (1.2, 2.0)}


def _registered(test) -> list:
    """User-facing elementwise primitives whose record satisfies `test`, by name."""
    registry.load_all()          # scipy.special's functions are described once imported
    found = {r.name: r for r in registry.records()
             if registry.is_user_facing(r.key) and r.kind in ELEMENTWISE_KINDS and test(r)}
    return [found[name] for name in sorted(found)]


def _arity(r) -> int:
    return 1 if r.kind == "elementwise" else 2


def _scalar_only(r) -> bool:
    """`math.*` functions and builtins take numbers, not arrays."""
    return getattr(r.key, "__module__", None) in ("math", "builtins")


def _ident(r) -> str:
    return "call_" + r.name.replace(".", "_")


DIFFERENTIABLE = _registered(lambda r: r.adjoint is not None)
BATCHED = _registered(lambda r: r.batcher is not None)
COMPILED = _registered(lambda r: r.supports("jit") and not r.nondifferentiable)


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    """name -> a function `f(x[, y])` returning the primitive applied to its arguments,
    plus `all_arrays` / `all_scalars`: every compiled primitive in one function."""
    lines = ["import math", "import numpy", "import numpy as np", "import scipy.special", ""]
    for r in {r.name: r for r in DIFFERENTIABLE + BATCHED + COMPILED}.values():
        params = "x, y" if _arity(r) == 2 else "x"
        lines += [f"def {_ident(r)}({params}):", f"    return {r.name}({params})", ""]
    for label in ("arrays", "scalars", "quick"):
        group = _group(label)
        lines += [f"def all_{label}(x, y):", f"    out = np.empty(({len(group)}, x.shape[0]))",
                  "    for i in range(x.shape[0]):"]
        for k, r in enumerate(group):
            x = f"x{_index(label)} + {_shift(r)}"
            args = f"{x}, y{_index(label)}" if _arity(r) == 2 else x
            target = f"out[{k}]" if label == "arrays" else f"out[{k}, i]"
            lines.append(f"        {target} = {r.name}({args})")
        lines += ["    return out", ""]
    path = tmp_path_factory.mktemp("primitives") / "registry_calls.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("registry_calls", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _index(label: str) -> str:
    return "" if label == "arrays" else "[i]"     # "quick" and "scalars": number by number


def _shift(r) -> float:
    """What moves (0.2, 0.8) into the function's domain."""
    return DOMAIN.get(r.key.__name__, (0.2, 0.8))[0] - 0.2


def _inputs(r, shape=(3,), seed=0):
    lo, hi = DOMAIN.get(r.key.__name__, (0.2, 0.8))
    rng = np.random.default_rng(seed)
    if _scalar_only(r):
        return [float(rng.uniform(lo, hi)) for _ in range(_arity(r))]
    return [rng.uniform(lo, hi, shape) for _ in range(_arity(r))]


# ---------------------------------------------------------------- derivatives


@pytest.mark.parametrize("r", DIFFERENTIABLE, ids=lambda r: r.name)
def test_adjoint_matches_finite_differences(calls, r):
    check_vjp(getattr(calls, _ident(r)), _inputs(r))


@pytest.mark.parametrize("r", DIFFERENTIABLE, ids=lambda r: r.name)
def test_tangent_matches_finite_differences(calls, r):
    check_jvp(getattr(calls, _ident(r)), _inputs(r))


# ---------------------------------------------------------------- batching


@pytest.mark.parametrize("r", BATCHED, ids=lambda r: r.name)
def test_batching_rule_matches_a_loop_over_examples(calls, r):
    f = getattr(calls, _ident(r))
    examples = [_inputs(r, seed=k) for k in range(4)]
    stacked = [np.stack([np.asarray(e[i]) for e in examples]) for i in range(_arity(r))]
    expected = np.stack([np.asarray(f(*e)) for e in examples])
    got = vmap(f)(*stacked)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert "prange" not in transformer.source(vmap(f)), "vectorized, not a loop"


# ---------------------------------------------------------------- compiled forms


def _group(label: str) -> list:
    if label == "quick":
        return [r for r in COMPILED if r.name in QUICK]
    return [r for r in COMPILED if _scalar_only(r) == (label == "scalars")]


# a representative quick set: the primitives added or fixed with the registry
QUICK = ("math.erf", "numpy.deg2rad", "numpy.cbrt", "numpy.exp2", "numpy.arctanh",
         "numpy.float_power", "numpy.sinc", "math.lgamma", "scipy.special.expit",
         "scipy.special.xlogy")


@pytest.mark.slow
@pytest.mark.parametrize("label", [
    "quick", pytest.param("arrays", marks=pytest.mark.slow),
    pytest.param("scalars", marks=pytest.mark.slow)])
def test_compiled_forms_match_numpy(calls, label):
    group = _group(label)
    x, y = np.linspace(0.25, 0.75, 5), np.linspace(0.3, 0.6, 5)
    expected = np.array([[r.key(*((a + _shift(r), b) if _arity(r) == 2 else (a + _shift(r),)))
                          for a, b in zip(x, y)] for r in group])
    got = jit(getattr(calls, f"all_{label}"))(x, y)
    for k, r in enumerate(group):
        np.testing.assert_allclose(got[k], expected[k], rtol=1e-12, err_msg=r.name)


# ---------------------------------------------------------------- the table


def test_every_elementwise_primitive_with_grad_has_every_transformation_or_a_reason():
    for row in transformer.primitives():
        r = registry.lookup(_by_name()[row["name"]])
        if row["kind"] not in ELEMENTWISE_KINDS or not row["grad"]:
            continue
        for t in registry.TRANSFORMS:
            assert row[t] or r.reasons.get(t), f"{row['name']} lacks {t} without a reason"


def _by_name() -> dict:
    return {r.name: r.key for r in registry.records()}


def test_erf_and_deg2rad_support_every_transformation():
    rows = {row["name"]: row for row in transformer.primitives()}
    for name in ("math.erf", "numpy.deg2rad", "numpy.cbrt", "numpy.exp2", "numpy.arcsinh"):
        assert all(rows[name][t] for t in registry.TRANSFORMS), rows[name]
        assert rows[name]["reason"] == ""
    assert rows["numpy.float_power"]["vmap"]


def test_erf_gradient_is_the_gaussian_density_times_two():
    x = 0.3
    assert grad(lambda_erf)(x) == pytest.approx(2.0 / math.sqrt(math.pi) * math.exp(-x * x))


def lambda_erf(x):
    return math.erf(x) * 1.0


def test_cli_prints_the_table_as_json_and_text(capsys):
    assert cli.main(["primitives", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    sin = next(row for row in rows if row["name"] == "numpy.sin")
    assert sin == {"name": "numpy.sin", "kind": "elementwise", "grad": True, "jvp": True,
                   "vmap": True, "jit": True, "cuda": True, "reason": ""}
    assert cli.main(["primitives"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "kind", "grad", "jvp", "vmap", "jit", "cuda", "reason"]
    assert len(lines) == len(rows) + 1
    assert len({line.index(" grad ") for line in lines[:1]}) == 1


# ---------------------------------------------------------------- refusals from the registry


def qr_total(x):
    return np.sum(np.linalg.qr(np.outer(x, x) + np.eye(3))[1])


def sorted_total(x):
    return np.sum(np.sort(x) * np.arange(3.0))


def permuted_total(x):
    return np.sum(x[np.argsort(x)] * np.arange(3.0))


@pytest.mark.parametrize("transform", ["grad", "jvp"])
def test_a_missing_rule_is_a_located_error_naming_the_primitive(transform):
    x = np.array([3.0, 1.0, 2.0])
    with pytest.raises(transformer.TransformError) as info:
        if transform == "grad":
            grad(qr_total)(x)
        else:
            transformer.jvp(qr_total, (x,), (np.ones(3),))
    message = str(info.value)
    assert "test_primitive_registry.py" in message and "np.linalg.qr(" in message
    assert "numpy.linalg.qr" in message


def test_sort_differentiates_as_the_gather_through_argsort():
    x = np.array([3.0, 1.0, 2.0])
    np.testing.assert_allclose(grad(sorted_total)(x), grad(permuted_total)(x))
    np.testing.assert_allclose(grad(sorted_total)(x), [2.0, 0.0, 1.0])   # sorted weights
    check_vjp(sorted_total, [x])


def test_the_passes_tables_are_views_of_the_registry():
    from transformer import templates
    from transformer.rules import batching
    sin = registry.lookup(np.sin)
    assert templates.ADJOINTS[np.sin] is sin.adjoint
    assert templates.TANGENTS[np.sin] is sin.tangent
    assert batching.BATCHERS[np.sin] is sin.batcher
    assert np.float_power in batching.BATCHERS
    assert registry.lookup(math.erf).vector(np.array([0.0, 0.5]))[1] == math.erf(0.5)


# ---------------------------------------------------------------- scalarization

SCALARIZED = sorted((r for r in registry.records() if r.elementwise), key=lambda r: r.name)


@pytest.mark.parametrize("r", SCALARIZED, ids=lambda r: r.name)
def test_the_shape_analysis_splits_every_scalarized_primitive(tmp_path, r):
    from transformer.frontend import parse
    from transformer.vector_shapes import Array, Shapes
    args = "d, d" if r.kind == "binary elementwise" else "d"
    path = tmp_path / f"split_{_ident(r)}.py"
    # secant's own elementwise helpers (runtime.casts.real_only) are named from the package
    path.write_text(f"import numpy\nimport scipy.special\nimport transformer\n\n"
                    f"def f(pos):\n    d = pos[0] - pos[1]\n"
                    f"    e = {r.name}({args})\n    return e\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shape = Shapes(parse(module.f), {"pos": Array(2, 3, "f64")}).of["e"]
    assert isinstance(shape, Array) and shape.last == 3, (r.name, shape)


def drift(pos):
    d = pos[0] - pos[1]
    e = np.cbrt(d) + np.exp2(d) + np.arcsinh(d) + np.arccosh(d * d + 1.5) + \
        np.arctanh(0.5 * d) + np.deg2rad(d)
    return np.sum(e)


def test_primitives_the_registry_added_are_scalarized_under_jit():
    pos = np.random.default_rng(3).random((4, 3))
    f = jit(drift)
    text = f.source(pos)
    assert "np.cbrt(d_0)" in text and "np.deg2rad(d_2)" in text, text
    assert f(pos) == pytest.approx(drift(pos), rel=1e-13)
