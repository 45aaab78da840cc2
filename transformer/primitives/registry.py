"""The primitive registry: one `Primitive` record per NumPy/`math`/builtin function (or
operator node, or runtime helper of generated code), looked up by the object itself.

A record holds everything a pass needs to know about its primitive: the user-facing name
(`numpy.sin`, `math.erf`), its kind, its adjoint and tangent templates (or that it has no
derivative), its batching rule, its Numba lowering (`numba`: a runtime equivalent, or
None where Numba has it), its scalar form (`scalar`: an expression of `x`/`y` in `math.*`,
builtins and operators, used by CUDA kernels; `vector`: the array function a scalar `math`
function becomes under vmap), its shape class (`elementwise`, `keeps_int`,
`float_result`), and a *reason* for each transformation it does not support.

Invariant: this module holds the only tables of primitives. The names the passes read
(`templates.ADJOINTS`, `rules.batching.BATCHERS`, ...) are `Field` views of these records,
so a registration through any of them lands here. Records are filled by the family
helpers (`transformer.primitives.families`) and the hand-written rules
(`transformer.rules`), all loaded by `import transformer.primitives`.
This module imports only the standard library, NumPy and gast.
"""
from __future__ import annotations

import dataclasses
import sys
from collections.abc import MutableMapping
from typing import Any

import gast
import numpy as np

TRANSFORMS = ("grad", "jvp", "vmap", "jit", "cuda")


@dataclasses.dataclass(eq=False)
class Primitive:
    """Everything known about one primitive; see the module docstring for the fields."""

    key: Any
    kind: str = ""
    adjoint: Any = None              # a templates.Template
    tangent: Any = None              # a templates.Template
    nondifferentiable: bool = False
    call_check: Any = None           # check(args, keywords) raising MissingRule
    batcher: Any = None              # rule(Site) -> (expression, batched) | None
    result_flags: Any = None         # flags of the arguments -> whether the result is batched
    mutates: Any = None              # position of the argument a helper writes into
    linear: Any = None               # how identity batches pass ("product", "first", "all")
    numba: Any = None                # runtime equivalent where Numba lacks a call form
    plain_form_ok: bool = False      # Numba takes the plain one-argument form itself
    python_only: bool = False        # the equivalent does not compile under Numba yet
    scalar: str | None = None        # scalar form in `math`/builtins, e.g. "math.sin(x)"
    vector: Any = None               # the array form of a scalar function (math.sin -> np.sin)
    cuda: str | None = None          # how CUDA kernels take it: "elementwise", "predicate",
    #                                  "reduction", "product", "allocation", "like_allocation"
    elementwise: bool = False        # array code the shape analysis splits element by element
    unary_only: bool = False         # ... only in its one-argument form
    scalar_result: str | None = None   # the class of its result on scalars ("int", "bool")
    role: str = ""                   # what short-vector scalarization sees: "sum", "dot",
    #                                  "norm", "allocation" (shaped like its argument)
    keeps_int: bool = False          # integer arguments give an integer result
    float_result: bool = False       # integer arguments give a float result
    statement_rules: frozenset = frozenset()   # transforms that differentiate its call as a
    #                                  statement of their own (np.add.at's accumulation)
    reasons: dict = dataclasses.field(default_factory=dict)   # transform -> why unsupported
    samples: tuple = ()              # `Sample` calls the registry's generated tests run
    refused_keywords: dict = dataclasses.field(default_factory=dict)   # keyword -> hint:
    #                                  grad, jvp and jit refuse a call passing it (located)

    @property
    def name(self) -> str:
        return user_name(self.key)

    def supports(self, transform: str) -> bool:
        """Whether `transform` (one of TRANSFORMS) handles this primitive."""
        if transform in self.reasons:
            return False
        if transform in self.statement_rules:
            return True
        if transform == "grad":
            return self.adjoint is not None or self.nondifferentiable
        if transform == "jvp":
            return self.tangent is not None or self.nondifferentiable
        if transform == "vmap":
            return self.batcher is not None
        if transform == "jit":
            return not self.python_only
        if transform == "cuda":
            return self.scalar is not None or self.cuda is not None
        raise ValueError(f"unknown transformation {transform!r}")

    def reason(self, transform: str) -> str:
        """Why `transform` does not handle this primitive ('' when it does)."""
        if self.supports(transform):
            return ""
        return self.reasons.get(transform) or _DEFAULT_REASONS[transform]


@dataclasses.dataclass(frozen=True)
class Sample:
    """One call of a primitive for the tests generated from the registry
    (tests/primitives/test_registry_structural.py): `call` is a Python expression of the
    names in `shapes` (name -> shape of a float array drawn uniformly from `domain`; `()`
    is a float) that uses `np`; it is differentiable in every name, and the first name
    carries the batch axis under vmap. The tests compare it with finite differences,
    a loop over examples and NumPy."""

    call: str
    shapes: dict
    domain: tuple = (-1.0, 1.0)


def add_sample(key, call: str, domain: tuple = (-1.0, 1.0), **shapes) -> None:
    """Record a sample call of `key`: `add_sample(np.diff, "np.diff(x, 2)", x=(5,))`."""
    r = record(key)
    r.samples = r.samples + (Sample(call, shapes, domain),)


_DEFAULT_REASONS = {
    "grad": "no adjoint rule registered", "jvp": "no tangent rule registered",
    "vmap": "no vectorized batching rule: vmap runs a loop over the examples",
    "jit": "no Numba lowering registered", "cuda": "no CUDA form registered"}

_RECORDS: dict = {}


def _normal(key):
    return type(key) if isinstance(key, gast.AST) else key


