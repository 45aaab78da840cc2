"""CUDA kernels compiled to PTX (real Numba typing, no GPU needed), kernel source, errors.

PTX compilation needs NVVM and NVRTC (the nvidia-nvvm and nvidia-cuda-nvrtc wheels); the
tests that need them are skipped with the reason where they are not installed. The
simulator runs kernels but checks no types, so these are the tests that catch a float64
constant in float32 code or a NumPy call Numba's CUDA target lacks.
"""
import importlib.util

import numba
import numpy as np
import pytest

import cuda_kernels as K
from cuda_support import needs_numba_cuda, ptx_missing
from codegen import cuda as secant_cuda
from codegen.cuda import CudaUnavailableError
from transformer import TransformError, grad, jit, jvp, vmap
from transformer.cuda.jitted import cuda_jit, show_cuda

PTX_MISSING = ptx_missing()
needs_ptx = pytest.mark.skipif(PTX_MISSING is not None, reason=PTX_MISSING or "")


@pytest.fixture(scope="module")
def positions():
    return np.random.default_rng(0).uniform(0.0, 4.0, (32, 3)).astype(np.float32)


# ---------------------------------------------------------------- PTX: real typing

@needs_ptx
def test_float32_kernel_compiles_without_any_float64_arithmetic(positions):
    energies = jit(vmap(K.particle_energy, in_axes=(0, None, 0, None, None)),
                   backend="cuda")
    ptx = energies.ptx(positions, positions, np.arange(32), np.float32(1.0), 1.0)
    assert ".entry" in ptx
    assert ".f64" not in ptx                      # typed constants kept it float32


@needs_ptx
@pytest.mark.slow
def test_gradient_kernels_compile_to_ptx(positions):
    forces = jit(vmap(grad(K.particle_energy), in_axes=(0, None, 0, None, None)),
                 backend="cuda")
    assert ".entry" in forces.ptx(positions, positions, np.arange(32), np.float32(1.0),
                                  np.float32(1.0))
    periodic = jit(vmap(grad(K.periodic_particle_energy),
                        in_axes=(0, None, 0, None, None, None, None)), backend="cuda")
    one = np.float32(1.0)
    ptx = periodic.ptx(positions, positions, np.arange(32), one, one, np.float32(4.0),
                       np.float32(2.5))
    assert ".f64" not in ptx                      # np.round is a float32 rint
    recur = jit(vmap(grad(K.recurrence), in_axes=(0, 0, None)), static_argnums=2,
                backend="cuda")
    x = np.linspace(-1.0, 1.0, 8)
    assert ".entry" in recur.ptx(x, x, 6)
    assert "h_tape = cuda.local.array(7, float64)" in recur.source(x, x, 6)  # 1 + 6 pushes
    scratch = jit(vmap(grad(K.scratch_product)), backend="cuda")
    assert ".entry" in scratch.ptx(x, x)
    helpers = jit(vmap(grad(K.clipped_energy)), backend="cuda")
    assert ".entry" in helpers.ptx(x, x)


@pytest.mark.slow
@needs_ptx
def test_control_flow_jvp_and_elementwise_kernels_compile_to_ptx():
    x = np.linspace(-2.0, 2.0, 8)
    assert ".entry" in jit(vmap(jvp(K.softplus_scaled)), backend="cuda").ptx(x, x, x, x)
    assert ".entry" in cuda_jit(vmap(K.collatz_steps, in_axes=(0, None))).ptx(
        np.arange(1, 9), 20)
    assert ".entry" in jit(vmap(K.bucket_stats), backend="cuda").ptx(x.reshape(2, 4))
    assert ".entry" in jit(vmap(K.spring_energy, in_axes=(0, 0, None)), backend="cuda").ptx(
        x, x, 2.0)
    ptx = jit(K.gelu, backend="cuda").ptx(x.astype(np.float32).reshape(2, 4))
    assert ".entry" in ptx and ".f64" not in ptx


# ---------------------------------------------------------------- kernel source

def test_kernel_source_uses_math_local_arrays_and_typed_constants(positions):
    text = show_cuda(vmap(grad(K.particle_energy), in_axes=(0, None, 0, None, None)),
                     positions, positions, np.arange(32), np.float32(1.0), np.float32(1.0))
    assert "@cuda.jit(device=True)" in text and "cuda.grid(1)" in text
    assert "cuda.local.array(3, float32)" in text
    assert "float32(9.0)" in text                 # the cutoff constant stays float32
    assert "np." not in text.split("@cuda.jit", 1)[1]
    elementwise = show_cuda(K.softplus_scaled)   # no arguments: scalar float64 elements
    assert "math.exp" in elementwise and "math.log1p" in elementwise


