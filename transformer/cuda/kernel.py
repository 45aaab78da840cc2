"""The kernel module behind `jit(..., backend="cuda")`: its text, its namespace, loading.

`build_kernel` turns the per-element Function of a CudaJitted (after static folding) and
the arguments of a call into one module: the CUDA-dialect device function
(`emit.to_cuda_dialect`) and a kernel that runs it in a grid-stride loop, one thread
per batch element (vmap) or per element of the broadcast shape (elementwise). What the
outputs of one element are (dtype, shape, a tuple or not) is learned by running the
per-element function once on the first element with the plain-Python backend. Callees
become `cuda.jit(device=True)` functions in modules of their own. `codegen.cuda` loads
the text (content-addressed on disk like the CPU backend's, equal text loaded once).
"""
from __future__ import annotations

import builtins
import dataclasses
import inspect
import types

import gast
import numpy as np

from transformer.errors import TransformError
from transformer.function import Function
from transformer.names import Namer, free_names
from transformer.specialize import specialize

from codegen import backends, emit
from codegen.cuda import Kernel, load_device_function, simulated
from ..materialize import compile_function
from .emit import to_cuda_dialect
from .refusals import missing_form_error
from .types import Callee, Spec, callee_function, spec_of_value


@dataclasses.dataclass(frozen=True)
class Argument:
    """One dynamic argument as the kernel sees it."""

    name: str
    value: object          # device array, or scalar
    spec: Spec             # what the whole argument is
    axis: int | None       # batched axis (vmap); None: every thread sees all of it
    on_device: bool        # it was given as a device array


def host_copy(value):
    return value.copy_to_host() if hasattr(value, "copy_to_host") else np.asarray(value)


def working_precision(values) -> np.dtype:
    """float32 when every floating argument is float32, else float64."""
    specs = [spec_of_value(v, np.float64) for v in values if not isinstance(v, float)]
    floats = {s.dtype for s in specs if s is not None and s.is_float}
    return np.dtype(np.float32) if floats == {np.dtype(np.float32)} else np.dtype(np.float64)


# ---------------------------------------------------------------- the kernel module

def thread_spec(argument: Argument) -> Spec:
    """What one thread sees of an argument."""
    spec = argument.spec
    if argument.axis is None:
        return spec
    shape = spec.shape[:argument.axis] + spec.shape[argument.axis + 1:]
    return Spec(spec.dtype, shape)


def build_kernel(jitted, static: dict, arguments: list, probe: bool) -> Kernel:
    """The kernel module of a call: `jitted` gives `element_function`, `batch` (None for an
    elementwise kernel) and `fastmath`; `probe` False assumes one float output."""
    fn = jitted.element_function
    if static:
        fn = specialize(fn, static)
    elementwise = jitted.batch is None
    specs = {a.name: (Spec(a.spec.dtype) if elementwise else thread_spec(a))
             for a in arguments}
    float_dtype = working_precision([np.empty(0, s.dtype) for s in specs.values()])
    if probe:
        outputs, is_tuple = _probe(fn, arguments, elementwise, float_dtype)
    else:
        outputs, is_tuple = [Spec(float_dtype)], False
    checks = getattr(jitted, "boundscheck", False)
    device = to_cuda_dialect(fn, specs, float_dtype, outputs, boundscheck=checks)
    writes = parameter_writes(device)
    if not elementwise:
        _refuse_shared_writes(device, arguments, writes)
    shape = tuple(np.broadcast_shapes(*[a.spec.shape for a in arguments])) \
        if elementwise else None
    out_axis = None if elementwise else _out_axis(jitted.batch.out_axes)
    text, namespace, kernel_name = _module(jitted, device, arguments, outputs, shape,
                                           float_dtype, static)
    return Kernel(text, namespace, kernel_name, outputs, is_tuple, shape, out_axis,
                  frozenset(writes),
                  flagged=len(device.params) > len(arguments) + len(outputs))


def parameter_writes(fn: Function) -> dict:
    """Each parameter whose elements `fn` may write on some path, directly, through a view
    or an alias, or passed to a device function writing it, mapped to the first statement
    writing it (`aliases.parameter_writes`: a name rebound to a new array on every path
    before the write leaves the caller's array as it was)."""
    from transformer.aliases import parameter_writes as writes_along_paths
    return writes_along_paths(fn, (), lambda call: _arguments_written_by(fn, call))


