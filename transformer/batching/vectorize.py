"""The vectorize strategy: every statement rewritten by its batching rule.

Input: a prepared Function whose `Analysis` found no reason to loop. Output: the same
statements in the same control flow, each working on all examples at once over a leading
batch axis (`rules.batching`); identity batches stay as written where `rules.LINEAR` keeps
them so and are expanded where read otherwise; accumulators that start as fresh zeros and
receive batched values start batched. A statement without a rule raises `NeedsLoop`.
"""
from __future__ import annotations

import copy

import gast
import numpy as np

from codegen.emit import annotate, expression_source

from ..desugar import view_sources
from ..function import Function, resolve
from ..nan_checks import ADJOINT
from ..nodes import copy_tree, walk
from ..rules import batching as rules
from ..runtime.examples import example_values
from ..syntax import assign, located, name, store
from .analysis import (
    Analysis,
    _axis_name_of,
    _callee_function,
    _collective_kind,
    _lookup,
    param_flags,
)
from .emitter import _METADATA, _OPERANDS, _batch_reads, _Emitter, _holds_identity, _statements
from .flags import IDENTITY, Each, NeedsLoop, Spec, _Identity, any_batched, example_items

# ====================================================================== vectorize


class _Vectorizer(_Emitter):
    strategy = "vectorize"

    def __init__(self, fn, spec, analysis, batch_callee):
        super().__init__(fn, spec, analysis)
        self.batch_callee = batch_callee    # `batch` itself: a user callee is batched too
        self._callees: dict = {}
        self.basis_name = self.namer.fresh("basis")
        self.expanded: dict[str, str] = {}     # identity-batched name -> its batch, once
        self.expand_once: set[str] = set()

    def build(self) -> Function:
        self.written_itself = _written_in_place(self.fn)
        self.fresh_accumulators = _fresh_accumulators(self.fn, self.analysis,
                                                      self.written_itself)
        self.written_shared = set().union(*self.analysis.groups)
        body = self.prologue()
        if self.spec.identity is not None:
            param = self.fn.params[self.spec.identity]
            body.append(assign(store(self.basis_name), name(param)))
            if self.analysis.flags.get(param) is not IDENTITY:   # also holds other batches
                body.append(assign(store(param), self.expand(name(param))))
            self.expand_once = self.batched_once()
            body += self.expanded_once(param)
        for param in self.fn.params:
            flag = self.analysis.flags.get(param, False)
            declared = param_flags(self.fn, self.spec).get(param, False)
            if any_batched(flag) and not any_batched(declared):
                # an unmapped argument written with batched values: give each example a copy
                body.append(assign(store(param), self.helper(rules.broadcast_batch,
                                                             name(param), self.size)))
        body += self.block(self.fn.node.body)
        return self.function(self.header(body, "every statement has a batching rule"))

    def flag(self, node):
        return self.analysis.expr(node)

    def block(self, stmts) -> list:
        out = []
        for stmt in stmts:
            new = [gast.copy_location(n, stmt) if hasattr(stmt, "lineno") else n
                   for n in self.statement(stmt)]
            self.comment_source_line(stmt, new)
            for n in new if getattr(stmt, ADJOINT, False) else ():
                setattr(n, ADJOINT, True)      # debug_nans: still the reverse sweep's
            out.extend(new)
        return out or [gast.Pass()]

    def comment_source_line(self, stmt, new: list) -> None:
        """`# vmap of: <user line>` above the first statement batched from each line."""
        lineno = getattr(stmt, "lineno", None)
        if not new or lineno is None or lineno == getattr(self, "_last_line", None):
            return
        self._last_line = lineno
        text = self.fn.origin.statement_text(lineno)
        if text:
            annotate(new[0], f"vmap of: {text}")

    def statement(self, stmt) -> list:
        if id(stmt) in self.fresh_accumulators:
            first = self.fresh_accumulators[id(stmt)]
            return [] if first is None else [assign(copy_tree(stmt.targets[0]), name(first))]
        if self.on_identity(stmt):
            target = stmt.targets[0].id if isinstance(stmt, gast.Assign) else None
            return [copy_tree(stmt)] + self.expanded_once(target)
        before: list = []
        stmt = self.expand_operands(stmt, before)
        return before + self.batched_statement(stmt)

    # ---------------------------------------------------------------- identity batches
    def on_identity(self, stmt) -> bool:
        """True for a statement computing an identity-batched value: it runs on `d`."""
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
            return self.analysis.flags.get(stmt.targets[0].id) is IDENTITY
        return isinstance(stmt, gast.Expr) and self.flag(stmt.value) is IDENTITY

    def expand(self, value: gast.expr) -> gast.Call:
        """An identity-batched value as an ordinary batch."""
        return self.helper(rules.identity_batch, value, name(self.basis_name))

    def batched_once(self) -> set:
        """Identity-batched names read as ordinary batches (not only for their shape)
        that are assigned once at the top level, or are a parameter never assigned: their
        batch is built once, where they are defined, and not again at each use (a read
        `dx[i]` inside a loop would otherwise build it on every iteration)."""
        counts: dict[str, int] = {}
        for node in walk(self.fn.node):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
                counts[node.id] = counts.get(node.id, 0) + 1
        top = {s.targets[0].id for s in self.fn.node.body
               if isinstance(s, gast.Assign) and isinstance(s.targets[0], gast.Name)}
        once = {n for n, c in counts.items() if c == 1 and n in top}
        once |= {p for p in self.fn.params if p not in counts}
        read: set[str] = set()
        for stmt in _statements(self.fn.node.body):
            if not self.on_identity(stmt) and self.expands(stmt):
                for field in _OPERANDS.get(type(stmt), ()):
                    _batch_reads(getattr(stmt, field), self.analysis.flags, read)
        return once & read

    def expanded_once(self, target) -> list:
        """The statement building `target`'s batch right after its definition, if wanted."""
        if target not in self.expand_once:
            return []
        batch = self.namer.fresh(target + "_batch")
        self.expanded[target] = batch
        self.analysis.flags[batch] = True
        return [assign(store(batch), self.expand(name(target)))]

    def expands(self, stmt) -> bool:
        """Whether `stmt`'s identity-batched operands are read as ordinary batches."""
        return self.spec.identity is not None and not isinstance(stmt, gast.Return) and \
            not (isinstance(stmt, gast.Assign) and
                 isinstance(stmt.value, (gast.Tuple, gast.List, gast.Dict)))

    def expand_operands(self, stmt, before: list):
        """`stmt` with each identity-batched operand read from an ordinary batch, the
        statements computing those batches appended to `before`."""
        if not self.expands(stmt):
            return stmt                 # outputs expand in `output`; literals keep `d`
        stmt = copy.copy(stmt)
        for field in _OPERANDS.get(type(stmt), ()):
            value = getattr(stmt, field)
            setattr(stmt, field, [self.expand_in(v, before, stmt) for v in value]
                    if isinstance(value, list) else self.expand_in(value, before, stmt))
        return stmt

    def expand_in(self, node, before: list, stmt):
        if isinstance(node, gast.Name):
            flag = self.analysis.flags.get(node.id, False)
            if not isinstance(node.ctx, gast.Load) or not _holds_identity(flag):
                return node
            if flag is not IDENTITY:
                raise NeedsLoop(f"`{node.id}` holds an identity batch inside a container",
                                stmt)
            if node.id in self.expanded:
                return name(self.expanded[node.id])
            batch = self.namer.fresh(node.id + "_batch")
            before.append(assign(store(batch), self.expand(name(node.id))))
            self.analysis.flags[batch] = True
            return name(batch)
        if isinstance(node, gast.Attribute) and node.attr in _METADATA or \
                isinstance(node, gast.Subscript) and isinstance(node.slice, gast.Constant) \
                and not isinstance(self.flag(node.value), (bool, _Identity)):
            return node                 # the shape of `d` is the example's; `d` in a tuple
        node = copy.copy(node)
        for field, value in gast.iter_fields(node):
            if isinstance(value, gast.AST):
                setattr(node, field, self.expand_in(value, before, stmt))
            elif isinstance(value, list):
                setattr(node, field, [self.expand_in(v, before, stmt)
                                      if isinstance(v, gast.AST) else v for v in value])
        return node

    def batched_statement(self, stmt) -> list:
        if isinstance(stmt, gast.Assign):
            return self.assign(stmt)
        if isinstance(stmt, gast.If):
            return [gast.If(test=stmt.test, body=self.block(stmt.body),
                            orelse=self.block(stmt.orelse) if stmt.orelse else [])]
        if isinstance(stmt, gast.For):
            return [gast.For(target=stmt.target, iter=stmt.iter, body=self.block(stmt.body),
                             orelse=[], type_comment=None)]
        if isinstance(stmt, gast.While):
            return [gast.While(test=stmt.test, body=self.block(stmt.body), orelse=[])]
        if isinstance(stmt, gast.Return):
            value = self.output(stmt.value, self.flag(stmt.value), self.spec.out_axes, stmt)
            return [gast.Return(value=value)]
        if isinstance(stmt, gast.Expr):
            value, _ = self.expr(stmt.value, stmt, statement=True)
            return [gast.Expr(value=value)]
        if isinstance(stmt, gast.Assert) and any_batched(self.flag(stmt.test)):
            return [gast.Assert(test=self.helper(np.all, stmt.test), msg=stmt.msg)]
        return [copy_tree(stmt)]

    def assign(self, stmt) -> list:
        target = stmt.targets[0]
        value, flag = self.expr(stmt.value, stmt)
        if flag is IDENTITY:            # `d` taken out of a tuple into a batched variable
            value, flag = self.expand(value), True
        if isinstance(target, gast.Name):
            wanted = self.analysis.flags.get(target.id, False)
            if any_batched(wanted) and not any_batched(flag):
                value = self.helper(rules.broadcast_batch, value, self.size)
            elif self.item_read_of_written(target.id, stmt.value):
                value = self.helper(example_values, value)
            elif wanted != flag and not isinstance(wanted, bool) and \
                    not (isinstance(flag, bool) and not flag) and \
                    not (isinstance(wanted, Each) and isinstance(flag, tuple) and
                         all(item == wanted.flag for item in flag)):
                # (a tuple whose every item has the flag of `wanted`'s items fits it)
                raise NeedsLoop(f"`{target.id}` holds containers batched in different ways",
                                stmt)
            return [assign(copy_tree(target), value)]
        base = target.value
        if not any_batched(self.analysis.flags.get(base.id, False)):
            return [assign(copy_tree(target), value)]
        index = self.example_index(target.slice, stmt)
        place = gast.Subscript(value=copy_tree(base), slice=index, ctx=gast.Store())
        if any_batched(flag):
            view = gast.Subscript(value=copy_tree(base), slice=copy_tree(index),
                                  ctx=gast.Load())
            value = self.helper(rules.align_batched, value, view)
        return [assign(place, value)]

    def item_read_of_written(self, target: str, value) -> bool:
        """Whether `target = a[i]` reads a batched array that may be written in place
        while `target` holds the read: each example's `a[i]` may be a number, which the
        write must not change, where the batched read `a[:, i]` is a view."""
        # a slice read, or a name itself written through an index, holds an array per
        # example: a view, as in NumPy (and a copy there lost writes under jit's checks)
        return target in self.written_shared and target not in self.written_itself and \
            isinstance(value, gast.Subscript) and \
            not any(isinstance(n, gast.Slice) for n in walk(value.slice)) and \
            self.flag(value.value) is True and not self.analysis.index_flag(value.slice)

    # ---------------------------------------------------------------- expressions
    def expr(self, node, stmt, statement: bool = False):
        """(batched expression, flag) for one ANF right-hand side."""
        flag = self.flag(node)
        if isinstance(node, (gast.Name, gast.Constant)) or node is None:
            return node, flag
        if isinstance(node, gast.BinOp):
            return self.rule(type(node.op), [node.left, node.right], {}, stmt, node)
        if isinstance(node, gast.UnaryOp):
            return self.rule(type(node.op), [node.operand], {}, stmt, node)
        if isinstance(node, gast.Compare):
            return self.rule(type(node.ops[0]), [node.left, node.comparators[0]], {}, stmt,
                             node)
        if isinstance(node, gast.Call):
            return self.call(node, stmt, statement)
        if isinstance(node, gast.Subscript):
            return self.getitem(node, stmt), flag
        if isinstance(node, gast.Attribute):
            if not any_batched(self.flag(node.value)) or self.flag(node.value) is IDENTITY:
                return node, False
            result = rules.batched_attribute(node.value, node.attr)
            if result is None:
                raise NeedsLoop(f"no batching rule for the attribute `.{node.attr}`", stmt)
            return result
        return node, flag                       # Tuple, List, Dict literals of atoms

    def rule(self, key, args, keywords, stmt, node, statement=False):
        batched = [any_batched(self.flag(a)) for a in args]
        kw_batched = {k: any_batched(self.flag(v)) for k, v in keywords.items()}
        if not any(batched) and not any(kw_batched.values()):
            return node, False
        batcher = rules.BATCHERS.get(key)
        if batcher is None:
            raise NeedsLoop(f"no batching rule for {rules.describe(key)}", stmt)
        site = rules.Site(key, list(args), batched, dict(keywords), kw_batched, self.ref,
                          self.size, statement, [self.example_items(a) for a in args])
        try:
            result = batcher(site)
        except rules.Refused as refused:      # vmap cannot run it at all (JAX refuses too)
            raise self.fn.origin.error(node, str(refused), refused.hint) from None
        if result is None:
            raise NeedsLoop(f"the batching rule for {rules.describe(key)} does not handle "
                            f"this call (`{expression_source(node)}`)", stmt)
        return result

    def example_items(self, arg):
        """How `arg` splits into examples (`flags.example_items`); a list literal mixing
        batched and unbatched items is not split: Numba cannot index a list of arrays of
        different ranks, and the examples' loop builds each example's own list."""
        items = example_items(self.flag(arg))
        listed = isinstance(arg, gast.Name) and \
            isinstance(self.analysis.literals.get(arg.id), gast.List)
        return None if listed and isinstance(items, tuple) else items

    def call(self, node, stmt, statement=False):
        target = resolve(self.fn, node.func, None)
        kind = _collective_kind(target)
        if kind is not None:
            return self.collective(kind, node, stmt)
        flags = [self.flag(a) for a in node.args] + [self.flag(k.value) for k in node.keywords]
        if not any(any_batched(f) for f in flags):
            return node, False
        callee = _callee_function(target)
        if callee is not None:
            if any(not isinstance(f, bool) and any_batched(f) for f in flags):
                # the batched callee would take the tuple for one array with a batch axis
                raise NeedsLoop("a tuple, list or dict holding batched values is passed to "
                                f"{callee.name}", stmt)
            return self.user_call(target, callee, node), self.flag(node)
        if target is None:
            raise NeedsLoop(f"the call `{expression_source(node)}` has batched arguments and "
                            "its function is not known before run time", stmt)
        if any(target is f for f in (np.array, np.asarray)) and node.args and \
                isinstance(self.flag(node.args[0]), tuple):
            # the items of a sequence carry their batch axis first: the array's is second
            raise NeedsLoop("no batching rule for np.array of a sequence", stmt)
        keywords = {k.arg: k.value for k in node.keywords}
        return self.rule(target, node.args, keywords, stmt, node, statement)

    def user_call(self, target, callee: Function, node) -> gast.Call:
        """A call of the batched version of a user function (built once per flags)."""
        sig_params = callee.params
        axes = [None] * len(sig_params)
        for i, arg in enumerate(node.args):
            axes[i] = 0 if any_batched(self.flag(arg)) else None
        for k in node.keywords:
            if k.arg in sig_params:
                axes[sig_params.index(k.arg)] = 0 if any_batched(self.flag(k.value)) else None
        spec = Spec(tuple(axes), 0, None, self.spec.axis_name, "auto")
        cache_key = (id(target), spec.in_axes)
        if cache_key not in self._callees:
            key = self.namer.fresh(f"{callee.name}_vmap")
            self.env[key] = self.batch_callee(callee, spec)
            self._callees[cache_key] = (key, target)     # target kept alive: ids stay unique
        key = self._callees[cache_key][0]
        return gast.Call(func=name(key), args=list(node.args), keywords=list(node.keywords))

    def collective(self, kind: str, node, stmt):
        ours = self.spec.axis_name is not None and _axis_name_of(node) == self.spec.axis_name
        if kind == "axis_index":
            if ours:
                return self.helper(np.arange, self.size), True
            return node, False
        value = node.args[0]
        batched = any_batched(self.flag(value))
        if not ours:                    # another vmap's axis: passes through per example
            return node, batched
        on_batched, on_unbatched = rules.COLLECTIVE_RULES[kind]
        if not batched:
            return self.helper(on_unbatched, value, self.size), False
        return self.helper(on_batched, value), False

    def getitem(self, node, stmt):
        """`node` (a subscript) batched, at `node`'s position (a check on the new index
        reports the user's column)."""
        return located(self._getitem(node, stmt), node)

    def _getitem(self, node, stmt):
        base, index = node.value, node.slice
        base_flag = self.flag(base)
        if isinstance(index, gast.Constant) and not isinstance(base_flag, bool):
            return node                 # an element of a tuple or dict of batched values
        index_batched = self.analysis.index_flag(index)
        if isinstance(base_flag, (tuple, dict, Each)):
            # an item of a list or tuple at a run-time index: the analysis took the loop
            # unless every item has one flag and the index is the same in every example
            return node
        if not any_batched(base_flag):
            if not index_batched:
                return node
            return gast.Subscript(value=base, slice=self.gather_index(index, stmt),
                                  ctx=gast.Load())
        if index_batched:
            if isinstance(index, (gast.Tuple, gast.Slice)):
                raise NeedsLoop("a batched index inside a tuple index of a batched array",
                                stmt)
            return self.helper(rules.take_batched, base, index)
        return self.indexed(base, index, stmt)

    def indexed(self, base, index, stmt):
        if isinstance(index, gast.Name) and index.id not in self.analysis.range_targets:
            return self.helper(rules.index_examples, base, index)
        return gast.Subscript(value=base, slice=self.example_index(index, stmt),
                              ctx=gast.Load())

    def example_index(self, index, stmt):
        """`index` of one example as an index of the batched array (`:` in front)."""
        whole = gast.Slice(lower=None, upper=None, step=None)
        if isinstance(index, gast.Name) and index.id not in self.analysis.range_targets:
            raise NeedsLoop("a write through an index that may be a tuple", stmt)
        if isinstance(index, gast.Tuple):
            return gast.Tuple(elts=[whole] + list(index.elts), ctx=gast.Load())
        return gast.Tuple(elts=[whole, index], ctx=gast.Load())

    def gather_index(self, index, stmt):
        """An unbatched array indexed by batched indices: each batched part aligned."""
        if not isinstance(index, gast.Tuple):
            return index
        if any(isinstance(e, gast.Slice) for e in index.elts):
            raise NeedsLoop("a batched index next to a slice", stmt)
        site = rules.Site(None, list(index.elts),
                          [any_batched(self.flag(e)) for e in index.elts], {}, {},
                          self.ref, self.size)
        return gast.Tuple(elts=rules.aligned(site), ctx=gast.Load())


