"""Numba's refusals of generated code, told at the user's code in a line that says why.

`typing_error` turns a Numba `TypingError` raised at a specialization's first call into a
`TransformError`: an argument Numba has no type for is named; a random sampler's refusal
of its arguments is located at the user's call (`random_sites`); anything else gets the
one line of Numba's report that says what went wrong, at the user's line the rejected
generated line was made from (`generated_lines`), naming that generated line in the hint;
a list mixing item types (see `const_lists`) is named as such, with how to write it.
"""
from __future__ import annotations

import linecache
import os
import re

import gast
import numba

from codegen.modules import GENERATED_PACKAGE

from . import generated_lines, random_sites
from .errors import TransformError
from .nodes import own_returns

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def typing_error(name: str, names: list, exc, dynamic, function) -> TransformError:
    """The TransformError for Numba's `exc` compiling `function` (the jitted `name`, whose
    dynamic parameters `names` got `dynamic`)."""
    path = getattr(getattr(function, "py_func", function), "__code__", None)
    filename = path.co_filename if path else None
    for argument, value in zip(names, dynamic):
        try:
            numba.typeof(value)
        except (ValueError, TypeError):
            return TransformError(
                f"argument {argument!r} of {name} has type {type(value).__name__}, "
                "which Numba cannot compile", filename=filename,
                lineno=path.co_firstlineno if path else None, col=0,
                hint="pass NumPy arrays, numbers, or tuples/dicts of them, or use "
                     "jit(..., backend='python') for other types")
    text = _ANSI.sub("", str(exc))
    # the innermost frame in a file of the program: a helper made by `exec` (`<batched
    # einsum_grad>`, a per-example loop) has no source and no user's line, and a frame in
    # Numba's or secant's own source (an implementation that refused its arguments) is
    # not the user's to change; the generated call of either is
    match = next((m for m in _FRAME.finditer(text) if not m.group(1).startswith("<")
                  and not _in_library(m.group(1))), None)
    if match:       # Numba prints the path relative to the working directory
        filename, lineno = os.path.abspath(match.group(1)), int(match.group(2))
    else:
        lineno = path.co_firstlineno if path else None
    types = _argument_types(names, dynamic)
    refused = _refused_sampler(text, filename, lineno, f"{name}({types})")
    if refused is not None:
        return refused
    reason = _numba_reason(text)
    helper_global = _helper_global_refusal(function, reason, f"{name} for arguments ({types})")
    if helper_global is not None:
        return helper_global
    tape = _NARROW_TAPE.search(reason)
    if tape is not None:
        first, later, var = tape.groups()
        return _numba_refusal(
            f"{var!r} starts as {_KINDS[first]} and later holds {_KINDS[later]}: reverse "
            f"mode records its values on a tape typed by the first (jit of "
            f"{name}({types}))", filename, lineno,
            hint=f"give it its final type from the start: pass a float where it comes from "
                 f"(3.0, not 3), convert it (int(flag) for a bool), or keep the changing "
                 f"value in a name that starts as one (scale = float({var}), then update "
                 f"scale)")
    if _MIXED_LIST.search(reason):
        return _numba_refusal(
            f"a list whose items have different types (a float and an array, arrays of "
            f"different rank or dtype) is used here in a way compiled code cannot follow: "
            f"{reason} (jit of {name}({types}))", filename, lineno, hint=_MIXED_LIST_HINT)
    unify = _UNIFY.search(reason)
    if unify is not None:
        first, second, var = unify.groups()
        var = _INLINED.sub("", var)
        return _numba_refusal(
            f"{var!r} is {first} in one place and {second} in another, and compiled code "
            f"gives a variable one type (jit of {name}({types}))", filename, lineno,
            hint="give it its final type from the start: a float rather than an int (pass "
                 "1.0, not 1, or convert where it starts: x * 1.0), an array rather than a "
                 "number (y = np.full_like(x, y)), or give the other value a name of its "
                 "own", variable=var)
    untyped = _UNTYPED_GLOBAL.search(reason)
    return _numba_refusal(f"Numba could not compile {name} for arguments "
                          f"({types}): {reason}", filename, lineno,
                          hint=_known_hint(reason) or (_GLOBAL_CONTAINER_HINT if untyped
                                                       else _PYTHON_BACKEND))


