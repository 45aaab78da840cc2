"""The CUDA dialect: rewrite a per-thread Function into code Numba compiles for a GPU.

Input: any Function (it is desugared and put in A-normal form first) and a `Spec` per
parameter - the dtype and shape one thread sees, fixed by the call. The passes run in
order: shape folding (here), runtime helpers (`.runtime`), arrays to loops
(`.arrays`), scalar math, refusals of calls without a CUDA form (`.refusals`), outputs
as writes, typed constants (here). Output invariant:
- every `x.shape`, `x.size`, `x.ndim`, `x.dtype`, `len(x)` of an array of known shape is a
  constant, and so is every name assigned once to a constant;
- nothing allocates: `np.zeros/ones/empty/full(_like)` and `np.copy` are
  `cuda.local.array(SHAPE, DTYPE)` with a constant SHAPE and a fill loop; whole-array
  arithmetic, elementwise functions and `np.sum/prod/max/min/dot` of arrays are loops;
  a size that cannot be known is a TransformError naming the variable;
- scalar math is `math.*` and builtins (`np.exp` -> `math.exp`, `np.abs` -> `abs`,
  `np.power` -> `**`, `np.maximum` -> `max`, `np.where` -> `if`);
- in float32 code every float constant, and every int operand of float arithmetic, is
  cast to float32 (Numba would otherwise compute in float64);
- with `outputs`, `return v` writes `v` into output views passed as extra parameters
  (`out0[0] = v` for a scalar, a copy loop for an array) and returns nothing.
"""
from __future__ import annotations

import math

import gast
import numpy as np

from transformer.anf import anf
from .checks import flag_failed_indices
from transformer.desugar import desugar
from transformer.function import Function, resolve
from transformer.names import loaded_names
from transformer.param_updates import updates_in_place
from transformer.primitives import registry
from transformer.specialize import fold_constants
from transformer.syntax import assign, call, const, located, name, store, subscript

from codegen import emit
from .arrays import LowerArrays, lower_arrays
from ..nodes import copy_tree, walk
from .random_forms import lower_random
from .refusals import refuse_calls_without_cuda_form
from .runtime import lower_runtime
from .types import (Binder, Callee, Inference, Spec, callee_function, constant_shape,
                         StatementRewriter, infer, is_local_array)


def to_cuda_dialect(fn: Function, specs: dict, float_dtype, outputs=None,
                    boundscheck: bool = False) -> Function:
    """`fn` rewritten for one CUDA thread; `outputs` (Specs) turns returns into writes;
    `boundscheck` adds an error flag parameter and index checks (`.checks`)."""
    given = list(fn.params)
    fn = anf(desugar(updates_in_place(fn)))    # `p += v` writes the caller's array
    fn = fold_shapes(fn, specs, float_dtype)
    fn = lower_random(fn, specs, float_dtype)
    fn = specialize_callees(fn, specs, float_dtype)
    fn = lower_runtime(fn, specs, float_dtype, Binder(fn))
    fn = lower_arrays(fn, specs, float_dtype)
    fn = scalar_math(fn, float_dtype)
    refuse_calls_without_cuda_form(fn)
    if outputs is not None:
        fn = destination_passing(fn, outputs, float_dtype)
    check_local_memory(fn)
    fn = typed_constants(fn, specs, float_dtype)
    if boundscheck:
        callees = {n for n, v in fn.env.items() if isinstance(v, Callee)}
        fn = flag_failed_indices(fn, infer(fn, specs, float_dtype), callees,
                                 trusted=set(fn.params) - set(given),
                                 optional=outputs is not None)
    return fn


def specialize_callees(fn: Function, specs: dict, float_dtype) -> Function:
    """Bind each called function to a `Callee` with the Specs of the call's arguments,
    so it is compiled as a device function that knows its shapes (one per distinct call)."""
    walker = Inference(fn, dict(specs), np.dtype(float_dtype))
    walker.block(fn.node.body)
    binder = Binder(fn)
    node = copy_tree(fn.node)
    bound: dict = {}
    for site in walk(node):
        if not isinstance(site, gast.Call):
            continue
        target = resolve(fn, site.func, None)
        callee = callee_function(target) if target is not None else None
        if callee is None:
            continue
        arg_specs = tuple(s if isinstance(s, Spec) else None
                          for s in (walker.atom(a) for a in site.args))
        key = (id(target), arg_specs)
        if key not in bound:
            bound[key] = binder.bind(Callee(callee, arg_specs), callee.name)
        site.func = name(bound[key])
    return fn.replace(node=node, env=binder.env) if bound else fn


