"""Tidy the reverse sweep: fewer allocations and no work on adjoints known to be zero.

Input: a generated gradient body (the reverse package), where every adjoint update has the form
`bv = bv + e`, `bv[k] = bv[k] + e` or an in-place rule call such as `scatter_add(bx, i, e)`,
and each block's
adjoints start as `bv = zeros_like(v)`. Two rewrites, both exact:

1. *Sinking into branches*: adjoints zeroed before a reversed `if c:` and set only inside
   it stay zero when `c` is false, and adjoint code is linear in them, so the statements
   after the `if` that read only such adjoints move into it. A pair loop with a cutoff
   then skips the adjoint of every pair outside the cutoff. Zero initialisations whose
   every mention moved into one branch move there too. A moved statement or zeroing no
   longer runs when `c` is false, so the name it assigns must be zero already or
   mentioned nowhere else in the function (a reset `bv = zeros_like(v)` after an
   overwrite is read outside its block, or by the loop's next trip).
2. *Folding*: `bv = zeros_like(v)` followed, in the same block, by the first use
   `bv = bv + e` becomes `bv = e`.
3. *In place*: `bx = bx + e` becomes `bx += e` for the adjoints of the differentiated
   parameters, which the reverse sweep allocates itself and never shares (their
   zeros are not folded away), so a loop accumulating `bW` allocates nothing per trip.

Output invariant: the same values for every adjoint that is read afterwards.
"""
from __future__ import annotations

import gast

from codegen import emit

from ..nan_checks import ADJOINT
from ..nodes import walk


def tidy_reverse(stmts: list, zeros: str, adjoint_names: set, owned: set = frozenset()) -> None:
    """Apply the rewrites to `stmts` and every nested block, in place."""
    mentions = _mention_counts(stmts)
    _sink(stmts, zeros, adjoint_names, mentions)
    _fold_zero_inits(stmts, zeros)
    if owned:
        _accumulate_in_place(stmts, owned)


# ---------------------------------------------------------------- sinking into branches


def _mention_counts(stmts: list) -> dict:
    counts: dict = {}
    for stmt in stmts:
        for sub in walk(stmt):
            if isinstance(sub, gast.Name):
                counts[sub.id] = counts.get(sub.id, 0) + 1
    return counts


def _local_to(stmts: list, var: str, mentions: dict) -> bool:
    """Whether every mention of `var` in the function lies in `stmts`."""
    return _mention_counts(stmts).get(var, 0) == mentions.get(var, 0)


def _sink(stmts: list, zeros: str, adjoint_names: set, mentions: dict) -> None:
    for stmt in stmts:
        for field in ("body", "orelse"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                _sink(inner, zeros, adjoint_names, mentions)
    zero: set = set()
    index = 0
    while index < len(stmts):
        stmt = stmts[index]
        target = _zero_init_target(stmt, zeros)
        if target:
            zero.add(target)
        elif not zero:                  # no zero adjoint to move or forget: nothing to read
            pass
        elif isinstance(stmt, gast.If) and not stmt.orelse:
            inside = _written(stmt.body)
            moved = _move_after_branch(stmts, index, zero & inside, zero, adjoint_names,
                                       mentions)
            zero -= inside | moved
        else:
            zero -= _written([stmt])
        index += 1
    _sink_inits(stmts, zeros, mentions)


def _move_after_branch(stmts, index, sparse: set, zero: set, adjoint_names: set,
                       mentions: dict) -> set:
    """Move the statements after `stmts[index]` that read only `sparse` adjoints into it.

    `zero` holds the adjoints still zero before the branch: accumulating sparse values
    into one of them leaves it sparse too.
    """
    if not sparse:
        return set()
    sparse = set(sparse)
    assigned: set = set()
    end = index + 1
    while end < len(stmts):
        kind = _update(stmts[end], adjoint_names)
        if kind is None:
            break
        target, reads, plain = kind
        if not reads or not reads <= sparse:
            break
        if plain or target in zero:
            sparse.add(target)
        if plain and target not in zero:
            assigned.add(target)
        end += 1
    moved = stmts[index + 1:end]
    if end == index + 1 or not all(_local_to(moved, t, mentions) for t in assigned):
        return set()
    stmts[index].body.extend(stmts[index + 1:end])
    del stmts[index + 1:end]
    return sparse


def _update(stmt, adjoint_names: set):
    """(target, adjoint names read, whether it is a plain assignment) or None."""
    if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name):
        target = stmt.targets[0].id
        value = stmt.value
        if isinstance(value, gast.BinOp) and isinstance(value.left, gast.Name) and \
                value.left.id == target and isinstance(value.op, (gast.Add, gast.Sub)):
            return target, _reads(value.right, adjoint_names), False
        reads = _reads(value, adjoint_names)
        return (target, reads, True) if target not in reads else None
    if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call) and \
            stmt.value.args and isinstance(stmt.value.args[0], gast.Name):
        call = stmt.value               # an in-place accumulation: scatter_add(bx, i, e)
        return call.args[0].id, _reads(call.args[1:], adjoint_names), False
    if _item_accumulation(stmt):        # bx[k] = bx[k] + e
        return stmt.targets[0].value.id, _reads(stmt.value.right, adjoint_names), False
    return None


