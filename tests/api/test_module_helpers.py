"""Helpers reached through the user's module (`mymodule.energy(v)`, `pkg.sub.f(v)`) are
compiled like helpers reached by name: under jit (Numba cannot call a plain Python
function that is a module attribute), grad, vmap and their compositions.

Oracles: NumPy on the same helper, the analytic derivative, central differences.
"""
import importlib
import sys
import textwrap

import numpy as np
import pytest

from transformer import TransformError, grad, jit, vmap
from transformer.test_util import numerical_grad

HELPERS = {
    "inline_helpers_pkg/__init__.py": "from . import physics\n",
    "inline_helpers_pkg/physics.py": """
        import numpy as np

        SCALE = 2.0


        def energy(v):
            return SCALE * np.sum(np.sin(v) * v)


        def refused(v):
            import math
            return v * math.pi


        def pair(v, w):
            return np.sum(v * w) + energy(w)
        """,
}


@pytest.fixture(scope="module")
def pkg(tmp_path_factory):
    root = tmp_path_factory.mktemp("helpers")
    for path, text in HELPERS.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(textwrap.dedent(text))
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("inline_helpers_pkg")
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n.startswith("inline_helpers_pkg")]:
            del sys.modules[name]


@pytest.fixture(scope="module")
def functions(pkg):
    physics = pkg.physics

    def through_module(v):
        return physics.energy(v) * 3.0

    def through_package(v, w):
        return pkg.physics.pair(v, w) - pkg.physics.energy(v)

    return through_module, through_package


V = np.array([0.4, -1.2, 2.5])
W = np.array([1.0, 0.5, -0.3])
VS = np.array([[0.4, -1.2, 2.5], [0.1, 0.9, -2.0]])


def numpy_energy(v):
    return 2.0 * np.sum(np.sin(v) * v)


def test_jit_calls_a_helper_reached_through_a_module(functions):
    through_module, through_package = functions
    assert np.isclose(jit(through_module)(V), 3.0 * numpy_energy(V))
    expected = np.sum(V * W) + numpy_energy(W) - numpy_energy(V)
    assert np.isclose(jit(through_package)(V, W), expected)


@pytest.mark.slow
def test_jit_grad_through_a_module_matches_analytic_and_finite_differences(functions):
    through_module, through_package = functions
    analytic = 3.0 * 2.0 * (np.cos(V) * V + np.sin(V))
    np.testing.assert_allclose(jit(grad(through_module))(V), analytic, rtol=1e-12)
    got = jit(grad(through_package, argnums=1))(V, W)
    np.testing.assert_allclose(got, numerical_grad(through_package, (V, W), argnum=1),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_vmap_and_jit_vmap_through_a_module_match_a_loop(functions):
    through_module, _ = functions
    expected = [3.0 * numpy_energy(v) for v in VS]
    np.testing.assert_allclose(vmap(through_module)(VS), expected, rtol=1e-12)
    np.testing.assert_allclose(jit(vmap(through_module))(VS), expected, rtol=1e-12)
    expected = [3.0 * 2.0 * (np.cos(v) * v + np.sin(v)) for v in VS]
    np.testing.assert_allclose(jit(vmap(grad(through_module)))(VS), expected, rtol=1e-12)


def test_rebinding_the_helper_in_its_module_is_seen_by_new_transformations(
        pkg, functions, monkeypatch):
    """The helper is bound when the function is transformed, as a helper bound by name:
    a rebinding in its module is read by the next transformation, never mixed up with
    the value cached for the old one."""
    through_module, _ = functions
    assert np.isclose(grad(through_module)(V)[0], 6.0 * (np.cos(V[0]) * V[0] + np.sin(V[0])))
    monkeypatch.setattr(pkg.physics, "energy", lambda v: np.sum(v * v))
    assert np.isclose(jit(through_module, backend="python")(V), 3.0 * np.sum(V * V))
    np.testing.assert_allclose(grad(through_module)(V), 6.0 * V)


def test_refused_helper_through_a_module_is_located_in_its_file(pkg):
    physics = pkg.physics

    def loss(v):
        return physics.refused(v) * 2.0

    with pytest.raises(TransformError) as info:
        jit(grad(loss))(V)
    text = str(info.value)
    assert f"{physics.__file__}:" in text
    assert "import math" in text
