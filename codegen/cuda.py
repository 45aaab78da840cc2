"""CUDA kernel modules: load their text, launch them, type-check them to PTX.

`transformer.cuda` lowers a function to the text of a kernel module and describes it as
a `Kernel` (its text and namespace, the name of the kernel, the Specs of one element's
results, the broadcast shape or batch axis); this module takes it from there. Modules are
content-addressed on disk like the CPU backend's, and equal text is loaded (and compiled
by numba-cuda at its first launch) once per process. NumPy arguments are copied to the
device and the results back; Numba device arrays and objects with
`__cuda_array_interface__` are used in place, and then the results stay on the device.
Nothing here imports `transformer`.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import types

import numpy as np

from . import modules
from .backends import Compiled
from .errors import TransformError

DEFAULT_THREADS = 128
MAX_BLOCKS = 65535


class CudaUnavailableError(RuntimeError):
    """`backend="cuda"` was asked for where kernels cannot run; the message says why."""


def unavailable_reason() -> str | None:
    """Why CUDA kernels cannot run here, or None when they can (a GPU or the simulator)."""
    if importlib.util.find_spec("numba_cuda") is None:
        return ("backend='cuda' needs the numba-cuda package, which is not installed: "
                "pip install 'secant[cuda]'")
    import numba
    if numba.config.ENABLE_CUDASIM:
        return None
    from numba import cuda
    if not cuda.is_available():
        return ("backend='cuda' found numba-cuda but no usable CUDA GPU or driver on this "
                "machine; run on a machine with an NVIDIA GPU, or set NUMBA_ENABLE_CUDASIM=1 "
                "before Python starts to run kernels on the (slow) CPU simulator")
    return None


def simulated() -> bool:
    import numba
    return bool(numba.config.ENABLE_CUDASIM)


@dataclasses.dataclass(frozen=True)
class Launch:
    """Threads per block and blocks; None picks them from the number of elements."""

    threads_per_block: int | None = None
    blocks: int | None = None

    def config(self, elements: int) -> tuple[int, int]:
        threads = self.threads_per_block or DEFAULT_THREADS
        blocks = self.blocks or max(1, min(MAX_BLOCKS, -(-elements // threads)))
        return blocks, threads


@dataclasses.dataclass
class Kernel:
    """A kernel module and what launching it needs to know."""

    text: str
    namespace: dict
    name: str
    outputs: list            # Spec (dtype, shape) of one element's results
    is_tuple: bool
    shape: tuple | None      # elementwise: the broadcast shape; batched: None
    out_axis: int | None
    written: frozenset = frozenset()   # parameters the kernel writes in place
    function: object = None
    flagged: bool = False    # takes an error flag last (`transformer.error_flags`)


FLAG_LENGTH = 4     # an error flag: int64 [site, index, axis, size], -1 while nothing failed


def new_flag() -> np.ndarray:
    """A host error flag recording no failure."""
    return np.full(FLAG_LENGTH, -1, np.int64)


# ---------------------------------------------------------------- loading

_kernels_loaded: dict = {}
_devices: dict = {}


def load_kernel(kernel: Kernel):
    """The kernel dispatcher of `kernel`'s module; equal text is loaded (and compiled) once."""
    key = modules.content_hash(kernel.text)
    if key not in _kernels_loaded:
        module = modules.load_module(kernel.text, kernel.namespace)
        _kernels_loaded[key] = getattr(module, kernel.name)
    return _kernels_loaded[key]


def load_device_function(text: str, namespace: dict, name: str) -> Compiled:
    """The `cuda.jit(device=True)` function `name` of module `text`; loaded once per text."""
    key = modules.content_hash(text)
    if key not in _devices:
        module = modules.load_module(text, namespace)
        _devices[key] = Compiled(getattr(module, name), text, module.__file__, key)
    return _devices[key]


# ---------------------------------------------------------------- launching

def is_device_array(value) -> bool:
    return hasattr(value, "copy_to_host") or hasattr(value, "__cuda_array_interface__")


