"""The `secant` command: `secant show` prints generated source, `secant demo` runs a demo.

    secant show model.py:loss --grad --jit --static mode='"train"'
    secant demo

`show` loads the file as a module, applies the requested transformation(s) and prints the
module secant generates, highlighted when stdout is a terminal. A bad path or name is one
line on stderr and exit status 2; a TransformError prints its located message and exits 1.
"""
from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import os
import re
import sys
from pathlib import Path

USAGE_ERROR = 2
TRANSFORM_ERROR = 1

EPILOG = """\
examples:
  secant show model.py:loss                      normalized Python source of loss
  secant show model.py:loss --jit                the Numba module jit compiles
  secant show model.py:step --jit --static mode='"train"' --static n=8
                                                 static values folded as constants
  secant show model.py:loss --grad --argnums 0,1 the reverse-mode gradient
  secant show model.py:f --vmap 0,None           batched over axis 0 of the first argument
  secant show md.py:energy --grad --jit --arg pos=float64[n,3] --arg box=10.0
                                                 compiled for arguments like these: rows
                                                 of 3 become scalars (d_0, d_1, d_2)
  secant demo                                    jit a pair loop and SELU, print timings
"""


class UsageError(Exception):
    """A bad command line: reported as one line on stderr, exit status 2."""


# ---------------------------------------------------------------- argument parsing
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="secant", description="Source-to-source derivatives, batching and Numba "
        "compilation for NumPy code.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", metavar="{show,demo,cache}")
    show = commands.add_parser(
        "show", help="print the source secant generates for a function",
        description="Print the module secant generates for FILE:FUNC.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    show.add_argument("target", metavar="FILE:FUNC",
                      help="a Python file and the name of a function defined in it")
    show.add_argument("--jit", action="store_true",
                      help="show the module jit compiles (backend cpu unless --backend)")
    show.add_argument("--static", action="append", default=[], metavar="NAME=VALUE",
                      help="fold argument NAME to VALUE (a Python literal, else a string); "
                           "repeatable")
    show.add_argument("--arg", action="append", default=[], metavar="NAME=EXAMPLE",
                      help="with --jit: compile for argument NAME like EXAMPLE, an array "
                           "DTYPE[DIMS] (float64[n,3]; a named length is a long axis) or a "
                           "Python literal (10.0); repeatable")
    show.add_argument("--backend", choices=("python", "cpu", "cuda"),
                      help="code generation backend (default: python, or cpu with --jit)")
    show.add_argument("--grad", action="store_true", help="show the reverse-mode gradient")
    show.add_argument("--argnums", default="0", metavar="I,J",
                      help="positions to differentiate for --grad/--hessian (default 0)")
    show.add_argument("--jvp", action="store_true", help="show the forward-mode JVP")
    show.add_argument("--hessian", action="store_true", help="show the Hessian")
    show.add_argument("--vmap", metavar="AXES",
                      help="show the batched function; in_axes as e.g. 0,None")
    show.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                      help="highlight with pygments (default: when stdout is a terminal)")
    commands.add_parser("demo", help="jit a pair loop and SELU; print timings and source")
    from codegen import cache_cli
    cache_cli.add_parser(commands)
    return parser


def parse_static(items: list[str]) -> dict:
    """`["n=8", "mode=train"]` -> {"n": 8, "mode": "train"} (literal_eval, else a string)."""
    static = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"--static expects NAME=VALUE, got {item!r}")
        try:
            static[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            static[name] = text
    return static


def parse_examples(items: list[str]) -> dict:
    """`["pos=float32[n,3]", "box=10.0"]` -> {"pos": zeros((8, 3), float32), "box": 10.0}.

    A named length (`n`) stands for an axis too long to be scalarized.
    """
    import numpy as np
    examples = {}
    for item in items:
        name, sep, text = item.partition("=")
        match = re.fullmatch(r"\s*(\w+)\[([\w\s,]*)\]\s*", text)
        if not sep or not name.isidentifier():
            raise UsageError(f"--arg expects NAME=EXAMPLE, got {item!r}")
        try:
            if match:
                dims = [d.strip() for d in match.group(2).split(",") if d.strip()]
                shape = [int(d) if d.isdigit() else 8 for d in dims]
                examples[name] = np.zeros(shape, np.dtype(match.group(1)))
            else:
                examples[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError):
            raise UsageError(f"--arg {name}: expected DTYPE[DIMS] or a Python literal, "
                             f"got {text!r}") from None
    return examples


def parse_axes(text: str) -> tuple:
    """`"0,None"` -> (0, None); a single axis stays a tuple of one."""
    try:
        return tuple(None if part.strip() == "None" else int(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"expected comma-separated integers or None, got {text!r}") from None


# ---------------------------------------------------------------- loading the target
def load_target(target: str):
    """The function named by `path/to/file.py:func` (dotted names reach into objects)."""
    path_text, sep, qualname = target.rpartition(":")
    if not sep or not path_text or not qualname:
        raise UsageError(f"expected FILE:FUNC, got {target!r}")
    path = Path(path_text)
    if not path.is_file():
        raise UsageError(f"no such file: {path_text}")
    module = _import_file(path)
    obj = module
    for part in qualname.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"{path_text} defines no {qualname!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"{path_text}:{qualname} is a {type(obj).__name__}, not a function")
    return obj


def _import_file(path: Path):
    path = path.resolve()
    name = "secant_cli_" + path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))      # so the file's own imports work
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise UsageError(f"importing {path} failed: {type(exc).__name__}: {first}") from None
    return module


