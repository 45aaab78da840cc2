"""The JAX-style corpus (tests/jax_style_corpus.py): each NumPy program through grad,
vmap(grad), jacfwd, hessian and jit, against central differences always and against the
same program in `jax.numpy` when JAX is installed.

Quick run: every Python-backend transformation on every program, `jit(grad)` on a
representative subset; the whole jit sweep is `slow`."""
import numpy as np
import pytest

import jax_style_corpus as corpus
from transformer import grad, hessian, jacfwd, jit, vmap
from tree_checks import (assert_tree_close, hessian_matrix, stacked, tree_fd_grad,
                         tree_fd_hessian)

CASES = {case.name: case for case in corpus.CASES}
BATCHED = [name for name, case in CASES.items() if case.batched]
HESSIAN = [name for name, case in CASES.items() if case.hessian]
QUICK_JIT = ("linear_mse", "mlp_layers", "namedtuple_mse", "softmax_xent", "lj_cutoff",
             "reinforce_baseline", "inplace_cumsum", "while_sum_squares")
# compiles are the cost: the slow set compiles every other program (the rest go through
# every transformation on the Python backend, and through jit in the quick set's picks)
FULL_JIT = [pytest.param(name, marks=[] if name in QUICK_JIT else pytest.mark.slow)
            for k, (name, case) in enumerate(CASES.items())
            if case.jit and (name in QUICK_JIT or k % 2 == 0)]
# the second-order and JAX-comparison sweeps run whole with --runslow; the quick set keeps
# one program of each kind
QUICK = QUICK_JIT + ("lj_params", "td_lambda", "nested_autoencoder", "dataclass_mse")


def sweep(names):
    return [pytest.param(name, marks=[] if name in QUICK else pytest.mark.slow)
            for name in names]


def args_of(case, seed=0):
    return case.make(np.random.default_rng(seed))


def fd_grad_of(case, args):
    """The finite-difference gradient of `case` at `args`; a program with stop_gradient is
    differentiated through its `frozen` form, the stopped terms held at args[0]."""
    if case.frozen is None:
        return tree_fd_grad(case.numpy, args)
    rest = tuple(args[1:])
    return tree_fd_grad(lambda p, *more: case.frozen(p, args[0], *more), (args[0],) + rest)


def batch_of(case, size=3):
    """`size` examples sharing argument 0 (and every unbatched argument), and the stacked
    arguments a vmap maps over."""
    examples = [args_of(case, seed) for seed in range(size)]
    shared = examples[0]
    per_example = [tuple(ex[k] if k in case.batched else shared[k] for k in range(len(shared)))
                   for ex in examples]
    batched = tuple(stacked([ex[k] for ex in examples]) if k in case.batched else shared[k]
                    for k in range(len(shared)))
    return per_example, batched


def test_corpus_is_large_and_every_program_has_its_jax_twin():
    assert len(CASES) >= 60
    for case in CASES.values():
        assert case.jax.__name__ == case.name + "_jax"


# ---------------------------------------------------------------- against finite differences

@pytest.mark.parametrize("name", CASES)
def test_grad_matches_finite_differences(name):
    case = CASES[name]
    args = args_of(case)
    assert_tree_close(grad(case.numpy)(*args), fd_grad_of(case, args))


@pytest.mark.parametrize("name", sweep(BATCHED))
def test_vmap_grad_matches_per_example_finite_differences(name):
    case = CASES[name]
    per_example, batched = batch_of(case)
    in_axes = tuple(0 if k in case.batched else None for k in range(len(batched)))
    got = vmap(grad(case.numpy), in_axes=in_axes)(*batched)
    assert_tree_close(got, stacked([fd_grad_of(case, ex) for ex in per_example]))


@pytest.mark.parametrize("name", sweep(CASES))
def test_jacfwd_matches_finite_differences(name):
    case = CASES[name]
    args = args_of(case)
    assert_tree_close(jacfwd(case.numpy)(*args), fd_grad_of(case, args))


@pytest.mark.parametrize("name", sweep(HESSIAN))
def test_hessian_matches_finite_differences(name):
    case = CASES[name]
    args = args_of(case)
    got = hessian_matrix(hessian(case.numpy)(*args), args[0])
    want = tree_fd_hessian(case.numpy, args, eps=1e-4)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6 * max(10.0, np.max(np.abs(want))))


