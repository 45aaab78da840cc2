"""Index checks for CUDA device functions, which cannot raise: a failure sets a flag.

Input: a Function in the CUDA dialect (`transformer.cuda.emit`: A-normal form, every
array's shape a constant) and `info`, the Spec (dtype, shape) of each of its names. Output:
the Function with one more parameter, the error flag (`transformer.error_flags`,
`transformer.cuda.flag`), passed on to every device function it calls, and every index
part `i` (not a slice) at axis `d` of an array `x` with `n = x.shape[d]` either
- proved in bounds, by the rule `transformer.bounds` uses on the cpu, made concrete by
  constant shapes: a constant in `-n <= i < n`, or the variable of an enclosing
  `for i in range(a, b, s)` that the loop body never rebinds, with constant (or bound
  once to a constant) `a`, `b`, `s` and every value of the range in `-n <= i < n`; or
- checked where it is evaluated. A read `x[i]` becomes
  `x[flagged_index(flag, SITE, i, d, n)]`: `i` when in bounds, else the failure is
  recorded in the flag and 0 is read instead (in bounds, so nothing outside `x` is read;
  the value read no longer matters, as the launch raises). A write `x[i] = v` (or
  `x[i] += v`) runs only when its indices are in bounds; otherwise it records the
  failure and is skipped. The thread then carries on with in-bounds accesses only: a
  device function's return type is not known here, so it cannot simply return.
`SITE` is `error_flags.site_number` of the user's `file:line:col`, so the launch wrapper
raises the `IndexError` the cpu backend raises at that line.

The length of an array that Inference cannot follow (a name rebound through a tuple, as
a gradient's tape is) is read when the kernel runs (`len(x)`, `x.shape[d]`). An index
into an axis of constant length 0 cannot be redirected to an element and is refused
with a located error, as is an index this pass cannot check (`None`, `...`, an array of
indices).
"""
from __future__ import annotations


import gast

from .. import error_flags
from ..function import Function, resolve
from ..names import Namer
from ..nodes import copy_tree, walk
from ..syntax import call, const, name

_HINT = "use jit(..., backend='cuda', boundscheck=False) to run it unchecked"


def flag_failed_indices(fn: Function, info: dict, callees: set, trusted=(),
                        optional: bool = False) -> Function:
    """`fn` taking an error flag as its last parameter, its indices proved or checked.

    `info`: name -> Spec; `callees`: names of device functions `fn` calls (they take the
    flag too); `trusted`: arrays indexed only by generated code that is in bounds by
    construction (the output views of a kernel's device function). `optional`: `fn` is
    called by its kernel only, which passes the flag only if `fn` takes it: then `fn` is
    left as it is when it has nothing to check and calls no device function.
    """
    from . import flag as cuda_flag     # imports numba.cuda
    node = copy_tree(fn.node)
    namer = Namer.for_function(fn)
    env = dict(fn.env)
    names = {}
    for device in (cuda_flag.flagged_index, cuda_flag.record_failure):
        names[device.__name__] = namer.fresh(device.__name__)
        env[names[device.__name__]] = device
    names["len"] = namer.fresh("len")
    env[names["len"]] = len
    flag = namer.fresh("index_error")
    node.args.args = node.args.args + [name(flag, gast.Param())]
    checker = _Checker(fn, info, set(callees), set(trusted), flag, names)
    node.body = checker.block(node.body, [])
    if optional and not callees and not checker.checks:
        return fn
    return fn.replace(node=node, env=env)