# ---------------------------------------------------------------- transformations
def _transformation(name: str):
    """`transformer.<name>` or a UsageError naming the missing transformation."""
    transformer = importlib.import_module("transformer")
    function = getattr(transformer, name, None)
    if function is None:
        raise UsageError(f"this installation of secant has no {name} transformation "
                         f"(transformer.{name} is missing)")
    return function


def _show_function(module: str, name: str):
    """`transformer.<module>.<name>` when that module provides it, else None."""
    try:
        return getattr(importlib.import_module(f"transformer.{module}"), name, None)
    except ImportError:
        return None


def apply_transforms(fun, args):
    """(`fun` after --grad/--hessian/--vmap, None), or (None, text) from a show_* helper."""
    argnums = parse_axes(args.argnums)
    argnums = argnums[0] if len(argnums) == 1 else argnums
    requested = [("grad", args.grad, "api_reverse", "show_grad", {"argnums": argnums}),
                 ("jvp", args.jvp, "api_forward", "show_jvp", {}),
                 ("hessian", args.hessian, "api_forward", "show_hessian", {"argnums": argnums}),
                 ("vmap", args.vmap is not None, "api_batching", "show_vmap",
                  {"in_axes": parse_axes(args.vmap) if args.vmap else None})]
    chosen = [r for r in requested if r[1]]
    if len(chosen) > 1:
        raise UsageError("choose one of --grad, --jvp, --hessian, --vmap")
    if not chosen:
        return fun, None
    name, _, module, show_name, kwargs = chosen[0]
    show = _show_function(module, show_name)
    compiled = args.jit or args.static or args.backend
    if show is not None and not compiled:
        return None, show(fun, **kwargs)
    if name == "jvp":       # transformer.jvp evaluates (JAX's signature); it is not shown
        if show is None:
            raise UsageError("this installation of secant has no jvp transformation "
                             "(transformer.api_forward.show_jvp is missing)")
        raise UsageError("--jvp cannot be combined with --jit, --static or --backend")
    return _transformation(name)(fun, **kwargs), None


def generated_source(args) -> str:
    """The module text `secant show` prints for the parsed command line `args`."""
    static = parse_static(args.static)
    fun, text = apply_transforms(load_target(args.target), args)
    if text is not None:
        return text
    import transformer
    backend = args.backend or ("cpu" if args.jit else "python")
    if backend == "cuda":
        try:
            importlib.import_module("codegen.cuda")
        except ImportError:
            raise UsageError("the cuda backend is not available in this installation "
                             "(codegen.cuda is missing)") from None
    jitted = transformer.jit(fun, static_argnames=tuple(static), backend=backend)
    examples = parse_examples(args.arg)
    if examples:
        if backend != "cpu":
            raise UsageError("--arg applies to the cpu backend (--jit)")
        names = [n for n in jitted.signature.parameters if n not in static]
        return jitted.source(*[examples.get(n) for n in names], **static)
    return transformer.source(jitted, **static)


# ---------------------------------------------------------------- output
def highlight(text: str, color: str, stream) -> str:
    wanted = color == "always" or (color == "auto" and stream.isatty())
    if not wanted:
        return text
    try:
        from pygments import highlight as render
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import PythonLexer
    except ImportError:          # highlighting is a nicety, never a requirement
        return text
    return render(text, PythonLexer(), TerminalFormatter())


def main(argv: list[str] | None = None) -> int:
    try:
        return run(argv)
    except BrokenPipeError:         # `secant show ... | head`: the reader left, not an error
        sys.stdout = open(os.devnull, "w")
        return 0


def run(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return USAGE_ERROR
    if args.command == "demo":
        from codegen import demo
        demo.run()
        return 0
    if args.command == "cache":
        from codegen import cache_cli
        return cache_cli.run(args)
    from transformer.errors import TransformError
    try:
        text = generated_source(args)
    except UsageError as exc:
        print(f"secant: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except TransformError as exc:
        print(f"secant: {exc}", file=sys.stderr)
        return TRANSFORM_ERROR
    sys.stdout.write(highlight(text, args.color, sys.stdout))
    return 0


if __name__ == "__main__":
    sys.exit(main())