# ---------------------------------------------------------------- fresh accumulators
# Reverse mode starts each adjoint at zero (`bW = zeros_like(W)`) and adds contributions
# (`bW = bW + matmul_grad_left(g, W, x)`). Batched, the zeros would be one copy of `W`
# per example and the addition another full pass: when the first contribution is one of
# these adjoint helpers, whose result has exactly the shape of that argument, the
# accumulator simply starts as that contribution. `unbroadcast(g, x)` is `g` itself where the
# shapes agree, so the accumulator would share `g`'s array, which `zeros + g` never did: not
# where a later statement writes that array in place (the reverse of `y[k] = v` reads
# `by[k]` into `bv`, then zeroes `by[k]`).

def _shape_argument():
    from .. import runtime
    table = {runtime.unbroadcast: 1, runtime.matmul_grad_left: 1,
             runtime.matmul_grad_right: 2, runtime.broadcast_reduced: 1}
    zeros = {runtime.zeros_like, np.zeros_like}
    try:
        from .. import reverse
        zeros.add(reverse.float_zeros)
    except ImportError:           # reverse mode not installed in a partial checkout
        pass
    return table, zeros


def _fresh_accumulators(fn: Function, analysis: Analysis, written: set) -> dict:
    """id(statement) -> None (drop the zeros) or the name the accumulator starts as;
    `written`: the names `fn` writes through an index (`_written_in_place`)."""
    table, zeros = _shape_argument()
    body, found, links = fn.node.body, {}, _array_links(fn)
    calls = {s.targets[0].id: s.value for s in body if isinstance(s, gast.Assign) and
             isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Call)}
    for i, stmt in enumerate(body):
        zero_of = _zeros_of(fn, stmt, zeros)
        if zero_of is None:
            continue
        target, source = zero_of
        if target in written or not any_batched(analysis.flags.get(target, False)) or \
                any_batched(analysis.flags.get(source, False)):
            continue
        for j in range(i + 1, len(body)):
            later = body[j]
            first = _first_contribution(fn, later, target, source, calls, table)
            if first is not None and first not in written and \
                    analysis.flags.get(first) is True and \
                    not _written_after(fn, body[j + 1:], _sharing({first}, links)):
                found[id(stmt)], found[id(later)] = None, first
                break
            if target in {n.id for n in walk(later) if isinstance(n, gast.Name)}:
                break
    return found


