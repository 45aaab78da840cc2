"""The flags `secant show` and `secant compile` share, and their parsing into values.

Transformation flags are recorded in command-line order as `Step`s in `args.chain`, so
that `--grad --vmap 0,None` means vmap(grad(f)); `--argnums` belongs to the `--grad` or
`--hessian` just before it. Every malformed value is a `UsageError` naming the flag.
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import re


class UsageError(Exception):
    """A bad command line: reported as one line on stderr, exit status 2."""


@dataclasses.dataclass
class Step:
    """One transformation flag: `transformer.<name>(f, **kwargs)`."""
    name: str
    kwargs: dict

    @property
    def label(self) -> str:
        args = "".join(f", {k}={v!r}" for k, v in self.kwargs.items())
        return f"{self.name}(f{args})"


DIFFERENTIATING = ("grad", "hessian")


class AddStep(argparse.Action):
    """Append this flag's transformation to `namespace.chain` (order kept)."""

    def __call__(self, parser, namespace, values, option_string=None):
        name = self.dest
        kwargs = {}
        if name == "vmap":
            axes = parse_axes(values, "--vmap")
            kwargs["in_axes"] = axes[0] if len(axes) == 1 else axes
        namespace.chain = (namespace.chain or []) + [Step(name, kwargs)]


class SetArgnums(argparse.Action):
    """Give `argnums` to the --grad or --hessian just before this flag."""

    def __call__(self, parser, namespace, values, option_string=None):
        argnums = parse_axes(values, "--argnums", allow_none=False)
        steps = namespace.chain or []
        if not steps or steps[-1].name not in DIFFERENTIATING:
            raise UsageError("--argnums applies to the --grad or --hessian just before it; "
                             "write it after that flag")
        if "argnums" in steps[-1].kwargs:
            raise UsageError(f"--argnums given twice for one --{steps[-1].name}")
        steps[-1].kwargs["argnums"] = argnums[0] if len(argnums) == 1 else argnums


def add_target_flags(parser: argparse.ArgumentParser) -> None:
    """FILE:FUNC, the transformation flags and the compilation flags."""
    parser.set_defaults(chain=None)
    parser.add_argument("target", metavar="FILE:FUNC",
                        help="a Python file and the name of a function defined in it")
    order = parser.add_argument_group(
        "transformations", "applied in the order given: --grad --vmap 0 is vmap(grad(f)), "
        "--vmap 0 --grad is grad(vmap(f)); --jit always applies last")
    order.add_argument("--grad", nargs=0, action=AddStep,
                       help="the reverse-mode gradient")
    order.add_argument("--hessian", nargs=0, action=AddStep, help="the Hessian")
    order.add_argument("--argnums", action=SetArgnums, metavar="I,J",
                       help="positions the --grad/--hessian just before differentiates "
                            "(default 0)")
    order.add_argument("--vmap", action=AddStep, metavar="AXES",
                       help="the batched function; in_axes as e.g. 0,None")
    order.add_argument("--jvp", nargs=0, action=AddStep,
                       help="the forward-mode JVP (shown alone)")
    parser.add_argument("--jit", action="store_true",
                        help="the module jit compiles (backend cpu unless --backend)")
    parser.add_argument("--static", action="append", default=[], metavar="NAME=VALUE",
                        help="fold argument NAME to VALUE (a Python literal, else a string); "
                             "repeatable")
    parser.add_argument("--arg", action="append", default=[], metavar="NAME=EXAMPLE",
                        help="with --jit: compile for argument NAME like EXAMPLE, an array "
                             "DTYPE[DIMS] (float64[n,3]; a named length is a long axis) or "
                             "a Python literal (10.0); one for each non-static argument")
    parser.add_argument("--backend", choices=("python", "cpu", "cuda"),
                        help="code generation backend (default: python, or cpu with --jit)")


def check_combination(args) -> None:
    """Flags that are each valid but mean nothing together."""
    chain = args.chain or []
    if any(step.name == "jvp" for step in chain) and \
            (len(chain) > 1 or args.jit or args.static or args.backend or args.arg):
        raise UsageError("--jvp can only be shown alone (no other transformation, --jit, "
                         "--static, --arg or --backend): transformer.jvp evaluates at given "
                         "points rather than returning a function")
    if args.arg and not args.jit:
        raise UsageError("--arg gives example arguments to compile for: add --jit")


