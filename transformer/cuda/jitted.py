"""`jit(..., backend="cuda")`: Numba CUDA kernels, one GPU thread per element.

Two kinds of kernel come out of a function:
- a *batched* kernel for `jit(vmap(f, in_axes, out_axes), backend="cuda")`: each thread
  runs the per-element function `f` (a `cuda.jit(device=True)` function) on one batch
  element, in a grid-stride loop, so its branches and loops stay real per thread;
- an *elementwise* kernel for `jit(f, backend="cuda")` of a scalar function: its array
  arguments are broadcast against each other, like a CUDA ufunc.

A kernel is compiled per specialization: static argument values and the dtype and shape
every thread sees are folded into its source (`transformer.cuda.emit` rewrites the
function into the CUDA dialect: local arrays, loops, `math.*`, typed constants). The
structure of the outputs is read from one run of the per-element function on the first
element with the plain-Python backend. Loading and launching the kernel module, and the
copies to and from the device, are `codegen.cuda`'s part.

A batched object is anything with `__secant_vmap__()` returning `(per_element_fun,
in_axes, out_axes)`, or with `fun`, `in_axes` and `out_axes` attributes and a `label`
starting with "vmap" (what `transformer.vmap` returns).
"""
from __future__ import annotations

import dataclasses
import functools
import inspect

import numpy as np

from codegen import compile_log
from codegen import cuda as loader
from codegen.cuda import (CudaUnavailableError, Kernel, Launch, is_device_array,
                          unavailable_reason)
from transformer.display import ShowsSource
from transformer.errors import TransformError
from transformer.frontend import parse
from transformer.index_checks import raise_flagged
from transformer.function import Function, signature

from .kernel import Argument, build_kernel, thread_spec, working_precision
from .types import Spec, spec_of_value

def cuda_jit(fun, *, static_argnums=(), static_argnames=(), fastmath: bool = False,
             threads_per_block: int | None = None, blocks: int | None = None,
             boundscheck: bool = True):
    """`fun` compiled to CUDA kernels on first call; see the module docstring."""
    return CudaJitted(fun, static_argnums, static_argnames, fastmath,
                      Launch(threads_per_block, blocks), boundscheck)


def show_cuda(fun, *args, **kwargs) -> str:
    """The kernel module text of `fun` (or of `jit(fun, backend="cuda")`) for `args`."""
    jitted = fun if isinstance(fun, CudaJitted) else cuda_jit(fun)
    return jitted.source(*args, **kwargs)


@dataclasses.dataclass(frozen=True)
class Batch:
    """The per-element function of a vmap and its axes."""

    fun: object
    in_axes: object
    out_axes: object


def batch_of(fun) -> Batch | None:
    """The Batch behind a vmapped object, or None for a plain function."""
    protocol = getattr(fun, "__secant_vmap__", None)
    if protocol is not None:
        return Batch(*protocol())
    if str(getattr(fun, "label", "")).startswith("vmap") and hasattr(fun, "in_axes"):
        return Batch(fun.fun, fun.in_axes, getattr(fun, "out_axes", 0))
    return None


# ---------------------------------------------------------------- the jitted object

