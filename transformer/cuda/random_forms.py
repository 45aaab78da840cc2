"""Random draws in CUDA threads: `random.normal/uniform/bernoulli/bits/randint` become
loops of per-element device functions, the same scalar code the CPU backend compiles.

Input: a Function in A-normal form whose shapes are folded (`.emit.fold_shapes`). Output
invariant: a statement `z = random.<sampler>(key, shape, ...)` with a constant shape is
`z = np.empty(shape, dtype)` and loops writing `z[i, j] = element(key[0], key[1], flat, a,
b)` (for shape () the element call itself), where `element` is the sampler's element of
`transformer.runtime.random` compiled as a `cuda.jit(device=True)` function: element `flat`
of a draw is made from its Threefry block alone, so a thread gives the bits the CPU gives.
`ks = random.split(k, n)` (a literal `n`) is a local uint32[n, 2] filled word by word; its
rows (`ks[1]`, or `k1, k2 = random.split(k)`) are keys of the thread, as are the keys
`fold_in` and `PRNGKey` make; those and the samplers of `transformer.random_samplers` are
described in `.random_sampler_forms`; `categorical`, `permutation` and `choice` in
`.random_choice_forms`, the rejection and linear-algebra samplers in `.random_heavy_forms`.
A call form without a thread form, and a shape, dtype or parameter this pass cannot read,
is a TransformError at the user's line saying what to write instead. Device functions are built
once per element: each global the element's code calls from the runtime is swapped for its
own device build; `fma` is CUDA's
fused multiply-add (on the simulator, the runtime's exactly rounded one: its `cuda.fma`
rounds twice).
"""
from __future__ import annotations

import inspect
import itertools
import types

import gast
import numpy as np

from transformer import random
from transformer.function import Function, hashable, resolve
from transformer.primitives import registry
from transformer.runtime import random as scalar
from transformer.runtime import xla_math
from transformer.syntax import assign, call, const, located, name, store, subscript

from . import random_choice_forms as choice_forms
from . import random_heavy_forms as heavy
from . import random_sampler_forms as sampler_forms
from ..nodes import copy_tree, walk
from .types import Binder, StatementRewriter, infer

_F64, _F32 = np.dtype(np.float64), np.dtype(np.float32)
# (sampler, dtype) -> the element function of transformer.runtime.random
ELEMENTS = {
    (random.normal, _F64): scalar._normal64, (random.normal, _F32): scalar._normal32,
    (random.uniform, _F64): scalar._uniform64, (random.uniform, _F32): scalar._uniform32,
    (random.bernoulli, _F64): scalar._bernoulli64,
    (random.bernoulli, _F32): scalar._bernoulli32,
    (random.bits, np.dtype(np.uint32)): scalar._bits32,
    (random.bits, np.dtype(np.uint64)): scalar._bits64,
    (random.randint, np.dtype(np.int64)): scalar._randint64,
    (random.randint, np.dtype(np.int32)): scalar._randint32,
}
ELEMENTS.update(sampler_forms.ELEMENTS)
ELEMENTS.update(heavy.ELEMENTS)             # gamma, beta, poisson
SAMPLERS = {sampler for sampler, _ in ELEMENTS}
_I64, _I32 = np.dtype(np.int64), np.dtype(np.int32)
_SCALAR_CASTS = {_F64: np.float64, _F32: np.float32, _I64: np.int64, _I32: np.int32,
                 bool: bool}
_DEFAULT_DTYPE = {random.normal: _F64, random.uniform: _F64, random.randint: _I64,
                  **sampler_forms.DEFAULT_DTYPES}
_DEFAULT_DTYPE.update(heavy.DEFAULT_DTYPE)
# samplers drawn whole by a form of their own: target -> draw(rewriter, stmt, site, build)
DRAWS = {**heavy.DRAWS, **choice_forms.DRAWS}
_HINT = ("pass one key per thread (random.split on the host), split it with random.split "
         "or fold_in, and give the draw literal shapes, sizes and options and array "
         "parameters that are arguments or locals of the kernel; or draw on the CPU and "
         "pass the numbers in")

