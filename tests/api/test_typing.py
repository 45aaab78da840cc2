"""Typing: secant ships its annotations, and mypy reads the public API as documented.

The mypy runs use the `[mypy]` section of setup.cfg (run from the repository root, as a
developer would) and are marked slow: a cold mypy run reads NumPy's stubs for a minute.
"""
import configparser
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from transformer import grad, jit, vmap
from transformer.typing import Array, ArrayLike

ROOT = Path(__file__).resolve().parents[2]
needs_mypy = pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                                reason="mypy is not installed (pip install 'secant[test]')")


def test_both_packages_ship_a_py_typed_marker():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    for package in ("transformer", "codegen"):
        assert (ROOT / package / "py.typed").is_file()
        assert config["options.package_data"][package].split() == ["py.typed"]


def test_array_names_are_numpys():
    assert ArrayLike is npt.ArrayLike
    assert Array == npt.NDArray[Any]


def annotated_energy(x: ArrayLike, scale: float = 2.0) -> Array:
    y = np.asarray(x)
    return scale * np.sum(y * y * y)


def test_annotated_functions_transform_like_unannotated_ones():
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(grad(annotated_energy)(x), 6.0 * x * x, rtol=1e-12)
    batch = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(vmap(annotated_energy)(batch), 2.0 * np.sum(batch ** 3, axis=1))
    np.testing.assert_allclose(jit(grad(annotated_energy), backend="python")(x),
                               6.0 * x * x, rtol=1e-12)


def _mypy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mypy", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)


@pytest.mark.slow
@needs_mypy
def test_mypy_is_clean_on_the_examples():
    run = _mypy()           # setup.cfg: files = examples
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("Success: no issues found")


PROBE = '''
import numpy as np
from transformer import grad, hessian, jacrev, jit, jvp, source, stop_gradient, vjp, vmap
from transformer.typing import Array, ArrayLike


def loss(x: ArrayLike) -> Array:
    return np.sum(np.asarray(x) ** 2)


reveal_type(jit(grad(loss)))
reveal_type(jit(loss, backend="cuda"))
reveal_type(jit(static_argnums=1))
reveal_type(vmap(grad(loss)))
reveal_type(hessian(loss, argnums=(0,)))
reveal_type(jacrev(loss))
reveal_type(jvp(loss))
reveal_type(jvp(loss, (1.0,), (1.0,)))
reveal_type(vjp(loss, 1.0))
reveal_type(stop_gradient(1.5))
reveal_type(source(grad(loss)))
seconds: float = jit(loss).cache_info().compile_seconds
grad(loss, argnums="x")
'''


@pytest.mark.slow
@needs_mypy
def test_mypy_reads_the_public_api_types(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent(PROBE))
    run = _mypy(str(probe))
    revealed = [line.split("Revealed type is ")[1].strip('"').removeprefix("builtins.")
                for line in run.stdout.splitlines() if "Revealed type is" in line]
    assert revealed == [
        "transformer.jit.Jitted", "transformer.cuda.jitted.CudaJitted",
        "def (def (*Any, **Any) -> Any) -> transformer.jit.Jitted",
        "transformer.api_batching.Batched", "transformer.transformed.Transformed",
        "transformer.api_forward.Jacobian", "transformer.transformed.Transformed",
        "tuple[Any, ...]", "tuple[Any, ...]",
        "float",
        "transformer.display.SourceCode",
    ], run.stdout
    errors = [line for line in run.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and 'Argument "argnums" to "grad"' in errors[0], run.stdout
    assert run.returncode == 1
