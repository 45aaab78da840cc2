"""Differential checks: a generated program under secant against its plain Python run.

A *check* is one transformation (`jit`, `grad`, `vmap`, their compositions, the python
backend) applied to a `program_generator.Program`. Its oracle never comes from secant:
values and exceptions of the plain Python/NumPy run for `jit` and `vmap` (stacked over the
batch), central finite differences for `grad`. Every disagreement is returned as a
`Mismatch` (program, inputs, expected, got) rather than raised, so a long search reports
them all; an input on which Python raises `IndexError` must raise `IndexError` under every
transformation, never return a value.

`KNOWN_BUGS` names the constructs that go wrong on today's code and are being fixed
elsewhere; checks they break are skipped. Delete an entry once its fix is merged.
"""
from __future__ import annotations

import dataclasses
import functools
import pathlib
import textwrap

import numpy as np
from gradcheck import central_differences
from program_generator import FEATURES, Program, change_module_value, write_program

from transformer import TransformError, grad, jit, jvp, vmap
from transformer.test_util import numerical_jvp

CHECKS = ("jit_python", "grad", "jvp", "hvp", "vmap", "vmap_loop", "vmap_shared_x", "jit",
          "jit_grad", "jit_vmap", "jit_parallel")
COMPILED = ("jit", "jit_grad", "jit_vmap", "jit_parallel")
# Transformations that read module globals when called (JAX's grad and vmap do); jit may
# freeze them at compile time, as jax.jit does.
CALL_TIME_GLOBALS = ("grad", "vmap", "vmap_loop", "vmap_shared_x")


@dataclasses.dataclass(frozen=True)
class Bug:
    feature: str           # the program construct that triggers it
    checks: tuple          # the transformations it breaks
    max_size: int | None = None   # only for work vectors up to this length
    description: str = ""


# One line per known, not yet fixed bug: the construct and what it breaks.
KNOWN_BUGS: dict = {
    "int_start_carried_under_jit_vmap": Bug(
        "integer_start", ("jit_vmap",), description=(
            "`c = 1` then `c = np.tanh(x - c)` in a loop: vmap broadcasts the int to an "
            "int64 array, so jit(vmap(f)) refuses what jit(f) compiles ('c' is "
            "array(int64) in one place and array(float64) in another); the refusal is a "
            "TransformError at the user's loop whose hint (start from 1.0) works")),
    "flag_carried_under_jit_vmap": Bug(
        "boolean_flag", ("jit_vmap",), description=(
            "`flag = x > c` then `flag = flag * 0.5 + ...` in a loop: the same refusal, "
            "'flag' is array(bool) in one place and array(float64) in another under "
            "jit(vmap(f)) where jit(f) compiles it")),
}


# Constructs the README documents as refused by some transformations: there a located
# TransformError, or the run-time ValueError the README quotes, is the right answer.
@dataclasses.dataclass(frozen=True)
class Refusal:
    feature: str
    checks: tuple
    messages: tuple        # one of these is in the error's text


DOCUMENTED_REFUSALS = (
    # README, "Forward mode and higher order": the vjp of a helper that writes into an array
    # accumulates into its argument, which forward mode (over reverse) refuses
    Refusal("helper_call", ("hvp",),
            ("forward mode cannot differentiate a call that changes its arguments",)),
    # README, "A variable has one type under jit": an int argument's value given floats
    # later in a loop is an int array becoming a float array under jit(vmap(f))
    Refusal("integer_input", ("jit_vmap",), ("in one place and array(float",)),
    Refusal("alias_augmented", ("grad", "hvp", "jit_grad"),
            ("are the same array here",
             "updated in place (+=, -=, ...); reverse mode needs a copy",
             # compiled code's form of the same check
             "is shared with another name; reverse mode needs a copy")),
)


