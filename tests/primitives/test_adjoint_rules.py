"""Every adjoint rule against central finite differences.

The harness turns a straight-line program (one primitive per line, the shapes the A-normal
form produces) into a vector-Jacobian product by expanding each line's adjoint template in
reverse, emits it as source, runs it, and compares ``sum <b_in, dir_in>`` with the finite
difference of ``<b_out, f(inputs)>`` along random directions.
"""

from __future__ import annotations

import math
import textwrap

import astor
import gast
import numpy as np
import pytest

from transformer import runtime
from transformer.rules.lowering import needs_lowering, numba_equivalent
from transformer.templates import MissingRule, expand_adjoint, has_adjoint, is_nondifferentiable

NAMESPACE = {"np": np, "math": math}

# ---------------------------------------------------------------- harness


def parse_line(line: str, lower: bool = False):
    """(key, args, keywords, result, target) of one program line ``target = prim(...)``."""
    stmt = gast.parse(line).body[0]
    target, value = stmt.targets[0], stmt.value
    if isinstance(target, gast.Subscript):
        return "setitem", [target.value, target.slice, value], {}, target.value, target
    if isinstance(value, gast.BinOp):
        return type(value.op), [value.left, value.right], {}, target, target
    if isinstance(value, gast.UnaryOp):
        return type(value.op), [value.operand], {}, target, target
    if isinstance(value, gast.Subscript):
        return "getitem", [value.value, value.slice], {}, target, target
    func = eval(to_source(value.func), NAMESPACE)
    keywords = {k.arg: k.value for k in value.keywords}
    return func, list(value.args), keywords, target, target


def assigned_names(parsed) -> list[str]:
    """The names a parsed line assigns (for ``x[i] = v``: ``x``)."""
    key, _, _, result, target = parsed
    return names_in(result)[:1] if key == "setitem" else names_in(target)


def to_source(node) -> str:
    if isinstance(node, list):
        node = gast.Module(body=node, type_ignores=[])
    return astor.to_source(gast.gast_to_ast(node)).strip()


def names_in(node) -> list[str]:
    return [n.id for n in gast.walk(node) if isinstance(n, gast.Name)]


def lowered_line(line: str) -> tuple[str, dict]:
    """The line with its call rewritten to the runtime equivalent Numba needs, if any."""
    stmt = gast.parse(line).body[0]
    value = stmt.value
    if isinstance(value, gast.Call):
        func = eval(to_source(value.func), NAMESPACE)
        keywords = {k.arg: k.value for k in value.keywords}
        if needs_lowering(func, keywords):
            replacement = numba_equivalent(func)
            value.func = gast.Name(id=replacement.__name__, ctx=gast.Load(), annotation=None,
                                   type_comment=None)
            return to_source(stmt), {replacement.__name__: replacement}
    return line, {}


def build(header: str, body: list[str], env: dict, filename: str | None = None):
    """Compile ``def header: body`` with ``env`` as globals; return the function."""
    source = f"def {header}:\n" + textwrap.indent("\n".join(body), "    ") + "\n"
    namespace = dict(NAMESPACE, **env)
    if filename is not None:
        with open(filename, "w") as f:
            f.write(source)
    exec(compile(source, filename or "<generated>", "exec"), namespace)  # noqa: S102  (code under test)
    return namespace[header.split("(")[0]], source


def make_vjp(program: str, active: list[str], consts: list[str], lower: bool = False,
             filename: str | None = None):
    """``vjp(*active, *consts, *b_outputs) -> tuple of adjoints of active``."""
    lines = [ln.strip() for ln in program.strip().splitlines()]
    parsed = [parse_line(ln) for ln in lines]
    outputs = assigned_names(parsed[-1])
    assigned = [n for p in parsed for n in assigned_names(p)]
    live = set(active) | set(assigned)
    def adjoint_of(n):
        return "b" + n if n in live else None
    env: dict = {"zeros_like": runtime.zeros_like}
    body = []
    for line in lines:
        line, lowering = lowered_line(line) if lower else (line, {})
        env.update(lowering)
        body.append(line)
    for name in dict.fromkeys(active + assigned):
        if name not in outputs:
            body.append(f"b{name} = zeros_like({name})")
    for name in outputs:
        body.append(f"b{name} = g_{name}")
    for key, args, keywords, result, _ in reversed(parsed):
        stmts, needed = expand_adjoint(key, args, keywords, result, adjoint_of)
        env.update(needed)
        body.extend(to_source(stmts).splitlines() if stmts else [])
    body.append("return (" + "".join(f"b{n}, " for n in active) + ")")
    header = "vjp(" + ", ".join(active + consts + [f"g_{n}" for n in outputs]) + ")"
    fn, source = build(header, body, env, filename)
    return fn, source, outputs