def _array_links(fn: Function) -> list[set]:
    """Groups of names a statement may make share one array: a view
    (`desugar.view_sources`: `a = b`, `a = b[k]`, a loop's row) or `a = unbroadcast(b, x)`,
    which is `b` itself where the shapes agree."""
    from ..runtime import unbroadcast
    links = []
    for node in walk(fn.node):
        if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Name):
            sources = view_sources(fn, node.value)
            value = node.value
            if isinstance(value, gast.Call) and value.args and \
                    resolve(fn, value.func, None) is unbroadcast:
                sources |= view_sources(fn, value.args[0])
            links.append({node.targets[0].id} | sources)
        elif isinstance(node, gast.For) and isinstance(node.target, gast.Name):
            links.append({node.target.id} | view_sources(fn, node.iter))
    return [link for link in links if len(link) > 1]


def _sharing(names: set, links: list[set]) -> set:
    """`names` and every name linked to them, flow-insensitively (an over-approximation)."""
    out, grown = set(names), True
    while grown:
        grown = False
        for link in links:
            if link & out and not link <= out:
                out |= link
                grown = True
    return out


def _written_after(fn: Function, stmts: list, names: set) -> bool:
    """Whether `stmts` write in place through one of `names` (also `a += v` on an array,
    `a = update_in_place(a, a + v)`)."""
    from ..runtime import update_in_place
    for node in (node for stmt in stmts for node in walk(stmt)):
        if _writes_through(fn, node) & names:
            return True
        if isinstance(node, gast.Call) and node.args and \
                resolve(fn, node.func, None) is update_in_place and \
                view_sources(fn, node.args[0]) & names:
            return True
    return False