def parse_static(items: list[str], fun=None) -> dict:
    """`["n=8", "mode=train"]` -> {"n": 8, "mode": "train"} (literal_eval, else a string);
    with `fun`, each NAME must be one of its parameters."""
    static = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"--static expects NAME=VALUE, got {item!r}")
        try:
            static[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            static[name] = text
    if fun is not None:
        _check_names(static, _parameters(fun), "--static", fun)
    return static


def check_argnums(chain: list, fun) -> None:
    """Each --argnums names positions `fun` has (every transformation keeps them)."""
    parameters = _parameters(fun)
    for step in chain:
        argnums = step.kwargs.get("argnums", 0)
        for i in argnums if isinstance(argnums, tuple) else (argnums,):
            if parameters and not -len(parameters) <= i < len(parameters):
                raise UsageError(f"--argnums {i}: {getattr(fun, '__name__', 'the function')} "
                                 f"has {len(parameters)} parameters "
                                 f"({', '.join(parameters)})")


def _parameters(fun) -> list[str]:
    import inspect
    try:
        return list(inspect.signature(fun).parameters)
    except (TypeError, ValueError):
        return []


def _check_names(given: dict, parameters: list[str], flag: str, fun) -> None:
    unknown = [n for n in given if n not in parameters]
    if unknown and parameters:
        raise UsageError(f"{flag} {unknown[0]}: {getattr(fun, '__name__', 'the function')} "
                         f"has no parameter {unknown[0]!r} (it takes {', '.join(parameters)})")


_ARRAY = re.compile(r"\s*(\w+)\[([^\]]*)\]\s*")


def parse_example(text: str, flag: str):
    """`float64[n,3]` -> zeros((8, 3)); `10.0` -> 10.0. A named length (`n`) stands for an
    axis too long to be scalarized (8); any other dimension must be a non-negative int."""
    import numpy as np
    match = _ARRAY.fullmatch(text)
    if match is None:
        if "[" in text:
            raise UsageError(f"{flag}: expected DTYPE[DIMS] such as float64[n,3], got {text!r}")
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise UsageError(f"{flag}: expected DTYPE[DIMS] (float64[n,3]) or a Python "
                             f"literal (10.0), got {text!r}") from None
    dtype_text, dims_text = match.groups()
    try:
        dtype = np.dtype(dtype_text)
    except TypeError:
        raise UsageError(f"{flag}: unknown dtype {dtype_text!r} in {text!r}") from None
    shape = []
    for dim in (d.strip() for d in dims_text.split(",")) if dims_text.strip() else ():
        if dim.isdigit():
            shape.append(int(dim))
        elif dim.isidentifier():
            shape.append(8)
        else:
            raise UsageError(f"{flag}: dimension {dim!r} in {text!r} is neither a length "
                             "(3) nor a name (n)")
    return np.zeros(shape, dtype)


def parse_examples(items: list[str], jitted, static: dict) -> list:
    """The example of each non-static parameter of `jitted`, in order (empty without
    --arg); every such parameter needs one."""
    examples = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name.isidentifier():
            raise UsageError(f"--arg expects NAME=EXAMPLE, got {item!r}")
        examples[name] = parse_example(text, f"--arg {name}")
    if not examples:
        return []
    names = [n for n in jitted.signature.parameters if n not in static]
    _check_names(examples, names, "--arg", jitted)
    missing = [n for n in names if n not in examples]
    if missing:
        raise UsageError(f"--arg: give an example for {', '.join(missing)} too (every "
                         "argument that is not --static)")
    return [examples[n] for n in names]


def parse_axes(text: str, flag: str, allow_none: bool = True) -> tuple:
    """`"0,None"` -> (0, None); a single axis stays a tuple of one."""
    try:
        return tuple(None if allow_none and part.strip() == "None" else int(part)
                     for part in text.split(","))
    except ValueError:
        what = "integers or None" if allow_none else "integers"
        raise UsageError(f"{flag} expects comma-separated {what}, got {text!r}") from None
