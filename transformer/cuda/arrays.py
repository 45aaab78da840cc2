"""Arrays to loops for the CUDA dialect: allocations, whole-array operations, products.

Input: a Function in A-normal form whose shapes are folded (`.emit.fold_shapes`) and
whose runtime helpers are lowered (`.runtime`). Output invariant: no statement
allocates or works on a whole array - `np.zeros/ones/empty/full(_like)`, `np.copy` and
`np.array` of scalars are `cuda.local.array(SHAPE, DTYPE)` with constant SHAPE and a fill,
and elementwise arithmetic and functions, `np.sum/prod/max/min/dot`, `@` and `np.outer`
of arrays are loops over elements. A result whose size is unknown at compile time is a
TransformError naming the variable; a NumPy function of arrays without a loop form is a
TransformError naming the function.
"""
from __future__ import annotations

import builtins
import copy

import gast
import numpy as np

from transformer.function import Function, resolve
from transformer.primitives import registry
from transformer.syntax import assign, call, const, located, name, store, subscript

from codegen import emit
from ..nodes import copy_tree, walk
from .types import (ALLOCATIONS, ELEMENTWISE, LIKE_ALLOCATIONS, PRODUCTS, REDUCTIONS,
                         Binder, Inference, Spec, allocation_dtype_node, indexed_shape,
                         StatementRewriter, local_array)


def lower_arrays(fn: Function, specs: dict, float_dtype) -> Function:
    """Allocations become local arrays; whole-array operations become loops."""
    binder = Binder(fn)
    walker = Inference(fn, dict(specs), np.dtype(float_dtype))
    walker.block(fn.node.body)            # keeps tuple literals' Specs, for np.array(...)
    lowering = LowerArrays(fn, walker.info, binder, float_dtype)
    node = copy_tree(fn.node)
    node.body = lowering.block(node.body)
    return fn.replace(node=node, env=binder.env)


_CASTS = {np.float32, np.float64, np.int32, np.int64, float, int}