# Numba's report of a global it could not type in a helper inlined into the function: it
# checks the name against the *caller's* globals and, not finding it there, says NameError
# without a location
_NAME_ERROR = re.compile(r"NameError: name '(\w+)' is not defined")
# a global Python container, which Numba cannot type (a dict, a set) or cannot hold as a
# constant (a list)
_UNTYPED_GLOBAL = re.compile(r"Untyped global name '\w+'.*<class '(dict|set|list)'>|"
                             r"use of a reflected list\b.* in globals")


def _helper_global_refusal(function, reason: str, compiling: str) -> TransformError | None:
    """Numba's NameError for a global of a helper inlined into `function`, at the helper's
    line that uses it; None for any other `reason`."""
    unknown = _NAME_ERROR.search(reason)
    found = _helper_global(function, unknown.group(1)) if unknown else None
    if found is None:
        return None
    helper, value, (helper_file, helper_line) = found
    return _numba_refusal(
        f"Numba could not compile {compiling}: the helper {helper} uses the global "
        f"{unknown.group(1)!r}, a {type(value).__name__}, which compiled code cannot hold "
        f"(it takes arrays, numbers, tuples and functions from globals)",
        helper_file, helper_line, hint=_GLOBAL_CONTAINER_HINT)


def _helper_global(function, name: str):
    """(the helper's name, the value, (generated file, line)) of the first generated helper
    reachable from `function` whose module binds the global `name` its code reads; None
    when there is none (a name the program really lacks)."""
    top = getattr(function, "py_func", function)
    seen, queue = set(), [top]
    while queue:
        fn = queue.pop(0)
        if id(fn) in seen or not hasattr(fn, "__code__"):
            continue
        seen.add(id(fn))
        code, namespace = fn.__code__, fn.__globals__
        if fn is not top and name in namespace and name in code.co_names:
            line = generated_lines.first_use(code.co_filename, name)
            if line is not None:
                return fn.__name__, namespace[name], (code.co_filename, line)
        for called in code.co_names:
            helper = getattr(namespace.get(called), "py_func", None)
            if helper is not None and helper.__module__.startswith(GENERATED_PACKAGE + "."):
                queue.append(helper)
    return None


def _argument_types(names: list, dynamic) -> str:
    """`x: array(float64, 1d, C), n: int64`: the arguments as Numba typed them."""
    return ", ".join(f"{n}: {numba.typeof(v)}" for n, v in zip(names, dynamic))


def internal_failure(name: str, names: list, exc: BaseException, dynamic,
                     function) -> TransformError | None:
    """The TransformError for an exception other than a TypingError that Numba raised
    while compiling (an `assert` of its own typing failed: `x.reshape(s, order="F")` of
    an array), at the user's line whose generated line Numba was typing; None for an
    exception the compiled code raised while running (a user's `assert`)."""
    frames, tb = [], exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    if not any(f.f_code.co_filename.endswith(_PIPELINE) for f in frames):
        return None
    loc = next((loc for f in reversed(frames) for loc in _locs_of(f)
                if not _in_library(loc.filename)), None)
    types = _argument_types(names, dynamic)
    inside = frames[-1].f_code
    message = (f"Numba could not compile {name} for arguments ({types}): it failed inside "
               f"its own {inside.co_name} ({os.path.basename(inside.co_filename)}) with "
               f"{type(exc).__name__}{': ' + str(exc) if str(exc) else ''}")
    if loc is None:
        path = getattr(getattr(function, "py_func", function), "__code__", None)
        return TransformError(message, filename=path.co_filename if path else None,
                              lineno=path.co_firstlineno if path else None, col=0,
                              hint=_PYTHON_BACKEND)
    return _numba_refusal(message, os.path.abspath(loc.filename), loc.line,
                          hint="Numba does not take this form of the call (keyword "
                               "arguments are the usual cause): write it another way; "
                               + _PYTHON_BACKEND)


