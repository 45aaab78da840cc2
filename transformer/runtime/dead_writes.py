"""Writes Numba's dead-code elimination must keep: a call's or a container's result may
share the arrays it was given.

Numba drops a write into an array (`g[i] = v`) when no name that may share the array is
read afterwards. Its alias analysis (`numba.core.ir_utils.find_potential_aliases`) knows
slicing, `.T`, `np.ravel`, `np.transpose` and `np.reshape`, but not `np.asarray`,
`np.squeeze`, `x.view()`, secant's runtime `reshape`, or a tuple holding the array. It runs
that elimination again after inlining an overload marked `inline="always"` (secant's index
checks are), so `f = np.asarray(g); g[i] = v; ...; return np.sum(f)` under `jit` lost the
write and returned a silently wrong number.

Registered here for every assignment: a call's result, and a tuple, list, set or dict
built from values, may share each array (or container) among its operands. This only adds
aliases, so it can only keep code Numba would have dropped.
"""
from __future__ import annotations

from numba.core import ir, ir_utils, types

_BUILT = ("call", "build_tuple", "build_list", "build_set", "build_map")
# operand types that cannot hold an array: a function or module is not data
_NOT_DATA = (types.Number, types.Boolean, types.Callable, types.Module, types.NoneType,
             types.StringLiteral, types.UnicodeType, types.Literal)


def _may_share(var: str, typemap) -> bool:
    if typemap is None or var not in typemap:
        return True                           # unknown: assume it may hold an array
    return not isinstance(typemap[var], _NOT_DATA)


def _results_share_operands(instr, args, typemap, func_ir, alias_map, arg_aliases) -> None:
    value = instr.value
    if not isinstance(value, ir.Expr) or value.op not in _BUILT:
        return
    lhs = instr.target.name
    if not _may_share(lhs, typemap):
        return
    operands = value.list_vars()
    if value.op == "call":
        operands = [v for v in operands if v.name != value.func.name]
    for operand in operands:
        if operand.name != lhs and _may_share(operand.name, typemap):
            ir_utils._add_alias(lhs, operand.name, alias_map, arg_aliases)


def register() -> None:
    """Install the rule (idempotent); it chains to any rule already set for assignments."""
    current = ir_utils.alias_analysis_extensions.get(ir.Assign)
    if current is _results_share_operands or getattr(current, "__wrapped_secant__", False):
        return
    if current is None:
        ir_utils.alias_analysis_extensions[ir.Assign] = _results_share_operands
        return

    def both(*args):
        current(*args)
        _results_share_operands(*args)
    both.__wrapped_secant__ = True
    ir_utils.alias_analysis_extensions[ir.Assign] = both


register()
