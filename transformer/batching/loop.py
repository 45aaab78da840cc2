"""The loop strategy: a `prange` over the examples calling the per-example function.

Input: a prepared Function and the reason the batch needs a loop. Output: a function that
takes each example's slice of the mapped arguments (container parameters flattened to their
leaves first), calls the per-example function, and stores its results into outputs
allocated from the first example's, stacked along `out_axes`. A batched `if` therefore never
runs both branches for one example.
"""
from __future__ import annotations


import gast
import numba
import numpy as np

from codegen.emit import annotate

from ..function import Function, resolve
from ..names import Namer
from ..nodes import copy_tree, walk
from ..rules import batching as rules
from ..syntax import assign, call, const, name, store, subscript
from .analysis import _axis_name_of, _collective_kind
from .emitter import _Emitter
from .flags import Each, any_batched

# ====================================================================== loop


class _Looper(_Emitter):
    strategy = "loop"

    def __init__(self, fn, spec, analysis, reason, ordered: bool = False):
        super().__init__(fn, spec, analysis)
        self.reason = reason
        self.ordered = ordered      # examples share a written array: one after another

    def build(self) -> Function:
        self.index = None
        if _uses_collectives(self.fn, self.spec.axis_name, ("axis_index",)) or \
                _reads_index(self.fn, self.spec.axis_name):
            self.index = self.namer.fresh("batch_index")
        elif _uses_collectives(self.fn, self.spec.axis_name):
            node = next(n for n in walk(self.fn.node) if isinstance(n, gast.Call) and
                        _collective_kind(resolve(self.fn, n.func, None)) is not None)
            raise self.fn.origin.error(
                node, f"vmap of {self.fn.name} needs the loop strategy ({self.reason}), "
                "which cannot run collectives over the mapped axis",
                "compute the collective outside the branch or loop that depends on the batch")
        self.refuse_what_rules_refuse()
        example = self.namer.fresh(f"{self.fn.name}_example")
        self.env[example], self.leaves, self.result_index = _flatten_example(self.fn)
        if self.index is not None:
            self.env[example] = _index_parameter(self.env[example], self.spec.axis_name,
                                                 self.index)
        b = self.namer.fresh("b")
        body = self.prologue()
        body.append(gast.Expr(value=self.helper(rules.check_examples, self.size)))
        first = self.namer.fresh("first")
        body.append(assign(store(first), self.example_call(example, const(0))))
        structure = self.structure()
        results = self.allocate(first, structure, body)
        step: list = []
        out = self.namer.fresh("out")
        step.append(assign(store(out), self.example_call(example, name(b))))
        self.store(results, out, name(b), step)
        if self.ordered:
            iterate = call(self.ref(range), const(1), self.size)
        else:
            # Numba types the index of a one-argument `prange` unsigned and that of
            # `prange(1, size)` signed; every `x[b]` with a signed index wraps a negative
            # one, and the loop's contiguous loads and stores become gathers and scatters
            # (SELU over 10^6 elements: 2.5x slower than the serial loop). Example 0 ran
            # before the loop, so its trip does nothing.
            iterate = call(self.ref(numba.prange), self.size)
            step = [gast.If(test=gast.Compare(left=name(b), ops=[gast.NotEq()],
                                              comparators=[const(0)]),
                            body=step, orelse=[])]
        body.append(gast.For(target=store(b), iter=iterate, body=step, orelse=[],
                             type_comment=None))
        for path, result in list(results.items()):      # each batch as an array
            results[path] = self.namer.fresh(f"{result}_done")
            body.append(assign(store(results[path]),
                               self.helper(rules.batch_result, name(result))))
        value = self.collect(results, structure, first, self.spec.out_axes)
        body.append(self.located(gast.Return(value=value)))
        return self.function(self.header(body, self.reason))

    def located(self, stmt):
        """`stmt` with `# vmap of: <the def line>`: an error Numba raises there (an out_axes
        past the result's rank) names the user's function."""
        text = self.fn.origin.statement_text(getattr(self.fn.node, "lineno", None))
        return annotate(stmt, f"vmap of: {text}") if text else stmt

    def refuse_what_rules_refuse(self) -> None:
        """A call whose batching rule refuses it (a pure_callback without vmap_method)
        is refused in the loop too, located; nothing is emitted while asking."""
        for node in walk(self.fn.node):
            key = resolve(self.fn, node.func, None) if isinstance(node, gast.Call) else None
            if key is None or key not in rules.ASKED_IN_LOOPS:
                continue
            batched = [self.batched(a) for a in node.args]
            keywords = {k.arg: k.value for k in node.keywords}
            site = rules.Site(key, list(node.args), batched, keywords,
                              {k: self.batched(v) for k, v in keywords.items()},
                              lambda obj: name("unused"), name("unused"))
            try:
                if any(batched) or any(site.kw_batched.values()):
                    rules.BATCHERS[key](site)
            except rules.Refused as refused:
                raise self.fn.origin.error(node, str(refused), refused.hint) from None

    def batched(self, atom) -> bool:
        return isinstance(atom, gast.Name) and any_batched(self.analysis.flags.get(atom.id))

    def example_call(self, example: str, b) -> gast.Call:
        args, keywords = [], []
        kwonly = {a.id for a in self.fn.node.args.kwonlyargs}
        for param, axes in zip(self.fn.params, self.spec.in_axes):
            for label, value in self.example_arguments(param, axes, b):
                if param in kwonly:
                    keywords.append(gast.keyword(arg=label, value=value))
                else:
                    args.append(value)
        if self.index is not None:
            index = copy_tree(b)
            if isinstance(b, gast.Name) and not self.ordered:    # the prange's unsigned index
                index = call(self.ref(np.intp), index)
            keywords.append(gast.keyword(arg=self.index, value=index))
        return gast.Call(func=name(example), args=args, keywords=keywords)

    def example_arguments(self, param: str, axes, b) -> list:
        """(parameter name, value) pairs passing `param` of example `b` to the example
        function: a container read only with constant keys goes leaf by leaf."""
        if param in self.leaves:
            out = []
            for key, leaf in self.leaves[param]:
                value = subscript(name(param), const(key))
                leaf_axes = axes.get(key) if isinstance(axes, dict) else axes
                out.append((leaf, subscript(value, copy_tree(b))
                            if leaf_axes is not None else value))
            return out
        value = name(param)
        if axes is not None:
            value = subscript(name(param), b) if self.analysis.flags.get(param) is True \
                else self.helper(rules.take_example, name(param), b)
        return [(param, value)]

    def part(self, value: str, path: tuple):
        """The part of an example function's result at `path` (dicts come back as tuples)."""
        node = name(value)
        for depth, key in enumerate(path):
            node = subscript(node, const(self.result_index.get(key, key) if depth == 0
                                         else key))
        return node

    def structure(self) -> dict:
        """{path: out_axes} for the parts of the result stacked one by one: the items of a
        returned tuple or dict literal, and of the tuples nested in those that out_axes
        stacks (jvp's `(primal, tangent)` pair of tuples); {(): out_axes} for one value."""
        return dict(_paths(self.analysis.output, self.spec.out_axes, top=True))

    def allocate(self, first: str, structure: dict, body: list) -> dict:
        """A batch per stacked part, its example 0 stored (parts not stacked: none)."""
        results = {}
        for path, axes in structure.items():
            if axes is None:
                continue
            part = self.part(first, path)
            result = self.namer.fresh("result")
            body.append(assign(store(result), self.helper(rules.batch_empty, self.size, part,
                                                          const(True))))
            body.append(assign(gast.Subscript(value=name(result), slice=const(0),
                                              ctx=gast.Store()), copy_tree(part)))
            results[path] = result
        return results

    def store(self, results: dict, out: str, b, step: list) -> None:
        for path, result in results.items():
            step.append(assign(gast.Subscript(value=name(result), slice=copy_tree(b),
                                              ctx=gast.Store()), self.part(out, path)))

    def collect(self, results: dict, structure: dict, first: str, out_axes, path=(),
                flags=None):
        """The returned value: each stacked part, each unstacked one from example 0."""
        flags = self.analysis.output if path == () else flags
        if path in structure:
            stacked = name(results[path]) if path in results else None
            return self.leaf(stacked, self.part(first, path), any_batched(flags), out_axes,
                             flags)
        keys = list(range(len(flags))) if isinstance(flags, tuple) else list(flags)
        parts = [self.collect(results, structure, first, _axes_at(out_axes, k), path + (k,),
                              flags[k]) for k in keys]
        if isinstance(flags, dict):
            return gast.Dict(keys=[const(k) for k in keys], values=parts)
        if path == () and self._returns_lists():        # a list stays a list, as in JAX
            return gast.List(elts=parts, ctx=gast.Load())
        return gast.Tuple(elts=parts, ctx=gast.Load())

    def _returns_lists(self) -> bool:
        """Whether every return of the function gives a list literal."""
        values = [r.value for r in walk(self.fn.node) if isinstance(r, gast.Return)]
        values = [self.analysis.literals.get(v.id) if isinstance(v, gast.Name) else v
                  for v in values]
        return bool(values) and all(isinstance(v, gast.List) for v in values)

    def leaf(self, stacked, first, batched: bool, out_axes, flags=None):
        if isinstance(flags, Each) and batched and out_axes is not None:
            # a list whose length is not known here (bound to lists of two lengths):
            # stacking it whole would put the batch axis before its items, not in each
            raise self.fn.origin.error(None, f"vmap(method='loop') of {self.fn.name}: a "
                                       "returned list is bound to lists of different "
                                       "lengths, so its batched items cannot be stacked "
                                       "one by one", "return a tuple of one length on "
                                       "every path, or use vmap's default method")
        if isinstance(out_axes, (tuple, list, dict)):
            raise self.fn.origin.error(None, f"out_axes {out_axes!r} does not match what "
                                       f"{self.fn.name} returns")
        if out_axes is None:
            if batched:
                raise self.fn.origin.error(None, f"vmap of {self.fn.name}: out_axes is None "
                                           "but the output varies over the mapped axis",
                                           "give an int out_axes for it")
            return first
        if out_axes != 0:
            return self.helper(rules.from_front, stacked, const(out_axes))
        return stacked


