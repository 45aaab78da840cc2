"""Checks of a generated array program (tests/array_program_generator.py) against JAX: each
check applies one secant transformation to the NumPy rendering and the same JAX one to the
`jax.numpy` rendering, and compares values (rtol 1e-9 in float64, 1e-4 where JAX's result
is float32: its and NumPy's float32 kernels round differently), shapes, dtypes and pytree
structure.

An outcome is "ok", "refused" (a `TransformError`: allowed, counted apart) or a `Finding`
(a wrong value, shape, dtype or structure, or any other exception from secant).
"""
from __future__ import annotations

import dataclasses
import re
import traceback

import numpy as np
from array_program_generator import ArrayProgram, arguments, load

import transformer as tf
from transformer import TransformError

try:
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
except ImportError:                     # pragma: no cover - JAX is an optional extra
    jax = jnp = None

BATCH = 4


# name -> function of (lib, module, params, x, xs) returning (transformed, arguments); lib
# is `transformer` or `jax`. jvp and vjp take the arguments themselves: they return
# (None, result).
def _checks():
    def grad0(lib, m, p, x, xs):
        return lib.grad(m.f), (p, x)

    def grad01(lib, m, p, x, xs):
        return lib.grad(m.f, argnums=(0, 1)), (p, x)

    def value_and_grad_aux(lib, m, p, x, xs):
        return lib.value_and_grad(m.f_aux, has_aux=True), (p, x)

    def jvp(lib, m, p, x, xs):
        tp = _map(np.cos, p)
        return None, lib.jvp(m.g, (p, x), (tp, np.sin(x)))

    def vjp(lib, m, p, x, xs):
        out, pull = lib.vjp(m.g, p, x)
        return None, (out, pull(np.cos(np.asarray(out))))

    def jacfwd(lib, m, p, x, xs):
        return lib.jacfwd(m.g, argnums=(0, 1)), (p, x)

    def jacrev(lib, m, p, x, xs):
        return lib.jacrev(m.g, argnums=(0, 1)), (p, x)

    def hessian(lib, m, p, x, xs):
        return lib.hessian(m.f, argnums=1), (p, x)

    def vmap0(lib, m, p, x, xs):
        return lib.vmap(m.g, in_axes=(None, 0)), (p, xs)

    def vmap1_out1(lib, m, p, x, xs):
        return lib.vmap(m.g, in_axes=(None, 1), out_axes=-1), (p, xs.T)

    def vmap_grad(lib, m, p, x, xs):
        return lib.vmap(lib.grad(m.f), in_axes=(None, 0)), (p, xs)

    def grad_vmap(lib, m, p, x, xs):
        return lib.grad(m.f_batched), (p, xs)

    def grad_grad(lib, m, p, x, xs):
        return lib.grad(m.f_gg, argnums=1), (p, x)

    return {fn.__name__: fn for fn in (grad0, grad01, value_and_grad_aux, jvp, vjp, jacfwd,
                                       jacrev, hessian, vmap0, vmap1_out1, vmap_grad,
                                       grad_vmap, grad_grad)}


CHECKS = _checks()
# jit on top: "jit_python:NAME" (secant's python backend) and "jit_cpu:NAME" (Numba)
JITTABLE = ("grad0", "grad01", "value_and_grad_aux", "jacfwd", "jacrev", "hessian", "vmap0",
            "vmap_grad", "grad_vmap")


def _map(fn, tree):
    if isinstance(tree, dict):
        return {k: _map(fn, v) for k, v in tree.items()}
    if isinstance(tree, (tuple, list)):
        return type(tree)(_map(fn, v) for v in tree)
    return fn(tree)


@dataclasses.dataclass
class Finding:
    program: ArrayProgram
    check: str
    message: str

    def __str__(self) -> str:
        return f"--- {self.check}: {self.message}\n{self.program.numpy_source()}"


def compare(expected, got, path="out") -> str | None:
    """None when `got` has `expected`'s structure, shapes, dtypes and values."""
    if isinstance(expected, dict):
        if not isinstance(got, dict) or set(got) != set(expected):
            return f"{path}: structure {type(got).__name__} {_keys(got)} != dict {_keys(expected)}"
        for k in expected:
            bad = compare(expected[k], got[k], f"{path}[{k!r}]")
            if bad:
                return bad
        return None
    if isinstance(expected, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(expected):
            return f"{path}: structure {type(got).__name__} != {type(expected).__name__}" \
                   f" of {len(expected)}"
        for k, (e, g) in enumerate(zip(expected, got)):
            bad = compare(e, g, f"{path}[{k}]")
            if bad:
                return bad
        return None
    e, g = np.asarray(expected), np.asarray(got)
    if e.shape != g.shape:
        return f"{path}: shape {g.shape} != JAX {e.shape}"
    if e.dtype != g.dtype:
        return f"{path}: dtype {g.dtype} != JAX {e.dtype}"
    rtol, atol = (1e-4, 1e-5) if e.dtype == np.float32 else (1e-9, 1e-11)
    if not np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True):
        return f"{path}: value {g.ravel()[:6]} != JAX {e.ravel()[:6]}"
    return None


def _keys(tree):
    return sorted(tree) if isinstance(tree, dict) else None


def _jax_tree(tree):
    return _map(lambda a: np.asarray(a), tree)


def check_program(program: ArrayProgram, checks, directory, seed=0, float32=False):
    """{check: "ok" | "refused MESSAGE" | "jax-refused ERROR" | Finding} for `program` at
    arguments drawn from `seed`."""
    np_mod = load(directory, program.numpy_source())
    jax_mod = load(directory, program.jax_source())
    rng = np.random.default_rng(seed)
    p, x = arguments(program, rng)
    xs = rng.normal(size=(BATCH, x.shape[0]))
    if float32:
        p, x, xs = _map(lambda a: a.astype(np.float32), (p, x, xs))
    results = {}
    for check in checks:
        mode, _, name = check.rpartition(":")
        build = CHECKS[name]
        try:
            expected = _jax_tree(_run(build(jax, jax_mod, p, x, xs), ""))
        except Exception as error:           # JAX refuses it: nothing to compare
            results[check] = f"jax-refused {type(error).__name__}"
            continue
        try:
            got = _run(build(tf, np_mod, p, x, xs), mode)
        except TransformError as error:
            first = str(error).splitlines()[0]       # without the generated file's path
            results[check] = "refused " + re.sub(r"^.*?\.py:\d+:\d+: ", "", first)[:160]
            continue
        except Exception as error:
            results[check] = Finding(program, check, "crash: " + "".join(
                traceback.format_exception_only(type(error), error)).strip()[:600])
            continue
        bad = compare(expected, got)
        results[check] = Finding(program, check, bad) if bad else "ok"
    return results


def _run(built, mode):
    fn, args = built
    if fn is None:
        return args
    if mode:
        fn = tf.jit(fn, backend=mode.split("_")[1])
    return fn(*args)