# CUDA gives each thread at most 512 KiB of local memory
LOCAL_MEMORY_LIMIT = 512 * 1024


def check_local_memory(fn: Function) -> None:
    """A TransformError naming the largest local array when a thread would need too much."""
    arrays = []
    for stmt in walk(fn.node):
        if isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Call) and \
                is_local_array(fn, stmt.value.func):
            shape = constant_shape(stmt.value.args[0])
            dtype = np.dtype(fn.env[stmt.value.args[1].id])
            arrays.append((int(np.prod(shape)) * dtype.itemsize, stmt.targets[0].id, stmt))
    total = sum(size for size, _, _ in arrays)
    if total > LOCAL_MEMORY_LIMIT:
        size, largest, stmt = max(arrays, key=lambda item: item[0])
        raise fn.origin.error(
            stmt, f"one CUDA thread would need {total:,} bytes of local arrays (the largest, "
            f"{largest!r}, is {size:,} bytes); CUDA allows {LOCAL_MEMORY_LIMIT:,} per thread",
            "batch over smaller pieces, or use backend='cpu' for per-element work this large")


# ---------------------------------------------------------------- constant shapes

def fold_shapes(fn: Function, specs: dict, float_dtype) -> Function:
    """Replace shape reads of known arrays, and names bound once to constants, by values."""
    for _ in range(10):
        before = emit.to_source(fn.node)
        binder = Binder(fn)
        info = infer(fn, specs, float_dtype)
        node = copy_tree(fn.node)
        _FoldShapes(fn, info, binder, _single_constants(fn)).visit(node)
        fn = fold_constants(fn.replace(node=node, env=binder.env))
        if emit.to_source(fn.node) == before:
            break
    return _drop_unread_constants(fn)


def _drop_unread_constants(fn: Function) -> Function:
    """Remove `n = 3`-style assignments whose name was folded away everywhere."""
    read = loaded_names(fn.node)
    constants = _single_constants(fn)
    node = copy_tree(fn.node)
    for parent in walk(node):
        for field in ("body", "orelse"):
            stmts = getattr(parent, field, None)
            if not isinstance(stmts, list):
                continue
            kept = [s for s in stmts if not (isinstance(s, gast.Assign) and
                                             isinstance(s.targets[0], gast.Name) and
                                             s.targets[0].id in constants and
                                             s.targets[0].id not in read)]
            if kept != stmts:
                setattr(parent, field, kept or ([gast.Pass()] if field == "body" else []))
    return fn.replace(node=node)


def _single_constants(fn: Function) -> dict:
    """Names assigned exactly once, to a literal or a global reference: name -> node."""
    counts: dict = {}
    for sub in walk(fn.node):
        if isinstance(sub, gast.Name) and not isinstance(sub.ctx, gast.Load):
            counts[sub.id] = counts.get(sub.id, 0) + 1
    found = {}
    for stmt in walk(fn.node):
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and \
                counts.get(stmt.targets[0].id) == 1 and _is_literal(fn, stmt.value):
            found[stmt.targets[0].id] = stmt.value
    return found


def _is_literal(fn: Function, node) -> bool:
    if isinstance(node, gast.Constant):
        return True
    if isinstance(node, gast.Tuple):
        return all(isinstance(e, gast.Constant) for e in node.elts)
    return isinstance(node, gast.Name) and node.id in fn.env and isinstance(fn.env[node.id], type)


class _FoldShapes(gast.NodeTransformer):
    def __init__(self, fn, info, binder, constants):
        self.fn, self.info, self.binder, self.constants = fn, info, binder, constants

    def _array(self, node):
        if isinstance(node, gast.Name):
            spec = self.info.get(node.id)
            if spec is not None and spec.is_array:
                return spec
        return None

    def visit_Name(self, node):
        if isinstance(node.ctx, gast.Load) and node.id in self.constants:
            return gast.copy_location(copy_tree(self.constants[node.id]), node)
        return node

    def visit_Attribute(self, node):
        spec = self._array(node.value) if isinstance(node.ctx, gast.Load) else None
        if spec is None:
            return self.generic_visit(node)
        if node.attr == "shape":
            return located(gast.Tuple(elts=[const(d) for d in spec.shape], ctx=gast.Load()),
                           node)
        if node.attr in ("size", "ndim"):
            value = int(np.prod(spec.shape)) if node.attr == "size" else len(spec.shape)
            return gast.copy_location(const(value), node)
        if node.attr == "dtype":
            return gast.copy_location(
                name(self.binder.bind(spec.dtype.type, spec.dtype.name)), node)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if resolve(self.fn, node.func, None) is len and len(node.args) == 1:
            spec = self._array(node.args[0])
            if spec is not None:
                return gast.copy_location(const(spec.shape[0]), node)
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, gast.Load) and isinstance(node.value, gast.Tuple) and \
                isinstance(node.slice, gast.Constant) and isinstance(node.slice.value, int):
            return gast.copy_location(copy_tree(node.value.elts[node.slice.value]), node)
        return node