def _axes_at(out_axes, key):
    return out_axes[key] if isinstance(out_axes, (tuple, list, dict)) else out_axes


def _paths(flags, out_axes, top=False) -> list:
    """(path, out_axes) for each part the loop stacks (see `_Looper.structure`): tuples are
    followed where stacked, a top-level dict too (returned as a tuple)."""
    if isinstance(flags, tuple) and (top or out_axes is not None):
        keys = range(len(flags))
    elif isinstance(flags, dict) and top:
        keys = list(flags)
    else:
        return [((), out_axes)]
    return [((k,) + path, axes) for k in keys
            for path, axes in _paths(flags[k], _axes_at(out_axes, k))]


# ---------------------------------------------------------------- the example function
# Under jit a dict argument reaches compiled code as a tuple and only the top function's
# constant-key reads are rewritten for it, and Numba cannot return a dict from a called
# function. So the example function takes such a container leaf by leaf (`params_W`
# for `params["W"]`) and returns a dict result as a tuple.

def _flatten_example(fn: Function):
    """(example Function, {param: [(key, leaf parameter)]}, {result key: position})."""
    node = copy_tree(fn.node)
    namer = Namer.for_function(fn)
    leaves = {}
    for param in _container_params(node):
        keys = sorted({sub.slice.value for sub in walk(node)
                       if _is_constant_read(sub, param)}, key=repr)
        leaves[param] = [(key, namer.fresh(f"{param}_{key}")) for key in keys]
    _read_leaves(node, {p: dict(pairs) for p, pairs in leaves.items()})
    _expand_params(node.args, leaves)
    result_index = _dict_results_as_tuples(node)
    return fn.replace(node=node), leaves, result_index