def refused_as_documented(program: Program, check: str, error: BaseException) -> bool:
    """Whether `error` is the documented refusal of a construct `program` uses."""
    if not isinstance(error, (TransformError, ValueError)):
        return False
    return any(r.feature in program.features and check in r.checks and
               any(m in str(error) for m in r.messages) for r in DOCUMENTED_REFUSALS)


def skipped(program: Program, check: str, known_bugs=KNOWN_BUGS) -> list[str]:
    """The known bugs that make `check` of `program` unreliable today."""
    return [name for name, bug in known_bugs.items()
            if bug.feature in program.features and check in bug.checks and
            (bug.max_size is None or program.size <= bug.max_size)]


def allowed_features(checks, known_bugs=KNOWN_BUGS) -> tuple[str, ...]:
    """Features a program may use when every one of `checks` is run on it.

    A feature whose known bug depends on the vector size stays allowed; `skipped` drops
    the check for the programs it concerns.
    """
    banned = {bug.feature for bug in known_bugs.values()
              if bug.max_size is None and set(bug.checks) & set(checks)}
    return tuple(f for f in FEATURES if f not in banned)


# ------------------------------------------------------------------ inputs and outcomes
@dataclasses.dataclass(frozen=True)
class Point:
    """The arguments of one call: positional `args`, keyword `kwargs`."""
    args: tuple
    kwargs: dict

    def copy(self) -> "Point":
        return Point(tuple(_copy(a) for a in self.args),
                     {k: _copy(a) for k, a in self.kwargs.items()})

    def __str__(self) -> str:
        parts = [np.array2string(np.asarray(a), precision=17, separator=", ")
                 for a in self.args]
        parts += [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return "(" + ", ".join(parts) + ")"


def _copy(value):
    return value.copy() if isinstance(value, np.ndarray) else value


def points(program: Program, count: int, seed: int) -> list[Point]:
    """`count` random argument sets of `program`, inputs in [-1, 1]."""
    rng = np.random.default_rng(seed)
    result = []
    for _ in range(count):
        x = float(rng.uniform(-1, 1))
        if "integer_input" in program.features:
            x = int(rng.integers(-1, 2))        # a Python int where a float is expected
        args = [x, rng.uniform(-1, 1, program.size)]
        kwargs = {}
        for name, _ in program.defaults:
            if name in program.passed:
                value = float(rng.uniform(-1.5, 1.5))
                if name == "s" and "integer_start" in program.features:
                    value = int(rng.integers(-1, 2))     # an int where a float is expected
                if name == "k":
                    kwargs[name] = value
                else:
                    args.append(value)
        result.append(Point(tuple(args), kwargs))
    return result


def batch_of(pts: list[Point], shared_x=False) -> Point:
    """The points stacked along a leading batch axis, for vmap (but for x if `shared_x`)."""
    args = tuple(np.stack([np.asarray(p.args[i]) for p in pts]) for i in range(len(pts[0].args)))
    if shared_x:
        args = (pts[0].args[0],) + args[1:]
    kwargs = {k: np.array([p.kwargs[k] for p in pts]) for k in pts[0].kwargs}
    return Point(args, kwargs)


@dataclasses.dataclass(frozen=True)
class Outcome:
    value: object = None
    error: BaseException | None = None

    def __str__(self) -> str:
        if self.error is not None:
            first = (str(self.error).splitlines() or [""])[0]
            return f"raises {type(self.error).__name__}: {first}"
        return np.array2string(np.asarray(self.value), precision=17, separator=", ") \
            if isinstance(self.value, np.ndarray) else repr(self.value)


def run(fn, point: Point) -> Outcome:
    """Call `fn` on a copy of `point`; an exception is an outcome, not a failure."""
    point = point.copy()
    try:
        return Outcome(value=fn(*point.args, **point.kwargs))
    except Exception as error:  # noqa: BLE001 - every exception is compared with Python's
        return Outcome(error=error)


def disagreement(expected: Outcome, got: Outcome, rtol=1e-9, atol=1e-12) -> str | None:
    """Why `got` is not `expected`, or None when they agree."""
    if expected.error is not None:
        if isinstance(expected.error, IndexError) and isinstance(got.error, IndexError):
            return None
        return "Python raises " + type(expected.error).__name__ + \
            ("; got a value" if got.error is None else f"; got {type(got.error).__name__}")
    if got.error is not None:
        return f"raised {type(got.error).__name__} on a valid input"
    want, have = _flat(expected.value), _flat(got.value)
    if want.shape != have.shape:
        return f"shape {have.shape}, expected {want.shape}"
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    if not np.allclose(have, want, rtol=rtol, atol=atol * scale):
        return "values differ"
    return None


def _flat(value) -> np.ndarray:
    if isinstance(value, tuple):
        return np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in value])
    return np.asarray(value, dtype=float)