# ---------------------------------------------------------------- scalar math

def _scalar_form(func, nargs: int):
    """The registry's scalar form of `func` (`math.sin(x)`), parsed, for `nargs` arguments;
    None when it has none, or none CUDA may use."""
    found = registry.lookup(func)
    if found is None or found.scalar is None or registry.reason(func, "cuda"):
        return None
    expr = gast.parse(found.scalar, mode="eval").body
    params = sorted({n.id for n in walk(expr) if isinstance(n, gast.Name)} & {"x", "y"})
    return expr if len(params) == nargs else None

def scalar_math(fn: Function, float_dtype=np.float64) -> Function:
    """NumPy calls on scalars become `math.*`, builtins and operators."""
    binder = Binder(fn)
    node = copy_tree(fn.node)
    node.body = _ScalarMath(fn, binder, np.dtype(float_dtype)).block(node.body)
    return fn.replace(node=node, env=binder.env)


def _rint(float_dtype):
    """Round half to even in the working precision (Python's round(x, 0) goes via float64)."""
    import numba
    if numba.config.ENABLE_CUDASIM:      # the simulator's libdevice functions are stubs
        return np.rint
    from numba.cuda import libdevice
    return libdevice.rintf if float_dtype == np.float32 else libdevice.rint


class _ScalarMath(StatementRewriter):
    def __init__(self, fn, binder, float_dtype):
        self.fn, self.binder, self.float_dtype = fn, binder, float_dtype

    def statement(self, stmt) -> list:
        if not isinstance(stmt, gast.Assign):
            return [stmt]
        rewritten = self.rewrite(stmt, stmt.value) if isinstance(stmt.value, gast.Call) \
            else [stmt]
        return [located(s, stmt) for new in rewritten for s in self.power(new)]

    def power(self, stmt) -> list:
        """`y = x ** n` for n = 2, 3, 4 as products: exact in the working precision, where
        Numba's integer power of a float32 goes through float64."""
        value = getattr(stmt, "value", None)
        if not (isinstance(value, gast.BinOp) and isinstance(value.op, gast.Pow) and
                isinstance(value.right, gast.Constant) and value.right.value in (2, 3, 4)
                and not isinstance(value.right.value, bool)
                and isinstance(value.left, (gast.Name, gast.Constant))):
            return [stmt]
        base, n = value.left, value.right.value
        square = base if n == 2 else name(self.binder.namer.fresh(f"{_word(base)}_squared"))

        def times(a, b):
            return gast.BinOp(left=copy_tree(a), op=gast.Mult(), right=copy_tree(b))
        if n == 2:
            return [assign(stmt.targets[0], times(base, base))]
        first = assign(store(square.id), times(base, base))
        last = times(square, base) if n == 3 else times(square, square)
        return [first, assign(stmt.targets[0], last)]

    def rewrite(self, stmt, value) -> list:
        func = resolve(self.fn, value.func, None)
        args = value.args
        target = stmt.targets[0]
        form = _scalar_form(func, len(args)) if not value.keywords else None
        if form is not None:
            stmt.value = self.instantiate(form, args)
        elif func is np.clip:
            low = call(name(self.binder.bind(max, "max")), args[0], args[1])
            return [assign(copy_tree(target), low),
                    assign(target, call(name(self.binder.bind(min, "min")),
                                        _as_load(target), args[2]))]
        elif func is np.where:
            return [gast.If(test=args[0], body=[assign(copy_tree(target), args[1])],
                            orelse=[assign(target, args[2])])]
        return [stmt]


    def instantiate(self, form, args):
        """The scalar form with `x`/`y` replaced by `args` and its other names (`math`,
        `abs`, `rint`) bound in the environment."""
        scope = {"math": math, "abs": abs, "max": max, "min": min,
                 "rint": _rint(self.float_dtype)}
        params = {"x": args[0], "y": args[1] if len(args) > 1 else None}

        class Bind(gast.NodeTransformer):
            def visit_Name(inner, node):
                if node.id in params:
                    return copy_tree(params[node.id])
                return name(self.binder.bind(scope[node.id], node.id))
        return Bind().visit(copy_tree(form))