def launch(kernel: Kernel, arguments, size: int, config: Launch, timing=None,
           check_flag=None):
    """Run `kernel` over `size` elements and return its results.

    `arguments` are the call's dynamic arguments in kernel order, each with `name`,
    `value`, `spec` (`is_array`) and `on_device`. A `timing` (`compile_log`) is given at
    the kernel's first launch, where numba-cuda compiles it (the launch itself is
    asynchronous; the simulator compiles nothing). A `flagged` kernel gets a fresh error
    flag, which `check_flag` reads (and raises from) before anything is copied back, so a
    failed call leaves no writes in the caller's arrays.
    """
    from numba import cuda
    first = timing is not None and not simulated()
    if kernel.out_axis not in (0, None) and any(a.on_device for a in arguments):
        raise TransformError(f"out_axes={kernel.out_axis} with device arrays: backend="
                             "'cuda' returns device results batched along axis 0",
                             hint="use out_axes=0 and transpose the result")
    outputs = [cuda.device_array((size,) + spec.shape, spec.dtype)
               for spec in kernel.outputs]
    values = [_to_device(a.value, cuda) if a.spec.is_array else a.value
              for a in arguments]
    flag = [cuda.to_device(new_flag())] if kernel.flagged else []
    if size:
        blocks, threads = config.config(size)
        with timing.compiling_in_numba() if first else contextlib.nullcontext():
            kernel.function[blocks, threads](*values, *outputs, *flag)
    for recorded in flag:
        if check_flag is not None:
            check_flag(recorded)
    for argument, value in zip(arguments, values):
        if argument.name in kernel.written and not argument.on_device:
            _copy_back(value, argument.value)
    return _results(kernel, outputs, arguments)


def _results(kernel: Kernel, outputs, arguments):
    on_device = any(a.on_device for a in arguments)
    results = []
    for out, spec in zip(outputs, kernel.outputs):
        if kernel.shape is not None:        # elementwise: the broadcast shape
            out = out.reshape(kernel.shape + spec.shape)
        if not on_device:
            out = out.copy_to_host()
            if kernel.out_axis not in (0, None):
                out = np.moveaxis(out, 0, kernel.out_axis)
        results.append(out)
    return tuple(results) if kernel.is_tuple else results[0]


def _to_device(value, cuda):
    if hasattr(value, "copy_to_host"):
        return value
    if hasattr(value, "__cuda_array_interface__"):
        return cuda.as_cuda_array(value)
    return cuda.to_device(np.ascontiguousarray(value))


def _copy_back(device_array, host):
    """Bring in-place writes to a NumPy argument back into that argument."""
    if isinstance(host, np.ndarray) and host.flags.c_contiguous:
        device_array.copy_to_host(host)
    elif isinstance(host, np.ndarray):
        host[...] = device_array.copy_to_host()


# ---------------------------------------------------------------- PTX

def compile_ptx(kernel: Kernel, values, cc: tuple, fastmath: bool) -> str:
    """PTX of `kernel` for arguments `values` (arrays, device arrays or numbers): a full
    type check, no GPU needed (numba-cuda with NVVM and NVRTC, no simulator)."""
    from numba import cuda
    function = load_kernel(kernel)
    argtypes = [_numba_type(v) for v in values]
    argtypes += [_output_type(spec) for spec in kernel.outputs]
    argtypes += [_numba_type(new_flag())] if kernel.flagged else []
    with _compute_capability(cc):
        text, _ = cuda.compile_ptx(function.py_func, tuple(argtypes), cc=cc,
                                   fastmath=fastmath)
    return text


def _numba_type(value):
    import numba
    if hasattr(value, "copy_to_host"):
        value = value.copy_to_host()
    if isinstance(value, np.ndarray):
        value = np.ascontiguousarray(value)
    return numba.typeof(value)


def _output_type(spec):
    import numba
    return numba.types.Array(numba.from_dtype(spec.dtype), 1 + len(spec.shape), "C")


@contextlib.contextmanager
def _compute_capability(cc):
    """Type device-function calls for `cc` without asking a driver for the device.

    numba-cuda reads the current device's compute capability when a kernel calls a
    `cuda.jit(device=True)` function; with no GPU there is none, so answer with `cc`.
    """
    from numba.cuda import dispatcher
    original = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)
    try:
        yield
    finally:
        dispatcher.get_current_device = original
