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
built from values, may share each array (or container) among its operands. And the
analysis is closed (`_closed`): Numba joins aliases one step deep and in block order, so a
write through `lst[1]` in a block listed before `lst = x, h` (with `h` a copy of an
argument) was left aliased to `lst` alone and dropped. Both only add aliases, so they can
only keep code Numba would have dropped.
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


def _closed(find):
    """Numba's alias analysis, closed: it joins aliases one step deep, and a name aliasing
    an argument goes to `arg_aliases` (always kept) only when the argument's link was
    seen first, in block order. `h = np.copy(v); lst = x, h` with `lst[1]` written in a
    block listed earlier left the write aliased to `lst` alone, and dropped it. Every
    connected group of aliases here is one set, and a group holding an argument's alias
    is wholly in `arg_aliases`."""
    def find_closed(*args, **kwargs):
        alias_map, arg_aliases = find(*args, **kwargs)
        seen = set()
        for start in list(alias_map):
            if start in seen:
                continue
            group, todo = {start}, [start]
            while todo:
                for other in alias_map.get(todo.pop(), ()):
                    if other not in group:
                        group.add(other)
                        todo.append(other)
            seen |= group
            for member in group:
                alias_map[member] = set(group)
            # (Numba's parfor lowering passes `{}`, an empty dict, for no argument aliases)
            if isinstance(arg_aliases, set) and group & arg_aliases:
                arg_aliases |= group
        return alias_map, arg_aliases
    find_closed.__wrapped_secant__ = True
    return find_closed


def register() -> None:
    """Install the rule (idempotent); it chains to any rule already set for assignments."""
    if not getattr(ir_utils.find_potential_aliases, "__wrapped_secant__", False):
        ir_utils.find_potential_aliases = _closed(ir_utils.find_potential_aliases)
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
