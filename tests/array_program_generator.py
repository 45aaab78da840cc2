"""Hypothesis strategies drawing array programs the way JAX users write them, rendered twice
from one template: with NumPy (what secant transforms) and with `jax.numpy` (the oracle).

A program is a module holding a helper function and four entry points over the arguments
`(params, x)`, `params` a dict `{"w": (2, 3), "b": (3,)}` or a tuple `(w, b)`, `x` a (3,):

    f(params, x)        a scalar loss (grad, hessian, value_and_grad)
    f_aux(params, x)    (loss, {"h": an array}) for has_aux
    g(params, x)        an array (jvp, vjp, jacfwd, jacrev, vmap)
    f_batched(params, xs) the summed loss of a vmap over xs (grad of vmap)
    f_gg(params, x)     the squared norm of grad(f, argnums=1) (grad of grad)

Every variable has a shape known when drawn, from SHAPES; each statement draws an operation
whose operand shapes are at hand (elementwise math on safe domains, broadcasting, reductions
with axis/keepdims, matmul/dot/outer/einsum, reshape/transpose/swapaxes/expand_dims/squeeze,
concatenate/stack, static indexing, a static `if`/`for`, the helper, a list, tuple or dict
built and iterated or read at constant indices). No writes.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import pathlib

from hypothesis import strategies as st

M, N = 2, 3
SHAPES = ((), (N,), (M,), (M, N), (N, M), (1, N))


@dataclasses.dataclass(frozen=True)
class ArrayProgram:
    template: str          # `{np}` for the array module, `{vmap}`/`{grad}` for the transformations
    pytree: str            # "dict" or "tuple"

    def numpy_source(self) -> str:
        return _render(self.template, "np", "", "from transformer import grad, vmap\n")

    def jax_source(self) -> str:
        return _render(self.template, "jnp", "jax.", "import jax\nimport jax.numpy as jnp\n")

    def __str__(self) -> str:
        return self.numpy_source()


def _render(template: str, np_name: str, lib: str, header: str) -> str:
    return "import numpy as np\n" + header + "\n" + template.replace(
        "{np}", np_name).replace("{vmap}", lib + "vmap").replace("{grad}", lib + "grad")


# ------------------------------------------------------------------ expressions

def _unary(draw, name):
    kind = draw(st.sampled_from(("sin", "cos", "tanh", "exp", "log", "sqrt", "pow_int",
                                 "pow_float", "abs", "clip", "square")))
    return {
        "sin": f"{{np}}.sin({name})", "cos": f"{{np}}.cos({name})",
        "tanh": f"{{np}}.tanh({name})", "exp": f"{{np}}.exp({{np}}.tanh({name}))",
        "log": f"{{np}}.log(1.0 + {name} * {name})", "sqrt": f"{{np}}.sqrt(2.0 + {name} ** 2)",
        "pow_int": f"{name} ** 3", "pow_float": f"(1.5 + {{np}}.cos({name})) ** 1.5",
        "abs": f"{{np}}.abs({name} - 0.25)", "clip": f"{{np}}.clip({name}, -0.7, 0.8)",
        "square": f"{{np}}.square({name})",
    }[kind]


def _broadcast(a, b):
    a, b = list(a), list(b)
    out = []
    for k in range(1, max(len(a), len(b)) + 1):
        x = a[-k] if k <= len(a) else 1
        y = b[-k] if k <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(max(x, y))
    return tuple(reversed(out))


def _binary(draw, env):
    names = list(env)
    a = draw(st.sampled_from(names))
    partners = [b for b in names if _broadcast(env[a], env[b]) is not None]
    b = draw(st.sampled_from(partners))
    shape = _broadcast(env[a], env[b])
    kind = draw(st.sampled_from(("+", "-", "*", "max", "min", "where", "div")))
    if kind == "max":
        return f"{{np}}.maximum({a}, {b})", shape
    if kind == "min":
        return f"{{np}}.minimum({a}, {b})", shape
    if kind == "where":
        return f"{{np}}.where({a} > {b}, {a} * {b}, {b} - 0.5)", shape
    if kind == "div":
        return f"{a} / (1.5 + {{np}}.tanh({b}))", shape
    return f"{a} {kind} {b}", shape


_REDUCERS = ("sum", "mean", "max", "prod")


def _reduction(draw, env):
    name = draw(st.sampled_from([n for n in env if env[n] != ()]))
    shape = env[name]
    op = draw(st.sampled_from(_REDUCERS))
    axis = draw(st.sampled_from([None] + list(range(len(shape))) + [-1]))
    keepdims = draw(st.booleans()) and axis is not None
    if axis is None:
        return f"{{np}}.{op}({name})", ()
    ax = axis % len(shape)
    out = tuple(1 if k == ax else d for k, d in enumerate(shape)) if keepdims else \
        tuple(d for k, d in enumerate(shape) if k != ax)
    if out not in SHAPES:
        return f"{{np}}.{op}({name})", ()
    kw = ", keepdims=True" if keepdims else ""
    method = draw(st.booleans()) and op != "prod"
    if method:
        return f"{name}.{op}(axis={axis}{kw})", out
    return f"{{np}}.{op}({name}, axis={axis}{kw})", out


# (operand shape) -> [(expression with {a}, result shape)]
_RESHAPES = {
    (M, N): [("{a}.T", (N, M)), ("{np}.transpose({a})", (N, M)),
             ("{np}.swapaxes({a}, 0, 1)", (N, M)), ("{a}.reshape({n}, {m})", (N, M)),
             ("{a}[0]", (N,)), ("{a}[-1]", (N,)), ("{a}[:, ::2].reshape({m}, {m})[0]", (M,)),
             ("{a}[..., 1]", (M,)), ("{a}[1:, :]", (1, N)), ("{a}[:, {np}.array([2, 0])]",
                                                               (M, M) if M == 2 else None),
             ("{a}[{np}.array([1, 0])]", (M, N)), ("{a}[:, -1]", (M,))],
    (N, M): [("{a}.T", (M, N)), ("{a}[:, 0]", (N,)), ("{a}.reshape({m}, {n})", (M, N)),
             ("{np}.sum({a}, axis=0)", (M,))],
    (N,): [("{a}[None]", (1, N)), ("{np}.expand_dims({a}, 0)", (1, N)), ("{a}[::-1]", (N,)),
           ("{a}[::2]", (M,) if (N + 1) // 2 == M else None), ("{a}[1:]", (M,) if N - 1 == M
                                                                 else None),
           ("{a}[-1]", ()), ("{a}[{np}.array([2, 0, 1])]", (N,)),
           ("{np}.stack([{a}, {np}.cos({a})])", (M, N) if M == 2 else None),
           ("{np}.concatenate([{a}[:1], {a}[1:]])", (N,)), ("{np}.outer({a}, {a})[:{m}]",
                                                           (M, N)),
           ("{a}.reshape(1, {n})", (1, N)), ("{a}[..., None].T", (1, N))],
    (M,): [("{np}.stack([{a}, {a} * 2.0], axis=1)", (M, M) if M == 2 else None),
           ("{np}.concatenate([{a}, {a}[:1]])", (N,) if M + 1 == N else None), ("{a}[1]", ()),
           ("{np}.outer({a}, {np}.ones({n}))", (M, N))],
    (1, N): [("{np}.squeeze({a})", (N,)), ("{np}.squeeze({a}, axis=0)", (N,)), ("{a}[0]", (N,)),
             ("{a}.reshape({n})", (N,)), ("{np}.concatenate([{a}, {a} * 0.5], axis=0)",
                                          (M, N) if M == 2 else None)],
}


def _reshape(draw, env):
    candidates = [(name, expr, out) for name, shape in env.items()
                  for expr, out in _RESHAPES.get(shape, ()) if out in SHAPES]
    name, expr, out = draw(st.sampled_from(candidates))
    return expr.replace("{a}", name).replace("{m}", str(M)).replace("{n}", str(N)), out


def _contraction(draw, env):
    by_shape = {}
    for name, shape in env.items():
        by_shape.setdefault(shape, []).append(name)
    options = []
    for mat in by_shape.get((M, N), ()):
        for vec in by_shape.get((N,), ()):
            options += [(f"{mat} @ {vec}", (M,)), (f"{{np}}.dot({mat}, {vec})", (M,)),
                        (f"{{np}}.einsum('ij,j->i', {mat}, {vec})", (M,)),
                        (f"{{np}}.matmul({mat}, {vec})", (M,))]
        for other in by_shape.get((M, N), ()):
            options += [(f"{mat} @ {other}.T", (M, M) if M == 2 else None),
                        (f"{{np}}.einsum('ij,kj->ik', {mat}, {other})[0]", (M,)),
                        (f"{{np}}.einsum('ij,ij->j', {mat}, {other})", (N,))]
        for vec in by_shape.get((M,), ()):
            options += [(f"{vec} @ {mat}", (N,)), (f"{{np}}.einsum('i,ij->j', {vec}, {mat})",
                                                   (N,))]
    for a in by_shape.get((N,), ()):
        for b in by_shape.get((N,), ()):
            options += [(f"{{np}}.dot({a}, {b})", ()), (f"{a} @ {b}", ()),
                        (f"{{np}}.einsum('i,i->', {a}, {b})", ())]
    options = [(e, s) for e, s in options if s in SHAPES]
    if not options:
        return None
    return draw(st.sampled_from(options))


def _container(draw, env, name, src):
    """A list, tuple or dict built here and read the ways JAX users read one: iterated
    (`for v in items`, `enumerate`, `.items()`, `.values()`, `for k in d: d[k]`), as
    pairs, or at constant indices of a nested tuple. Lines and the result's shape."""
    shape = env[src]
    same = [n for n, s in env.items() if s == shape]
    a, b = draw(st.sampled_from(same)), draw(st.sampled_from(same))
    kind = draw(st.sampled_from(("list", "tuple", "enumerate", "items", "values", "keys",
                                 "pairs", "nested")))
    items = f"{name}_items"
    start = f"{name} = {src} * 0.25"
    if kind in ("list", "tuple"):
        literal = f"[{a}, {_unary(draw, b)}, {src}]" if kind == "list" else \
            f"({a}, {_unary(draw, b)})"
        return [f"{items} = {literal}", start, f"for v in {items}:",
                f"    {name} = {name} + {{np}}.tanh(v) * 0.5"], shape
    if kind == "enumerate":
        return [f"{items} = [{a}, {_unary(draw, b)}]", start,
                f"for k, v in enumerate({items}):",
                f"    {name} = {name} * (k + 0.5) + v * {items}[k]"], shape
    if kind in ("items", "values", "keys"):
        lines = [f'{items} = {{"p": {a}, "qq": {_unary(draw, b)}}}', start]
        if kind == "items":
            return lines + [f"for key, v in {items}.items():",
                            f"    {name} = {name} + v * len(key)"], shape
        if kind == "values":
            return lines + [f"for v in {items}.values():",
                            f"    {name} = {name} - {{np}}.sin(v)"], shape
        return lines + [f"for key in {items}:",
                        f"    {name} = {name} + {items}[key] * 0.5"], shape
    if kind == "pairs":
        return [f"{items} = [({a}, 0.5), ({_unary(draw, b)}, 2.0)]", start,
                f"for v, scale in {items}:",
                f"    {name} = {name} + v * scale"], shape
    return [f"{items} = (({a}, 1.5), ({_unary(draw, b)}, ({src}, 0.5)))",
            f"{name} = {items}[1][1][0] * {items}[1][1][1] + {items}[0][0] * {items}[0][1]"
            f" - {items}[1][0]"], shape