def run_program(program: str, values: dict):
    """The outputs of the program (the primal) for the given inputs."""
    namespace = dict(NAMESPACE)
    namespace.update({k: v.copy() if isinstance(v, np.ndarray) else v for k, v in values.items()})
    lines = [ln.strip() for ln in program.strip().splitlines()]
    for line in lines:
        exec(line, namespace)  # noqa: S102  (the primal, as oracle)
    return [namespace[n] for n in assigned_names(parse_line(lines[-1]))]


def random_like(rng, value):
    if isinstance(value, np.ndarray):
        return rng.standard_normal(value.shape)
    return float(rng.standard_normal())


def split_inputs(inputs: dict, consts, active) -> tuple[list, dict]:
    """(active names, constants): the inputs left out of `active` join the constants."""
    active = list(inputs) if active is None else active
    return active, dict(consts or {}, **{n: v for n, v in inputs.items() if n not in active})


def outputs_along(program: str, values: dict, directions: dict, t: float) -> list:
    """The program's outputs at `values` moved by `t` times `directions` (name -> step)."""
    moved = dict(values)
    for n, direction in directions.items():
        moved[n] = values[n] + t * direction
    return run_program(program, moved)


def copy_value(v):
    """A copy of an array argument (generated code may write into it); scalars as they are."""
    return v.copy() if isinstance(v, np.ndarray) else v


def check_vjp(program, inputs, consts=None, seed=0, active=None, eps=1e-6, rtol=1e-5):
    active, consts = split_inputs(inputs, consts, active)
    fn, source, _ = make_vjp(program, active, list(consts))
    rng = np.random.default_rng(seed)
    values = dict(inputs, **consts)
    primal = run_program(program, values)
    cotangents = [random_like(rng, out) for out in primal]
    grads = fn(*[copy_value(inputs[n]) for n in active], *[consts[n] for n in consts],
               *[copy_value(c) for c in cotangents])
    directions = {n: random_like(rng, inputs[n]) for n in active}

    def objective(t):
        outs = outputs_along(program, values, directions, t)
        return sum(float(np.sum(np.asarray(c) * np.asarray(o))) for c, o in zip(cotangents, outs))

    expected = (objective(eps) - objective(-eps)) / (2 * eps)
    got = sum(float(np.sum(np.asarray(g) * directions[n])) for g, n in zip(grads, active))
    for g, n in zip(grads, active):
        assert np.shape(g) == np.shape(inputs[n]), (n, source)
    assert got == pytest.approx(expected, rel=rtol, abs=1e-7), source


def check_each_side_inactive(check, program, inputs, consts):
    """`check` with only the first input active, then with only the others active."""
    first, *rest = inputs
    check(program, inputs, consts, active=[first])
    check(program, inputs, consts, active=rest)


# ---------------------------------------------------------------- cases

RNG = np.random.default_rng(42)


def unit(*shape, lo=0.2, hi=0.8):
    """Values in [lo, hi): inside every elementwise function's domain."""
    if not shape:
        return float(RNG.uniform(lo, hi))
    return RNG.uniform(lo, hi, shape)


def normal(*shape):
    return RNG.standard_normal(shape) if shape else float(RNG.standard_normal())


def spd(n):
    a = RNG.standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


UNARY = ["sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin",
         "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
         "arctanh", "square", "reciprocal", "abs", "fabs", "negative", "positive"]
MATH_UNARY = ["sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin",
              "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "atanh",
              "fabs"]
BINARY_OPS = ["+", "-", "*", "/", "**", "%", "@"]
BINARY_FUNCS = ["add", "subtract", "multiply", "divide", "power", "mod", "fmod", "maximum",
                "minimum", "fmax", "fmin", "arctan2", "hypot", "logaddexp", "logaddexp2"]
BROADCAST_SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((), (3,)), ((), ())]


def case(program, consts=None, **inputs):
    return pytest.param(program, inputs, consts or {}, id=program.replace("\n", "; "))