@pytest.mark.slow
@pytest.mark.parametrize("name", FULL_JIT)
def test_jit_grad_matches_finite_differences(name):
    case = CASES[name]
    args = args_of(case)
    assert_tree_close(jit(grad(case.numpy))(*args), fd_grad_of(case, args))
    assert jit(case.numpy)(*args) == pytest.approx(case.numpy(*args), rel=1e-10, abs=1e-12)


# ---------------------------------------------------------------- against JAX


@pytest.fixture(scope="module")
def jax_module():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    corpus.register_with_jax()
    return jax


def to_numpy(tree, jax):
    return jax.tree_util.tree_map(np.asarray, tree)


@pytest.mark.parametrize("name", sweep(CASES))
def test_value_and_grad_agree_with_jax(name, jax_module):
    case = CASES[name]
    args = args_of(case)
    assert case.numpy(*args) == pytest.approx(float(case.jax(*args)), rel=1e-10, abs=1e-12)
    theirs = to_numpy(jax_module.grad(case.jax)(*args), jax_module)
    assert_tree_close(grad(case.numpy)(*args), theirs, rtol=1e-9, atol=1e-11)


# every other Hessian program against JAX (each is a JAX trace of seconds on CI's machine);
# test_hessian_matches_finite_differences checks all of them
@pytest.mark.slow
@pytest.mark.parametrize("name", sweep([n for k, n in enumerate(HESSIAN)
                                        if k % 2 == 0 or n in QUICK]))
def test_hessian_agrees_with_jax(name, jax_module):
    case = CASES[name]
    args = args_of(case)
    theirs = hessian_matrix(to_numpy(jax_module.hessian(case.jax)(*args), jax_module), args[0])
    ours = hessian_matrix(hessian(case.numpy)(*args), args[0])
    np.testing.assert_allclose(ours, theirs, rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------- the README's pytree block

def _readme_pytree_block(tmp_path, marker: str, prelude: str = ""):
    """The README's Pytrees code block holding `marker`, run as a module."""
    import importlib.util
    import pathlib
    text = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = text.split("\n## Pytrees\n")[1].split("\n## ")[0]
    block = next(b.split("```")[0] for b in section.split("```python\n") if marker in b)
    name = f"readme_{marker.split()[-1]}"
    (tmp_path / f"{name}.py").write_text(prelude + block)
    spec = importlib.util.spec_from_file_location(name, tmp_path / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_readme_pytree_block_runs_and_its_gradients_match_finite_differences(tmp_path):
    m = _readme_pytree_block(tmp_path, "def unpacked")
    assert_tree_close(m.g_tuple, tree_fd_grad(m.unpacked, ((m.W, m.b), m.x)))
    assert_tree_close(m.g_layers, tree_fd_grad(m.mlp, (m.layers, m.x)))
    assert_tree_close(m.g_shrunk, tree_fd_grad(m.shrunk, ({"W": m.W, "b": m.b}, m.x)))
    assert_tree_close(m.per_example, stacked([tree_fd_grad(m.attrs, (m.Params(m.W, m.b), x))
                                              for x in m.xs]))
    assert_tree_close(m.state, m.step(m.State(m.x, np.zeros(3)), 0.1), rtol=1e-12)


@pytest.mark.slow
def test_the_readme_mlp_tutorial_block_updates_by_the_finite_difference_gradient(tmp_path):
    m = _readme_pytree_block(tmp_path, "def predict",
                             "import numpy as np\nfrom transformer import grad, jit, vmap\n\n")
    rng = np.random.default_rng(3)
    params = [(rng.normal(size=(4, 3)), rng.normal(size=4)),
              (rng.normal(size=(2, 4)), rng.normal(size=2))]
    x, y = rng.normal(size=(5, 3)), np.eye(2)[rng.integers(0, 2, 5)]
    g = tree_fd_grad(m.loss, (params, x, y))
    assert_tree_close(m.update(params, x, y),
                      [(w - 0.01 * dw, b - 0.01 * db) for (w, b), (dw, db) in zip(params, g)])
