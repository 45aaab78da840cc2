"""`debug_nans`: a check after every computed value, reporting the first NaN or infinity.

    jit(f, debug_nans=True)(x)           # or SECANT_DEBUG_NANS=1, or
    transformer.config.update("jax_debug_nans", True)

`with_nan_checks(fn)` is the last step before a module is written (`materialize`), so the
checks see the code as it runs, on every backend but CUDA, in every helper the function
calls. After each statement that computes a value - an assignment whose right side is not
a plain copy, an augmented assignment, a write into an array element or slice, the outputs
of a host call's `objmode` block - it inserts `finite_check(target, head, tail)`
(`runtime.nans`), which raises `FloatingPointError` naming "nan" or "inf", the user's
file:line:col, that line with a caret, and whether the value came from the forward
computation or from the reverse sweep (statements the reverse sweep emits carry the
`ADJOINT` mark; their position is the primal line whose derivative they compute).

Not checked: copies (`a = b`), constants, allocations whose contents are undefined
(`np.empty`) and tapes (their values were checked when computed). A statement that reads
an infinity the code writes on purpose (`np.inf`, `-math.inf`, `float("inf")`, or a name
holding one, e.g. `m = -np.inf` before a running maximum) is checked for NaNs only.
Invariant of the output: the input's statements in their order, each check right after
the statement it checks; nothing else changes, so without `debug_nans` nothing is added.
"""
from __future__ import annotations

import math
import os

import gast

from codegen.errors import TransformError

from .function import Function, resolve
from .names import Namer
from .nodes import copy_tree, walk
from .runtime.nans import finite_check, nan_check
from .syntax import call, const, name

__all__ = ["ADJOINT", "config", "wanted", "with_nan_checks"]

ADJOINT = "secant_adjoint"          # statement attribute: emitted by the reverse sweep
ENVIRONMENT = "SECANT_DEBUG_NANS"
_REVERSE_TRANSFORMS = ("grad", "vjp", "value_and_grad", "jacrev", "hessian")
# calls that keep an infinity they are given on purpose (a running max, a masked value)
_KEEP_INFINITY = frozenset({"max", "min", "maximum", "minimum", "fmax", "fmin", "where",
                            "clip", "full", "full_like"})

# callees whose result is not a computed value: undefined contents or a tape of values
# checked before they were recorded
_UNCHECKED_CALLS = frozenset({"empty", "empty_like", "batch_empty", "batch_result", "float_tape",
                              "exact_tape", "push", "items_buffer", "push_items"})


class _Config:
    """JAX-style switches: `config.update("jax_debug_nans", True)` (or "debug_nans")."""

    def __init__(self):
        self.debug_nans: bool | None = None     # None: the environment variable decides

    def update(self, option: str, value) -> None:
        if option not in ("jax_debug_nans", "debug_nans"):
            raise ValueError(f"unknown option {option!r}: secant's config knows "
                             "'jax_debug_nans' (alias 'debug_nans')")
        self.debug_nans = bool(value)


config = _Config()


def wanted(debug_nans: bool | None) -> bool:
    """Whether to insert the checks: `debug_nans` when given (jit's option), else
    `config.update(...)`'s value, else the environment variable SECANT_DEBUG_NANS."""
    if debug_nans is not None:
        return bool(debug_nans)
    if config.debug_nans is not None:
        return config.debug_nans
    return os.environ.get(ENVIRONMENT, "").strip().lower() not in ("", "0", "false", "no")


def with_nan_checks(fn: Function) -> Function:
    """`fn` with a check after each statement that computes a value (module docstring)."""
    inserter = _Inserter(fn)
    node = copy_tree(fn.node)
    inserter.fn = fn.replace(node=node)
    node.body = inserter.block(node.body)
    return fn.replace(node=node, env=inserter.env) if inserter.inserted else fn