@dataclasses.dataclass(frozen=True)
class Mismatch:
    check: str
    program: Program
    point: str
    expected: str
    got: str
    why: str

    def __str__(self) -> str:
        return (f"{self.check}: {self.why}\n{textwrap.indent(self.program.listing(), '    ')}"
                f"  inputs   {self.point}\n  expected {self.expected}\n  got      {self.got}")


# ------------------------------------------------------------------ oracles
def gradient_oracle(fn, point: Point) -> Outcome | None:
    """d fn / d (x, v) by central differences; None where no derivative exists.

    Where the plain run raises IndexError so must the gradient. A point within a step of
    a branch threshold or kink (fine and coarse differences disagree, or forward and
    backward ones) has no usable oracle.
    """
    plain = run(fn, point)
    if plain.error is not None:
        return plain
    bound = functools.partial(fn, **point.kwargs)
    args = list(point.args)
    try:
        fine = [central_differences(bound, args, k) for k in (0, 1)]
        coarse = [central_differences(bound, args, k, eps=1e-4) for k in (0, 1)]
    except IndexError:
        return None
    if not all(np.allclose(f, c, rtol=1e-3, atol=1e-4) for f, c in zip(fine, coarse)):
        return None
    if not all(_no_kink(bound, args, k) for k in (0, 1)):
        return None
    return Outcome(value=(fine[0], fine[1]))


def tangent_oracle(fn, point: Point) -> Outcome | None:
    """The derivative of `fn` along `direction(point)` by central differences; None where
    `fn` has a kink or branch near the point."""
    plain = run(fn, point)
    if plain.error is not None:
        return plain

    def bound(*args):
        return fn(*(_copy(a) for a in args), **point.kwargs)
    args, directions = list(point.args), direction(point)
    fine = numerical_jvp(bound, args, directions, eps=1e-6)
    coarse = numerical_jvp(bound, args, directions, eps=1e-4)
    if not np.allclose(fine, coarse, rtol=1e-3, atol=1e-4):
        return None
    step = 1e-4
    centre = bound(*args)
    ahead = bound(*[a + step * d for a, d in zip(args, directions)])
    behind = bound(*[a - step * d for a, d in zip(args, directions)])
    if not np.allclose((ahead - centre) / step, (centre - behind) / step, rtol=1e-2, atol=1e-3):
        return None
    return Outcome(value=fine)


def hessian_vector_oracle(fn, point: Point) -> Outcome | None:
    """The derivative of the (python-backend) gradient of `fn` along `direction(point)`, by
    central differences; None where the gradient has a kink or branch near the point."""
    gradient = grad(fn, argnums=(0, 1))
    plain = run(gradient, point)
    if isinstance(plain.error, TransformError):
        return None         # grad refuses the program: the "grad" check judges that
    if plain.error is not None:
        return plain

    def bound(*args):
        return gradient(*args, **point.kwargs)
    args, directions = list(point.args), direction(point)
    fine = numerical_jvp(bound, args, directions, eps=1e-6)
    coarse = numerical_jvp(bound, args, directions, eps=1e-4)
    if not all(np.allclose(f, c, rtol=1e-3, atol=1e-4) for f, c in zip(fine, coarse)):
        return None
    # a kink of the gradient at the point (a branch switching there) fools both central
    # differences alike: the one-sided ones disagree there
    step = 1e-4
    centre = bound(*args)
    ahead = bound(*[a + step * d for a, d in zip(args, directions)])
    behind = bound(*[a - step * d for a, d in zip(args, directions)])
    if not all(np.allclose((u - c) / step, (c - b) / step, rtol=1e-2, atol=1e-3)
               for u, c, b in zip(ahead, centre, behind)):
        return None
    return Outcome(value=tuple(fine))