class _Checker:
    def __init__(self, fn, info, callees, trusted, flag, names):
        self.fn, self.info, self.callees, self.trusted = fn, info, callees, trusted
        self.flag, self.names = flag, names
        self.constants = _int_constants(fn.node)
        self.statement = None
        self.checks = 0         # how many indices are checked

    # ------------------------------------------------------------ statements
    def block(self, stmts, loops) -> list:
        out, outer = [], self.statement
        for stmt in stmts:
            self.statement = stmt
            out.append(self.one(stmt, loops))
        self.statement = outer
        return out

    def one(self, stmt, loops):
        if isinstance(stmt, gast.For):
            stmt.iter = self.reads(stmt.iter, loops)
            stmt.body = self.block(stmt.body, loops + [stmt])
            stmt.orelse = self.block(stmt.orelse, loops)
            return stmt
        if isinstance(stmt, (gast.If, gast.While)):
            stmt.test = self.reads(stmt.test, loops)
            stmt.body = self.block(stmt.body, loops)
            stmt.orelse = self.block(stmt.orelse, loops)
            return stmt
        if isinstance(stmt, (gast.Assign, gast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, gast.Assign) else [stmt.target]
            stmt.value = self.reads(stmt.value, loops)
            failures = []
            for target in targets:
                if isinstance(target, gast.Subscript):
                    target.slice = self.reads(target.slice, loops)
                    failures += self.write_checks(target, loops)
            return self.guarded(stmt, failures)
        for field, value in gast.iter_fields(stmt):
            if isinstance(value, gast.expr):
                setattr(stmt, field, self.reads(value, loops))
        return stmt

    def guarded(self, stmt, failures):
        """`stmt` run only when no `(condition, record call)` of `failures` holds."""
        for condition, record in reversed(failures):
            stmt = gast.If(test=condition, body=[gast.Expr(value=record)], orelse=[stmt])
            _locate(stmt, self.statement)
        return stmt

    # ------------------------------------------------------------ indices
    def reads(self, expr, loops):
        """`expr` with every read of an array element checked in place."""
        return _Reads(self, loops).visit(expr)

    def write_checks(self, target, loops) -> list:
        failures = []
        for axis, part, n in self.parts(target):
            if self.proved(part, n, loops):
                continue
            index = copy_tree(part)
            below = gast.UnaryOp(op=gast.USub(), operand=_length(n)) \
                if not isinstance(n, int) else const(-n)
            test = gast.BoolOp(op=gast.Or(), values=[
                gast.Compare(left=index, ops=[gast.Lt()], comparators=[below]),
                gast.Compare(left=copy_tree(index), ops=[gast.GtE()],
                             comparators=[_length(n)])])
            record = call(name(self.names["record_failure"]), name(self.flag),
                          const(self.site(target)), copy_tree(index), const(axis),
                          _length(n))
            failures.append((test, record))
            self.checks += 1
        return failures

    def checked_read(self, node, loops):
        parts = node.slice.elts if isinstance(node.slice, gast.Tuple) else None
        new = []
        for axis, part, n in self.parts(node):
            if not self.proved(part, n, loops):
                self.checks += 1
                part = call(name(self.names["flagged_index"]), name(self.flag),
                            const(self.site(node)), part, const(axis), _length(n))
            new.append((axis, part))
        for axis, part in new:
            if parts is None:
                node.slice = part
            else:
                parts[axis] = part
        return node

    def parts(self, node) -> list:
        """(axis, index, axis length) of each index part to prove or check."""
        array = node.value
        if not isinstance(array, gast.Name) or array.id in self.trusted:
            return []
        spec = self.info.get(array.id)
        parts = node.slice.elts if isinstance(node.slice, gast.Tuple) else [node.slice]
        if spec is None and all(isinstance(p, gast.Constant) for p in parts):
            return []           # a tuple's constant index (Numba checks it), or an array's
        found = []
        for axis, part in enumerate(parts):
            if isinstance(part, gast.Slice):
                continue
            if _is_constant(part, (None, Ellipsis)) or self._is_array(part) \
                    or (spec is not None and axis >= len(spec.shape)):
                raise self.fn.origin.error(node, "cannot check this index in a CUDA kernel",
                                           hint=_HINT)
            if spec is None:    # rebound to arrays of one shape Inference could not follow
                found.append((axis, part, _runtime_length(array.id, axis, self.names["len"])))
                continue
            n = spec.shape[axis]
            if n == 0:
                raise self.fn.origin.error(
                    node, f"index into axis {axis} of {array.id!r}, which has length 0 "
                    "in this kernel: every such index is out of bounds", hint=_HINT)
            found.append((axis, part, n))
        return found

    def _is_array(self, part) -> bool:
        spec = self.info.get(part.id) if isinstance(part, gast.Name) else None
        return spec is not None and spec.is_array

    def proved(self, part, n, loops) -> bool:
        if not isinstance(n, int):
            return False
        value = self.constant(part)
        if value is not None:
            return -n <= value < n
        if not isinstance(part, gast.Name):
            return False
        for loop in reversed(loops):
            if isinstance(loop.target, gast.Name) and loop.target.id == part.id:
                return self._range_within(loop, n)
        return False

    def _range_within(self, loop, n: int) -> bool:
        if not isinstance(loop.iter, gast.Call) \
                or resolve(self.fn, loop.iter.func, None) is not range:
            return False
        var = loop.target.id
        if any(isinstance(sub, gast.Name) and sub.id == var and
               not isinstance(sub.ctx, gast.Load) for s in loop.body for sub in walk(s)):
            return False
        bounds = [self.constant(a) for a in loop.iter.args]
        if loop.iter.keywords or not 1 <= len(bounds) <= 3 or None in bounds \
                or (len(bounds) == 3 and bounds[2] == 0):
            return False
        values = range(*bounds)
        return not values or (-n <= min(values) and max(values) < n)

    def constant(self, node) -> int | None:
        if isinstance(node, gast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
            inner = self.constant(node.operand)
            return -inner if inner is not None else None
        if isinstance(node, gast.Name):
            return self.constants.get(node.id)
        return None

    def site(self, node) -> int:
        return error_flags.site_number(self.where(node))

    def where(self, node) -> str:
        """The user's `file:line:col` of `node` (or of its statement)."""
        located = node if getattr(node, "lineno", None) else self.statement
        lineno = getattr(located, "lineno", None) or self.fn.origin.lineno
        col = (getattr(located, "col_offset", None) or 0) + 1
        return f"{self.fn.origin.filename}:{lineno}:{col}"


class _Reads(gast.NodeTransformer):
    """Checks every array element read in one expression."""

    def __init__(self, checker: _Checker, loops):
        self.checker, self.loops = checker, loops

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, gast.Load):
            return self.checker.checked_read(node, self.loops)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, gast.Name) and node.func.id in self.checker.callees:
            node.args = node.args + [name(self.checker.flag)]
        return node


