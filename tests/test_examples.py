"""The molecular-dynamics example's force-matching loss: its parameter gradient (forward
mode over the generated reverse-mode forces) against central finite differences."""
import importlib.util
from pathlib import Path

import numpy as np

from transformer import jacfwd

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "molecular_dynamics.py"


def load_example():
    spec = importlib.util.spec_from_file_location("md_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_force_matching_gradient_matches_finite_differences():
    md = load_example()
    rng = np.random.default_rng(0)
    configs, _, box, cutoff = md.reference_data(2, 2, (1.2, 0.95), rng)
    ref = np.stack([-md.energy_gradient(c, 1.2, 0.95, box, cutoff) for c in configs])
    params = np.array([1.0, 1.0])
    got = jacfwd(md.force_matching_loss)(params, configs, ref, box, cutoff)
    step = 1e-6
    expected = [(md.force_matching_loss(params + step * e, configs, ref, box, cutoff)
                 - md.force_matching_loss(params - step * e, configs, ref, box, cutoff))
                / (2 * step) for e in np.eye(2)]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