def direction(point: Point) -> tuple:
    """The tangent of a Hessian-vector product: along `x` and `v`, none along the rest."""
    x, v = point.args[:2]
    rest = tuple(0.0 * a for a in point.args[2:])
    return (0.75, np.linspace(-1.0, 1.0, np.size(v)).reshape(np.shape(v))) + rest


def _no_kink(fn, args, argnum, eps=1e-4) -> bool:
    """Forward and backward differences agree: no kink (max, abs, a branch) at the point.

    A kink exactly at the point fools the central-difference test: both step sizes
    average the two slopes alike.
    """
    args = list(args)
    x = np.asarray(args[argnum], dtype=float)
    centre = fn(*args)
    for index in np.ndindex(x.shape):
        steps = []
        for sign in (1.0, -1.0):
            shifted = x.copy()
            shifted[index] += sign * eps
            args[argnum] = shifted if x.ndim else float(shifted)
            steps.append(sign * (fn(*args) - centre))
        if abs(steps[0] - steps[1]) > 1e-6:
            return False
    return True


def batch_oracle(fn, pts: list[Point]) -> Outcome:
    """The plain results stacked; IndexError when any example raises it."""
    outcomes = [run(fn, p) for p in pts]
    for outcome in outcomes:
        if outcome.error is not None:
            return outcome
    return Outcome(value=np.array([o.value for o in outcomes]))


# ------------------------------------------------------------------ checks
def transformation(check: str, fn):
    """The transformed callable a check compares with its oracle."""
    if check == "jit":
        return jit(fn)
    if check == "jit_python":
        return jit(fn, backend="python")
    if check == "jit_parallel":
        return jit(fn, parallel=True)
    if check == "grad":
        return grad(fn, argnums=(0, 1))
    if check == "jit_grad":
        return jit(grad(fn, argnums=(0, 1)))
    if check == "jvp":
        return _TangentAlong(fn)
    if check == "hvp":
        return _HessianVector(fn)
    if check == "vmap":
        return vmap(fn)
    if check == "vmap_loop":
        return vmap(fn, method="loop")
    if check == "vmap_shared_x":
        return _SharedX(fn)
    if check == "jit_vmap":
        return jit(vmap(fn))
    raise ValueError(f"unknown check {check!r}")


class _TangentAlong:
    """jvp of the program along `direction(point)`: forward mode alone, including the
    tangents of names that share an array updated in place."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args):
        return jvp(self.fn, args, direction(Point(args, {})))[1]


class _HessianVector:
    """jvp of grad (forward over reverse) along `direction(point)`: a Hessian-vector product.
    jvp takes positional arguments only, so `_compare` leaves out calls with keywords."""

    def __init__(self, fn):
        self.gradient = grad(fn, argnums=(0, 1))

    def __call__(self, *args):
        return jvp(self.gradient, args, direction(Point(args, {})))[1]


class _SharedX:
    """vmap with `x` not mapped: in_axes (None, 0, ...) sized to the call's arguments."""

    def __init__(self, fn):
        self.fn = fn
        self.mapped = {}           # by argument count: one vmap object, as a user keeps it

    def __call__(self, *args, **kwargs):
        if len(args) not in self.mapped:
            in_axes = (None,) + (0,) * (len(args) - 1)
            self.mapped[len(args)] = vmap(self.fn, in_axes=in_axes)
        return self.mapped[len(args)](*args, **kwargs)