def _zeros_of(fn, stmt, zeros):
    if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and \
            isinstance(stmt.value, gast.Call) and stmt.value.args and \
            isinstance(stmt.value.args[0], gast.Name) and \
            _lookup_set(zeros, resolve(fn, stmt.value.func, None)):
        return stmt.targets[0].id, stmt.value.args[0].id
    return None


def _lookup_set(table, key) -> bool:
    try:
        return key in table
    except TypeError:
        return False


def _first_contribution(fn, stmt, target, source, calls, table):
    """`e` if `stmt` is `target = target + e` with `e` an adjoint shaped like `source`."""
    if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and
            stmt.targets[0].id == target and isinstance(stmt.value, gast.BinOp) and
            isinstance(stmt.value.op, gast.Add)):
        return None
    left, right = stmt.value.left, stmt.value.right
    if isinstance(left, gast.Name) and left.id == target and isinstance(right, gast.Name):
        other = right.id
    elif isinstance(right, gast.Name) and right.id == target and isinstance(left, gast.Name):
        other = left.id
    else:
        return None
    call_node = calls.get(other)
    if call_node is None:
        return None
    position = _lookup(table, resolve(fn, call_node.func, None))
    if position is None or len(call_node.args) <= position:
        return None
    shaped = call_node.args[position]
    return other if isinstance(shaped, gast.Name) and shaped.id == source else None