def lookup(key) -> Primitive | None:
    """The record of `key` (a function object, an operator node or its class), or None."""
    try:
        found = _RECORDS.get(_normal(key))
    except TypeError:          # unhashable objects are never primitives
        return None
    if found is None and _DEFERRED and _bind_imported():
        return lookup(key)
    return found


def record(key) -> Primitive:
    """The record of `key`, created empty on first use (registration goes through here)."""
    key = _normal(key)
    if key not in _RECORDS:
        _RECORDS[key] = Primitive(key)
    return _RECORDS[key]


def records() -> list[Primitive]:
    _bind_imported()
    return list(_RECORDS.values())


# ---------------------------------------------------------------- libraries loaded on demand

# (module name, describe(module)): registrations of an optional library that costs import
# time (`scipy.special`), run once that library is imported by the user (or by `load_all`)
_DEFERRED: list = []


def defer(module: str, describe) -> None:
    """Run `describe(module object)` once `module` is imported, instead of importing it."""
    _DEFERRED.append((module, describe))
    _bind_imported()


def _bind_imported() -> bool:
    """Run the deferred descriptions of the modules imported by now; whether any ran."""
    ready = [entry for entry in _DEFERRED if entry[0] in sys.modules]
    for entry in ready:
        _DEFERRED.remove(entry)
        entry[1](sys.modules[entry[0]])
    return bool(ready)


def load_all() -> None:
    """Import every deferred library that is installed, so that its records exist
    (for the table of primitives and the tests generated from it)."""
    import importlib
    for entry in list(_DEFERRED):
        try:
            importlib.import_module(entry[0])
        except ImportError:
            _DEFERRED.remove(entry)
    _bind_imported()


def unsupported(key, transform: str, reason: str) -> None:
    """State that `transform` does not handle `key`, and why (shown in errors and tables)."""
    record(key).reasons[transform] = reason


def reason(key, transform: str) -> str:
    """Why `transform` does not handle `key`; '' when it does or nothing is known."""
    found = lookup(key)
    return found.reasons.get(transform, "") if found is not None else ""


# ---------------------------------------------------------------- views read by the passes


class Field(MutableMapping):
    """The `field` of every record, as a dict keyed by primitive (None counts as absent)."""

    def __init__(self, field: str):
        self.field = field

    def __getitem__(self, key):
        found = lookup(key)
        value = getattr(found, self.field) if found is not None else None
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key, value):
        setattr(record(key), self.field, value)

    def __delitem__(self, key):
        self[key]                    # KeyError when absent
        setattr(record(key), self.field, None)

    def __iter__(self):
        return iter([k for k, r in list(_RECORDS.items()) if getattr(r, self.field) is not None])

    def __len__(self):
        return sum(1 for _ in self)

    def __contains__(self, key):
        found = lookup(key)
        return found is not None and getattr(found, self.field) is not None

    def get(self, key, default=None):
        found = lookup(key)
        value = getattr(found, self.field) if found is not None else None
        return default if value is None else value


class Members:
    """The keys whose record satisfies `test`, as a read-only set (`key in members`)."""

    def __init__(self, test):
        self.test = test

    def __contains__(self, key):
        found = lookup(key)
        return found is not None and bool(self.test(found))

    def __iter__(self):
        return iter([k for k, r in list(_RECORDS.items()) if self.test(r)])


# ---------------------------------------------------------------- names users call


_PATHS = {"numpy.linalg": "numpy.linalg", "numpy.fft": "numpy.fft", "numpy.random": "numpy.random"}


# objects that do not say where users find them (SciPy's ufuncs have no __module__)
_NAMES: dict = {}


def named(key, name: str) -> None:
    """Call `key` by `name` (`scipy.special.expit`) in tables and messages."""
    _NAMES[key] = name


def user_name(key) -> str:
    """The name a user calls `key` by: `numpy.sin`, `numpy.linalg.norm`, `math.erf`, `abs`,
    `scipy.special.erf`; operators as `operator +`-like words; other objects by module path."""
    if isinstance(key, str):
        return key
    if _is_named(key):
        return _NAMES[key]
    if isinstance(key, type) and issubclass(key, gast.AST):
        return f"operator {key.__name__}"
    label = getattr(key, "__name__", None) or repr(key)
    if key == np.add.at:                 # a bound method: equal, not identical, per access
        return "numpy.add.at"
    module = getattr(key, "__module__", None) or ""
    if isinstance(key, np.ufunc) or module.startswith("numpy"):
        base = module.replace("._linalg", ".linalg").split("._")[0]
        return f"{_PATHS.get(base, 'numpy')}.{label}"
    if module.startswith("scipy"):
        return f"{module.split('._')[0]}.{label}"
    if module in ("math", "builtins"):
        return label if module == "builtins" else f"math.{label}"
    qualname = getattr(key, "__qualname__", label)
    return f"{module}.{qualname}" if module else qualname


def is_user_facing(key) -> bool:
    """Whether `key` is a function users call (not an operator node or a runtime helper)."""
    if isinstance(key, (str, type)) and not callable(key) or \
            isinstance(key, type) and issubclass(key, gast.AST):
        return False
    if isinstance(key, type):
        return key in (float, int, bool, range)
    if _is_named(key):
        return True
    module = getattr(key, "__module__", None) or ""
    return isinstance(key, np.ufunc) or key == np.add.at or \
        module.split(".")[0] in ("numpy", "math", "builtins", "scipy") or \
        module.startswith("transformer.random") or \
        module in ("transformer.debug", "transformer.callbacks", "transformer.checkpoint")


def _is_named(key) -> bool:
    try:
        return key in _NAMES
    except TypeError:          # unhashable
        return False
