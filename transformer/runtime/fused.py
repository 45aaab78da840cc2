"""Elementwise chains evaluated in one loop (`transformer.fusion` emits the calls).

A recipe is a nested tuple describing an expression over the kernel's arguments:

    ("arg", k)                 the k-th argument (an array, a number)
    ("const", v)               a Python int or float of the source (NumPy's "weak" scalar)
    ("bin", op, a, b)          op in "+", "-", "*"
    ("neg", a)
    ("cmp", op, a, b)          op in "<", "<=", ">", ">=", "==", "!="
    ("where", c, a, b)         np.where(c, a, b)
    ("call", name, a)          runtime.vector_math's `vector_<name>`

`kernel(recipe)` is a function of the arguments that computes the expression with NumPy's
whole-array operations, as the unfused source would. Under Numba it runs one loop over the
elements, with no temporary array per operation, when every "value" argument is an array
of one float dtype F (float32/float64) and one rank, or a number of type F, and every mask
argument (a condition of `where`) is a boolean array of that rank or a bool; arrays whose
shapes differ are broadcast first (a copy of each such operand, NumPy's error where they
do not broadcast). Every operation then computes in F as NumPy does (a weak constant is
converted to F first; a comparison gives a bool), in the same order, with the same scalar
kernels as the whole-array form. Anything else (other dtypes, mixed ranks) runs the
unfused form.
"""
from __future__ import annotations

import hashlib

import numpy as np
from numba import types
from transformer.runtime.allocation import empty_array
from transformer.runtime.numba_api import overload

from . import vector_math

CALLS = {"exp": vector_math.vector_exp, "expm1": vector_math.vector_expm1,
         "log": vector_math.vector_log, "log1p": vector_math.vector_log1p,
         "tanh": vector_math.vector_tanh, "expit": vector_math.vector_expit}
BINARY = ("+", "-", "*")
COMPARE = ("<", "<=", ">", ">=", "==", "!=")


def kernel(recipe: tuple, where: str = "<fused>"):
    """The function computing `recipe` over its arguments (one per recipe and source
    location `where`, named in its error for operands that do not broadcast; made once)."""
    if (recipe, where) in _MADE:
        return _MADE[recipe, where]
    count = 1 + max(_args(recipe))
    params = ", ".join(f"a{k}" for k in range(count))
    label = "fused_" + hashlib.sha256(repr((recipe, where)).encode()).hexdigest()[:16]
    scope = {"np": np, **{f"vector_{n}": f for n, f in CALLS.items()}}
    exec(compile(f"def {label}({params}):\n    return {_numpy_text(recipe)}\n"
                 f"def typer({params}):\n    return choose(({params},))\n",
                 f"<{label}>", "exec"), scope)
    python = scope[label]
    python.__doc__ = f"{_numpy_text(recipe)} (a{count - 1} the last argument), in one loop."
    python.__module__ = __name__
    # another process (a Dask worker) makes it again from this recipe
    python.__secant_rebuild__ = (kernel, (recipe, where))
    python.recipe, python.where = recipe, where
    roles = _roles(recipe, count)
    scope["choose"] = lambda args: _choose(recipe, where, roles, args)
    # the vector_math kernels written out in the loop need IEEE rounding
    overload(python, jit_options={"fastmath": False})(scope["typer"])
    _MADE[recipe, where] = python
    return python


_MADE: dict = {}


def loop_source(fun, *args) -> str | None:
    """The source of the loop that kernel `fun` runs under Numba for arguments of the types
    of `args`, or None where it runs the unfused form."""
    import numba
    recipe = fun.recipe
    roles = _roles(recipe, 1 + max(_args(recipe)))
    chosen = _choose(recipe, fun.where, roles, tuple(numba.typeof(a) for a in args))
    return getattr(chosen, "loop_source", None)


# ---------------------------------------------------------------- recipes


def _args(recipe) -> set:
    if recipe[0] == "arg":
        return {recipe[1]}
    if recipe[0] == "const":
        return set()
    return set().union(*(_args(r) for r in recipe[1:] if isinstance(r, tuple)))


def _roles(recipe, count: int) -> list:
    """"value", "mask" or "both" per argument (a mask is a condition of `where`)."""
    roles: list = [None] * count

    def walk(r, role):
        if r[0] == "arg":
            k = r[1]
            roles[k] = role if roles[k] in (None, role) else "both"
        elif r[0] == "where":
            walk(r[1], "mask")
            walk(r[2], "value")
            walk(r[3], "value")
        elif r[0] != "const":
            for sub in r[1:]:
                if isinstance(sub, tuple):
                    walk(sub, "value")
    walk(recipe, "value")
    return roles


def _numpy_text(r) -> str:
    kind = r[0]
    if kind == "arg":
        return f"a{r[1]}"
    if kind == "const":
        return repr(r[1])
    if kind in ("bin", "cmp"):
        return f"({_numpy_text(r[2])} {r[1]} {_numpy_text(r[3])})"
    if kind == "neg":
        return f"(-{_numpy_text(r[1])})"
    if kind == "where":
        return "np.where({}, {}, {})".format(*(_numpy_text(s) for s in r[1:]))
    return f"vector_{r[1]}({_numpy_text(r[2])})"