def unboxable_result(name: str, exc: BaseException, fn) -> TransformError | None:
    """The TransformError for a compiled function whose result Numba cannot hand back to
    Python (a dict holding values of several types, built where secant does not rebuild
    it: Numba answers with a SystemError), at the `def` of `fn`, the user's Function;
    else None."""
    cause = exc.__cause__ if isinstance(exc, SystemError) else exc
    if not (isinstance(cause, TypeError) and str(cause).startswith("cannot convert native")
            and str(cause).endswith("to Python object")):
        return None
    kind = str(cause).removeprefix("cannot convert native ").removesuffix(" to Python object")
    message = f"the compiled {name} returns a value Numba cannot hand back to Python: {kind}"
    by_name = next((r for r in own_returns(fn.node) if isinstance(r.value, gast.Name)), None)
    if by_name is not None and "Dict" in kind:
        # a returned literal is rebuilt in Python (pytree_returns); a dict under a name is not
        return fn.origin.error(
            by_name, message, "bind each item to a name of its own and return a dict "
            "literal of those names (`a = ...; s = ...; return {'a': a, 's': s}`): "
            "compiled code hands such a literal back; " + _PYTHON_BACKEND)
    return fn.origin.error(
        fn.node, message, "return a tuple in the dict's place (`return y, (s, [x])` for "
        "`return y, {'s': s, 'l': [x]}`); " + _PYTHON_BACKEND)


# the modules of Numba's compile pipeline: an exception through them is a compile failure
_PIPELINE = tuple(os.path.join("numba", "core", f) for f in ("compiler_machinery.py",
                                                              "typeinfer.py"))


def _locs_of(frame):
    """The Numba source locations a frame of Numba's compiler is working on."""
    for value in (frame.f_locals.get("loc"), getattr(frame.f_locals.get("self"), "loc", None),
                  getattr(frame.f_locals.get("inst"), "loc", None)):
        if isinstance(value, numba.core.ir.Loc) and value.filename:
            yield value


# Numba's refusal to store a float (an int) in the tape of a variable whose first value
# was an int (a bool): `n = n / 2` for an int argument n the gradient does not depend on
_NARROW_TAPE = re.compile(r"Cannot unify array\((bool|int|uint)\d*\b.*? and "
                          r"array\((int|uint|float|complex)\d+\b.*? for '(\w+?)_tape\b")
_UNIFY = re.compile(r"Cannot unify (.+?) and (.+?) for '([A-Za-z_]\w*)(?:\.\d+)*'")
# Numba's name for variable `a` of a function inlined into its caller (a generated function
# compiled with inline='always'): `program_vmap_v<id>_a`, qualname and id of the function
_INLINED = re.compile(r"^\w*_v\d+_(?=[A-Za-z_])")
# a list literal mixing kinds (Numba's LiteralList) read in a way `const_lists` cannot
# turn into tuple reads, or a list of one item type given an item of another
_MIXED_LIST = re.compile(r"literal list|LiteralList|BoundFunction\(list\.\w+ for list\(")
_MIXED_LIST_HINT = ("Numba gives a list one item type; secant compiles a list as a tuple "
                    "where the function that builds it only reads it at constant indices "
                    "(lst[0]), unpacks it (a, b = lst), measures it (len), loops over it (a "
                    "`for` without break) or returns it: "
                    "use it that way there (pass the items, not the list), write a new tuple "
                    "instead of changing an item (t = (v, t[1])), or keep the floats and the "
                    "arrays in lists of their own; jit(..., backend='python') runs it as it "
                    "is, without Numba")
_KINDS = {"bool": "a boolean", "int": "an integer", "uint": "an integer",
          "float": "floats", "complex": "complex numbers"}


_LIBRARIES = (os.path.dirname(os.path.abspath(numba.__file__)) + os.sep,
              os.path.dirname(os.path.abspath(__file__)) + os.sep)


def _in_library(path: str) -> bool:
    """Whether `path` (as Numba prints it: relative to the working directory) is a file of
    Numba or of secant's `transformer` package."""
    return os.path.abspath(path).startswith(_LIBRARIES)


