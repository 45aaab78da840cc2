"""The examples run and say what they checked: each is run as a script with small sizes,
must exit 0 and print its comparisons; a failed comparison exits 1 loudly. The
molecular-dynamics force-matching gradient is also checked here against finite
differences."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from transformer import jacfwd

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))       # the examples import their `checks` helper

import checks  # noqa: E402

SLOW = pytest.mark.slow                 # several compiles: over 20 s on two cores

# script -> (arguments keeping it small, a check it must report)
RUNS = {
    "selu.py": (["--sizes", "1000"], "jit vs NumPy, n=1000"),
    "vmap_matvec.py": ([], "jit(vmap(matvec)) vs NumPy's V @ M.T"),
    "newton.py": (["4"], "minimum found vs the known minimum"),
    "order_book.py": (["--books", "50"], "filled totals, 50 messages per book"),
    "order_book_dask.py": (["--books", "2000", "--chunk", "500"],
                           "first chunk on the cluster vs the single-process jitted vmap"),
    "per_example_grads.py": (["--batch", "4"], "vs hand-written batched backpropagation"),
    "data_parallel.py": (["--batch", "8", "--steps", "3"], "vs one device, w1"),
    "lj_cuda.py": (["--backend", "cpu", "--atoms", "27"],
                   "per-atom vmap(grad) forces vs -jit(grad(energy))"),
    "molecular_dynamics.py": (["--steps", "10", "--atoms-per-side", "2"],
                              "SLSQP sigma vs the value the data was made with"),
    "rl_policy_gradient.py": (["--iterations", "30", "--batch", "16"], "mean return improved"),
}
SLOW_RUNS = {"order_book.py", "per_example_grads.py", "lj_cuda.py", "molecular_dynamics.py",
             "newton.py", "rl_policy_gradient.py"}
SLOW_RUNS |= {"data_parallel.py"}       # pmap: three compiles and threads
SLOW_RUNS |= {"order_book_dask.py"}     # starts a local Dask cluster


def run_example(script, *argv):
    env = dict(os.environ, NUMBA_OPT="0", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, str(EXAMPLES / script), *argv], capture_output=True,
                          text=True, cwd=ROOT, env=env)


def test_every_example_is_run():
    assert set(RUNS) == {p.name for p in EXAMPLES.glob("*.py")} - {"checks.py"}


@pytest.mark.slow
@pytest.mark.parametrize("script", [pytest.param(s, marks=SLOW) if s in SLOW_RUNS else s
                                    for s in sorted(RUNS)])
def test_example_runs_and_prints_its_checks(script):
    argv, expected = RUNS[script]
    result = run_example(script, *argv)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "FAILED" not in result.stdout + result.stderr
    reported = [line for line in result.stdout.splitlines() if line.startswith("check ok: ")]
    assert any(expected in line for line in reported), result.stdout[-2000:]
    assert all("max difference" in line or ": " in line[10:] for line in reported)


def test_every_example_names_what_it_needs_in_its_first_lines():
    for path in EXAMPLES.glob("*.py"):
        if path.name != "checks.py":
            head = "\n".join(path.read_text().splitlines()[:8])
            assert "Needs:" in head, path.name


def test_a_failed_check_exits_1_and_says_what_differed(capsys):
    with pytest.raises(SystemExit) as info:
        checks.check("a value", 1.5, 1.0, rtol=1e-3)
    assert str(info.value).startswith("FAILED: a value: 1.5 vs 1, max difference 5.00e-01")
    with pytest.raises(SystemExit):
        checks.check("nan is never close", np.array([np.nan]), np.array([0.0]), atol=1.0)
    checks.check("a passing value", 1.0005, 1.0, rtol=1e-3)
    assert "check ok: a passing value: 1.0005 vs 1, max difference 5.00e-04" in \
        capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("argv, message", [
    (["--atoms", "512000"], "--atoms must be between 8 and 100,000"),
    (["--atoms", "many"], "expected a number of atoms"),
])
def test_lj_cuda_atoms_option_is_bounded(argv, message):
    result = run_example("lj_cuda.py", *argv)
    assert result.returncode == 2 and message in result.stderr


def load_example():
    spec = importlib.util.spec_from_file_location("md_example",
                                                  EXAMPLES / "molecular_dynamics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
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
