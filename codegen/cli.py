"""The `secant` command: `show` prints generated source, `compile` fills the cache ahead of
time, `demo` runs a demo.

    secant show model.py:loss --grad --vmap 0,None --jit
    secant compile md.py:energy --grad --jit --arg pos=float64[n,3] --arg box=10.0
    secant demo

Transformation flags (--grad, --hessian, --vmap, --jvp) compose in the order given:
`--grad --vmap 0,None` is `vmap(grad(f), in_axes=(0, None))`; `--jit` always applies last.
Every bad command line is one line on stderr and exit status 2 (`UsageError`, also raised
by the parser itself); a TransformError prints its located message and exits 1.

Subcommands are entries of COMMANDS: a function adding the subparser and its handler.
"""
from __future__ import annotations

import argparse
import difflib
import importlib
import importlib.util
import os
import re
import sys
import warnings
from pathlib import Path

from codegen import cli_args
from codegen.cli_args import UsageError

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
  secant show model.py:loss --grad --vmap 0,None vmap(grad(loss)): flags compose in order
  secant show train.py:step --pmap i             the stages of pmap(step, axis_name="i")
  secant show model.py:loss --grad --diff        the gradient as a diff against the source
  secant show md.py:energy --grad --jit --arg pos=float64[n,3] --arg box=10.0
                                                 compiled for arguments like these: rows
                                                 of 3 become scalars (d_0, d_1, d_2)
  secant compile md.py:energy --grad --jit --arg pos=float64[n,3] --arg box=10.0
                                                 compile that into the cache ahead of time
  secant demo                                    jit a pair loop and SELU, print timings
  secant primitives --format json                the supported functions, by transformation
"""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are a UsageError (one line), not usage + exit."""

    def error(self, message):
        raise UsageError(message)


# ---------------------------------------------------------------- argument parsing
def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="secant", description="Source-to-source derivatives, batching and Numba "
        "compilation for NumPy code.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", metavar="{" + ",".join(COMMANDS) + "}",
                                     parser_class=Parser)
    for add in COMMANDS.values():
        add(commands)
    return parser


def _add_show(commands) -> None:
    show = commands.add_parser(
        "show", help="print the source secant generates for a function",
        description="Print the module secant generates for FILE:FUNC.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    cli_args.add_target_flags(show)
    show.add_argument("--diff", action="store_true",
                      help="print a unified diff from the normalized source of FUNC to the "
                           "transformed source")
    show.add_argument("--pmap", metavar="AXIS_NAME",
                      help="the compiled stages pmap(f, AXIS_NAME) runs on every device, "
                           "split at the collectives, and the reductions between them")
    show.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                      help="highlight with pygments (default: when stdout is a terminal)")
    show.set_defaults(handler=show_command)


def _add_compile(commands) -> None:
    compile_ = commands.add_parser(
        "compile", help="compile a specialization into the cache ahead of time",
        description="Compile FILE:FUNC (after its transformations) with Numba for arguments "
        "like the --arg examples and store the machine code in the cache "
        "($SECANT_CACHE_DIR), so that a process calling it with such arguments starts warm.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    cli_args.add_target_flags(compile_)
    compile_.set_defaults(handler=compile_command)


def _add_demo(commands) -> None:
    demo = commands.add_parser("demo", help="jit a pair loop and SELU; print timings and source")
    demo.set_defaults(handler=demo_command)


def _add_cache(commands) -> None:
    from codegen import cache_cli
    cache_cli.add_parser(commands)


def _add_primitives(commands) -> None:
    table = commands.add_parser(
        "primitives", help="list the supported NumPy/math functions and their transformations",
        description="Each NumPy/math function secant knows, and whether grad, jvp, vmap, "
        "jit and CUDA support it (with the reason where one does not).")
    table.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                       help="an aligned table (default), a JSON list of objects or Markdown")
    table.add_argument("--readme", metavar="PATH",
                       help="write the Markdown table into PATH between its markers")
    table.set_defaults(handler=primitives_command)


def primitives_command(args) -> int:
    from transformer.primitives.catalog import format_table, primitives, with_table
    if args.readme:
        path = Path(args.readme)
        path.write_text(with_table(path.read_text(), format_table(primitives(), "markdown")))
        return 0
    print(format_table(primitives(), args.format))
    return 0


# name -> function adding the subcommand's parser; its `handler` default runs it
COMMANDS = {"show": _add_show, "compile": _add_compile, "demo": _add_demo,
            "cache": _add_cache, "primitives": _add_primitives}


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
# a single transformation shown without compiling: these also print the generated
# functions it calls (the vjps of called functions, the Hessian's basis push)
SHOW_ALONE = {"grad": ("api_reverse", "show_grad"), "hessian": ("api_forward", "show_hessian"),
              "jvp": ("api_forward", "show_jvp"), "vmap": ("api_batching", "show_vmap")}


def compose(fun, chain: list):
    """`fun` after each step of `chain` in order: [grad, vmap] gives vmap(grad(fun))."""
    import transformer
    for step in chain:
        if step.name == "jvp":
            raise UsageError("--jvp can only be shown alone: transformer.jvp evaluates at "
                             "given points (JAX's signature) rather than returning a function")
        fun = getattr(transformer, step.name)(fun, **step.kwargs)
    return fun


def _compiled(args) -> bool:
    return bool(args.jit or args.static or args.backend or args.arg)