def _refused_sampler(text: str, filename, lineno, call: str) -> TransformError | None:
    """A random sampler's refusal of its arguments, located at the user's call (see
    `transformer.random_sites`); None for other errors or when that call is not found."""

    reason = _numba_reason(text)
    sampler = random_sites.sampler_of(reason)
    site = random_sites.user_site(filename, lineno, sampler) if sampler and filename else None
    if site is None:
        return None
    return TransformError(
        f"{reason} (jit of {call})", filename=site[0], lineno=site[1], col=site[2],
        line=linecache.getline(site[0], site[1]).rstrip() or None,
        hint="under jit a key is a uint32 array of shape (2,) from random.PRNGKey or "
             "random.split, a shape an int or a tuple of ints, a dtype np.float32 or "
             "np.float64 (integer types for randint and bits), and bounds are scalars")


_PYTHON_BACKEND = "jit(..., backend='python') runs the same code without Numba"
_GLOBAL_CONTAINER_HINT = (
    "pass what it holds to the function as an argument (a dict of arrays and numbers "
    "works) and return new values rather than writing them (n = state['n'] + 1.0; "
    "return y, {'n': n}); " + _PYTHON_BACKEND)


def _numba_refusal(message: str, filename: str | None, lineno: int | None,
                   hint: str = _PYTHON_BACKEND, variable: str | None = None) -> TransformError:
    """Numba's refusal of generated line `lineno` of `filename`, at the user's code it was
    made from when that can be told (`generated_lines`), else, for a refusal of
    `variable`, where the user's function first binds it, else at the generated line."""
    line = linecache.getline(filename, lineno).rstrip() if filename and lineno else ""
    site = generated_lines.user_site(filename, lineno, by_line=variable is None) \
        if filename and lineno else None
    if site is None and variable is not None and filename:
        site = generated_lines.first_binding(filename, variable)
    if site is None:
        return TransformError(message, filename=filename, lineno=lineno,
                              col=len(line) - len(line.lstrip()), line=line or None,
                              hint="this is the generated line Numba rejected; " + hint)
    return TransformError(message, filename=site[0], lineno=site[1], col=site[2],
                          line=linecache.getline(site[0], site[1]).rstrip() or None,
                          hint=f"Numba rejected line {lineno} of the generated module "
                               f"{filename}: `{line.strip()}`; {hint}")


def _numba_reason(text: str) -> str:
    """The line of a Numba TypingError that says what went wrong (not which pass failed)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # an overload that refused its arguments says why (e.g. the runtime random samplers)
    refused = []
    for k, line in enumerate(lines):
        if line.startswith("TypingError: ") and "Failed in nopython" not in line:
            said = line.split("TypingError: ", 1)[1]
            if _HEADER.match(said) and k + 1 < len(lines):
                said = lines[k + 1]             # the reason under "- Resolution failure"
            refused.append(said)
    if refused:
        return refused[-1]
    # of the candidates Numba tried, the one that said why (`cannot index array(float64,
    # 1d, C) with 2 indices`) beats the summary "No implementation of function ..."
    specific = [line.split("NumbaTypeError: ", 1)[1] for line in lines
                if "NumbaTypeError: " in line]
    if specific:
        return specific[0]
    reasons = [line for line in lines
               if not line.startswith("Failed in ") and not _HEADER.match(line)]
    return reasons[0] if reasons else (lines[0] if lines else "typing failed")


# the headers Numba puts above each reason, which say nothing themselves
_HEADER = re.compile(r"- Resolution failure for (non-)?literal arguments:$")
# Numba's refusals of NumPy forms it lacks: what to write instead
_KNOWN_REFUSALS = (
    (re.compile(r"reshape\(\) supports contiguous array only"),
     "Numba reshapes only contiguous arrays: reshape a copy, "
     "np.ascontiguousarray(x).reshape(...) (writes to it then do not reach x), or take "
     "the slice after reshaping; jit(..., backend='python') runs it as it is"),
    # Numba's np.dot takes two vectors or matrices: a number or a 3-d array falls through
    # to its (a, b, out) form
    (re.compile(r"missing a required argument: 'out'"),
     "Numba's np.dot takes two vectors or matrices: write a * x for a number, and "
     "np.matmul (@) or np.einsum for stacks of matrices; jit(..., backend='python') runs "
     "it as it is"),
)


def _known_hint(reason: str) -> str | None:
    return next((hint for pattern, hint in _KNOWN_REFUSALS if pattern.search(reason)), None)