class LowerArrays(StatementRewriter):
    def __init__(self, fn, info, binder: Binder, float_dtype):
        self.fn, self.info, self.binder = fn, info, binder
        self.values = Inference(fn, info, np.dtype(float_dtype))
        self.literals: dict = {}         # name -> elements of the tuple literal it holds
        self.argument_views = _argument_views(fn)

    def spec(self, atom) -> Spec | None:
        found = self.values.atom(atom)
        return found if isinstance(found, Spec) else None

    def statement(self, stmt) -> list:
        if isinstance(stmt, gast.Assign) and isinstance(stmt.value, (gast.Tuple, gast.List)):
            self.literals[stmt.targets[0].id] = stmt.value.elts
            if isinstance(stmt.value, gast.List):         # kernels have tuples, not lists
                stmt.value = gast.Tuple(elts=stmt.value.elts, ctx=gast.Load())
        if not isinstance(stmt, gast.Assign):
            return [stmt]
        target = stmt.targets[0]
        if isinstance(target, gast.Subscript):
            return [located(s, stmt) for s in self.store(stmt, target, stmt.value)]
        return [located(s, stmt) for s in self.assign(stmt, target.id, stmt.value)]

    # -- x = ...
    def assign(self, stmt, target: str, value) -> list:
        if isinstance(value, gast.Call):
            func = resolve(self.fn, value.func, None)
            if func in ALLOCATIONS:
                return self.allocate(stmt, target, value, func)
            if func in (np.array, np.asarray) and len(value.args) == 1 and \
                    getattr(value.args[0], "id", None) in self.literals:
                return self.from_literal(stmt, target, value)
            if func in REDUCTIONS and self._has_array(value.args):
                return self.reduce(stmt, target, value, func)
            if func in PRODUCTS and self._has_array(value.args):
                return self.product(stmt, target, value, *value.args,
                                    outer=func is np.outer)
            if self._has_array(value.args):
                if func in ELEMENTWISE or func in _CASTS or \
                        getattr(func, "__module__", None) == "math":
                    return self.elementwise(stmt, target, value, value.args)
                self._refuse_numpy(stmt, func, target)
            return [stmt]
        if isinstance(value, gast.BinOp) and isinstance(value.op, gast.MatMult):
            return self.product(stmt, target, value, value.left, value.right)
        if isinstance(value, gast.BinOp):
            operands = [value.left, value.right]
        elif isinstance(value, gast.UnaryOp):
            operands = [value.operand]
        elif isinstance(value, gast.Compare):
            operands = [value.left, value.comparators[0]]
        else:
            return [stmt]
        if self._has_array(operands):
            return self.elementwise(stmt, target, value, operands)
        return [stmt]

    def _has_array(self, atoms) -> bool:
        specs = [self.spec(a) for a in atoms]
        return any(s is not None and s.is_array for s in specs)

    def _refuse_numpy(self, stmt, func, target):
        module = getattr(func, "__module__", None) or ""
        if module.split(".")[0] == "numpy" or isinstance(func, np.ufunc):
            what = getattr(func, "__name__", repr(func))
            why = registry.reason(func, "cuda")
            raise self.fn.origin.error(
                stmt, f"np.{what} of arrays has no CUDA form here (assigning {target!r})",
                (f"{why}; or " if why else "") +
                "write the loop over the elements, or use elementwise functions, "
                "np.sum/np.dot/np.max/np.min and allocations of a fixed size")

    def _result(self, stmt, target, value) -> Spec:
        spec = self.values.value(value)
        if spec is None or not spec.shape or None in spec.shape:
            raise self.fn.origin.error(
                stmt, f"the size of array {target!r} is not known when the CUDA kernel is "
                "compiled", "make the size a static argument (static_argnums) or derive "
                "it from the shape of an argument")
        return spec

    def local_array(self, target, spec) -> gast.stmt:
        return local_array(self.binder, target, spec)

    def loop(self, shape, body):
        """Nested loops over `shape`; `body(indices)` gives the innermost statements."""
        indices = [self.binder.namer.fresh(f"i{k}") for k in range(len(shape))]
        stmts = body(indices)
        range_name = self.binder.bind(builtins.range, "range")
        for dim, index in reversed(list(zip(shape, indices))):
            stmts = [gast.For(target=store(index), iter=call(name(range_name), const(dim)),
                              body=stmts, orelse=[], type_comment=None)]
        return stmts

    def element(self, atom, shape, indices, out) -> gast.expr:
        """`atom` at `indices` of a result of `shape` (broadcasting), read into a temp."""
        spec = self.spec(atom)
        if spec is None or not spec.is_array:
            return copy_tree(atom)
        skip = len(shape) - len(spec.shape)
        parts = [const(0) if dim == 1 and shape[skip + k] != 1 else name(indices[skip + k])
                 for k, dim in enumerate(spec.shape)]
        index = parts[0] if len(parts) == 1 else gast.Tuple(elts=parts, ctx=gast.Load())
        temp = self.binder.namer.fresh(f"{atom.id}_elt")
        out.append(assign(store(temp), subscript(copy_tree(atom), index)))
        return name(temp)

    def write(self, target, indices, value) -> gast.stmt:
        index = name(indices[0]) if len(indices) == 1 else \
            gast.Tuple(elts=[name(i) for i in indices], ctx=gast.Load())
        return assign(subscript(name(target), index, gast.Store()), value)

    def fresh_array(self, target, operands, spec, fill) -> list:
        """A new local array for `target`, filled by `fill(array, indices, out)`.

        When `target` is also read (`bd = bd + g`), the loop writes a fresh array and the
        name is rebound after it, so no element is read after it was overwritten.
        """
        reads = {a.id for a in operands if isinstance(a, gast.Name)}
        array = self.binder.namer.fresh(f"{target}_new") if target in reads else target

        def body(indices):
            out = []
            fill(array, indices, out)
            return out
        stmts = [self.local_array(array, spec)] + self.loop(spec.shape, body)
        return stmts + ([assign(store(target), name(array))] if array != target else [])

    def elementwise(self, stmt, target, value, operands) -> list:
        spec = self._result(stmt, target, value)

        def fill(array, indices, out):
            replaced = {id(a): self.element(a, spec.shape, indices, out) for a in operands}
            temp = self.binder.namer.fresh(f"{target}_elt")
            out.append(assign(store(temp), _replace_atoms(value, replaced)))
            out.append(self.write(array, indices, name(temp)))
        return self.fresh_array(target, operands, spec, fill)

    def allocate(self, stmt, target, value, func) -> list:
        spec = self._result(stmt, target, value)
        if func in (np.empty, np.empty_like):
            return [self.local_array(target, spec)]
        if func is np.copy:
            source = value.args[0]
        elif func in (np.full, np.full_like):
            source = value.args[1]
        else:
            source = const(1 if func in (np.ones, np.ones_like) else 0)
            if func not in LIKE_ALLOCATIONS and allocation_dtype_node(value, func) is None:
                source = const(float(source.value))

        def fill(array, indices, out):
            out.append(self.write(array, indices, self.element(source, spec.shape, indices,
                                                               out)))
        return self.fresh_array(target, [source], spec, fill)

    def from_literal(self, stmt, target, value) -> list:
        """`np.array((a, b, c))` of scalars: a local array written element by element."""
        spec = self._result(stmt, target, value)
        elements = self.literals[value.args[0].id]
        return [self.local_array(target, spec)] + [
            assign(subscript(name(target), const(k), gast.Store()), copy_tree(e))
            for k, e in enumerate(elements)]

    def reduce(self, stmt, target, value, func) -> list:
        if value.keywords or (func is not np.dot and len(value.args) != 1):
            raise self.fn.origin.error(stmt, f"np.{func.__name__} with an axis or options "
                                       "has no CUDA form here", "write the loop")
        spec = self.values.value(value)
        source = value.args[0]
        shape = self.spec(source).shape
        if spec is None:
            raise self.fn.origin.error(stmt, f"np.{func.__name__} of these arguments has no "
                                       "CUDA form here", "write the loop")
        if func in (np.max, np.min, np.amax, np.amin):
            return self._extremum(target, source, shape, func in (np.max, np.amax))
        zero = 0.0 if spec.is_float else 0
        start = assign(store(target), const(type(zero)(func is np.prod)))

        def body(indices):
            out = []
            items = [self.element(a, shape, indices, out) for a in value.args]
            term = items[0]
            if func is np.dot:
                term = name(self.binder.namer.fresh("product"))
                out.append(assign(store(term.id), gast.BinOp(left=items[0], op=gast.Mult(),
                                                             right=items[1])))
            op = gast.Mult() if func is np.prod else gast.Add()
            out.append(assign(store(target), gast.BinOp(left=name(target), op=op, right=term)))
            return out
        return [start] + self.loop(shape, body)

    def product(self, stmt, target, value, left, right, outer=False) -> list:
        """`left @ right` (vectors, matrices) or np.outer(left, right) as loops."""
        spec = self.values.value(value)
        if spec is None:
            raise self.fn.origin.error(stmt, f"{target!r} = a product of operands whose shapes "
                                       "are unknown or do not match", "check the operands of @")
        a = self.spec(left).shape
        copies = []
        left, right = (self._private(atom, copies) for atom in (left, right))
        if outer:
            def cell(array, indices, out):
                out.append(self.write(array, indices, self._times(
                    left, indices[:1], right, indices[1:], out)))
            return copies + self.fresh_array(target, [left, right], spec, cell)
        inner = a[-1]
        accumulate = self.binder.namer.fresh(f"{target}_acc")

        def dot(indices, out):
            rows, cols = indices[:len(a) - 1], indices[len(a) - 1:]
            out.append(assign(store(accumulate), const(0.0 if spec.is_float else 0)))

            def body(k):
                stmts = []
                term = self._times(left, rows + k, right, k + cols, stmts)
                stmts.append(assign(store(accumulate), gast.BinOp(
                    left=name(accumulate), op=gast.Add(), right=term)))
                return stmts
            out.extend(self.loop((inner,), body))
        if not spec.shape:
            stmts = []
            dot([], stmts)
            return copies + stmts + [assign(store(target), name(accumulate))]

        def fill(array, indices, out):
            dot(indices, out)
            out.append(self.write(array, indices, name(accumulate)))
        return copies + self.fresh_array(target, [left, right], spec, fill)

    def _private(self, atom, out):
        """`atom`, or a copy of it when it may be the local array this product writes.

        A `cuda.local.array` is one piece of memory per statement, reused each time the
        statement runs: in a loop, `h = W @ h` would read the `h` it is overwriting. A
        product reads every element of an operand for each element it writes, so an
        operand that is a local array is copied first; arguments and their views are not.
        """
        spec = self.spec(atom)
        if not isinstance(atom, gast.Name) or atom.id in self.argument_views or \
                spec is None or not spec.is_array:
            return atom
        copied = self.binder.namer.fresh(f"{atom.id}_copy")
        out.append(local_array(self.binder, copied, spec))
        out.extend(self.loop(spec.shape, lambda indices: [
            self.write(copied, indices, self._read(atom, indices))]))
        return name(copied)

    def _read(self, atom, indices):
        parts = [name(i) for i in indices]
        key = parts[0] if len(parts) == 1 else gast.Tuple(elts=parts, ctx=gast.Load())
        return subscript(copy_tree(atom), key)

    def _times(self, left, left_index, right, right_index, out):
        items = []
        for atom, index in ((left, left_index), (right, right_index)):
            temp = self.binder.namer.fresh(f"{atom.id}_elt")
            parts = [name(i) for i in index]
            key = parts[0] if len(parts) == 1 else gast.Tuple(elts=parts, ctx=gast.Load())
            out.append(assign(store(temp), subscript(copy_tree(atom), key)))
            items.append(name(temp))
        product = self.binder.namer.fresh("product")
        out.append(assign(store(product), gast.BinOp(left=items[0], op=gast.Mult(),
                                                     right=items[1])))
        return name(product)

    def _extremum(self, target, source, shape, is_max) -> list:
        origin = const(0) if len(shape) == 1 else \
            gast.Tuple(elts=[const(0)] * len(shape), ctx=gast.Load())
        first = subscript(copy_tree(source), origin)

        def body(indices):
            out = []
            item = self.element(source, shape, indices, out)
            better = self.binder.namer.fresh("better")
            op = gast.Gt() if is_max else gast.Lt()
            out.append(assign(store(better), gast.Compare(left=item, ops=[op],
                                                          comparators=[name(target)])))
            out.append(gast.If(test=name(better), body=[assign(store(target), item)],
                               orelse=[]))
            return out
        return [assign(store(target), first)] + self.loop(shape, body)

    # -- x[index] = v
    def store(self, stmt, target, value) -> list:
        base = self.spec(target.value)
        if base is None or not base.is_array:
            return [stmt]
        shape = indexed_shape(base.shape, target.slice)
        if shape is None:
            raise self.fn.origin.error(stmt, f"the shape of {emit.expression_source(target)} "
                                       "is not known when the CUDA kernel is compiled",
                                       "index with integers and constant slices")
        if shape == ():
            return [stmt]
        view = self.binder.namer.fresh(f"{target.value.id}_view")
        load = subscript(copy_tree(target.value), copy_tree(target.slice))

        def body(indices):
            out = []
            out.append(self.write(view, indices, self.element(value, shape, indices, out)))
            return out
        return [assign(store(view), load)] + self.loop(shape, body)


def _argument_views(fn: Function) -> set:
    """Parameters and the names that only ever hold them or views of them."""
    views = set(fn.params)
    sources: dict = {}
    for stmt in walk(fn.node):
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
            value = stmt.value.value if isinstance(stmt.value, gast.Subscript) else stmt.value
            source = value.id if isinstance(value, gast.Name) else None
            sources.setdefault(stmt.targets[0].id, set()).add(source)
    changed = True
    while changed:
        changed = False
        for target, found in sources.items():
            if target not in views and found <= views:
                views.add(target)
                changed = True
    return views


def _replace_atoms(value, replaced: dict):
    """A copy of `value` with the operand atoms in `replaced` (by id) substituted."""
    value_copy = copy.copy(value)
    for field, child in gast.iter_fields(value):
        if isinstance(child, list):
            setattr(value_copy, field, [replaced.get(id(c), c) for c in child])
        elif id(child) in replaced:
            setattr(value_copy, field, replaced[id(child)])
    return value_copy