def check_program(program: Program, checks, directory: pathlib.Path, seed: int = 0,
                  count: int = 4, known_bugs=KNOWN_BUGS) -> list[Mismatch]:
    """Run each of `checks` on `program` at `count` random points; the mismatches.

    A program reading module attributes is checked twice more: after its configuration
    module's attributes change (the transformations that, as in JAX, read globals when
    called: `grad` and `vmap`), and loaded afresh against other values (all checks), so
    a result cached from the first load is caught.
    """
    checks = [c for c in checks if not skipped(program, c, known_bugs)]
    fn, config = write_program(directory, program)
    pts = points(program, count, seed)
    transformed, found = _check_loaded(program, fn, checks, pts)
    if not program.config:
        return found
    other = tuple((name, _changed(value)) for name, value in program.config)
    shown = dataclasses.replace(program, config=other)
    for name, value in other:
        change_module_value(fn, config, name, value)
    for check in set(transformed) & set(CALL_TIME_GLOBALS):
        found += _compare(check, shown, fn, transformed[check], pts,
                          when="after module values changed")
    fn2, _ = write_program(directory, shown)
    return found + _check_loaded(shown, fn2, checks, points(program, count, seed + 1))[1]



def _changed(value: float) -> float:
    return value * -1.5 + 0.25


def _check_loaded(program, fn, checks, pts) -> tuple[dict, list[Mismatch]]:
    """The transformed functions by check, and the mismatches of their runs at `pts`."""
    transformed, found = {}, []
    for check in checks:
        try:
            transformed[check] = transformation(check, fn)
        except TransformError as error:
            found.append(Mismatch(check, program, "-", "a transformed function",
                                  str(error).splitlines()[0], "refused a valid program"))
            continue
        found += _compare(check, program, fn, transformed[check], pts)
    return transformed, found


def _compare(check, program, fn, transformed, pts, when="") -> list[Mismatch]:
    if check == "vmap_shared_x":
        pts = [Point((pts[0].args[0],) + p.args[1:], p.kwargs) for p in pts]
        cases = [(batch_of(pts, shared_x=True), batch_oracle(fn, pts))]
        rtol = 1e-9
    elif check in ("vmap", "vmap_loop", "jit_vmap"):
        cases = [(batch_of(pts), batch_oracle(fn, pts))]
        rtol = 1e-9
    elif check == "hvp":
        pts = [Point((float(p.args[0]),) + p.args[1:], p.kwargs) for p in pts if not p.kwargs]
        cases = [(p, hessian_vector_oracle(fn, p)) for p in pts]
        rtol = 1e-4
    elif check == "jvp":
        pts = [Point((float(p.args[0]),) + p.args[1:], p.kwargs) for p in pts if not p.kwargs]
        cases = [(p, tangent_oracle(fn, p)) for p in pts]
        rtol = 1e-5
    elif check in ("grad", "jit_grad"):
        # grad refuses an integer argument (a TypeError, as JAX): differentiate at its float
        pts = [Point((float(p.args[0]),) + p.args[1:], p.kwargs) for p in pts]
        cases = [(p, gradient_oracle(fn, p)) for p in pts]
        rtol = 1e-5
    else:
        cases = [(p, run(fn, p)) for p in pts]
        rtol = 1e-9
    found, failing = [], 0
    for point, expected in cases:
        if expected is None:
            continue
        got = run(transformed, point)
        if got.error is not None and refused_as_documented(program, check, got.error):
            continue
        why = disagreement(expected, got, rtol=rtol, atol=rtol * 1e-1)
        if why:
            failing += 1
            if not found:               # one report per program and check: the first input
                found.append(Mismatch(check + (f" ({when})" if when else ""), program,
                                      str(point), str(expected), str(got), why))
    if failing > 1:
        found[0] = dataclasses.replace(found[0], why=f"{found[0].why} ({failing} of "
                                       f"{len(cases)} inputs)")
    return found
