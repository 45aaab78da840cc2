"""Every sampled primitive the registry marks as having no CUDA form is refused in a CUDA
kernel at the user's line, with the registry's reason as the hint (generated from the
registry's sample calls; the source is generated, no GPU or simulator needed)."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from cuda_support import needs_numba_cuda
from transformer import TransformError, jit, vmap
from transformer.primitives import registry

registry.load_all()                      # the records of scipy.special, when installed
REFUSED = [(r, s) for r in sorted((r for r in registry.records() if r.samples),
                                  key=lambda r: r.name)
           if not r.supports("cuda") for s in r.samples[:1]]


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """A module with `kernel_<k>(...)` per refused primitive: its sample call, summed."""
    lines = ["import numpy as np", "import scipy.special  # noqa: F401", ""]
    for k, (_, s) in enumerate(REFUSED):
        params = ", ".join(s.shapes)
        lines += [f"def kernel_{k}({params}):", f"    return np.sum({s.call})", ""]
    path = tmp_path_factory.mktemp("cuda_refusals") / "refused_kernels.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("refused_kernels", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def _batched_inputs(sample, examples=4):
    rng = np.random.default_rng(0)
    lo, hi = sample.domain
    inputs = [float(rng.uniform(lo, hi)) if shape == () else rng.uniform(lo, hi, shape)
              for shape in sample.shapes.values()]
    first = np.stack([np.asarray(inputs[0])] * examples)
    return [first] + inputs[1:], (0,) + (None,) * (len(inputs) - 1)


def test_the_registry_has_sampled_primitives_without_a_cuda_form():
    assert len(REFUSED) >= 5


@pytest.mark.every_case
@needs_numba_cuda
@pytest.mark.parametrize("item", REFUSED, ids=lambda item: item[0].name)
def test_a_primitive_without_a_cuda_form_is_refused_at_the_users_line(kernels, item):
    module, path = kernels
    r, sample = item
    k = REFUSED.index(item)
    args, in_axes = _batched_inputs(sample)
    kernel = jit(vmap(getattr(module, f"kernel_{k}"), in_axes=in_axes), backend="cuda")
    with pytest.raises(TransformError) as info:
        kernel.source(*args)
    message = str(info.value)
    assert f"{path}:{5 + 3 * k}:" in message, message   # the return line
    assert "hint: " in message, message
    short = r.name.rsplit(".", 1)[-1]
    if f"{short} of arrays" in message:     # else another call of the sample is refused first
        assert r.reason("cuda").split(";")[0] in message, message


@needs_numba_cuda
def test_a_factorization_in_a_kernel_is_refused_with_the_registrys_reason(tmp_path):
    path = tmp_path / "factor_kernel.py"
    path.write_text("import numpy as np\n\n\ndef factor(a):\n"
                    "    return np.sum(np.linalg.cholesky(a))\n")
    spec = importlib.util.spec_from_file_location("factor_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(TransformError) as info:
        jit(vmap(module.factor), backend="cuda").source(np.stack([np.eye(3)] * 4))
    assert f"{path}:5:" in str(info.value)
    assert registry.reason(np.linalg.cholesky, "cuda") in str(info.value)
