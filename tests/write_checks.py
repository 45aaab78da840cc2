"""Checks of a drawn in-place-write program (tests/write_program_generator.py) through
secant's transformations, each against an oracle that never comes from secant.

- grad, jvp, hessian, jacrev, jacfwd: central finite differences of the plain function,
  called on copies of its arguments (it writes into `a`);
- vmap (in_axes 0 for every argument, and None for the written argument `a`): the plain
  function called on each example in order, on copies; the results stacked and the
  arguments as that loop leaves them (README: writes into an argument every example shares
  reach the caller and the later examples);
- jit_python, jit_cpu, jit_parallel (`jit(..., parallel=True)`): the plain run, results and
  the final contents of both arrays.

Every check ends as "ok", "refused" (a `TransformError` located at the user's file) or a
`Finding`: a wrong number, an argument left different, a crash (any other exception) or a
refusal without a location. A point where two step sizes of the differences disagree (the
program branches on a value near the point) is skipped for the derivative checks.
"""
from __future__ import annotations

import dataclasses
import traceback

import numpy as np
from gradcheck import write_module

from transformer import TransformError, grad, hessian, jacfwd, jacrev, jit, jvp, vmap

CHECKS = ("grad", "grad_constant_a", "jvp", "hessian", "jacrev", "jacfwd", "vmap",
          "vmap_shared", "jit_python", "jit_cpu", "jit_parallel")
COMPILED = ("jit_cpu", "jit_parallel")


@dataclasses.dataclass
class Finding:
    check: str
    why: str          # "wrong", "argument", "crash", "unlocated"
    detail: str
    listing: str

    def __str__(self) -> str:
        return f"[{self.check}: {self.why}]\n{self.listing}\n{self.detail}"


def inputs(seed: int, batch: int = 0):
    rng = np.random.default_rng(seed)
    shape = (batch, 6) if batch else (6,)
    x = float(rng.uniform(-1.0, 1.0)) if not batch else rng.uniform(-1.0, 1.0, batch)
    return x, rng.normal(size=shape) * 0.7, rng.normal(size=shape) * 0.7


def _copies(args):
    return [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]


def _call(f, args):
    return f(*_copies(args))


def _perturbed(args, k, index, step):
    args = _copies(args)
    if isinstance(args[k], np.ndarray):
        args[k][index] += step
    else:
        args[k] = args[k] + step
    return args


def differences(f, args, eps):
    """d f / d each argument (a tuple, one per argument) by central differences."""
    out = []
    for k, arg in enumerate(args):
        arg = np.asarray(arg, dtype=float)
        grads = []
        for index in np.ndindex(arg.shape):
            up = np.asarray(f(*_perturbed(args, k, index, eps)), dtype=float)
            down = np.asarray(f(*_perturbed(args, k, index, -eps)), dtype=float)
            grads.append((up - down) / (2 * eps))
        stacked = np.stack(grads, axis=-1) if grads else np.zeros(0)
        out.append(stacked.reshape(np.shape(grads[0]) + arg.shape))
    return tuple(out)


def smooth_differences(f, args):
    """The differences, or None where the step sizes disagree (a branch near the point)."""
    fine, coarse = differences(f, args, 1e-6), differences(f, args, 1e-5)
    for a, b in zip(fine, coarse):
        if not np.allclose(a, b, rtol=1e-4, atol=1e-6):
            return None
    return fine


def _close(got, want, rtol=1e-5, atol=1e-6):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    if not np.allclose(got, want, rtol=rtol, atol=atol * scale):
        return f"got\n{got}\nwant\n{want}"
    return None


def _tree_close(got, want, what, **tol):
    if not isinstance(want, tuple):
        got, want = (got,), (want,)
    if not isinstance(got, tuple) or len(got) != len(want):
        return f"{what}: got {got!r}"
    for k, (g, w) in enumerate(zip(got, want)):
        bad = _close(g, w, **tol)
        if bad:
            return f"{what}[{k}]: {bad}"
    return None


# ------------------------------------------------------------------ the checks
def _grad(module, args):
    want = smooth_differences(module.program, args)
    if want is None:
        return None
    return _tree_close(grad(module.program, argnums=(0, 1, 2))(*_copies(args)), want, "grad")


def _grad_constant_a(module, args):
    """grad in x and v only: `a` is held constant, so a write into it (a helper's, after it
    was read) is not a write into a differentiated value that reverse mode refuses."""
    want = smooth_differences(module.program, args)
    if want is None:
        return None
    got = grad(module.program, argnums=(0, 1))(*_copies(args))
    return _tree_close(got, tuple(want[:2]), "grad_constant_a")


def _jvp(module, args):
    rng = np.random.default_rng(11)
    tangents = (float(rng.normal()), rng.normal(size=6), rng.normal(size=6))
    direction = smooth_differences(module.program, args)
    if direction is None:
        return None
    want = sum(float(np.sum(d * t)) for d, t in zip(direction, tangents))
    value, tangent = jvp(module.program, tuple(_copies(args)), tangents)
    return (_close(value, _call(module.program, args), rtol=1e-12, atol=1e-12) or
            _close(tangent, want))


