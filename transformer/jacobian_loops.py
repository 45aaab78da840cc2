"""The bodies of the Jacobian functions jacfwd and jacrev generate, as lines of source.

`_jacobian` (api_forward) picks a body: all basis vectors at once through vmap (the
batched rows of jacrev here; jacfwd's batched push lives beside `_jacobian`), or a loop
calling the derivative once per basis vector. With a tuple output (`outputs`, a nested
tuple structure from `jacobian_outputs`) each output leaf gets its own Jacobian per
argument, output-major as in JAX. The last line of a body is the pair `(jacs, aux)` that
`results` turns into the return.
"""
from __future__ import annotations

from .function import call_arguments
from .jacobian_outputs import leaf_paths, tree_literal


def jacobian_blocks(namer, p, outputs, columns: str, out: str) -> list[tuple[str, str, str]]:
    """(Jacobian name, its columns, its output) per Jacobian in `p`: one, or one per
    output leaf when the function returns a tuple shaped like `outputs`."""
    if outputs is None:
        return [(namer.fresh("jac_" + p), columns, out)]
    return [(namer.fresh(f"jac{i}_{p}"), f"{columns}{path}", f"{out}{path}")
            for i, path in enumerate(leaf_paths(outputs))]


def block_names(blocks, outputs):
    return blocks[0][0] if outputs is None else [j for j, _, _ in blocks]


def batched_rows(fn, active, namer, has_aux, outputs, batched, env) -> list[str]:
    """Lines of a jacrev body pulling all output basis vectors at once through vmap; for
    a tuple output, one pull per output leaf (the others' cotangents zero)."""
    batched.__secant_function__()                      # fails here if vmap cannot batch
    out, aux, rows, mapped = (namer.fresh(n) for n in ("out", "aux", "rows", "mapped"))
    env[mapped] = batched
    lines, params = _arguments_at_call(fn, namer)
    lines += _primal_lines(call_arguments(fn), out, aux, has_aux, namer)
    if outputs is None:
        lines.append(f"{rows} = {mapped}({params}, basis_matrix({out}))")
        jacs = []
        for i, p in enumerate(active):
            jac = namer.fresh("jac_" + p)
            jacs.append(jac)
            lines.append(f"{jac} = jacobian_from_rows({rows}[{i}], {out}, {p})")
        lines.append((jacs, aux))
        return lines
    paths = leaf_paths(outputs)
    jacs = [[] for _ in active]
    for leaf, path in enumerate(paths):
        pulled = namer.fresh(f"rows{leaf}")
        size = f"basis_size({out}{path})"
        cotangent = _cotangent_tree(outputs, out, path, lambda o: f"basis_matrix({o})",
                                    lambda o, size=size: f"basis_zeros({o}, {size})")
        lines.append(f"{pulled} = {mapped}({params}, {cotangent})")
        for i, p in enumerate(active):
            jac = namer.fresh(f"jac{leaf}_{p}")
            jacs[i].append(jac)
            lines.append(f"{jac} = jacobian_from_rows({pulled}[{i}], {out}{path}, {p})")
    lines.append((jacs, aux))
    return lines


def _arguments_at_call(fn, namer) -> tuple[list[str], str]:
    """(lines copying each array argument before the function runs, the copies' names
    joined for a call). jacrev's rows are pulled through the vjp, which re-runs the
    function: on copies of these (the vjp writes into the arrays it is given, as the
    function does), each row differentiates at the arguments as they were at the call, and
    the caller's arrays change once, by the one call of the function itself."""
    copies = [namer.fresh(p + "_at_call") for p in fn.params]
    lines = [f"{c} = own_value({p})" for c, p in zip(copies, fn.params)]
    return lines, ", ".join(copies)


def _primal_lines(arguments, out, aux, has_aux, namer) -> list[str]:
    """Run the function itself once (`arguments` pass each parameter on): its output
    fixes the cotangent basis."""
    if not has_aux:
        return [f"{out} = primal({arguments})"]
    pair = namer.fresh("value")
    return [f"{pair} = primal({arguments})", f"{out} = {pair}[0]", f"{aux} = {pair}[1]"]