# ---------------------------------------------------------------- device builds

_BUILT: dict = {}
_RUNTIME = scalar.__name__.rpartition(".")[0] + "."     # transformer.runtime.


def device_function(fn):
    """`fn` (runtime scalar code) as a `cuda.jit(device=True)` function."""
    if fn not in _BUILT:
        from numba import config, cuda
        swapped = dict(fn.__globals__)
        for global_name in fn.__code__.co_names:
            if global_name in swapped:
                swapped[global_name] = _on_device(swapped[global_name], config)
        closure = fn.__closure__ and tuple(types.CellType(_on_device(c.cell_contents, config))
                                           for c in fn.__closure__)
        rebuilt = types.FunctionType(fn.__code__, swapped, fn.__name__, fn.__defaults__,
                                     closure)
        rebuilt.__module__ = fn.__module__
        _BUILT[fn] = cuda.jit(device=True)(rebuilt)
    return _BUILT[fn]


def _on_device(value, config):
    """A global or closure value of runtime scalar code as a kernel calls it."""
    if value is xla_math.fma:
        return value if config.ENABLE_CUDASIM else _cuda_fma()
    if isinstance(value, types.FunctionType) and \
            value.__module__.startswith(_RUNTIME):
        return device_function(value)
    return value


def _cuda_fma():
    from numba import cuda

    def fma(a, b, c):
        return cuda.fma(a, b, c)
    return cuda.jit(device=True)(fma)

# ---------------------------------------------------------------- the rewrite


def lower_random(fn: Function, specs: dict, float_dtype) -> Function:
    """Samplers with constant shapes become element loops (see the module docstring);
    `specs` are the thread's view of the parameters (a key must be an array of shape (2,))."""
    binder = Binder(fn)
    rewriter = _Draws(fn, binder, lambda: infer(fn, specs, float_dtype))
    node = copy_tree(fn.node)
    node.body = rewriter.block(node.body)
    return fn.replace(node=node, env=binder.env) if rewriter.changed else fn