# ---------------------------------------------------------------- Numba


def _choose(recipe, where: str, roles, args):
    """The fused loop when the argument types allow it, else the unfused form."""
    value_arrays = [a for a, role in zip(args, roles)
                    if role == "value" and isinstance(a, types.Array)]
    unfused = _implementation(recipe, where, None, ())
    if not value_arrays:
        return unfused
    first = value_arrays[0]
    ftype, ndim = first.dtype, first.ndim
    if not (isinstance(ftype, types.Float) and ftype.bitwidth in (32, 64)) or ndim == 0:
        return unfused
    for a, role in zip(args, roles):
        if role == "both":
            return unfused
        if isinstance(a, types.Array):
            want = types.boolean if role == "mask" else ftype
            if a.dtype != want or a.ndim != ndim:
                return unfused
        elif a != (types.boolean if role == "mask" else ftype):
            return unfused
    arrays = tuple(k for k, a in enumerate(args) if isinstance(a, types.Array))
    dtype = np.float32 if ftype.bitwidth == 32 else np.float64
    return _implementation(recipe, where, dtype, arrays, ndim)


def _implementation(recipe, where: str, dtype, arrays: tuple, ndim: int = 0):
    key = (recipe, where, dtype, ndim, arrays)
    if key in _IMPLEMENTATIONS:
        return _IMPLEMENTATIONS[key]
    count = 1 + max(_args(recipe))
    params = ", ".join(f"a{k}" for k in range(count))
    scope = {"np": np, "empty_array": empty_array,
             **{f"vector_{n}": f for n, f in CALLS.items()}}
    if dtype is None:
        source = f"def impl({params}):\n    return {_numpy_text(recipe)}\n"
    else:
        source = _loop_source(recipe, dtype, params, arrays, ndim, scope)
        scope["MESSAGE"] = f"{where}: operands could not be broadcast together"
    exec(compile(source, "<fused kernel>", "exec"), scope)
    if dtype is not None:
        scope["impl"].loop_source = source
    _IMPLEMENTATIONS[key] = scope["impl"]
    return scope["impl"]


_IMPLEMENTATIONS: dict = {}


def _loop_source(recipe, dtype, params: str, arrays: tuple, ndim: int, scope: dict) -> str:
    """`impl`: one loop over the elements of the arrays broadcast together (a copy of an
    operand only where its shape is not the result's), each operation a statement of its
    own, in dtype."""
    shapes = ", ".join(f"a{k}.shape" for k in arrays)
    lines = [f"def impl({params}):"]
    for d in range(ndim if len(arrays) > 1 else 0):      # NumPy's rule: n or 1, n >= 0
        lines.append("    n = 1")
        lines += [f"    n = a{k}.shape[{d}] if a{k}.shape[{d}] != 1 else n" for k in arrays]
        bad = " or ".join(f"(a{k}.shape[{d}] != n and a{k}.shape[{d}] != 1)" for k in arrays)
        lines.append(f"    if {bad}:\n        raise ValueError(MESSAGE)")
    lines.append(f"    shape = np.broadcast_shapes({shapes})")
    lines += [f"    f{k} = a{k}.ravel() if a{k}.shape == shape "
              f"else np.broadcast_to(a{k}, shape).ravel()" for k in arrays]
    out_dtype = "np.bool_" if recipe[0] == "cmp" else "F"
    scope["F"] = dtype
    first = arrays[0]
    lines += [f"    out = empty_array(f{first}.size, {out_dtype})",
              f"    for i in range(f{first}.size):"]
    body: list = []
    result = _statements(recipe, dtype, arrays, scope, body)
    lines += [f"        {line}" for line in body]
    lines += [f"        out[i] = {result}", "    return out.reshape(shape)"]
    return "\n".join(lines) + "\n"


def _statements(r, dtype, arrays, scope, body: list) -> str:
    """Append the statements computing `r` for element i to body; the name holding it."""
    kind = r[0]
    if kind == "arg":
        return f"f{r[1]}[i]" if r[1] in arrays else f"a{r[1]}"
    if kind == "const":
        name = f"K{len(scope)}"
        scope[name] = dtype(r[1])            # NumPy converts a weak scalar to F
        return name
    parts = [_statements(s, dtype, arrays, scope, body) if isinstance(s, tuple) else s
             for s in r[1:]]
    target = f"t{len(body)}"
    if kind in ("bin", "cmp"):
        body.append(f"{target} = {parts[1]} {parts[0]} {parts[2]}")
    elif kind == "neg":
        body.append(f"{target} = -{parts[0]}")
    elif kind == "where":                    # both branches computed: a select
        body.append(f"{target} = {parts[1]} if {parts[0]} else {parts[2]}")
    else:           # the kernel written out: LLVM does not inline the larger ones
        scope.update(vector_math.kernel_namespace(dtype))
        body += [line[4:] for line in vector_math.kernel_statements(
            parts[0], dtype, parts[1], target, str(len(body)))]
    return target