CASES = [
    *[case(f"z = np.{f}(x)", x=unit(2, 3)) for f in UNARY],
    case("z = np.arccosh(x)", x=unit(2, 3, lo=1.2, hi=2.0)),
    case("z = math.acosh(x)", x=unit(lo=1.2, hi=2.0)),
    # math.cbrt and math.exp2 are Python 3.11+
    *[case(f"z = math.{f}(x)", x=unit()) for f in MATH_UNARY if hasattr(math, f)],
    case("z = -x", x=unit(3)),
    case("z = +x", x=unit()),
    case("z = abs(x)", x=normal(3)),
    case("z = max(x, y)", x=unit(), y=unit()),
    case("z = min(x, y)", x=unit(), y=unit()),
    case("z = math.pow(x, y)", x=unit(), y=unit()),
    case("z = pow(x, y)", x=unit(), y=unit()),
    case("z = math.atan2(x, y)", x=unit(), y=unit()),
    case("z = math.hypot(x, y)", x=unit(), y=unit()),
    case("z = math.fmod(x, y)", x=unit(), y=unit(lo=0.1, hi=0.3)),
    case("z = float(x)", x=unit()),
    *[case(f"z = x {op} y", x=unit(*sx), y=unit(*sy))
      for op in BINARY_OPS[:-1] for sx, sy in BROADCAST_SHAPES],
    *[case(f"z = np.{f}(x, y)", x=unit(*sx), y=unit(*sy))
      for f in BINARY_FUNCS for sx, sy in BROADCAST_SHAPES[1:3]],
    case("z = x ** 3", x=unit(4)),
    case("z = 2.0 ** x", x=unit(4)),
    case("z = np.where(c, x, y)", {"c": RNG.random((2, 3)) > 0.5}, x=unit(2, 3), y=unit(3)),
    case("z = np.clip(x, lo, hi)", x=unit(4, 5, lo=0.0, hi=1.0), lo=0.3, hi=0.7),
    case("z = np.clip(x, 0.3, None)", x=unit(4, 5, lo=0.0, hi=1.0)),
    # reductions
    *[case(f"z = np.{f}(x{kw})", x=unit(2, 3, 4))
      for f in ["sum", "mean", "prod", "max", "min", "amax", "var", "std"]
      for kw in ["", ", axis=1", ", axis=-1", ", axis=(0, 2)", ", axis=1, keepdims=True",
                 ", keepdims=True"]],
    case("z = np.var(x, axis=0, ddof=1)", x=unit(4, 3)),
    case("z = np.std(x, ddof=1)", x=unit(4, 3)),
    case("z = np.sum(x, 0)", x=unit(4, 3)),
    *[case(f"z = np.linalg.norm(x{kw})", x=normal(3, 4))
      for kw in ["", ", axis=1", ", axis=-2, keepdims=True"]],
    *[case(f"z = np.{f}(x{kw})", x=unit(3, 4))
      for f in ["cumsum", "cumprod"] for kw in ["", ", axis=0", ", axis=-1"]],
    # linear algebra
    *[case(f"z = np.{f}(x, y)", x=normal(*sx), y=normal(*sy))
      for f in ["dot", "matmul"]
      for sx, sy in [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 2)), ((2, 3), (3, 4))]],
    case("z = x @ y", x=normal(2, 3), y=normal(3, 4)),
    case("z = x @ y", x=normal(5, 2, 3), y=normal(3, 4)),
    case("z = np.matmul(x, y)", x=normal(5, 2, 3), y=normal(5, 3, 4)),
    case("z = np.matmul(x, y)", x=normal(5, 2, 3), y=normal(3,)),
    case("z = np.matmul(x, y)", x=normal(3,), y=normal(4, 3, 5)),
    case("z = x @ y", x=normal(2, 3), y=normal(4, 3, 5)),
    case("z = np.dot(x, y)", x=unit(), y=normal(3)),
    case("z = np.outer(x, y)", x=normal(3), y=normal(4)),
    case("z = np.inner(x, y)", x=normal(3), y=normal(3)),
    case("z = np.vdot(x, y)", x=normal(2, 3), y=normal(2, 3)),
    case("z = np.trace(x)", x=normal(3, 3)),
    case("z = np.einsum('ij,jk->ik', x, y)", x=normal(2, 3), y=normal(3, 4)),
    case("z = np.einsum('i,i->', x, y)", x=normal(3), y=normal(3)),
    case("z = np.einsum('ij->j', x)", x=normal(2, 3)),
    case("z = np.einsum('bij,bjk->bik', x, y)", x=normal(2, 2, 3), y=normal(2, 3, 4)),
    case("z = np.einsum('ij,k->ijk', x, y)", x=normal(2, 3), y=normal(4)),
    case("z = np.linalg.inv(a)", a=spd(3)),
    case("z = np.linalg.solve(a, b)", a=spd(3), b=normal(3)),
    case("z = np.linalg.solve(a, b)", a=spd(3), b=normal(3, 2)),
    case("z = np.linalg.det(a)", a=spd(3)),
    case("s, l = np.linalg.slogdet(a)", a=spd(3) * np.array([[-1.0], [1.0], [1.0]])),
    # shapes
    case("z = np.reshape(x, (3, 2))", x=normal(2, 3)),
    case("z = np.reshape(x, (6,))", x=normal(2, 3)),
    case("z = np.ravel(x)", x=normal(2, 3)),
    case("z = np.transpose(x)", x=normal(2, 3, 4)),
    case("z = np.transpose(x, (1, 2, 0))", x=normal(2, 3, 4)),
    case("z = np.swapaxes(x, 0, 2)", x=normal(2, 3, 4)),
    case("z = np.moveaxis(x, 0, -1)", x=normal(2, 3, 4)),
    case("z = np.expand_dims(x, 1)", x=normal(2, 3)),
    case("z = np.squeeze(x, axis=1)", x=normal(2, 1, 3)),
    case("z = np.squeeze(x)", x=normal(2, 1, 3)),
    case("z = np.concatenate((x, y))", x=normal(2, 3), y=normal(4, 3)),
    case("z = np.concatenate((x, y), axis=1)", x=normal(2, 3), y=normal(2, 1)),
    case("z = np.concatenate((x, y, x), 0)", x=normal(3), y=normal(2)),
    case("z = np.stack((x, y), axis=1)", x=normal(2, 3), y=normal(2, 3)),
    case("z = np.hstack((x, y))", x=normal(3), y=normal(2)),
    case("z = np.hstack((x, y))", x=normal(2, 3), y=normal(2, 2)),
    case("z = np.vstack((x, y))", x=normal(3), y=normal(2, 3)),
    case("z = np.broadcast_to(x, (4, 2, 3))", x=normal(2, 1)),
    case("z = np.tile(x, 3)", x=normal(2)),
    case("z = np.tile(x, (2, 1, 2))", x=normal(2, 3)),
    case("z = np.repeat(x, 2)", x=normal(2, 3)),
    case("z = np.repeat(x, 3, axis=1)", x=normal(2, 3)),
    case("z = np.flip(x)", x=normal(2, 3)),
    case("z = np.flip(x, 1)", x=normal(2, 3)),
    case("z = np.copy(x)", x=normal(2, 3)),
    case("z = np.asarray(x)", x=normal(2, 3)),
    # indexing
    case("z = x[1]", x=normal(4, 3)),
    case("z = x[-1]", x=normal(4)),
    case("z = x[1:3]", x=normal(4, 3)),
    case("z = x[:, 1]", x=normal(4, 3)),
    case("z = x[::2, -2:]", x=normal(4, 3)),
    case("z = x[1, -2]", x=normal(4, 3)),
    case("z = x[i]", {"i": np.array([0, 2, 2, 1])}, x=normal(4, 3)),
    case("z = x[m]", {"m": np.array([True, False, True, True])}, x=normal(4)),
    case("z = x[m]", {"m": RNG.random((4, 3)) > 0.5}, x=normal(4, 3)),
    case("z = x[k]", {"k": 2}, x=normal(4)),
    case("x[1] = v", x=normal(4), v=normal()),
    case("x[1:3] = v", x=normal(4, 3), v=normal(3)),
    case("x[:, 0] = v", x=normal(4, 3), v=normal()),
    case("x[i] = v", {"i": np.array([0, 2])}, x=normal(4, 3), v=normal(2, 3)),
    case("x[m] = v", {"m": np.array([True, False, True, False])}, x=normal(4), v=normal(2)),
]


