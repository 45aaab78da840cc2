"""Arrays read through a user's module (`cfg.W`, `pkg.cfg.W`, `cfg.PARAMS["w"]`, a tuple
`cfg.LAYERS`) are hidden arguments of the compiled code, as global arrays are
(`transformer.materialize._module_arrays_as_names`, `transformer.dict_reads`): a write
into one, or a rebinding, is seen at the next call as Python sees it, where Numba froze
them into the machine code before (a stale result). Oracles: the analytic derivatives,
written out with NumPy, and the function run by Python."""
import sys
import types

import numpy as np
import pytest

from transformer import TransformError, grad, jit, vmap

RNG = np.random.default_rng(11)

# a force-field module and a package holding it, as `import params` / `import pkg.params`
cfg = types.ModuleType("forcefield_params")
pkg = types.ModuleType("forcefield_pkg")
pkg.cfg = cfg


@pytest.fixture(autouse=True)
def parameters(monkeypatch):
    """Fresh module attributes for each test, restored after it; the modules importable
    by their names, as the generated code imports a module it reads through."""
    for module in (cfg, pkg):
        monkeypatch.setitem(sys.modules, module.__name__, module)
    for attr, value in (("W", RNG.normal(size=3)), ("M", RNG.normal(size=(2, 3))),
                        ("PARAMS", {"w": RNG.normal(size=3), "scale": 2.0}),
                        ("LAYERS", (RNG.normal(size=3), RNG.normal(size=3)))):
        monkeypatch.setattr(cfg, attr, value, raising=False)


def weighted(x):
    return np.sum(np.tanh(x) * cfg.W)


def through_package(x):
    return np.sum(np.tanh(x) * pkg.cfg.W)


def _helper(x):
    return np.tanh(x) * pkg.cfg.W


def calls_a_helper(x):
    return np.sum(_helper(x))


def from_a_dict(x):
    return np.sum(np.tanh(x) * cfg.PARAMS["w"]) * cfg.PARAMS["scale"]


def from_a_tuple(x):
    return np.sum(np.tanh(x) * cfg.LAYERS[0] * cfg.LAYERS[1])


def dtanh(x):
    return 1.0 - np.tanh(x) ** 2


@pytest.mark.parametrize("f, weights", [
    (weighted, lambda: cfg.W),
    (through_package, lambda: cfg.W),
    (calls_a_helper, lambda: cfg.W),
    (from_a_dict, lambda: cfg.PARAMS["w"] * cfg.PARAMS["scale"]),
    (from_a_tuple, lambda: cfg.LAYERS[0] * cfg.LAYERS[1]),
], ids=["cfg.W", "pkg.cfg.W", "helper", "cfg.PARAMS['w']", "cfg.LAYERS"])
def test_writes_and_rebindings_through_a_module_are_seen(f, weights):
    g, value = jit(grad(f)), jit(f)
    x = RNG.normal(size=3)
    np.testing.assert_allclose(g(x), dtanh(x) * weights(), rtol=1e-12)
    # a write into the array the module holds
    written = {"cfg.W": cfg.W, "pkg.cfg.W": cfg.W, "helper": cfg.W,
               "cfg.PARAMS['w']": cfg.PARAMS["w"], "cfg.LAYERS": cfg.LAYERS[1]}
    for array in written.values():
        array[0] = 100.0
    np.testing.assert_allclose(g(x), dtanh(x) * weights(), rtol=1e-12)
    np.testing.assert_allclose(value(x), f(x), rtol=1e-12)
    # a rebinding to an array of the same kind: read at the call, no new compile
    cfg.W = RNG.normal(size=3)
    cfg.PARAMS["w"] = RNG.normal(size=3)
    cfg.LAYERS = (RNG.normal(size=3), RNG.normal(size=3))
    np.testing.assert_allclose(g(x), dtanh(x) * weights(), rtol=1e-12)
    np.testing.assert_allclose(value(x), f(x), rtol=1e-12)


def test_a_module_array_is_a_hidden_argument_and_a_rebinding_compiles_nothing():
    g = jit(grad(weighted))
    x = RNG.normal(size=3)
    g(x)
    cfg.W = RNG.normal(size=3)
    np.testing.assert_allclose(g(x), dtanh(x) * cfg.W, rtol=1e-12)
    info = g.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    source = g.source(x)
    assert "takes cfg_W: hidden argument, array float64 1-d" in source
    assert "reads cfg.W" not in source          # not frozen into the module's text


def test_a_module_array_rebound_to_another_rank_compiles_a_new_specialization():
    def rows(x):
        return np.sum(np.tanh(x) * cfg.M)
    g = jit(grad(rows))
    x = RNG.normal(size=3)
    np.testing.assert_allclose(g(x), dtanh(x) * cfg.M.sum(axis=0), rtol=1e-12)
    cfg.M = RNG.normal(size=3)                  # a vector now
    np.testing.assert_allclose(g(x), dtanh(x) * cfg.M, rtol=1e-12)
    assert g.cache_info().misses == 2


def test_a_write_through_a_module_attribute_reaches_the_module_array():
    def accumulate(x):
        cfg.W[0] += np.sum(x)
        return cfg.W[0] * 1.0
    f = jit(accumulate)
    before = cfg.W[0]
    got = f(np.ones(3))
    assert got == pytest.approx(before + 3.0)
    assert cfg.W[0] == pytest.approx(before + 3.0)


def test_vmap_under_jit_reads_the_module_array_at_each_call():
    def per_example(x):
        return np.sum(np.tanh(x) * cfg.W)
    f = jit(vmap(grad(per_example)))
    X = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(f(X), dtanh(X) * cfg.W, rtol=1e-12)
    cfg.W *= -2.0                                # in place
    np.testing.assert_allclose(f(X), dtanh(X) * cfg.W, rtol=1e-12)


def test_a_function_rebinding_a_module_array_is_refused_at_its_line():
    def rebinds(x):
        cfg.W = x * 2.0
        return np.sum(cfg.W)
    with pytest.raises(TransformError) as caught:
        jit(rebinds)(np.ones(3))
    assert "test_module_arrays.py" in str(caught.value)