def generated_source(args, fun) -> str:
    """The module text `secant show` prints for the parsed command line `args` and the
    function `fun` it names."""
    static = cli_args.parse_static(args.static, fun)
    chain = args.chain or []
    cli_args.check_argnums(chain, fun)
    if len(chain) == 1 and not _compiled(args):
        module, name = SHOW_ALONE[chain[0].name]
        show = getattr(importlib.import_module(f"transformer.{module}"), name)
        return show(fun, **chain[0].kwargs)
    import transformer
    if not _compiled(args):
        return transformer.source(compose(fun, chain))
    backend = args.backend or ("cpu" if args.jit else "python")
    if args.arg and backend != "cpu":
        raise UsageError("--arg applies to the cpu backend (--jit)")
    jitted = _jitted(compose(fun, chain), static, backend)
    examples = cli_args.parse_examples(args.arg, jitted, static)
    if examples:
        return jitted.source(*examples, **static)
    return transformer.source(jitted, **static)


def _jitted(fun, static: dict, backend: str):
    import transformer
    if backend == "cuda":
        try:
            importlib.import_module("transformer.cuda.jitted")
        except ImportError:
            raise UsageError("the cuda backend is not available in this installation "
                             "(transformer.cuda is missing)") from None
    return transformer.jit(fun, static_argnames=tuple(static), backend=backend)


def diff(before: str, after: str, args) -> str:
    """A unified diff from the normalized source to the shown one, labelled by the flags."""
    steps = [s.label for s in args.chain or []] + (["jit"] if args.jit else [])
    lines = difflib.unified_diff(before.splitlines(keepends=True),
                                 after.splitlines(keepends=True),
                                 fromfile=f"{args.target} (normalized)",
                                 tofile=f"{args.target} ({' | '.join(steps) or 'normalized'})")
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


# ---------------------------------------------------------------- subcommands
def show_command(args) -> int:
    cli_args.check_combination(args)
    fun = load_target(args.target)
    if args.pmap and (_compiled(args) or args.diff):
        raise UsageError("--pmap shows the stages pmap compiles: without --jit, --static, "
                         "--backend, --arg or --diff")
    if args.pmap:
        import transformer
        text = str(transformer.show_pmap(compose(fun, args.chain or []), axis_name=args.pmap))
    else:
        text = str(generated_source(args, fun))
    lexer = "python"
    if args.diff:           # from the normalized source of the untransformed function
        import transformer
        text, lexer = diff(str(transformer.source(fun)), text, args), "diff"
    sys.stdout.write(highlight(text, args.color, sys.stdout, lexer))
    return 0


def compile_command(args) -> int:
    """Compile FILE:FUNC for the --arg examples, so that the cache holds its machine code."""
    args.jit = True                 # compiling is jit's job: the flag is implied
    cli_args.check_combination(args)
    if args.backend not in (None, "cpu"):
        raise UsageError("compile applies to the cpu backend (the python backend has "
                         "nothing to compile)")
    if not args.arg:
        raise UsageError("compile needs an example of each argument: --arg NAME=DTYPE[DIMS] "
                         "or --arg NAME=LITERAL")
    fun = load_target(args.target)
    static = cli_args.parse_static(args.static, fun)
    cli_args.check_argnums(args.chain or [], fun)
    jitted = _jitted(compose(fun, args.chain or []), static, "cpu")
    examples = cli_args.parse_examples(args.arg, jitted, static)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        types = jitted.compile_for(*examples, **static)
    uncached = [w for w in caught if "Cannot cache" in str(w.message)]
    for w in caught:
        if w not in uncached:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    name = f"{jitted.__name__}({', '.join(types)})"
    if uncached:        # compiled, but a new process would compile again: say so
        reason = re.sub(r"\x1b\[[0-9;]*m", "", str(uncached[0].message)).splitlines()[0]
        if os.environ.get("NUMBA_OPT") == "0":
            reason += " (under NUMBA_OPT=0 Numba cannot cache a function that calls " \
                      "another compiled function)"
        print(f"secant: compiled {name} but Numba did not write it to the cache: {reason}",
              file=sys.stderr)
        return TRANSFORM_ERROR
    from codegen import modules
    print(f"compiled {name} into {modules.cache_dir()}")
    return 0


def demo_command(args) -> int:
    from codegen import demo
    demo.run()
    return 0


# ---------------------------------------------------------------- output
def highlight(text: str, color: str, stream, lexer: str = "python") -> str:
    wanted = color == "always" or (color == "auto" and stream.isatty())
    if not wanted:
        return text
    try:
        from pygments import highlight as render
        from pygments.formatters import TerminalFormatter
        from pygments.lexers import DiffLexer, PythonLexer
    except ImportError:          # highlighting is a nicety, never a requirement
        return text
    return render(text, DiffLexer() if lexer == "diff" else PythonLexer(), TerminalFormatter())


def main(argv: list[str] | None = None) -> int:
    try:
        return run(argv)
    except BrokenPipeError:         # `secant show ... | head`: the reader left, not an error
        sys.stdout = open(os.devnull, "w")
        return 0


def run(argv: list[str] | None = None) -> int:
    from transformer.errors import TransformError
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_help()
            return USAGE_ERROR
        return args.handler(args)
    except UsageError as exc:
        print(f"secant: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except TransformError as exc:
        print(f"secant: {exc}", file=sys.stderr)
        return TRANSFORM_ERROR
    except (TypeError, ValueError) as exc:   # a transformation refusing its flags' values
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"secant: error: {first}", file=sys.stderr)
        return USAGE_ERROR


if __name__ == "__main__":
    sys.exit(main())