def _written_in_place(fn: Function) -> set:
    """Names written through an index or by a helper that writes into an argument."""
    return set().union(*(_writes_through(fn, node) for node in walk(fn.node)))


def _writes_through(fn: Function, node) -> set:
    """The name one node writes in place through (`a[i] = v`, `scatter_add(a, i, v)`)."""
    if isinstance(node, gast.Assign) and isinstance(node.targets[0], gast.Subscript) \
            and isinstance(node.targets[0].value, gast.Name):
        return {node.targets[0].value.id}
    if isinstance(node, gast.Call):
        position = _lookup(rules.MUTATES, resolve(fn, node.func, None))
        if position is not None and len(node.args) > position and \
                isinstance(node.args[position], gast.Name):
            return {node.args[position].id}
    return set()


def _register_derivatives() -> None:
    """`example_values` is a copy or the value itself: its adjoint passes the cotangent
    on, its tangent is the tangent read alike (grad and jvp of a vmapped function)."""
    from .. import templates
    scope = {"example_values": example_values}
    templates.ADJOINTS[example_values] = templates.rule_from_source(
        "def rule(z, x):\n    d[x] += d[z]", scope)
    templates.TANGENTS[example_values] = templates.rule_from_source(
        "def rule(z, x):\n    d[z] = example_values(d[x])", scope)


_register_derivatives()