def _is_constant_read(node, param: str) -> bool:
    return isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and \
        node.value.id == param and isinstance(node.slice, gast.Constant) and \
        isinstance(node.ctx, gast.Load)


def _container_params(node) -> list:
    """Parameters without a default whose every use is a read with a constant string key
    (dicts; an array indexed by constant ints keeps its batch axis first)."""
    args = node.args
    positional = args.posonlyargs + args.args
    with_default = {a.id for a in positional[len(positional) - len(args.defaults):]} | \
        {a.id for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None}
    out = []
    for param in [a.id for a in positional + args.kwonlyargs]:
        reads = [sub.value for sub in walk(node) if _is_constant_read(sub, param)]
        uses = [n for n in walk(gast.Module(body=node.body, type_ignores=[]))
                if isinstance(n, gast.Name) and n.id == param]
        keys = [sub.slice.value for sub in walk(node) if _is_constant_read(sub, param)]
        if reads and len(reads) == len(uses) and param not in with_default and \
                all(isinstance(k, str) for k in keys):
            out.append(param)
    return out


def _read_leaves(node, leaves: dict) -> None:
    for sub in walk(node):
        for field, value in gast.iter_fields(sub):
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if _is_leaf_read(item, leaves):
                        value[i] = name(leaves[item.value.id][item.slice.value])
            elif _is_leaf_read(value, leaves):
                setattr(sub, field, name(leaves[value.value.id][value.slice.value]))


def _is_leaf_read(node, leaves: dict) -> bool:
    return isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name) and \
        node.value.id in leaves and isinstance(node.slice, gast.Constant) and \
        isinstance(node.ctx, gast.Load)


