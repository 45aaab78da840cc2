"""Named-value checkpoint policies: `checkpoint(fun, policy=save_only_these_names("a"))`.

A checkpointed function whose policy saves some of its `checkpoint_name` values is
differentiated, where it is called, as a custom_vjp is (`reverse.adjoints.runs_fwd`): the
caller's forward sweep runs `fwd`, the body's value followed by the saved values (kept once per
trip when the call sits in a loop), and the reverse sweep calls `bwd(*args, *saved, *g)`,
the body's vjp with each saved value read from `saved` instead of computed. The vjp is
built for the body as written, then each saved `checkpoint_name(...)` call is replaced by
its saved value and the dead code is dropped: what only a saved value needed is not run
again, the rest of the body is recomputed, and the adjoint still flows through the named
value to what it was computed from.

A saved name must be the whole value of an assignment to a variable (`a =
checkpoint_name(expr, "a")`) at the top level of the body, before any `return`: one value
per call. Elsewhere (in a loop, a branch, inside an expression) it is refused, located.
"""
from __future__ import annotations

import re

import gast

from .function import Function, resolve
from .nodes import copy_tree, own_returns, walk
from .syntax import parsed_at

MARK = "__secant_saved_{}"
STACK = "_saved_by_"


class NamedSites:
    """The `checkpoint_name` assignments of `fn` that `saves(name)` keeps: `sites` lists
    (top-level statement index, variable, name) in body order (none when `saves` is None:
    a policy not by name). `checkpoint_name` is the marking function itself."""

    def __init__(self, fn: Function, saves, label: str, checkpoint_name) -> None:
        self.fn, self.sites = fn, []
        if saves is None:
            return
        placed = {}          # id(call) -> statement index, for top-level `v = name(...)`
        for k, stmt in enumerate(fn.node.body):
            if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and \
                    isinstance(stmt.targets[0], gast.Name) and \
                    isinstance(stmt.value, gast.Call):
                placed[id(stmt.value)] = k
        for sub in walk(fn.node):
            if not (isinstance(sub, gast.Call) and
                    resolve(fn, sub.func, None) is checkpoint_name):
                continue
            named = _name_of(sub)
            if named is None or not saves(named):
                continue
            if id(sub) not in placed:
                raise fn.origin.error(sub, f"{label} saves {named!r}, but this "
                                      "checkpoint_name is not the value of an assignment "
                                      f"at the top level of {fn.name} (in a loop, a branch "
                                      "or an expression it names several values or none)",
                                      f'assign it on its own line in {fn.name}\'s body: '
                                      f'v = checkpoint_name(expr, "{named}"); for a loop, '
                                      "checkpoint the loop body as a function called in "
                                      "the loop (each call's named values are saved)")
            k = placed[id(sub)]
            early = [r for s in fn.node.body[:k] for r in walk(s)
                     if isinstance(r, gast.Return)]
            if early:
                raise fn.origin.error(early[0], f"{label} saves {named!r}, assigned after "
                                      "this return: the value may not exist",
                                      f'assign v = checkpoint_name(expr, "{named}") before '
                                      "the first return")
            self.sites.append((k, fn.node.body[k].targets[0].id, named))
        self.sites.sort()
        for sub in walk(fn.node):
            if isinstance(sub, gast.Call):
                callee = _names_saved_in(resolve(fn, sub.func, None), saves,
                                         checkpoint_name)
                if callee is not None:
                    raise fn.origin.error(sub, f"{label} saves {callee[1]!r}, named in "
                                          f"{callee[0]}, which {fn.name} calls: a called "
                                          "function's values are recomputed by its own "
                                          "vjp, never saved by the caller's policy",
                                          f"checkpoint {callee[0]} itself with this policy "
                                          f"and call that in {fn.name} (or name the value "
                                          f"in {fn.name})")

    def fwd(self) -> Function:
        """`f_fwd(*params)` -> `(f(*params), saved0, ...)`: the body, keeping the saved
        values as they are assigned (a flat tuple: vmap batches each item)."""
        node = copy_tree(self.fn.node)
        keep = [f"{MARK.format(j)}" for j in range(len(self.sites))]
        for j, (k, var, _) in reversed(list(enumerate(self.sites))):
            node.body.insert(k + 1, parsed_at(f"{keep[j]} = {var}", node.body[k]))
        for ret in own_returns(node):
            value = ret.value or gast.Constant(value=None, kind=None)
            ret.value = gast.Tuple(elts=[value] + [
                gast.Name(id=v, ctx=gast.Load(), annotation=None, type_comment=None)
                for v in keep], ctx=gast.Load())
            gast.copy_location(ret.value, ret)
        node.name = f"{self.fn.name}_fwd"
        return self.fn.replace(node=node, chain=self.fn.chain + ("checkpoint fwd",))

    def marked(self) -> Function:
        """The body taking the saved values as extra parameters (after its own), each saved
        `checkpoint_name` call renamed to a mark that `substitute` finds in its vjp."""
        node = copy_tree(self.fn.node)
        for j, (k, _, _) in enumerate(self.sites):
            node.body[k].value.args[1] = gast.Constant(value=MARK.format(j), kind=None)
            node.args.args.append(gast.Name(id=MARK.format(j), ctx=gast.Param(),
                                            annotation=None, type_comment=None))
        return self.fn.replace(node=node)