@st.composite
def statements(draw, env, counter):
    """One statement: (lines, new name, its shape)."""
    kind = draw(st.sampled_from(("unary", "binary", "binary", "reduce", "reshape", "contract",
                                 "helper", "if", "for", "container")))
    name = f"h{next(counter)}"
    src = draw(st.sampled_from(list(env)))
    if kind == "unary":
        return [f"{name} = {_unary(draw, src)}"], name, env[src]
    if kind == "binary":
        expr, shape = _binary(draw, env)
        return [f"{name} = {expr}"], name, shape
    if kind == "reduce" and any(s != () for s in env.values()):
        expr, shape = _reduction(draw, env)
        return [f"{name} = {expr}"], name, shape
    if kind == "reshape":
        expr, shape = _reshape(draw, env)
        return [f"{name} = {expr}"], name, shape
    if kind == "contract":
        found = _contraction(draw, env)
        if found is not None:
            return [f"{name} = {found[0]}"], name, found[1]
    if kind == "helper":
        return [f"{name} = helper({src}, {draw(st.sampled_from([0.5, 2.0, -1.0]))})"], name, \
            env[src]
    if kind == "if":
        test = draw(st.sampled_from(("x.shape[0] > 2", "x.ndim == 2", "len(x) == 3")))
        return [f"if {test}:", f"    {name} = {_unary(draw, src)}", "else:",
                f"    {name} = {src} * 2.0"], name, env[src]
    if kind == "container":
        lines, shape = _container(draw, env, name, src)
        return lines, name, shape
    if kind == "for":
        count = draw(st.integers(1, 3))
        return [f"{name} = {src}", f"for i in range({count}):",
                f"    {name} = {{np}}.tanh({name}) * (i + 0.5)"], name, env[src]
    return [f"{name} = {{np}}.sin({src}) + 0.5"], name, env[src]