def _expand_params(args, leaves: dict) -> None:
    def expand(params):
        out = []
        for a in params:
            pairs = leaves.get(a.id)
            out.extend([gast.Name(id=leaf, ctx=gast.Param(), annotation=None,
                                  type_comment=None) for _, leaf in pairs] if pairs else [a])
        return out
    args.posonlyargs, args.args = expand(args.posonlyargs), expand(args.args)
    kw = [(leaf, d) for a, d in zip(args.kwonlyargs, args.kw_defaults)
          for leaf in (expand([a]))]
    args.kwonlyargs, args.kw_defaults = [a for a, _ in kw], [d for _, d in kw]


def _dict_results_as_tuples(node) -> dict:
    """Rewrite `r = {k: v, ...}; return r` into a tuple when every return is such a dict
    with the same keys, none written by key (`r["k"] = v`); the keys' positions, or {}
    when nothing was rewritten."""
    bound = {}
    for stmt in walk(node):
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
            bound.setdefault(stmt.targets[0].id, []).append(stmt)
    returns = [n for n in walk(node) if isinstance(n, gast.Return)]
    written = {n.value.id for n in walk(node) if isinstance(n, gast.Subscript) and
               isinstance(n.value, gast.Name) and not isinstance(n.ctx, gast.Load)}
    literals = []
    for r in returns:
        stmts = bound.get(r.value.id, []) if isinstance(r.value, gast.Name) else []
        if len(stmts) != 1 or not isinstance(stmts[0].value, gast.Dict) or \
                r.value.id in written or \
                not all(isinstance(k, gast.Constant) for k in stmts[0].value.keys):
            return {}
        literals.append(stmts[0])
    key_sets = {tuple(k.value for k in s.value.keys) for s in literals}
    if len(key_sets) != 1:
        return {}
    keys = key_sets.pop()
    for stmt in literals:
        stmt.value = gast.Tuple(elts=stmt.value.values, ctx=gast.Load())
    return {key: i for i, key in enumerate(keys)}


def _uses_collectives(fn: Function, axis_name, only=None) -> bool:
    """Whether `fn` calls a collective over `axis_name` (with `only`: only those kinds)."""
    if axis_name is None:
        return False
    kinds = {_collective_kind(resolve(fn, n.func, None)) for n in walk(fn.node)
             if isinstance(n, gast.Call) and _axis_name_of(n) == axis_name}
    kinds.discard(None)
    return bool(kinds) and (only is None or kinds <= set(only))


def _reads_index(fn: Function, axis_name, seen=None) -> bool:
    """Whether a generated Function that `fn` calls (an inner vmap's example function, in
    a vmap of a vmap) calls `axis_index(axis_name)`, itself or further down."""
    seen = set() if seen is None else seen
    for callee in _called_functions(fn):
        if id(callee) in seen:
            continue
        seen.add(id(callee))
        if _uses_collectives(callee, axis_name, ("axis_index",)) or \
                _reads_index(callee, axis_name, seen):
            return True
    return False


def _called_functions(fn: Function) -> list:
    return [callee for n in walk(fn.node) if isinstance(n, gast.Call)
            for callee in [resolve(fn, n.func, None)] if isinstance(callee, Function)]


def _index_parameter(fn: Function, axis_name, index: str) -> Function:
    """The example function with a keyword-only parameter `index`, the example's position
    in the batch, read wherever it called `axis_index(axis_name)` (debug printing of the
    batch index in a loop), and passed on to each generated function it calls that reads
    it (an inner vmap's example function: the outer axis's index is this one)."""
    node = copy_tree(fn.node)
    env = dict(fn.env)
    namer = Namer.for_function(fn)

    class Replace(gast.NodeTransformer):
        def visit_Call(self, call_node):
            callee = resolve(fn, call_node.func, None)
            if _collective_kind(callee) == "axis_index" and \
                    _axis_name_of(call_node) == axis_name:
                return name(index)
            if isinstance(callee, Function) and (
                    _uses_collectives(callee, axis_name, ("axis_index",)) or
                    _reads_index(callee, axis_name)):
                inner = Namer.for_function(callee).fresh(index)
                renamed = namer.fresh(f"{callee.name}_indexed")
                env[renamed] = _index_parameter(callee, axis_name, inner)
                call_node.func = name(renamed)
                call_node.keywords.append(gast.keyword(arg=inner, value=name(index)))
            return self.generic_visit(call_node)

    Replace().visit(node)
    node.args.kwonlyargs.append(gast.Name(id=index, ctx=gast.Param(), annotation=None,
                                          type_comment=None))
    node.args.kw_defaults.append(None)
    return fn.replace(node=node, env=env)
