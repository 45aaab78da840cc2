"""CUDA kernels run on Numba's CUDA simulator; started by test_cuda_sim.py.

This file is not collected by a plain `pytest` run (its name does not start with
`test_`): the simulator must be switched on (NUMBA_ENABLE_CUDASIM=1) before numba is
first imported, so test_cuda_sim.py runs it in a process of its own. Batches are a few
blocks of threads: the simulator runs every thread as a Python thread. The cases marked
slow run only with `pytest --runslow`; the others are the quick set's CUDA check.
"""
import numba
import numpy as np
import pytest

import cuda_kernels as K
from transformer.cuda.jitted import cuda_jit
from transformer import grad, jit, jvp, vmap
from transformer.test_util import numerical_grad, numerical_jvp

pytestmark = pytest.mark.skipif(not numba.config.ENABLE_CUDASIM,
                                reason="needs NUMBA_ENABLE_CUDASIM=1 before numba is imported")


@pytest.fixture(scope="module")
def particles():
    rng = np.random.default_rng(0)
    return rng.uniform(0.0, 4.0, (40, 3))


@pytest.mark.slow
def test_vmap_kernel_keeps_float32_and_matches_python(particles):
    pos = particles.astype(np.float32)
    energies = cuda_jit(vmap(K.particle_energy, in_axes=(0, None, 0, None, None)),
                        threads_per_block=16)         # 40 particles: 3 blocks
    got = energies(pos, pos, np.arange(40), np.float32(1.0), 1.0)
    expected = [K.particle_energy(pos[i].astype(np.float64), pos.astype(np.float64), i,
                                  1.0, 1.0) for i in range(40)]
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=2e-4)


def test_vmap_of_grad_gives_lennard_jones_forces(particles):
    forces = jit(vmap(grad(K.particle_energy), in_axes=(0, None, 0, None, None)),
                 backend="cuda")
    got = forces(particles, particles, np.arange(40), 1.0, 1.0)
    expected = np.zeros_like(particles)              # hand derivation: dE/dr2 * 2 d
    for i in range(40):
        for j in range(40):
            d = particles[i] - particles[j]
            r2 = d @ d
            if j != i and r2 < 9.0:
                s6 = (1.0 / r2) ** 3
                expected[i] += -24.0 * (2 * s6 * s6 - s6) / r2 * d
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-9)


@pytest.mark.slow
def test_vmap_of_jvp_through_branches_matches_finite_differences():
    x = np.linspace(-2.0, 2.0, 24)
    y = np.linspace(0.5, 1.5, 24)
    primal, tangent = jit(vmap(jvp(K.softplus_scaled)), backend="cuda")(
        x, y, np.ones(24), np.zeros(24))
    np.testing.assert_allclose(primal, [K.softplus_scaled(a, b) for a, b in zip(x, y)])
    slope = [numerical_grad(lambda t, b=b: K.softplus_scaled(t, b), (a,))
             for a, b in zip(x, y)]
    np.testing.assert_allclose(tangent, slope, rtol=1e-6)


@pytest.mark.slow
def test_vmap_kernel_runs_while_loops_with_break_per_thread():
    starts = np.arange(1, 40)
    steps = cuda_jit(vmap(K.collatz_steps, in_axes=(0, None)), threads_per_block=8,
                     blocks=2)                       # grid-stride: 16 threads, 39 elements
    got = steps(starts, 30)
    np.testing.assert_array_equal(got, [K.collatz_steps(int(n), 30) for n in starts])


@pytest.mark.slow
def test_vmap_kernel_with_elif_local_array_and_two_outputs():
    rows = np.random.default_rng(1).normal(0.0, 1.5, (12, 9))
    largest, buckets = jit(vmap(K.bucket_stats), backend="cuda")(rows)
    expected = [K.bucket_stats(r) for r in rows]
    np.testing.assert_allclose(largest, [e[0] for e in expected])
    np.testing.assert_allclose(buckets, np.array([e[1] for e in expected]))