class CudaJitted(ShowsSource):
    """A function compiled to CUDA kernels per specialization; call it like the original."""

    def __init__(self, fun, static_argnums, static_argnames, fastmath, launch: Launch,
                 boundscheck: bool = True):
        self.fun = fun
        self.batch = batch_of(fun)
        self.fastmath = fastmath
        self.boundscheck = boundscheck      # index checks set an error flag (.checks)
        self.launch = launch
        self._static_argnums = _as_tuple(static_argnums)
        self._static_argnames = _as_tuple(static_argnames)
        self._kernels: dict = {}
        self._last = None
        functools.update_wrapper(self, fun, updated=())

    def with_launch(self, threads_per_block: int | None = None, blocks: int | None = None):
        """The same kernels launched with other threads per block / blocks."""
        other = CudaJitted(self.fun, self._static_argnums, self._static_argnames,
                           self.fastmath, Launch(threads_per_block, blocks), self.boundscheck)
        other._kernels = self._kernels
        return other

    @functools.cached_property
    def element_function(self) -> Function:
        return parse(self.batch.fun if self.batch else self.fun)

    @functools.cached_property
    def signature(self) -> inspect.Signature:
        return signature(self.element_function)

    @functools.cached_property
    def static_names(self) -> frozenset:
        names = list(self.signature.parameters)
        return frozenset([names[i] for i in self._static_argnums] + list(self._static_argnames))

    def _in_axes(self) -> dict:
        names = [n for n in self.signature.parameters]
        axes = self.batch.in_axes
        if not isinstance(axes, (tuple, list)):
            axes = (axes,) * len(names)
        if len(axes) != len(names):
            raise TransformError(f"in_axes {self.batch.in_axes!r} has {len(axes)} entries "
                                 f"but {self.__name__} takes {len(names)} arguments")
        return dict(zip(names, axes))

    # ------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        reason = unavailable_reason()
        if reason:
            raise CudaUnavailableError(reason)
        static, arguments, size = self._bind(args, kwargs)
        if self._key(static, arguments) in self._kernels:
            return loader.launch(self._kernel(static, arguments), arguments, size,
                                 self.launch, check_flag=raise_flagged)
        with compile_log.compiling(self.__name__, "cuda") as timing:
            with timing.transforming():
                kernel = self._kernel(static, arguments)
            return loader.launch(kernel, arguments, size, self.launch, timing,
                                 check_flag=raise_flagged)

    def _bind(self, args, kwargs):
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        static, dynamic = {}, []
        for param, value in bound.arguments.items():
            if param in self.static_names:
                static[param] = value
            else:
                dynamic.append((param, value))
        float_dtype = working_precision([v for _, v in dynamic])
        if self.batch is not None:
            return (static, *self._batched(dynamic, float_dtype))
        return (static, *self._broadcast(dynamic, float_dtype))

    def _argument(self, param, value, float_dtype, axis) -> Argument:
        on_device = is_device_array(value)
        if isinstance(value, float) or (isinstance(value, np.floating) and not on_device):
            value = float_dtype.type(value)
        elif not on_device and not isinstance(value, (bool, int, np.generic)):
            value = np.asarray(value)
        spec = spec_of_value(value, float_dtype)
        if spec is None:
            raise TransformError(f"argument {param!r} of {self.__name__} is a "
                                 f"{type(value).__name__}; CUDA kernels take arrays and "
                                 "numbers", hint="pass NumPy or device arrays, or numbers")
        return Argument(param, value, spec, axis, on_device)

    def _batched(self, dynamic, float_dtype):
        axes = self._in_axes()
        arguments, sizes = [], set()
        for param, value in dynamic:
            axis = axes[param]
            if axis is not None and (not isinstance(axis, (int, np.integer)) or
                                     isinstance(axis, bool)):
                raise TransformError(f"in_axes entry {axis!r} for {param!r}: backend='cuda' "
                                     "maps arrays over one integer axis (or None)",
                                     hint="pass the leaves of a container as separate "
                                          "arguments")
            argument = self._argument(param, value, float_dtype, axis)
            if axis is not None:
                if not argument.spec.is_array:
                    raise TransformError(f"in_axes asks to batch argument {param!r} of "
                                         f"{self.__name__} over axis {axis}, but it is a "
                                         "scalar", hint="use None in in_axes for it")
                axis = axis % len(argument.spec.shape)
                argument = dataclasses.replace(argument, axis=axis)
                sizes.add(argument.spec.shape[axis])
            arguments.append(argument)
        if len(sizes) != 1:
            raise TransformError(f"vmap of {self.__name__}: batched arguments must share "
                                 f"one batch size, got sizes {sorted(sizes) or 'none'}")
        if 0 in sizes:      # the kernel is typed from a run on the first element
            raise TransformError(f"vmap of {self.__name__} with backend='cuda' got an empty "
                                 "batch", hint="call it with at least one element")
        return arguments, sizes.pop()

    def _broadcast(self, dynamic, float_dtype):
        arguments = [self._argument(p, v, float_dtype, None) for p, v in dynamic]
        try:
            shape = np.broadcast_shapes(*[a.spec.shape for a in arguments])
        except ValueError:
            shapes = ", ".join(f"{a.name}: {a.spec.shape}" for a in arguments)
            raise TransformError(f"the array arguments of {self.__name__} do not broadcast "
                                 f"together ({shapes})") from None
        return arguments, int(np.prod(shape))

    # ------------------------------------------------------------ compiling
    def _key(self, static, arguments):
        """What the kernel text depends on: a batched kernel not on the batch size."""
        shape = (lambda a: a.spec.shape) if self.batch is None else \
            (lambda a: thread_spec(a).shape)
        layout = tuple((a.name, a.spec.dtype.str, shape(a), a.axis, a.on_device)
                       for a in arguments)
        return tuple(sorted((k, repr(v)) for k, v in static.items())), layout

    def _kernel(self, static, arguments) -> "Kernel":
        key = self._key(static, arguments)
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = build_kernel(self, static, arguments, probe=True)
            kernel.function = loader.load_kernel(kernel)
            self._kernels[key] = kernel
        self._last = kernel
        return kernel

    # ------------------------------------------------------------ inspecting
    def ptx(self, *args, cc: tuple = (7, 5), **kwargs) -> str:
        """PTX of the kernel for a call with `args`: a full type check, no GPU needed.

        Needs numba-cuda with NVVM and NVRTC (the nvidia-nvvm and nvidia-cuda-nvrtc wheels)
        and a process without the simulator.
        """
        static, arguments, _ = self._bind(args, kwargs)
        kernel = build_kernel(self, static, arguments, probe=True)
        return loader.compile_ptx(kernel, [a.value for a in arguments], cc, self.fastmath)

    def source(self, *args, **kwargs) -> str:
        """The kernel module for a call with `args`.

        Given only static values (`source(n=3)`, as `transformer.source` passes them), or
        nothing, the kernel of the last call is shown, or else one where each thread
        sees float64 scalars (a vmap over axis 0 of 1-D arrays).
        """
        if args or set(kwargs) - self.static_names:
            static, arguments, _ = self._bind(args, kwargs)
            return build_kernel(self, static, arguments, probe=True).text
        if self._last is not None and not kwargs:
            return self._last.text
        arguments = [Argument(p, 0.0, Spec(np.dtype(np.float64), (1,)),
                              0 if self.batch else None, False)
                     for p in self.signature.parameters if p not in self.static_names]
        return build_kernel(self, dict(kwargs), arguments, probe=False).text

    def __repr__(self):
        return f"<secant.jit {self.__name__} backend=cuda>"


def _as_tuple(value) -> tuple:
    if value is None:
        return ()
    return (value,) if isinstance(value, (int, str)) else tuple(value)


__all__ = ["CudaJitted", "CudaUnavailableError", "cuda_jit", "show_cuda"]