def _hessian(module, args):
    if smooth_differences(module.program, args) is None:
        return None
    x, v, a = args

    def gradient(w):
        return differences(module.program, (x, w, a), 1e-4)[1]

    want = np.stack([(gradient(v + e) - gradient(v - e)) / 2e-4
                     for e in np.eye(6) * 1e-4], axis=-1)
    return _close(hessian(module.program, argnums=1)(*_copies(args)), want, rtol=1e-4,
                  atol=1e-5)


def _jacobian(transform):
    def check(module, args):
        want = smooth_differences(module.program_vector, args)
        if want is None:
            return None
        got = transform(module.program_vector, argnums=(0, 1, 2))(*_copies(args))
        return _tree_close(got, want, transform.__name__)
    return check


def _vmap(in_axes):
    def check(module, args):
        x, v, a = inputs(int(abs(args[0]) * 1e6) % 1000 + 5, batch=3)
        batched = (x, v, a)
        if in_axes[2] is None:
            batched = (x, v, a[0].copy())
        want_args = _copies(batched)
        outs = []
        for k in range(3):
            example = [arg[k] if axis is not None else arg
                       for arg, axis in zip(want_args, in_axes)]
            outs.append(module.program(*example))
        got_args = _copies(batched)
        got = vmap(module.program, in_axes=in_axes)(*got_args)
        return (_close(got, np.stack(outs), rtol=1e-12, atol=1e-12) or
                _arguments(got_args, want_args))
    return check


def _arguments(got_args, want_args):
    for name, g, w in zip(("x", "v", "a"), got_args, want_args):
        bad = _close(g, w, rtol=1e-12, atol=1e-12)
        if bad:
            return f"argument {name} afterwards: {bad}"
    return None


def _jit(backend, parallel=False):
    def check(module, args):
        want_args = _copies(args)
        want = module.program(*want_args)
        got_args = _copies(args)
        got = jit(module.program, backend=backend, parallel=parallel)(*got_args)
        return (_close(got, want, rtol=1e-12, atol=1e-12) or _arguments(got_args, want_args))
    return check


RUNNERS = {"grad": _grad, "grad_constant_a": _grad_constant_a, "jvp": _jvp,
           "hessian": _hessian, "jacrev": _jacobian(jacrev),
           "jacfwd": _jacobian(jacfwd), "vmap": _vmap((0, 0, 0)),
           "vmap_shared": _vmap((0, 0, None)), "jit_python": _jit("python"),
           "jit_cpu": _jit("cpu"), "jit_parallel": _jit("cpu", parallel=True)}


def load(program, directory):
    return write_module(directory, program.module_text(), {})


def _located_sharing(error: ValueError) -> bool:
    """README: `z += v` on an array another name still read holds, or a view that an
    in-place write changes while it is still used, raises a ValueError located at the
    write (`'y' shares its array with 'z', updated in place`; `'u' is a view into 'h',
    written in place while 'u' is still used`)."""
    first = str(error).split("\n")[0]
    return first.split(":")[0].endswith(".py") and "generated_case_" in first and \
        ("shares its array" in first or "is a view into" in first) and \
        "reverse mode needs a copy" in first


def check_program(program, checks, directory, seed: int = 0, outcomes=None,
                  refusals=None) -> list[Finding]:
    """The findings of `checks` on `program` at one drawn point; `outcomes` (a dict) counts
    each check's "ok" / "refused" / "skipped"; `refusals` (a list) gets (check, message)
    of each refusal."""
    module = load(program, directory)
    args = inputs(seed)
    findings = []
    for check in checks:
        outcome = "ok"
        try:
            bad = RUNNERS[check](module, args)
            if bad is None and check in ("grad", "jvp", "hessian", "jacrev", "jacfwd") and \
                    smooth_differences(module.program, args) is None:
                outcome = "skipped"
            elif bad:
                findings.append(Finding(check, "wrong", bad, program.listing()))
                outcome = "wrong"
        except TransformError as error:
            outcome = "refused"
            if refusals is not None:
                refusals.append((check, error.message.split("\n")[0]))
            if not error.location or "generated_case_" not in error.location:
                findings.append(Finding(check, "unlocated", str(error), program.listing()))
                outcome = "unlocated"
        except ValueError as error:    # the documented run-time refusal of a shared array
            if not _located_sharing(error):
                raise_crash = traceback.format_exc(limit=-6)
                findings.append(Finding(check, "crash", raise_crash, program.listing()))
                outcome = "crash"
            else:
                outcome = "refused"
                if refusals is not None:
                    refusals.append((check, str(error).split("\n")[0].split(": ", 1)[1]))
        except Exception:                       # noqa: BLE001 - every other one is a crash
            findings.append(Finding(check, "crash", traceback.format_exc(limit=-6),
                                    program.listing()))
            outcome = "crash"
        if outcomes is not None:
            outcomes[(check, outcome)] = outcomes.get((check, outcome), 0) + 1
    return findings
