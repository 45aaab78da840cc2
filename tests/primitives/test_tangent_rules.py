"""Every tangent rule against central finite differences.

Same programs as the adjoint tests: each line is followed by its expanded tangent template,
and the output tangents are compared with finite differences along random directions.
"""

from __future__ import annotations

import gast
import numpy as np
import pytest
from test_adjoint_rules import (
    CASES,
    MULTI_INPUT_CASES,
    assigned_names,
    build,
    check_each_side_inactive,
    copy_value,
    lowered_line,
    names_in,
    outputs_along,
    parse_line,
    random_like,
    run_program,
    split_inputs,
    to_source,
)

from transformer import runtime
from transformer.templates import MissingRule, expand_tangent, has_tangent


def make_jvp(program: str, active: list[str], consts: list[str], lower: bool = False,
             filename: str | None = None):
    """``jvp(*active, *consts, *tangents_of_active) -> tuple of output tangents``."""
    lines = [ln.strip() for ln in program.strip().splitlines()]
    live = set(active)
    def tangent_of(n):
        return "d" + n if n in live else None
    env: dict = {"zeros_like": runtime.zeros_like}
    body = []
    for line in lines:
        parsed = parse_line(line)
        key, args, keywords, result, _ = parsed
        line, lowering = lowered_line(line) if lower else (line, {})
        env.update(lowering)
        body.append(line)
        used = [n for a in [*args, *keywords.values()] for n in names_in(a)]
        if not any(n in live for n in used):
            continue
        targets = assigned_names(parsed)
        result_tangent = "d" + targets[0] if len(targets) == 1 else tuple("d" + n for n in targets)
        stmts, needed = expand_tangent(key, args, keywords, result, tangent_of, result_tangent)
        env.update(needed)
        body.extend(to_source(stmts).splitlines())
        live.update(targets)
    outputs = assigned_names(parse_line(lines[-1]))
    body.append("return (" + "".join(
        f"d{n}, " if n in live else f"zeros_like({n}), " for n in outputs) + ")")
    header = "jvp(" + ", ".join(active + consts + ["d" + n for n in active]) + ")"
    fn, source = build(header, body, env, filename)
    return fn, source


def check_jvp(program, inputs, consts=None, seed=1, active=None, eps=1e-6):
    active, consts = split_inputs(inputs, consts, active)
    fn, source = make_jvp(program, active, list(consts))
    rng = np.random.default_rng(seed)
    values = dict(inputs, **consts)
    directions = {n: random_like(rng, inputs[n]) for n in active}
    tangents = fn(*[copy_value(inputs[n]) for n in active], *[consts[n] for n in consts],
                  *[copy_value(directions[n]) for n in active])
    for tangent, plus, minus, out in zip(tangents, outputs_along(program, values, directions, eps),
                                         outputs_along(program, values, directions, -eps),
                                         run_program(program, values)):
        expected = (np.asarray(plus) - np.asarray(minus)) / (2 * eps)
        assert np.shape(tangent) == np.shape(out), source
        np.testing.assert_allclose(tangent, expected, rtol=1e-5, atol=1e-6, err_msg=source)


@pytest.mark.parametrize("program, inputs, consts", CASES)
def test_tangent_matches_finite_differences(program, inputs, consts):
    check_jvp(program, inputs, consts)


@pytest.mark.parametrize("program, inputs, consts", MULTI_INPUT_CASES)
def test_tangent_with_one_argument_inactive(program, inputs, consts):
    check_each_side_inactive(check_jvp, program, inputs, consts)


def _name(n):
    return gast.Name(id=n, ctx=gast.Load(), annotation=None, type_comment=None)


def test_contributions_are_summed_and_broadcast_only_where_declared():
    x, y, z = _name("x"), _name("y"), _name("z")
    add, _ = expand_tangent(gast.Add, [x, y], {}, z, lambda n: "d" + n, "dz")
    assert to_source(add) == "dz = broadcast_like(dx + dy, z)"
    mul, env = expand_tangent(gast.Mult, [x, y], {}, z, lambda n: "d" + n, "dz")
    assert to_source(mul) == "dz = dx * y + x * dy"
    assert env == {}


def test_inactive_contribution_is_dropped():
    x, y, z = _name("x"), _name("y"), _name("z")
    stmts, _ = expand_tangent(gast.Mult, [x, y], {}, z, lambda n: "dx" if n == "x" else None,
                              "dz")
    assert to_source(stmts) == "dz = dx * y"


def test_tuple_result_assigns_every_output_tangent():
    a = _name("a")
    pair = gast.Tuple(elts=[_name("s"), _name("l")], ctx=gast.Load())
    stmts, _ = expand_tangent(np.linalg.slogdet, [a], {}, pair, lambda n: "d" + n, ("ds", "dl"))
    assert to_source(stmts).startswith("ds, dl = ")


def test_tuple_result_with_no_active_contribution_is_zeros():
    pair = gast.Tuple(elts=[_name("s"), _name("l")], ctx=gast.Load())
    stmts, _ = expand_tangent(np.linalg.slogdet, [_name("a")], {}, pair, lambda n: None,
                              ("ds", "dl"))
    assert to_source(stmts) == "ds, dl = zeros_like(s), zeros_like(l)"


def test_missing_tangent_rule_names_the_primitive():
    assert not has_tangent(np.linalg.qr)
    with pytest.raises(MissingRule, match="no tangent rule for numpy.linalg.qr"):
        expand_tangent(np.linalg.qr, [_name("a")], {}, _name("q"), lambda n: "d" + n, "dq")