def results(last, single: bool, outputs, has_aux: bool) -> str:
    """The return line from `last = (jacs, aux)`: one Jacobian (an int argnums) or a tuple
    of them (a tuple argnums); per output first when there are `outputs` (H[i][j]), with
    aux after."""
    jacs, aux_expr = last
    if outputs is None:
        value = jacs[0] if single else "(" + ", ".join(jacs) + ",)"
    else:
        per_leaf = [jacs[0][i] if single else
                    "(" + ", ".join(per_arg[i] for per_arg in jacs) + ",)"
                    for i in range(len(leaf_paths(outputs)))]
        value = tree_literal(outputs, iter(per_leaf))
    return f"return {value}, {aux_expr}" if has_aux else f"return {value}"


def forward_loops(fn, active, namer, has_aux, outputs) -> list[str]:
    """Lines of a jacfwd body: for each argument, push its basis through `derivative`.
    The first push runs on the arguments themselves (the caller's arrays change once, as by
    one call of the function), each later one on copies of them as they were at the call."""
    copies, at_call = _arguments_at_call(fn, namer)
    params = ", ".join(fn.params)
    fresh = ", ".join(f"own_value({c})" for c in at_call.split(", "))
    start, out, k, pair = (namer.fresh(n) for n in ("start", "out", "k", "pair"))
    zeros = ", ".join(f"zeros_like({p})" for p in active)
    out_of = (lambda e: f"{e}[0]") if has_aux else (lambda e: e)
    lines = copies + [f"{start} = derivative({params}, {zeros})",
                      f"{out} = {out_of(start + '[0]')}"]
    jacs = []
    for p in active:
        tangents = ", ".join(f"basis_vector({p}, {k})" if q == p else f"zeros_like({q})"
                             for q in active)
        blocks = jacobian_blocks(namer, p, outputs, out_of(pair + "[1]"), out)
        lines += [f"{j} = jacobian_alloc({o}, {p})" for j, _, o in blocks]
        lines += [f"for {k} in range(basis_size({p})):",
                  f"    {pair} = derivative({fresh}, {tangents})"]
        lines += [f"    set_column({j}, {c}, {k})" for j, c, _ in blocks]
        lines += [f"{j} = jacobian_result({j}, {o}, {p})" for j, _, o in blocks]
        jacs.append(block_names(blocks, outputs))
    lines.append((jacs, f"{start}[0][1]"))
    return lines


def reverse_loops(fn, active, namer, has_aux, outputs) -> list[str]:
    """Lines of a jacrev body: pull each output basis vector through `derivative`, the
    vjp Function `(*params, cotangent) -> (bar_p, ...)` of the active parameters; for a
    tuple output, each output leaf's basis vectors in turn (the others' cotangents zero)."""
    out, aux, k, grads = (namer.fresh(n) for n in ("out", "aux", "k", "grads"))
    lines, params = _arguments_at_call(fn, namer)
    lines += _primal_lines(call_arguments(fn), out, aux, has_aux, namer)
    fresh = ", ".join(f"own_value({c})" for c in params.split(", "))
    paths = [""] if outputs is None else leaf_paths(outputs)
    jacs = [[] for _ in active]
    for leaf, path in enumerate(paths):
        names = [namer.fresh(f"jac{leaf}_{p}" if path else "jac_" + p) for p in active]
        lines += [f"{jac} = jacobian_alloc({out}{path}, {p})" for jac, p in zip(names, active)]
        cotangent = f"basis_vector({out}, {k})" if outputs is None else _cotangent_tree(
            outputs, out, path, lambda o: f"basis_vector({o}, {k})", lambda o: f"zeros_like({o})")
        lines.append(f"for {k} in range(basis_size({out}{path})):")
        lines.append(f"    {grads} = derivative({fresh}, {cotangent})")
        for i, jac in enumerate(names):
            lines.append(f"    set_row({jac}, {grads}[{i}], {k})")
        lines += [f"{jac} = jacobian_result({jac}, {out}{path}, {p})"
                  for jac, p in zip(names, active)]
        for i, jac in enumerate(names):
            jacs[i].append(jac)
    if outputs is None:
        jacs = [names[0] for names in jacs]
    lines.append((jacs, aux))
    return lines


def _cotangent_tree(outputs, out: str, path: str, basis, zeros) -> str:
    """The vjp's cotangent arguments, one per output leaf: `basis(leaf)` at `path`,
    `zeros(leaf)` at the other leaves."""
    return ", ".join((basis if p == path else zeros)(out + p) for p in leaf_paths(outputs))