@pytest.mark.parametrize("program, inputs, consts", CASES)
def test_adjoint_matches_finite_differences(program, inputs, consts):
    check_vjp(program, inputs, consts)


MULTI_INPUT_CASES = [c for c in CASES if len(c.values[1]) > 1]


@pytest.mark.parametrize("program, inputs, consts", MULTI_INPUT_CASES)
def test_adjoint_with_one_argument_inactive(program, inputs, consts):
    check_each_side_inactive(check_vjp, program, inputs, consts)


def test_adjoint_of_constant_argument_is_dropped():
    x = gast.Name(id="x", ctx=gast.Load(), annotation=None, type_comment=None)
    two = gast.Constant(value=2.0, kind=None)
    z = gast.Name(id="z", ctx=gast.Load(), annotation=None, type_comment=None)
    stmts, env = expand_adjoint(gast.Mult, [two, x], {}, z, lambda n: "b" + n)
    assert to_source(stmts) == "bx = bx + unbroadcast(cast_like(2.0, x) * bz, x)" \
        or to_source(stmts) == "bx = bx + unbroadcast(2.0 * bz, x)"
    assert set(env) == {"unbroadcast"} | ({"cast_like"} & set(env))


def test_inactive_result_expands_to_nothing():
    x = gast.Name(id="x", ctx=gast.Load(), annotation=None, type_comment=None)
    z = gast.Name(id="z", ctx=gast.Load(), annotation=None, type_comment=None)
    assert expand_adjoint(np.sin, [x], {}, z, lambda n: None if n == "z" else "bx") == ([], {})