class _Draws(StatementRewriter):
    device = staticmethod(device_function)

    def __init__(self, fn: Function, binder: Binder, infer_specs):
        self.fn, self.binder, self.changed = fn, binder, False
        self.counter = itertools.count()
        self.infer_specs, self.specs = infer_specs, None
        self.split_keys: set = set()      # names of split keys this pass allocated
        self.derived_keys: set = set()    # names bound to one of their rows

    def key_spec(self, key):
        if self.specs is None:
            self.specs = self.infer_specs()
        return self.specs.get(key.id) if isinstance(key, gast.Name) else None

    def statement(self, stmt) -> list:
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and \
                self.is_split_key(stmt.value):
            self.derived_keys.add(stmt.targets[0].id)       # k1 = ks[0]: a key
        for site in walk(stmt):
            if isinstance(site, gast.Call):
                target = resolve(self.fn, site.func, None)
                if hashable(target) and \
                        getattr(target, "__module__", "").startswith(random.__name__):
                    return self.draw(stmt, site, target)
        return [stmt]

    def refuse(self, site, what: str):
        return self.fn.origin.error(site, f"{what} in a CUDA kernel", hint=_HINT)

    def draw(self, stmt, site, target) -> list:
        label = f"random.{target.__name__}"
        if target is random.split:
            return self.split(stmt, site)
        if target in sampler_forms.KEY_MAKERS:
            return sampler_forms.make_key(self, stmt, site, target)
        if target in DRAWS:                 # linear algebra, dirichlet, shuffles, categorical
            return DRAWS[target](self, stmt, site, device_function)
        if target not in SAMPLERS:
            raise self.fn.origin.error(site, f"{label} has no CUDA form yet",
                                       hint=registry.reason(target, "cuda") or _HINT)
        if not (isinstance(stmt, gast.Assign) and stmt.value is site and
                isinstance(stmt.targets[0], gast.Name)):
            raise self.refuse(site, f"{label} must be assigned to a name")
        try:
            bound = inspect.signature(target).bind(*site.args, **{
                k.arg: k.value for k in site.keywords})
        except TypeError as exc:
            raise self.refuse(site, f"{label}: {exc}") from None
        args = bound.arguments
        dtype = self.dtype(site, target, args)
        shape = self.shape(site, target, args)
        a, b = sampler_forms.parameters(self, site, target, args, shape, dtype) or \
            self.parameters(site, target, args, dtype)
        chosen = sampler_forms.element(self, site, target, dtype, args, ELEMENTS[target, dtype])
        element = name(self.binder.bind(device_function(chosen), chosen.__name__.lstrip("_")))
        words = self.key_words(site, label, args.get("key", args.get("k")))
        self.changed = True
        out = stmt.targets[0].id
        if shape == ():
            value = call(element, *words, const(0), a, b)
            typed = _SCALAR_CASTS.get(dtype if target is not random.bernoulli else bool)
            if typed is not None:      # a cast the kernel's type inference knows
                value = call(name(self.binder.bind(typed, typed.__name__)), value)
            return [located(assign(store(out), value), stmt)]
        kind = "bool_" if target is random.bernoulli else dtype.name
        np_name = self.binder.bind(np, "np")
        dims = gast.Tuple(elts=[const(d) for d in shape], ctx=gast.Load())
        alloc = call(gast.Attribute(value=name(np_name), attr="empty", ctx=gast.Load()),
                     dims, gast.Attribute(value=name(np_name), attr=kind,
                                                  ctx=gast.Load()))
        return [located(assign(store(out), alloc), stmt),
                located(self.loops(out, shape, element, words, a, b), stmt)]

    def key_words(self, site, label, key) -> list:
        """`key[0]`, `key[1]` once `key` is known to be a key of this thread."""
        spec = self.key_spec(key)
        split_key = self.is_split_key(key) or \
            isinstance(key, gast.Name) and key.id in self.derived_keys
        if not split_key and (spec is None or tuple(spec.shape) != (2,) or
                              spec.dtype.kind not in "iu"):
            raise self.fn.origin.error(site, f"{label} in a CUDA kernel needs a key: an "
                                       f"integer array of shape (2,) per thread, got "
                                       f"{spec.dtype}{list(spec.shape)}" if spec else
                                       f"{label} in a CUDA kernel needs a key it can follow",
                                       hint="pass keys from random.split(key, n) with vmap "
                                            "over their first axis")
        return [subscript(copy_tree(key), const(i)) for i in (0, 1)]

    def is_split_key(self, node) -> bool:
        """`ks[i]` with a constant `i` of an array of keys this pass allocated."""
        return isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and \
            node.value.id in self.split_keys and isinstance(node.slice, gast.Constant)

    def split(self, stmt, site) -> list:
        """`ks = random.split(k, n)`: a local uint32 array of n keys, word by word."""
        if not (isinstance(stmt, gast.Assign) and stmt.value is site and
                isinstance(stmt.targets[0], gast.Name)):
            raise self.refuse(site, "random.split must be assigned to a name")
        args = inspect.signature(random.split).bind(*site.args, **{
            k.arg: k.value for k in site.keywords}).arguments
        num = args.get("num", const(2))
        if not (isinstance(num, gast.Constant) and isinstance(num.value, int)):
            raise self.refuse(site, "random.split needs its count as an int literal")
        words = self.key_words(site, "random.split", args.get("k"))
        element = name(self.binder.bind(device_function(scalar._split_word), "split_word"))
        out = stmt.targets[0].id
        self.split_keys.add(out)
        self.changed = True
        np_name = self.binder.bind(np, "np")
        dims = gast.Tuple(elts=[const(num.value), const(2)], ctx=gast.Load())
        alloc = call(gast.Attribute(value=name(np_name), attr="empty", ctx=gast.Load()),
                     dims, gast.Attribute(value=name(np_name), attr="uint32", ctx=gast.Load()))
        loops = []
        for word in (0, 1):
            n = next(self.counter)
            index = f"draw_{n}_0"
            target = subscript(name(out), gast.Tuple(elts=[name(index), const(word)],
                                                     ctx=gast.Load()), gast.Store())
            loops.append(gast.For(
                target=store(index), iter=call(name(self.binder.bind(range, "range")),
                                               const(num.value)),
                body=[assign(target, call(element, *copy_tree(words), name(index),
                                          const(word), const(0)))],
                orelse=[], type_comment=None))
        return [located(s, stmt) for s in [assign(store(out), alloc), *loops]]

    def loops(self, out, shape, element, words, a, b):
        """Nested `for` loops over `shape` writing each element at its flat index."""
        n = next(self.counter)
        indices = [f"draw_{n}_{axis}" for axis in range(len(shape))]
        flat = const(0)
        for axis, index in enumerate(indices):
            flat = gast.BinOp(left=gast.BinOp(left=flat, op=gast.Mult(),
                                              right=const(shape[axis])),
                              op=gast.Add(), right=name(index))
        target = subscript(name(out), gast.Tuple(elts=[name(i) for i in indices],
                                                 ctx=gast.Load()), gast.Store())
        body = [assign(target, call(element, *words, flat, a, b))]
        for index, size in reversed(list(zip(indices, shape))):
            body = [gast.For(target=store(index), iter=call(name(self.binder.bind(range, "range")),
                                                            const(size)),
                             body=body, orelse=[], type_comment=None)]
        return body[0]

    def dtype(self, site, target, args) -> np.dtype:
        given = args.get("dtype")
        if target is random.bernoulli:
            p = args.get("p", const(0.5))
            if not (isinstance(p, gast.Constant) and isinstance(p.value, float)):
                raise self.refuse(site, "random.bernoulli takes p as a float literal")
            return _F64
        if given is None:
            return scalar.DEFAULT_BITS_DTYPE if target is random.bits else \
                _DEFAULT_DTYPE[target]
        try:
            dtype = np.dtype(resolve(self.fn, given, None))
        except TypeError:
            dtype = None
        if (target, dtype) not in ELEMENTS:
            raise self.refuse(site, f"random.{target.__name__} takes a dtype written as "
                                    f"{', '.join(f'np.{d}' for s, d in ELEMENTS if s is target)}")
        return dtype

    def shape(self, site, target, args) -> tuple:
        given = args.get("shape")
        if given is None:
            return ()
        value = given.value if isinstance(given, gast.Constant) else None
        if isinstance(given, gast.Tuple) and all(isinstance(e, gast.Constant)
                                                 for e in given.elts):
            value = tuple(e.value for e in given.elts)
        if isinstance(value, int) and not isinstance(value, bool):
            value = (value,)
        if not (isinstance(value, tuple) and all(isinstance(d, int) and d >= 0
                                                 for d in value)):
            raise self.refuse(site, f"random.{target.__name__} needs a shape known when "
                                    "the kernel is compiled")
        return value

    def parameters(self, site, target, args, dtype):
        if target in heavy.DEFAULT_DTYPE:
            return heavy.parameters(self, site, target, args, dtype)
        if target is random.randint:        # bounds beyond int64 need the plain form
            int64 = name(self.binder.bind(np.int64, "int64"))
            return (call(int64, copy_tree(args["minval"])),
                    call(int64, copy_tree(args["maxval"])))
        cast = self.binder.bind(np.float32 if dtype == _F32 else np.float64, f"{dtype.name}")
        if target is random.uniform:
            lo, hi = args.get("minval", const(0.0)), args.get("maxval", const(1.0))
            return call(name(cast), copy_tree(lo)), call(name(cast), copy_tree(hi))
        if target is random.bernoulli:
            return call(name(cast), copy_tree(args.get("p", const(0.5)))), const(0)
        return const(0), const(0)