def _arguments_written_by(fn: Function, call: gast.Call) -> set:
    """The names passed to a device function (a `Callee`) that writes into them."""
    from transformer.desugar import view_sources
    callee = fn.env.get(call.func.id) if isinstance(call.func, gast.Name) else None
    if not isinstance(callee, Callee):
        return set()
    positions = _written_positions(callee.function, frozenset())
    return set().union(*(view_sources(fn, a) for k, a in enumerate(call.args)
                         if k in positions))


def _written_positions(function: Function, seen: frozenset) -> set:
    """Positions of the parameters `function` writes in place on some path, itself or
    through the functions it calls, read in the form its device function is emitted from
    (`p += v` on a parameter writes the caller's array)."""
    from transformer.aliases import parameter_writes as writes_along_paths
    from transformer.anf import anf
    from transformer.desugar import desugar, view_sources
    from transformer.function import resolve
    from transformer.param_updates import updates_in_place
    key = function.origin.describe()         # each call site parses its own Function
    if key in seen:                          # recursion: its writes are found at the top
        return set()
    fn = anf(desugar(updates_in_place(function)))

    def call_writes(call: gast.Call) -> set:
        target = resolve(fn, call.func, None)
        callee = callee_function(target) if target is not None else None
        if callee is None:
            return set()
        inner = _written_positions(callee, seen | {key})
        return set().union(*(view_sources(fn, a) for k, a in enumerate(call.args)
                             if k in inner))
    written = writes_along_paths(fn, (), call_writes)
    return {k for k, p in enumerate(fn.params) if p in written}


def _refuse_shared_writes(fn: Function, arguments, writes: dict) -> None:
    """Every thread of a batched kernel sees the same array of an argument not batched
    (in_axes None): its writes would race, where the cpu backend runs the elements in order."""
    for argument in arguments:
        if argument.axis is None and argument.spec.is_array and argument.name in writes:
            raise fn.origin.error(
                writes[argument.name], f"every CUDA thread writes {argument.name!r}, which "
                "all threads share (its in_axes entry is None): the writes would race",
                f"give each element its own copy (in_axes 0 over np.repeat({argument.name}"
                "[None], n, axis=0)), or return the values and combine them after the call")


def _out_axis(out_axes):
    axes = set(out_axes) if isinstance(out_axes, (tuple, list)) else {out_axes}
    if len(axes) != 1 or None in axes:
        raise TransformError(f"out_axes {out_axes!r} is not supported by backend='cuda'",
                             hint="use one integer out_axes for every output")
    return axes.pop()


def _first_element(argument: Argument, elementwise: bool):
    """A host copy of what the first thread sees of `argument` (only that is copied)."""
    value, spec = argument.value, argument.spec
    if not spec.is_array:
        return value
    if elementwise:
        if not int(np.prod(spec.shape)):
            return spec.dtype.type(0)
        item = value[(0,) * len(spec.shape)]
        return spec.dtype.type(item)
    if argument.axis is None:
        return host_copy(value).copy()       # the probe must not write into the caller's data
    part = value[(slice(None),) * argument.axis + (0,)]
    if not (hasattr(part, "copy_to_host") or isinstance(part, np.ndarray)):
        return spec.dtype.type(part)
    try:
        return np.array(host_copy(part))
    except ValueError:                   # a strided device view: copy the whole array
        return np.take(host_copy(value), 0, axis=argument.axis)


def _probe(fn: Function, arguments, elementwise, float_dtype):
    """Run `fn` on the first element with the Python backend: Specs of its results."""
    python = compile_function(fn, backends.Options(backend="python")).function
    firsts = [_first_element(a, elementwise) for a in arguments]
    try:
        result = python(*firsts)
    except Exception as exc:
        what = "one element of each array argument" if elementwise else "the first element"
        raise fn.origin.error(
            fn.node, f"running {fn.name} on {what} to learn its results failed: "
            f"{type(exc).__name__}: {exc}",
            "jit(f, backend='cuda') broadcasts a function of scalars; for a function of "
            "arrays, vmap it over the batch axis" if elementwise else None) from exc
    is_tuple = isinstance(result, tuple)
    outputs = []
    for item in (result if is_tuple else (result,)):
        item = np.asarray(item)
        dtype = item.dtype
        if dtype.kind == "f" and float_dtype == np.float32:
            dtype = np.dtype(np.float32)
        if dtype.kind not in "biuf":
            raise fn.origin.error(fn.node, f"{fn.name} returns a {item.dtype} value; CUDA "
                                  "kernels return numbers and arrays of numbers")
        outputs.append(Spec(dtype, item.shape))
    if elementwise and any(s.is_array for s in outputs):
        raise fn.origin.error(fn.node, f"jit({fn.name}, backend='cuda') broadcasts a scalar "
                              "function over arrays, but it returns an array per element",
                              hint="vmap it over the batch axis instead")
    return outputs, is_tuple