def _item_accumulation(stmt) -> bool:
    if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Subscript) and
            isinstance(stmt.targets[0].value, gast.Name) and
            isinstance(stmt.value, gast.BinOp) and isinstance(stmt.value.op, gast.Add)):
        return False
    target, left = stmt.targets[0], stmt.value.left
    return isinstance(left, gast.Subscript) and isinstance(left.value, gast.Name) and \
        left.value.id == target.value.id and \
        gast.dump(left.slice) == gast.dump(target.slice)


def _reads(node, adjoint_names: set) -> set:
    nodes = node if isinstance(node, list) else [node]
    return {n.id for part in nodes for n in walk(part)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)
            and n.id in adjoint_names}


def _written(stmts) -> set:
    found = set()
    for stmt in stmts:
        for sub in walk(stmt):
            if isinstance(sub, gast.Name) and isinstance(sub.ctx, gast.Store):
                found.add(sub.id)
            elif isinstance(sub, gast.Call) and sub.args and \
                    isinstance(sub.args[0], gast.Name):
                found.add(sub.args[0].id)           # in-place rule calls
            elif isinstance(sub, gast.Subscript) and isinstance(sub.ctx, gast.Store) and \
                    isinstance(sub.value, gast.Name):
                found.add(sub.value.id)
    return found


def _mentions(stmt, names: set) -> bool:
    return any(isinstance(n, gast.Name) and n.id in names for n in walk(stmt))


def _sink_inits(stmts: list, zeros: str, mentions: dict) -> None:
    """Move `bv = zeros_like(v)` into the one branch that holds every other mention of
    `bv` in the function."""
    index = 0
    while index < len(stmts):
        target = _zero_init_target(stmts[index], zeros)
        later = [k for k in range(index + 1, len(stmts))
                 if target and _mentions(stmts[k], {target})]
        if len(later) == 1 and isinstance(stmts[later[0]], gast.If):
            branch = stmts[later[0]]
            if _local_to(branch.body + [stmts[index]], target, mentions) and \
                    not _mentions(branch.test, {target}):
                branch.body.insert(0, stmts.pop(index))
                continue
        index += 1


# ---------------------------------------------------------------- folding


def _fold_zero_inits(stmts: list, zeros: str) -> None:
    """`bv = zeros_like(v)` then `bv = bv + e` (first use, same block) -> `bv = e`.

    Saves an allocation and an add per adjoint per iteration. `e` may return one of its
    arguments itself (unbroadcast does), so `bv` may alias another adjoint: that one has
    been consumed by this very statement (adjoints of results are dead once the adjoint of
    their assignment ran, or are rebound by a reset). A view into a live adjoint
    (`bm[1, 1:3]`, zeroed right after by a setitem adjoint) is excluded.
    """
    for stmt in stmts:
        for field in ("body", "orelse"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                _fold_zero_inits(inner, zeros)
    index = 0
    while index < len(stmts):
        adj = _zero_init_target(stmts[index], zeros)
        later = _first_mention(stmts, index + 1, adj) if adj else None
        if later is not None and _accumulates(stmts[later], adj):
            value = stmts[later].value.right
            stmts[later].value = value
            del stmts[index]
            continue
        index += 1


def _zero_init_target(stmt, zeros):
    if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and \
            isinstance(stmt.value, gast.Call) and isinstance(stmt.value.func, gast.Name) and \
            stmt.value.func.id == zeros and not emit.comment_of(stmt):
        return stmt.targets[0].id
    return None


def _first_mention(stmts, start, var):
    for k in range(start, len(stmts)):
        if any(isinstance(n, gast.Name) and n.id == var for n in walk(stmts[k])):
            return k
    return None


def _accumulates(stmt, var) -> bool:
    """`var = var + e` where `e` does not read `var`."""
    if not (isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and
            stmt.targets[0].id == var and isinstance(stmt.value, gast.BinOp) and
            isinstance(stmt.value.op, gast.Add) and isinstance(stmt.value.left, gast.Name) and
            stmt.value.left.id == var):
        return False
    return not any((isinstance(n, gast.Name) and n.id == var) or isinstance(n, gast.Subscript)
                   for n in walk(stmt.value.right))




# ---------------------------------------------------------------- in-place accumulation


def _accumulate_in_place(stmts: list, owned: set) -> None:
    for index, stmt in enumerate(stmts):
        for field in ("body", "orelse"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                _accumulate_in_place(inner, owned)
        if isinstance(stmt, gast.Assign) and isinstance(stmt.targets[0], gast.Name) and \
                stmt.targets[0].id in owned and _accumulates(stmt, stmt.targets[0].id):
            new = gast.AugAssign(target=stmt.targets[0], op=gast.Add(),
                                 value=stmt.value.right)
            stmts[index] = gast.copy_location(new, stmt)
            setattr(stmts[index], ADJOINT, getattr(stmt, ADJOINT, False))
            comment = emit.comment_of(stmt)
            if comment:
                emit.annotate(stmts[index], comment)