@pytest.mark.slow
def test_vmap_of_grad_records_tapes_for_loops_and_overwritten_elements():
    x = np.linspace(-1.0, 1.0, 10)
    w = np.linspace(0.5, 2.0, 10)
    recur = jit(vmap(grad(K.recurrence), in_axes=(0, 0, None)), static_argnums=2,
                backend="cuda")(x, w, 5)
    fd = [numerical_grad(lambda t, b=b: K.recurrence(t, b, 5), (a,)) for a, b in zip(x, w)]
    np.testing.assert_allclose(recur, fd, rtol=1e-5, atol=1e-9)
    scratch = jit(vmap(grad(K.scratch_product)), backend="cuda")(x, w)
    np.testing.assert_allclose(scratch, 28.0 * x * w * w)   # d/dx of 14 x^2 w^2
    permuted = jit(vmap(grad(K.scratch_permuted)), backend="cuda")(x, w)
    np.testing.assert_allclose(permuted, 28.0 * x * w * w)


def test_elementwise_kernel_broadcasts_like_a_ufunc():
    x = np.linspace(-3.0, 3.0, 12).reshape(3, 4)
    y = np.array([0.5, 1.0, 1.5, 2.0])
    got = jit(K.softplus_scaled, backend="cuda")(x, y)
    np.testing.assert_allclose(got, np.vectorize(K.softplus_scaled)(x, y))
    assert got.shape == (3, 4)


@pytest.mark.slow
def test_device_arrays_are_used_in_place_and_results_stay_on_device():
    from numba import cuda
    x = cuda.to_device(np.linspace(-1.0, 1.0, 16))
    got = jit(K.gelu, backend="cuda")(x)
    assert hasattr(got, "copy_to_host")
    np.testing.assert_allclose(got.copy_to_host(),
                               [K.gelu(v) for v in np.linspace(-1.0, 1.0, 16)])


@pytest.mark.slow
def test_cuda_kernel_agrees_with_the_cpu_backend():
    x = np.linspace(-2.0, 2.0, 16)
    y = np.linspace(0.5, 1.5, 16)
    batched = vmap(K.softplus_scaled)
    np.testing.assert_allclose(jit(batched, backend="cuda")(x, y), jit(batched)(x, y))


@pytest.mark.slow
def test_order_book_kernel_writes_each_book_in_place():
    from benchmarks.workloads import book_inputs, book_step
    bid, ask, msg_type, side, level, qty = book_inputs(24, 1, seed=1)
    message = (msg_type[:, 0], side[:, 0], level[:, 0], qty[:, 0])
    books = (bid.copy(), ask.copy())
    filled = jit(vmap(book_step), backend="cuda")(*books, *message)
    expected_books = (bid.copy(), ask.copy())
    expected = [book_step(expected_books[0][k], expected_books[1][k], *(m[k] for m in message))
                for k in range(24)]
    np.testing.assert_array_equal(filled, expected)
    np.testing.assert_array_equal(books[0], expected_books[0])
    np.testing.assert_array_equal(books[1], expected_books[1])
    assert (books[0] != bid).any() or (books[1] != ask).any()