def test_template_temporaries_are_named_after_the_result():
    _, source, _ = make_vjp("z = np.max(x, axis=1)", ["x"], [])
    assert "z_hit = " in source and "z_share = " in source
    _, source, _ = make_vjp("z = np.max(x, axis=1)\nw = np.min(z)", ["x"], [])
    assert "w_hit = " in source and "z_hit = " in source


def test_literal_index_reads_as_plain_indexing():
    _, source, _ = make_vjp("z = x[1:3, -1]", ["x"], [])
    assert "bx[1:3, -1] = bx[1:3, -1] + bz" in source
    _, source, _ = make_vjp("z = x[i]", ["x"], ["i"])
    assert "scatter_add(bx, i, bz)" in source
    _, source, _ = make_vjp("x[1] = v", ["x", "v"], [])
    assert "bx[1] = 0.0" in source


def test_caller_can_name_temporaries():
    x = gast.Name(id="x", ctx=gast.Load(), annotation=None, type_comment=None)
    z = gast.Name(id="z", ctx=gast.Load(), annotation=None, type_comment=None)
    stmts, _ = expand_adjoint(np.max, [x], {}, z, lambda n: "b" + n,
                              fresh_name=lambda tmp: f"_t_{tmp}_7")
    assert "_t_hit_7 = " in to_source(stmts)


def test_env_maps_free_names_to_objects():
    x = gast.Name(id="x", ctx=gast.Load(), annotation=None, type_comment=None)
    z = gast.Name(id="z", ctx=gast.Load(), annotation=None, type_comment=None)
    _, env = expand_adjoint(np.sum, [x], {"axis": gast.Constant(value=0, kind=None)}, z,
                            lambda n: "b" + n)
    assert env == {"broadcast_reduced": runtime.broadcast_reduced}


def test_missing_rule_names_the_primitive():
    x = gast.Name(id="x", ctx=gast.Load(), annotation=None, type_comment=None)
    assert not has_adjoint(np.linalg.qr)
    with pytest.raises(MissingRule, match="no adjoint rule for numpy.linalg.qr"):
        expand_adjoint(np.linalg.qr, [x], {}, x, lambda n: "b" + n)


def test_call_the_rule_cannot_take_is_reported():
    x = gast.Name(id="x", ctx=gast.Load(), annotation=None, type_comment=None)
    with pytest.raises(MissingRule, match="numpy.sum"):
        expand_adjoint(np.sum, [x], {"where": x}, x, lambda n: "b" + n)


def test_missing_operator_rule_names_the_operator():
    x = gast.Name(id="x", ctx=gast.Load(), annotation=None, type_comment=None)
    with pytest.raises(MissingRule, match="no adjoint rule for operator BitAnd"):
        expand_adjoint(gast.BitAnd, [x, x], {}, x, lambda n: "b" + n)


def test_sequence_argument_must_be_a_literal_tuple():
    xs = gast.Name(id="xs", ctx=gast.Load(), annotation=None, type_comment=None)
    with pytest.raises(MissingRule, match="literal tuple"):
        expand_adjoint(np.concatenate, [xs], {}, xs, lambda n: "b" + n)


def test_nondifferentiable_primitives_are_known():
    for key in [np.zeros, np.shape, len, np.ones_like, np.floor, np.sign, gast.FloorDiv]:
        assert is_nondifferentiable(key)
    for key in [np.sin, np.full, np.full_like, np.arange, np.linspace]:   # rules of their own
        assert not is_nondifferentiable(key)
    assert not is_nondifferentiable([])  # unhashable keys are simply unknown