def _int_constants(node) -> dict:
    """Names assigned exactly once, to an int constant: name -> value."""
    counts, values = {}, {}
    for sub in walk(node):
        if isinstance(sub, gast.Name) and not isinstance(sub.ctx, gast.Load):
            counts[sub.id] = counts.get(sub.id, 0) + 1
        if isinstance(sub, gast.Assign) and len(sub.targets) == 1 \
                and isinstance(sub.targets[0], gast.Name) \
                and isinstance(sub.value, gast.Constant) and type(sub.value.value) is int:
            values[sub.targets[0].id] = sub.value.value
    return {k: v for k, v in values.items() if counts.get(k) == 1}


def _runtime_length(array: str, axis: int, length: str):
    """`len(x)` (an array or a tuple) or `x.shape[d]`, read when the kernel runs."""
    if axis == 0:
        return call(name(length), name(array))
    shape = gast.Attribute(value=name(array), attr="shape", ctx=gast.Load())
    return gast.Subscript(value=shape, slice=const(axis), ctx=gast.Load())


def _length(n):
    return const(n) if isinstance(n, int) else copy_tree(n)


def _is_constant(node, values) -> bool:
    return isinstance(node, gast.Constant) and any(node.value is v for v in values)


def _locate(new, old):
    for sub in walk(new):
        if "lineno" in getattr(sub, "_attributes", ()) and getattr(sub, "lineno", None) is None:
            gast.copy_location(sub, old)