def _word(atom) -> str:
    return atom.id if isinstance(atom, gast.Name) else "value"


def _as_load(target):
    return name(target.id) if isinstance(target, gast.Name) else target


# ---------------------------------------------------------------- outputs as writes

def destination_passing(fn: Function, outputs: list, float_dtype) -> Function:
    """Add one output view per result; each `return v` writes into them instead."""
    binder = Binder(fn)
    node = copy_tree(fn.node)
    params = [binder.namer.fresh(f"out{k}") for k in range(len(outputs))]
    node.args.args = node.args.args + [name(p, gast.Param()) for p in params]
    lowering = LowerArrays(fn, {}, binder, float_dtype)

    def rewrite(stmts):
        out = []
        for stmt in stmts:
            if isinstance(stmt, gast.Return):
                out.extend(located(s, stmt) for s in _writes(stmt, outputs, params, lowering))
                continue
            for field in ("body", "orelse"):
                if isinstance(getattr(stmt, field, None), list):
                    setattr(stmt, field, rewrite(getattr(stmt, field)) or
                            ([gast.Pass()] if field == "body" else []))
            out.append(stmt)
        return out
    node.body = rewrite(node.body)
    return fn.replace(node=node, env=binder.env)


def _writes(stmt, outputs, params, lowering: LowerArrays) -> list:
    value = stmt.value
    out = []
    for k, (spec, param) in enumerate(zip(outputs, params)):
        item = value
        if len(outputs) > 1:
            item = name(lowering.binder.namer.fresh(f"result{k}"))
            out.append(assign(store(item.id), subscript(copy_tree(value), const(k))))
        if not spec.is_array:
            out.append(assign(subscript(name(param), const(0), gast.Store()), item))
            continue
        lowering.values.info[item.id] = spec
        lowering.values.info[param] = spec

        def body(indices, item=item, param=param, shape=spec.shape):
            loads = []
            loads.append(lowering.write(param, indices,
                                        lowering.element(item, shape, indices, loads)))
            return loads
        out.extend(lowering.loop(spec.shape, body))
    out.append(gast.Return(value=None))
    return out


# ---------------------------------------------------------------- typed constants

_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow)


def typed_constants(fn: Function, specs: dict, float_dtype) -> Function:
    """In float32 code, cast float constants and int operands of float arithmetic."""
    if np.dtype(float_dtype) != np.float32:
        return fn
    binder = Binder(fn)
    cast = binder.bind(np.float32, "float32")
    info = infer(fn, specs, np.float32)
    node = copy_tree(fn.node)
    _TypeConstants(fn, info, cast).visit(node)
    return fn.replace(node=node, env=binder.env)


class _TypeConstants(gast.NodeTransformer):
    def __init__(self, fn, info, cast):
        self.fn, self.info, self.cast = fn, info, cast

    def _is_float(self, atom) -> bool:
        if isinstance(atom, gast.Constant):
            return isinstance(atom.value, float)
        if isinstance(atom, gast.Name) and atom.id in self.info:
            return self.info[atom.id].is_float
        return isinstance(atom, gast.Call) and isinstance(atom.func, gast.Name) and \
            atom.func.id == self.cast

    def _is_int(self, atom) -> bool:
        if isinstance(atom, gast.Constant):
            return isinstance(atom.value, int) and not isinstance(atom.value, bool)
        return isinstance(atom, gast.Name) and atom.id in self.info and \
            self.info[atom.id].is_int and not self.info[atom.id].is_array

    def _wrap(self, atom):
        return gast.copy_location(call(name(self.cast), atom), atom)

    def visit_Subscript(self, node):
        node.value = self.visit(node.value)
        return node                                  # indices stay integers

    def visit_Constant(self, node):
        if isinstance(node.value, float):
            return self._wrap(node)
        return node

    def visit_Call(self, node):
        func = resolve(self.fn, node.func, None)
        if func is range:
            return node
        self.generic_visit(node)
        if func is float:
            node.func = name(self.cast)
        return node

    def visit_BinOp(self, node):
        if not isinstance(node.op, _ARITHMETIC):
            return self.generic_visit(node)
        left_float, right_float = self._is_float(node.left), self._is_float(node.right)
        exponent = isinstance(node.op, gast.Pow)
        self.generic_visit(node)
        if right_float and self._is_int(node.left):
            node.left = self._wrap(node.left)
        if left_float and not exponent and self._is_int(node.right):
            node.right = self._wrap(node.right)
        return node