_HELPERS = (
    "def helper(a, s):\n    return {np}.tanh(a * s) + 0.1 * a\n",
    "def helper(a, s):\n    b = a * a\n    return b / (1.0 + b) * s\n",
    "def helper(a, s):\n    if s > 0:\n        return {np}.sin(a) * s\n    return {np}.cos(a)\n",
)

_PARAMS = {
    "dict": 'w = params["w"]\nb = params["b"]',
    "tuple": "w, b = params",
}


@st.composite
def array_programs(draw, max_statements=6):
    pytree = draw(st.sampled_from(("dict", "tuple")))
    env = {"w": (M, N), "b": (N,), "x": (N,)}
    counter = itertools.count()
    body = [f"h{next(counter)} = w @ x + b[:{M}]" if draw(st.booleans())
            else f"h{next(counter)} = {{np}}.tanh(w * x + b)"]
    env["h0"] = (M,) if body[0].startswith("h0 = w @") else (M, N)
    for _ in range(draw(st.integers(1, max_statements))):
        lines, name, shape = draw(statements(env, counter))
        body += lines
        env[name] = shape
    last = list(env)[-1]
    arrays = [n for n, s in env.items() if s != () and n.startswith("h")] or ["x"]
    out = arrays[-1]
    loss = draw(st.sampled_from(("{np}.sum({v} ** 2)", "{np}.mean({np}.sin({v}))",
                                 "{np}.sum({np}.tanh({v}))")))
    loss = loss.replace("{v}", last) + (" + 0.1 * {np}.sum(b * b)")
    lines = "\n".join("    " + line for line in
                      _PARAMS[pytree].splitlines() + body)
    template = (draw(st.sampled_from(_HELPERS)) + "\n\n"
                + f"def body(params, x):\n{lines}\n    return {loss}, {out}\n\n\n"
                + "def f(params, x):\n    return body(params, x)[0]\n\n\n"
                + "def f_aux(params, x):\n    loss, out = body(params, x)\n"
                + '    return loss, {"h": out}\n\n\n'
                + "def g(params, x):\n    return body(params, x)[1]\n\n\n"
                + "def f_batched(params, xs):\n"
                + "    return {np}.sum({vmap}(f, in_axes=(None, 0))(params, xs))\n\n\n"
                + "def f_gg(params, x):\n"
                + "    gx = {grad}(f, argnums=1)(params, x)\n"
                + "    return {np}.sum(gx ** 2)\n")
    return ArrayProgram(template, pytree)


# ------------------------------------------------------------------ loading

_modules = itertools.count()


def load(directory: pathlib.Path, source: str):
    """Import `source` as a fresh module from a real file (secant reads source files)."""
    path = directory / f"array_program_{next(_modules)}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def arguments(program: ArrayProgram, rng):
    """(params, x) drawn from `rng`, as NumPy arrays."""
    w = rng.normal(size=(M, N))
    b = rng.normal(size=(N,))
    x = rng.normal(size=(N,))
    params = {"w": w, "b": b} if program.pytree == "dict" else (w, b)
    return params, x