@pytest.mark.slow
def test_per_example_gradients_of_an_mlp_match_a_hand_derivation():
    (W1, b1, W2, b2), X, Y = K.mlp_params(6, 5, 3, 10)
    per_example = jit(vmap(grad(K.mlp_loss, argnums=(0, 1, 2, 3)),
                           in_axes=(None, None, None, None, 0, 0)), backend="cuda")
    gW1, gb1, gW2, gb2 = per_example(W1, b1, W2, b2, X, Y)
    assert gW1.shape == (10, 5, 6) and gW1.dtype == np.float32
    for k in range(10):                       # backpropagation by hand, in float64
        x = X[k].astype(np.float64)
        h = np.tanh(W1 @ x + b1)
        logits = W2 @ h + b2
        p = np.exp(logits - logits.max())
        p /= p.sum()
        p[Y[k]] -= 1.0
        dh = (W2.T @ p) * (1 - h * h)
        np.testing.assert_allclose(gW2[k], np.outer(p, h), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(gb2[k], p, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(gW1[k], np.outer(dh, x), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(gb1[k], dh, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_periodic_lennard_jones_forces_match_the_numba_peer():
    from benchmarks import peers, workloads
    pos, eps, sigma, box, rcut = workloads.lj_inputs(27)
    gradient = jit(vmap(grad(K.periodic_particle_energy),
                        in_axes=(0, None, 0, None, None, None, None)), backend="cuda")
    got = gradient(pos, pos, np.arange(27), eps, sigma, box, rcut)
    np.testing.assert_allclose(-got, peers.lj_forces_numba(pos, eps, sigma, box, rcut),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.slow
def test_called_helpers_and_their_adjoints_run_as_device_functions():
    x = np.linspace(-1.0, 1.5, 12)
    w = np.linspace(0.2, 1.2, 12)
    values = jit(vmap(K.clipped_energy), backend="cuda")(x, w)
    np.testing.assert_allclose(values, [K.clipped_energy(a, b) for a, b in zip(x, w)])
    slopes = jit(vmap(grad(K.clipped_energy)), backend="cuda")(x, w)
    fd = [numerical_grad(lambda t, b=b: K.clipped_energy(t, b), (a,)) for a, b in zip(x, w)]
    np.testing.assert_allclose(slopes, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.slow
def test_in_axes_and_out_axes_other_than_zero():
    matrix = np.arange(15.0).reshape(3, 5) ** 1.5
    got = jit(vmap(K.centered, in_axes=1, out_axes=1), backend="cuda")(matrix)
    np.testing.assert_allclose(got, matrix - matrix.mean(axis=0))


@pytest.mark.slow
def test_small_arrays_built_from_scalars_become_local_arrays():
    x = np.linspace(-1.0, 1.0, 9)
    y = np.linspace(0.0, 2.0, 9)
    got = jit(vmap(K.spring_energy, in_axes=(0, 0, None)), backend="cuda")(x, y, 3.0)
    np.testing.assert_allclose(got, [K.spring_energy(a, b, 3.0) for a, b in zip(x, y)])


@pytest.mark.slow
def test_loop_carried_matrix_vector_products():
    rng = np.random.default_rng(3)
    W = rng.normal(size=(4, 4))
    X = rng.normal(size=(6, 4))
    got = jit(vmap(K.power_iteration, in_axes=(None, 0, None)), static_argnums=2,
              backend="cuda")(W, X, 6)
    expected = []
    for x in X:
        for _ in range(6):
            x = W @ x
            x = x / np.linalg.norm(x)
        expected.append(x)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_registry_primitives_and_their_gradients_run_in_kernels():
    x = np.linspace(-1.5, 1.5, 16)
    np.testing.assert_allclose(jit(K.registry_additions, backend="cuda")(x),
                               [K.registry_additions(v) for v in x], rtol=1e-12)
    slopes = jit(vmap(grad(K.registry_additions)), backend="cuda")(x)
    oracle = np.vectorize(K.registry_additions)
    np.testing.assert_allclose(slopes, numerical_jvp(oracle, (x,), (np.ones_like(x),)), rtol=1e-6)


@pytest.mark.slow
def test_every_registered_cuda_form_matches_numpy(tmp_path):
    """Generated from the registry: each elementwise function users call with a CUDA
    form, as a kernel of its own, against the function itself."""
    import importlib.util
    from transformer.primitives import registry
    registry.load_all()          # scipy.special's functions are described once imported
    found = {r.name: r for r in registry.records() if registry.is_user_facing(r.key) and
             r.kind in ("elementwise", "binary elementwise") and r.supports("cuda")}
    lines = ["import math", "import numpy", "import scipy.special", ""]
    for k, name in enumerate(sorted(found)):
        params = "x" if found[name].kind == "elementwise" else "x, y"
        lines += [f"def f{k}({params}):", f"    return {name}({params})", ""]
    path = tmp_path / "cuda_forms.py"
    path.write_text("\n".join(lines))
    spec = importlib.util.spec_from_file_location("cuda_forms", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    x, y = np.linspace(0.2, 0.8, 8), np.linspace(0.3, 0.9, 8)
    for k, name in enumerate(sorted(found)):
        args = (x + 1.0 if "acosh" in name or "arccosh" in name else x,)
        args += (y,) if found[name].kind != "elementwise" else ()
        got = jit(getattr(module, f"f{k}"), backend="cuda")(*args)
        expected = [found[name].key(*(a[i] for a in args)) for i in range(8)]
        np.testing.assert_allclose(got, np.asarray(expected, dtype=float), rtol=1e-12,
                                   err_msg=name)