def _module(jitted, device: Function, arguments, outputs, shape, float_dtype, static):
    """The text of the kernel module, the namespace to bind, and the kernel's name."""
    imports, namespace, fingerprints = set(), {}, []
    _materialize_env(device, jitted.fastmath, float_dtype, imports, namespace, fingerprints,
                     boundscheck=getattr(jitted, "boundscheck", False))
    imports.add("from numba import cuda")
    flags = "(fastmath=True)" if jitted.fastmath else ""
    device_flags = "device=True, fastmath=True" if jitted.fastmath else "device=True"
    namer = Namer(set(device.params) | set(device.env) | {device.name})
    kernel_name = namer.fresh(f"{device.name}_kernel")
    kernel = _kernel_text(device, kernel_name, arguments, outputs, shape, namer)
    described = ", ".join(f"{a.name}: {_describe(a, shape is not None)}" for a in arguments)
    header = [
        f"# secant: generated from {device.origin.describe()}",
        f"# transforms: {' | '.join(device.chain + (_label(jitted, shape, static),))}",
        f"# backend: cuda{' (simulator)' if simulated() else ''}; secant {backends.VERSION}, "
        f"numba {_version('numba')}, numba-cuda {_version('numba_cuda')}, "
        f"numpy {np.__version__}",
        f"# each thread sees: {described or '(no arguments)'}; "
        f"working precision {float_dtype.name}",
        *fingerprints,
    ]
    text = "\n".join(header) + "\n" + "\n".join(sorted(imports)) + "\n\n\n"
    text += f"@cuda.jit({device_flags})\n" + emit.to_source(device.node) + "\n\n"
    text += f"@cuda.jit{flags}\n" + kernel
    return text, namespace, kernel_name


def _label(jitted, shape, static) -> str:
    options = "".join(f", {k}={v!r}" for k, v in sorted(static.items()))
    if jitted.fastmath:
        options += ", fastmath=True"
    if not getattr(jitted, "boundscheck", False):
        options += ", boundscheck=False"
    if shape is not None:
        return f"jit(backend='cuda', elementwise{options})"
    return (f"vmap(in_axes={jitted.batch.in_axes!r}, out_axes={jitted.batch.out_axes!r}) "
            f"as one thread per element | jit(backend='cuda'{options})")


def _describe(argument: Argument, elementwise: bool) -> str:
    spec = Spec(argument.spec.dtype) if elementwise else thread_spec(argument)
    return f"{spec.dtype.name}{list(spec.shape) if spec.shape else ''}"


def _version(package: str) -> str:
    try:
        from importlib.metadata import version
        return version(package.replace("_", "-"))
    except Exception:  # not installed: the header says so instead of failing
        return "absent"


def _kernel_text(device, kernel_name, arguments, outputs, shape, namer) -> str:
    params = [a.name for a in arguments] + device.params[len(arguments):]
    index, start, stride = namer.fresh("i"), namer.fresh("start"), namer.fresh("stride")
    lines = [f"def {kernel_name}({', '.join(params)}):",
             "    # one thread per element; a grid-stride loop covers any count",
             f"    {start} = cuda.grid(1)",
             f"    {stride} = cuda.gridsize(1)"]
    if shape is None:
        count = _batch_count(arguments)
        lines.append(f"    for {index} in range({start}, {count}, {stride}):")
        reads = [_batched_read(a, index) for a in arguments]
        body = []
    else:
        count = max(1, int(np.prod(shape)))
        lines.append(f"    for {index} in range({start}, {count}, {stride}):")
        body, digits = _unravel(index, shape, namer)
        reads = [_broadcast_read(a, shape, digits) for a in arguments]
    writes = [f"{p}[{index}:{index} + 1]" if not spec.is_array else f"{p}[{index}]"
              for p, spec in zip(params[len(arguments):], outputs)]
    extra = params[len(arguments) + len(outputs):]     # the error flag, if any
    body.append(f"{device.name}({', '.join(reads + writes + extra)})")
    lines.extend("        " + line for line in body)
    return "\n".join(lines) + "\n"