def substitute(vjp: Function, count: int) -> Function:
    """`vjp` (of `NamedSites.marked`) with each marked `checkpoint_name` call replaced by
    the saved value it marks, and the code only those calls needed removed."""
    from .reverse import drop_dead_code
    node = copy_tree(vjp.node)
    marks = {MARK.format(j) for j in range(count)}

    class Replace(gast.NodeTransformer):
        def __init__(self):
            self.operands = {}

        def visit_Call(self, call):
            self.generic_visit(call)
            named = _name_of(call)
            if named in marks:
                if call.args and isinstance(call.args[0], gast.Name):
                    self.operands[call.args[0].id] = named
                return gast.copy_location(gast.Name(id=named, ctx=gast.Load(),
                                                    annotation=None, type_comment=None),
                                          call)
            return call

    replace = Replace()
    node = replace.visit(node)
    # the named operand (`tanh_pre` of `act = checkpoint_name(tanh_pre, ...)`), assigned
    # once, is the saved value too: an adjoint reading it reads the saved value instead
    stores = {}
    for sub in walk(node):
        if isinstance(sub, gast.Name) and isinstance(sub.ctx, (gast.Store, gast.Param)):
            stores[sub.id] = stores.get(sub.id, 0) + 1
    same = {v: m for v, m in replace.operands.items() if stores.get(v) == 1}
    for sub in walk(node):
        if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Load) and sub.id in same:
            sub.id = same[sub.id]
    return drop_dead_code(vjp.replace(node=node))


def saved_stack_name(target: str, owner: str) -> str:
    """The base name of the list holding, trip by trip, a value saved by checkpointed
    function `owner` whose call assigns `target` (`refuse_saved_stack` knows it)."""
    return f"{target}{STACK}{owner}"


def refuse_saved_stack(fn: Function, stmt) -> None:
    """`stmt` of a gradient being differentiated again: the push of a looped named-value
    checkpoint's saved values onto their list is refused, located, with what works."""
    func = stmt.value.func if isinstance(stmt, gast.Expr) and \
        isinstance(stmt.value, gast.Call) else None
    if isinstance(func, gast.Attribute) and func.attr == "append" and \
            isinstance(func.value, gast.Name) and STACK in func.value.id:
        owner = re.sub(r"_\d+$", "", func.value.id.rpartition(STACK)[2])
        raise fn.origin.error(stmt, f"a second derivative through {owner}, checkpointed "
                              "with a policy that saves named values and called in a loop: "
                              "the values it keeps, one per trip, sit in lists that are not "
                              "differentiated again",
                              f"for hessian or grad of grad, checkpoint {owner} with "
                              "policy=None or nothing_saveable (its body is then recomputed "
                              "instead of kept), or call it outside a loop")


def _names_saved_in(obj, saves, checkpoint_name, depth: int = 4):
    """(function name, saved name) for a user function `obj`, or one it calls up to
    `depth` calls deep, naming a value that `saves` keeps; None when there is none (a
    checkpointed or custom-rule callee decides for itself)."""
    from codegen.backends import is_user_function

    from .frontend import parse_callee
    if depth <= 0 or not is_user_function(obj):
        return None
    try:
        fn = parse_callee(obj)
    except Exception:       # noqa: BLE001 (no source to read: nothing named there)
        return None
    for sub in walk(fn.node):
        if not isinstance(sub, gast.Call):
            continue
        target = resolve(fn, sub.func, None)
        named = _name_of(sub) if target is checkpoint_name else None
        if named is not None and saves(named):
            return fn.name, named
        found = _names_saved_in(target, saves, checkpoint_name, depth - 1) \
            if target is not obj else None
        if found is not None:
            return found
    return None


def _name_of(call: gast.Call):
    args = list(call.args) + [k.value for k in call.keywords]
    if len(args) == 2 and isinstance(args[1], gast.Constant) and \
            isinstance(args[1].value, str):
        return args[1].value
    return None