def test_transformer_source_prints_the_kernel_with_static_values_folded():
    import transformer
    jitted = jit(vmap(K.collatz_steps), static_argnames=("limit",), backend="cuda")
    text = transformer.source(jitted, limit=7)
    assert "jit(backend='cuda', limit=7)" in text
    assert "steps >= 7" in text and "def collatz_steps_kernel(n0, out0):" in text


def test_a_product_never_reads_the_local_array_it_writes():
    # each cuda.local.array statement is one piece of memory reused on every loop trip
    W, x = np.eye(4), np.ones((3, 4))
    text = jit(vmap(K.power_iteration, in_axes=(None, 0, None)), static_argnums=2,
               backend="cuda").source(W, x, 3)
    assert "h_copy[i0] = h[i0]" in text
    assert "W_elt * h_copy_elt" in text


def test_fastmath_reaches_the_kernel_and_device_function_decorators():
    text = cuda_jit(K.gelu, fastmath=True).source(np.ones(3, np.float32))
    assert "@cuda.jit(device=True, fastmath=True)" in text
    assert "@cuda.jit(fastmath=True)" in text and "fastmath=True)" in text.splitlines()[1]


def test_size_unknown_at_compile_time_names_the_variable():
    batched = jit(vmap(K.sized_by_argument, in_axes=(0, None)), backend="cuda")
    with pytest.raises(TransformError, match="'buf'") as info:
        batched.source(np.ones(4), 3)
    assert "static_argnums" in str(info.value)
    # made static, the same size is a compile-time constant
    static = jit(vmap(K.sized_by_argument, in_axes=(0, None)), static_argnums=1,
                 backend="cuda")
    assert "cuda.local.array(3, float64)" in static.source(np.ones(4), 3)


def test_gradient_through_while_names_the_taped_variable():
    batched = jit(vmap(grad(K.damped)), backend="cuda")
    with pytest.raises(TransformError, match="tape of 'w_times_h'.*while loop"):
        batched.source(np.full(4, 0.5), np.full(4, 0.5))


# ---------------------------------------------------------------- availability

@needs_numba_cuda
def test_call_without_gpu_says_what_is_missing():
    from numba import cuda
    if numba.config.ENABLE_CUDASIM or cuda.is_available():
        pytest.skip("a GPU or the simulator is available here")
    with pytest.raises(CudaUnavailableError, match="no usable CUDA GPU"):
        jit(K.gelu, backend="cuda")(np.ones(4))


def test_call_without_numba_cuda_says_how_to_install(monkeypatch):
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(secant_cuda.importlib.util, "find_spec",
                        lambda name, *a: None if name == "numba_cuda" else find_spec(name, *a))
    with pytest.raises(CudaUnavailableError, match=r"pip install 'secant\[cuda\]'"):
        jit(K.gelu, backend="cuda")(np.ones(4))


@needs_ptx
@pytest.mark.slow
def test_per_example_mlp_gradients_compile_to_float32_ptx():
    (W1, b1, W2, b2), X, Y = K.mlp_params(12, 8, 5, 4)
    per_example = jit(vmap(grad(K.mlp_loss, argnums=(0, 1, 2, 3)),
                           in_axes=(None, None, None, None, 0, 0)), backend="cuda")
    ptx = per_example.ptx(W1, b1, W2, b2, X, Y)
    assert ".entry" in ptx and ".f64" not in ptx


def test_per_thread_local_memory_over_the_cuda_limit_is_refused():
    (W1, b1, W2, b2), X, Y = K.mlp_params(784, 256, 10, 2)
    per_example = jit(vmap(grad(K.mlp_loss, argnums=(0, 1, 2, 3)),
                           in_axes=(None, None, None, None, 0, 0)), backend="cuda")
    with pytest.raises(TransformError, match=r"'bW1', is 802,816 bytes"):
        per_example.source(W1, b1, W2, b2, X, Y)


def test_secant_show_prints_the_cuda_kernel(capsys):
    from pathlib import Path

    from codegen.cli import main
    target = f"{Path(K.__file__)}:collatz_steps"
    assert main(["show", target, "--vmap", "0,None", "--jit", "--backend", "cuda",
                 "--static", "limit=5"]) in (0, None)
    text = capsys.readouterr().out
    assert "def collatz_steps_kernel(n0, out0):" in text and "steps >= 5" in text