class _Inserter:
    def __init__(self, fn: Function):
        self.fn, self.env = fn, dict(fn.env)
        self.namer = Namer.for_function(fn)
        self.bound: dict[str, str] = {}
        self.inserted = False
        self.intended = _names_holding_infinity(fn)
        self.reverse_from = _reverse_sweep_start(fn)
        self.reverse_mode = self.reverse_from is not None or \
            any(getattr(s, ADJOINT, False) for s in walk(fn.node))

    # ------------------------------------------------------------ walking
    def block(self, stmts: list, reverse: bool = False) -> list:
        out = []
        for index, stmt in enumerate(stmts):
            if stmts is self.fn.node.body and self.reverse_from is not None:
                reverse = index >= self.reverse_from
            for field in ("body", "orelse"):
                inner = getattr(stmt, field, None)
                if isinstance(stmt, (gast.If, gast.For, gast.While)) and inner:
                    setattr(stmt, field, self.block(inner, reverse))
            out.append(stmt)
            adjoint = reverse or getattr(stmt, ADJOINT, False)
            out += [self.check(stmt, target, adjoint) for target in self.targets(stmt)]
        return out

    def targets(self, stmt) -> list:
        """The values `stmt` computes, as expressions to read back (none for a copy)."""
        if isinstance(stmt, gast.With):         # a host call's objmode block
            return [name(k.arg) for item in stmt.items
                    if isinstance(item.context_expr, gast.Call)
                    for k in item.context_expr.keywords]
        if isinstance(stmt, gast.AugAssign):
            return [_read(stmt.target)]
        if not isinstance(stmt, gast.Assign) or not self.computes(stmt.value):
            return []
        found = []
        for target in stmt.targets:
            elts = target.elts if isinstance(target, (gast.Tuple, gast.List)) else [target]
            found += [_read(t) for t in elts if isinstance(t, (gast.Name, gast.Subscript))]
        return found

    def computes(self, value) -> bool:
        if isinstance(value, (gast.Name, gast.Constant)):
            return False
        if isinstance(value, gast.Call):
            callee = resolve(self.fn, value.func, None)
            return getattr(callee, "__name__", None) not in _UNCHECKED_CALLS
        return True

    # ------------------------------------------------------------ the check
    def check(self, stmt, target, adjoint: bool) -> gast.Expr:
        self.inserted = True
        helper = nan_check if self.builds_infinity(stmt) else finite_check
        head, tail = self.message(stmt, adjoint)
        return gast.Expr(value=call(self.ref(helper), target, const(head), const(tail)))

    def ref(self, helper) -> gast.Name:
        if helper.__name__ not in self.bound:
            self.bound[helper.__name__] = self.namer.fresh(helper.__name__)
            self.env[self.bound[helper.__name__]] = helper
        return name(self.bound[helper.__name__])

    def builds_infinity(self, stmt) -> bool:
        """Whether `stmt` is an infinity written on purpose, or a running minimum or
        maximum (or `np.where`, `np.clip`) taking one."""
        value = getattr(stmt, "value", None)
        if _infinity_value(self.fn, value, self.intended):
            return True
        if not isinstance(value, gast.Call) or getattr(
                resolve(self.fn, value.func, None), "__name__", None) not in _KEEP_INFINITY:
            return False
        return any(_infinity_value(self.fn, a, self.intended) for a in value.args)

    def message(self, stmt, adjoint: bool) -> tuple[str, str]:
        """The message before and after the word "nan"/"inf", as a located error reads."""
        origin = self.fn.origin
        lineno = getattr(stmt, "lineno", None) or origin.lineno
        col = getattr(stmt, "col_offset", None) or 0
        line = origin.source_line(lineno)
        if adjoint:
            where = (f"in the reverse sweep, computing the derivative of line {lineno} "
                     f"(debug_nans)")
            hint = ("this line's derivative is not finite at these values (a sqrt, log or "
                    "power at 0, a division by 0): evaluate the gradient elsewhere, or give "
                    "the function its own derivative with custom_vjp")
        else:
            sweep = " in the forward sweep" if self.reverse_mode else ""
            where = f"by this line{sweep} (debug_nans)"
            hint = ("this is the first value computed here that is not finite: check this "
                    "line's inputs (a log or sqrt of a negative, 0/0, an overflow in exp)")
        rendered = str(TransformError("\x00", filename=origin.filename, lineno=lineno,
                                      col=col, line=line, hint=hint))
        before, _, after = rendered.partition("\x00")
        return before + "invalid value (", f") produced {where}" + after


def _reverse_sweep_start(fn: Function) -> int | None:
    """The index of the first top-level statement of the reverse sweep of a gradient
    whose statements lost their `ADJOINT` mark (vmap re-normalizes them): the seeds,
    placed at the `def` line, after the forward sweep's statements at body lines."""
    if not any(step.startswith(_REVERSE_TRANSFORMS) for step in fn.chain):
        return None
    home, seen_body = fn.node.lineno, False
    for index, stmt in enumerate(fn.node.body):
        lineno = getattr(stmt, "lineno", None)
        if lineno is not None and lineno != home:
            seen_body = True
        elif seen_body and lineno == home:
            return index
    return None


def _read(target):
    """A Load of the stored expression `target`."""
    read = copy_tree(target)
    for sub in walk(read):
        if hasattr(sub, "ctx") and isinstance(sub.ctx, gast.Store):
            sub.ctx = gast.Load()
    return read


def _is_infinity(fn: Function, node) -> bool:
    """`np.inf`, `math.inf`, an inf constant, or `float("inf")` (any sign, any case)."""
    if isinstance(node, gast.Constant):
        return isinstance(node.value, float) and math.isinf(node.value)
    if isinstance(node, (gast.Name, gast.Attribute)):
        value = resolve(fn, node, None)
        return isinstance(value, float) and math.isinf(value)
    if isinstance(node, gast.Call) and resolve(fn, node.func, None) is float and node.args:
        arg = node.args[0]
        return isinstance(arg, gast.Constant) and isinstance(arg.value, str) and \
            arg.value.strip().lower().lstrip("+-") in ("inf", "infinity")
    return False


def _names_holding_infinity(fn: Function) -> set[str]:
    """Names assigned an infinity the code writes: the constant, its negation, a copy of
    such a name, or `np.full`/`np.full_like` of one."""
    held: set[str] = set()
    changed = True
    while changed:
        changed = False
        for stmt in walk(fn.node):
            if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name)):
                continue
            if stmt.targets[0].id not in held and _infinity_value(fn, stmt.value, held):
                held.add(stmt.targets[0].id)
                changed = True
    return held


def _infinity_value(fn: Function, value, held: set) -> bool:
    if isinstance(value, gast.UnaryOp):
        value = value.operand
    if isinstance(value, gast.Name) and value.id in held:
        return True
    if isinstance(value, gast.Call) and getattr(resolve(fn, value.func, None), "__name__",
                                                None) in ("full", "full_like"):
        return any(_infinity_value(fn, a, held) for a in value.args[1:])
    return _is_infinity(fn, value)