def _batch_count(arguments) -> str:
    first = next(a for a in arguments if a.axis is not None)
    return f"{first.name}.shape[{first.axis}]"


def _batched_read(argument: Argument, index: str) -> str:
    if argument.axis is None:
        return argument.name
    parts = [":"] * argument.axis + [index]
    return f"{argument.name}[{', '.join(parts)}]"


def _unravel(index, shape, namer):
    """Statements turning a flat index into one index per dimension of `shape`."""
    digits = [namer.fresh(f"i{k}") for k in range(len(shape))]
    body, rest = [], index
    for k, digit in enumerate(digits):
        inner = int(np.prod(shape[k + 1:]))
        body.append(f"{digit} = {rest} // {inner}" if k < len(shape) - 1 else
                    f"{digit} = {rest}")
        if k < len(shape) - 1:
            remainder = namer.fresh("rest")
            body.append(f"{remainder} = {rest} % {inner}")
            rest = remainder
    return body, digits


def _broadcast_read(argument: Argument, shape, digits) -> str:
    if not argument.spec.is_array:
        return argument.name
    own = argument.spec.shape
    skip = len(shape) - len(own)
    parts = ["0" if dim == 1 else digits[skip + k] for k, dim in enumerate(own)]
    return f"{argument.name}[{', '.join(parts)}]"


# ---------------------------------------------------------------- environment

def _materialize_env(fn: Function, fastmath, float_dtype, imports, namespace, fingerprints,
                     boundscheck: bool = False):
    """Import lines and namespace bindings for every free name of `fn`."""
    for name in sorted(free_names(fn.node)):
        value = fn.env[name]
        if isinstance(value, types.ModuleType):
            imports.add(backends.import_line(name, value))
            continue
        if getattr(builtins, name, None) is value:
            continue
        helper = callee_function(value)
        if helper is not None:
            specs = value.param_specs() if isinstance(value, Callee) else {}
            compiled = device_helper(helper, fastmath, float_dtype, specs, boundscheck)
            namespace[name] = compiled.function
            fingerprints.append(f"# uses {name}: device function {compiled.key[:32]}")
            continue
        if inspect.isfunction(value) and not _is_cuda_callable(value):
            raise missing_form_error(fn, name, value)
        namespace[name] = value
        fingerprints.append(f"# uses {name}: {backends.fingerprint(value)}")


def _is_cuda_callable(value) -> bool:
    module = getattr(value, "__module__", "") or ""
    return module.startswith(("numba", "math"))


def device_helper(fn: Function, fastmath: bool, float_dtype, specs: dict,
                  boundscheck: bool = False) -> backends.Compiled:
    """A callee compiled as a `cuda.jit(device=True)` function for its arguments' Specs
    (with `boundscheck`, taking the caller's error flag last)."""
    device = to_cuda_dialect(fn, specs, float_dtype, boundscheck=boundscheck)
    imports, namespace, fingerprints = {"from numba import cuda"}, {}, []
    _materialize_env(device, fastmath, float_dtype, imports, namespace, fingerprints,
                     boundscheck)
    flags = "device=True, fastmath=True" if fastmath else "device=True"
    described = ", ".join(f"{p}: {s.dtype.name}{list(s.shape) if s.shape else ''}"
                          for p, s in specs.items())
    header = [f"# secant: device function generated from {fn.origin.describe()}",
              f"# transforms: {' | '.join(fn.chain) or '(none)'} | cuda device function",
              f"# called with: {described or '(types decided by Numba)'}", *fingerprints]
    text = "\n".join(header) + "\n" + "\n".join(sorted(imports)) + "\n\n\n"
    text += f"@cuda.jit({flags})\n" + emit.to_source(device.node)
    return load_device_function(text, namespace, device.name)

