"""Whether the source secant reads for a function is the code Python runs for it.

secant parses a function's source from its file as the file is now (`inspect` rereads a
file whose modification time changed). A module edited after it was imported, and not
reloaded, therefore gives the new text while Python runs the old code: `grad(mymod.f)`
would differentiate the edited `f` while `mymod.f(x)` computes the old one, a derivative
that silently belongs to another function.

The check compiles the file's current text, as Python would import it, finds the code of
the definition on the line secant parses, and compares it with the running function's
code: bytecode, constants, names and the code of every function nested in it, but not
the line tables (a comment or a blank line inside the function changes no value).

Lines added or removed above an unchanged function move it: its text is then read at the
line where the file now defines the same code (and errors point at the file as it is).

Invariant: `running_source(fn, filename, lines, first)` returns the lines of a definition
in `filename` that compiles to `fn.__code__` (up to line numbers), or `lines` as given when
that cannot be told (the text does not compile as a whole, as a notebook cell with a magic;
the function's module was rewritten on import, as pytest rewrites `assert`); otherwise it
raises a located TransformError whose hint reloads the module.
"""
from __future__ import annotations

import __future__
import inspect
import linecache
import types

from .errors import TransformError

# (filename, text, future flags) -> {(co_name, co_firstlineno): [code, ...]}; None: no compile
_COMPILED: dict[tuple[str, str, int], dict | None] = {}
_MAX_FILES = 64

# the compiler flags a `from __future__ import` sets; a notebook compiles every later cell
# with the ones an earlier cell set, so the text is compiled with the running code's own
_FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    _FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag

# names an import-time rewriter puts into the code it changes (pytest's assert rewriting)
_REWRITER_NAMES = ("@py_builtins", "@pytest_ar")


def running_source(fn, filename: str, lines: list[str], first: int) -> tuple[list[str], int]:
    """The lines of `fn`'s definition and the first one's number, as read from `filename`
    at line `first` (`inspect`), checked against the code that runs: the same when they
    compile to it; the definition's lines at its new place when lines above it were added
    or removed and its own code is unchanged; a located TransformError when the file now
    defines other code for it."""
    code = fn.__code__
    definitions = _definitions(filename, code.co_filename, code.co_flags & _FUTURE_FLAGS)
    if definitions is None:
        return lines, first                             # cannot be told: as before
    if any(_same_code(code, other) for other in definitions.get((code.co_name, first), [])):
        return lines, first
    moved = sorted((abs(line - first), line) for (name, line), codes in definitions.items()
                   if name == code.co_name and any(_same_code(code, c) for c in codes))
    if moved:                      # the same code elsewhere: its text means what runs
        line = moved[0][1]
        return inspect.getblock(linecache.getlines(filename)[line - 1:]), line
    if any(name in _REWRITER_NAMES for name in _all_names(code)):
        return lines, first                             # rewritten on import: unknowable
    raise TransformError(
        f"the source of {fn.__qualname__} in {filename} is not the code Python is "
        "running: the file was edited after its module was imported",
        filename=filename, lineno=first, col=0,
        line=(linecache.getline(filename, first).rstrip("\n") or None),
        hint=f"reload the module (`importlib.reload({_module_hint(fn)})`, then take "
             f"{fn.__name__} from the reloaded module) or restart Python; in IPython, "
             "`%load_ext autoreload` and `%autoreload 2` do this on every edit")


def _module_hint(fn) -> str:
    module = getattr(fn, "__module__", None)
    return module.rsplit(".", 1)[-1] if module and module != "__main__" else "module"


def _definitions(filename: str, code_filename: str, flags: int) -> dict | None:
    """Every function code object compiled from the file's current text, by name and
    first line; None when the text is unavailable or does not compile."""
    text = "".join(linecache.getlines(filename))
    if not text:
        return None
    key = (filename, text, flags)
    if key not in _COMPILED:
        if len(_COMPILED) >= _MAX_FILES:
            _COMPILED.pop(next(iter(_COMPILED)))
        try:
            module = compile(text, code_filename, "exec", flags=flags, dont_inherit=True)
        except (SyntaxError, ValueError):
            _COMPILED[key] = None
        else:
            index: dict = {}
            for code in _nested_code(module):
                index.setdefault((code.co_name, code.co_firstlineno), []).append(code)
            _COMPILED[key] = index
    return _COMPILED[key]


def _nested_code(code):
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield const
            yield from _nested_code(const)


def _all_names(code) -> set:
    return set(code.co_names).union(*(nested.co_names for nested in _nested_code(code)))


_COMPARED = ("co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars",
             "co_argcount", "co_posonlyargcount", "co_kwonlyargcount", "co_flags")


def _same_code(a, b) -> bool:
    """Whether code objects `a` and `b` do the same thing: equal bytecode, names and
    constants (nested code compared the same way), line numbers aside."""
    if any(getattr(a, field) != getattr(b, field) for field in _COMPARED):
        return False
    if getattr(a, "co_exceptiontable", b"") != getattr(b, "co_exceptiontable", b""):
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) or isinstance(y, types.CodeType):
            if not (isinstance(x, types.CodeType) and isinstance(y, types.CodeType)
                    and _same_code(x, y)):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):    # 0.0 and -0.0, 1 and True
            return False
    return True
