"""Random programs written as source text, for the tests that run them through secant.

Hypothesis draws a small program of the constructs users write - scalar arithmetic, tuple
swaps, `if/else` on values, `for` and `while` loops with `break`/`continue`, in-place
writes into a work array - and, when a `Grammar` asks for them, early `return`, whole-
vector math (`np.dot`, `np.sum`, slices, reversed views, `+=` on a slice, `axis=-1,
keepdims=True`, `for e in w`), `w` rebound to a new array (`w = np.cos(w) * ...`), calls
to the module's own functions, `min`/`max`/`abs`, aliases updated in place (`z = w; z +=
...`), indices at and past the bounds, values that change type between assignments (`c =
1` then floats, `n = len(v)` read as a number, a flag `x > 0.1` later rebound to a float),
integer exponents, `//` and `%` of floats and `np.where(.., 1, ..)` mixing an int with a
float; `whole_programs` adds decorators (`functools.wraps`), keyword-only parameters and
defaults, module attributes read through an imported module (`cfg.SCALE`) and module
globals.

Contract of every program: `def program(x, v, ...)` with `x` a number and `v` a float
vector of `grammar.size` elements; it never writes into `v` (it works on `w = v.copy()`) and
returns a float. Its correct result is well defined: every assigned value passes through
`tanh` (or a factor in [0.25, 0.75]), loops run at most four times and denominators are at
least 1.5, so values stay O(1), no NaN or overflow can occur, and central differences are
accurate. The only exception it may raise is `IndexError`, and only when
`grammar.out_of_range` allows indices past the bounds.

`write_program` writes the program (and its configuration module) to real files and
imports them, since secant reads a function's source from its file.
"""
from __future__ import annotations

import dataclasses
import importlib
import itertools
import pathlib
import sys

from gradcheck import write_module
from hypothesis import strategies as st

SCALARS = ("a", "b", "c")
UNARY = ("np.sin", "np.cos", "np.tanh", "math.sin", "math.tanh", "np.arctan")
WORK = 4          # length of the work array `w` in the default grammar
FEATURES = ("early_return", "vector_math", "vector_rebind", "alias_augmented", "out_of_range",
            "decorator", "keyword_only", "default", "module_attribute", "helper_call",
            "min_max", "integer_input", "integer_start", "boolean_flag", "integer_arithmetic")


@dataclasses.dataclass(frozen=True)
class Grammar:
    """What a drawn program may contain; the default is the scalar-and-loop core."""
    size: int = WORK
    early_return: bool = False
    vector_math: bool = False
    vector_rebind: bool = False
    alias_augmented: bool = False
    out_of_range: bool = False
    helper_call: bool = False
    min_max: bool = False
    integer_start: bool = False      # `c` starts as an int; `n = len(v)` is a leaf
    boolean_flag: bool = False       # `flag = x > 0.1` is a leaf, later rebound
    integer_arithmetic: bool = False  # `**` with int exponents, `//`, `%`, np.where(.., 1, ..)
    leaves: tuple[str, ...] = ()       # extra scalar leaves: "s", "k", "cfg.SCALE", ...

    def index_bounds(self) -> tuple[int, int]:
        """Range of constant indices into `w`: in range, or one past each end."""
        if self.out_of_range:
            return -self.size - 1, self.size
        return -self.size, self.size - 1


def _constant(draw):
    return repr(draw(st.sampled_from((0.25, 0.5, -0.75, 1.5, 2.0, -1.25, 0.1))))


@st.composite
def expressions(draw, loop_var=None, depth=2, grammar=Grammar()):
    leaves = list(SCALARS) + ["const", "element"] + list(grammar.leaves)
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        leaf = draw(st.sampled_from(leaves))
        if leaf == "const":
            return _constant(draw)
        if leaf == "element":
            return f"w[{_index(draw, loop_var, grammar)}]"
        if leaf == "flag":      # NumPy's ufuncs of a bool give float16: read it as a number
            return "(flag * 2.5)"
        return leaf
    kinds = ("binary", "binary", "unary", "ratio", "square")
    kinds += ("reduction",) * grammar.vector_math + ("call",) * grammar.helper_call + \
        ("kink",) * grammar.min_max + ("integer",) * grammar.integer_arithmetic
    kind = draw(st.sampled_from(kinds))
    left = draw(expressions(loop_var, depth - 1, grammar))
    if kind == "unary":
        return f"{draw(st.sampled_from(UNARY))}({left})"
    if kind == "square":
        return f"({left}) ** 2"
    if kind == "reduction":
        return draw(_reductions(left))
    if kind == "integer":
        return draw(_integer_arithmetic(left))
    right = draw(expressions(loop_var, depth - 1, grammar))
    if kind == "ratio":
        return f"({left} / (1.5 + {right} * {right}))"
    if kind == "call":
        return f"helper({left}, {right})"
    if kind == "kink":
        return draw(st.sampled_from(("max({}, {})", "min({}, {})", "abs({} - {})"))).format(
            left, right)
    return f"({left} {draw(st.sampled_from(('+', '-', '*')))} {right})"


@st.composite
def _reductions(draw, scalar):
    """A scalar from the whole work vector, scaled by `scalar`; O(size) in magnitude
    (a reversed view, `axis=-1` with `keepdims=True` among them)."""
    form = draw(st.sampled_from(("np.sum(w * {})", "np.dot(w, v) * {}",
                                 "np.sum(np.cos(w) * v) + {}", "np.sum(w) * np.tanh({})",
                                 "np.sum(w[1:] * v[:-1]) - {}", "np.max(w) * {}",
                                 "np.sum(w[::-1] * v) * {}",
                                 "np.sum(w * {}, axis=-1, keepdims=True)[0]")))
    return "(" + form.format(scalar) + ")"


@st.composite
def _integer_arithmetic(draw, value):
    """Integer exponents, floor division and remainders of a float, and int/float mixes;
    `n` is the int `len(v)`."""
    form = draw(st.sampled_from(("({}) ** 3", "(({}) % 1.5)", "(({}) // 0.5 * 0.25)",
                                 "(({}) + n // 2)", "(({}) * (n % 3))", "(abs(n - 3) * {})",
                                 "np.where({0} > 0.0, 1, {0})", "(1.5 + ({}) ** 2) ** -2")))
    return form.format(value)


def _index(draw, loop_var, grammar=Grammar()):
    size = grammar.size
    if loop_var is not None and draw(st.booleans()):
        offset = draw(st.integers(0, size - 1))
        if grammar.out_of_range and draw(st.booleans()):
            return f"{loop_var} + {offset}"          # past the end on the last trips
        return f"({loop_var} + {offset}) % {size}"
    return str(draw(st.integers(*grammar.index_bounds())))


def _bounded(expr):
    """Keep values O(1) across loops so finite differences stay accurate."""
    return f"np.tanh({expr})"


@st.composite
def statements(draw, loop_var=None, depth=2, in_loop=False, grammar=Grammar()):
    kinds = ["assign", "assign", "write", "augmented", "swap"]
    if depth > 0:
        kinds += ["if", "for", "while"]
    if in_loop:
        kinds += ["break", "continue"]
    kinds += _extra_kinds(grammar)
    kind = draw(st.sampled_from(kinds))
    expr = draw(expressions(loop_var, grammar=grammar))
    if kind == "flag":
        if draw(st.booleans()):
            return [f"flag = {expr} > {_constant(draw)}"]
        return [f"flag = flag * 0.5 + {_bounded(expr)}"]
    if kind == "assign":
        return [f"{draw(st.sampled_from(SCALARS))} = {_bounded(expr)}"]
    if kind == "swap":
        first, second = draw(st.permutations(SCALARS))[:2]
        return [f"{first}, {second} = {second}, {_bounded(expr)}"]
    if kind == "write":
        return [f"w[{_index(draw, loop_var, grammar)}] = {_bounded(expr)}"]
    if kind == "augmented":
        op = draw(st.sampled_from(("+=", "-=", "*=")))
        target = draw(st.sampled_from(SCALARS + (f"w[{_index(draw, loop_var, grammar)}]",)))
        value = f"0.5 * {_bounded(expr)}" if op != "*=" else f"(0.5 + 0.25 * {_bounded(expr)})"
        return [f"{target} {op} {value}"]
    if kind in ("break", "continue"):
        return [f"if {expr} > {_constant(draw)}:", f"    {kind}"]
    if kind == "if":
        body = draw(blocks(loop_var, depth - 1, in_loop, grammar))
        orelse = draw(blocks(loop_var, depth - 1, in_loop, grammar))
        return [f"if {expr} > {_constant(draw)}:", *_indent(body), "else:", *_indent(orelse)]
    if kind in ("return", "vector", "alias", "rebind", "rebind call"):
        return draw(_extra_statement(kind, expr, grammar))
    var = draw(st.sampled_from(("i", "j"))) if loop_var is None else loop_var + "k"
    body = draw(blocks(var, depth - 1, True, grammar))
    if kind == "for":
        start, stop = draw(st.integers(0, 1)), draw(st.integers(1, 3))
        return [f"for {var} in range({start}, {stop} + 1):", *_indent(body)]
    return [f"{var} = 0", f"while {var} < {draw(st.integers(1, 3))}:", f"    {var} += 1",
            *_indent(body)]


def _extra_kinds(grammar):
    return (["return"] * grammar.early_return + ["vector"] * grammar.vector_math +
            ["alias"] * grammar.alias_augmented + ["rebind"] * grammar.vector_rebind +
            ["rebind call"] * (grammar.vector_rebind and grammar.helper_call) +
            ["flag"] * grammar.boolean_flag)


@st.composite
def _extra_statement(draw, kind, expr, grammar):
    """Early return, whole-vector math (a slice write reading a view of `w` among it, an
    in-place `+=` on a slice, a write through a reversed view, `abs`, `pow`, `any`
    and `all` of arrays),
    `w` rebound to a new array, or an alias of `w`
    updated in place."""
    if kind == "return":
        return [f"if {expr} > {_constant(draw)}:", f"    return {_result(grammar)} - a"]
    if kind == "rebind call":
        return [f"w = smooth(w, np.tanh({expr}))"]
    if kind == "rebind":
        form = draw(st.sampled_from(("w = np.tanh(w * {} + v)", "w = np.cos(w) * np.tanh({})",
                                     "w = np.tanh(np.sum(w) * w) + 0.5 * np.tanh({})")))
        return [form.format(expr)]
    if kind == "vector":
        form = draw(st.sampled_from(("w[:] = np.tanh(w - {} * v)",
                                     "w[1:] = np.tanh(w[:-1] * {} + v[1:])",
                                     "w[1:] += 0.5 * np.tanh(w[:-1] * {})",
                                     "w[::-1] = np.tanh(w * {} + v)",
                                     "for e in w:\n    b = np.tanh(b + e * {})",
                                     # Python's builtins on arrays, as NumPy runs them
                                     "w = np.tanh(abs(w) * {} + pow(v, 2))",
                                     "b = np.tanh(b + {}) if any(w > 0.3) else b * 0.5",
                                     "if all(abs(w) < 0.9):\n    b = np.tanh(b * {})")))
        return form.format(expr).split("\n")
    op = draw(st.sampled_from(("+=", "-=", "*=")))
    value = _bounded(expr) if op != "*=" else f"(0.5 + 0.25 * {_bounded(expr)})"
    if op != "*=" and draw(st.booleans()):
        value = f"v * {value}"
    return ["z = w", f"z {op} {value}"]


@st.composite
def blocks(draw, loop_var=None, depth=2, in_loop=False, grammar=Grammar()):
    count = draw(st.integers(1, 3))
    lines = []
    for _ in range(count):
        lines += draw(statements(loop_var, depth, in_loop, grammar))
    return lines


def _indent(lines):
    return ["    " + line for line in lines]


def _result(grammar):
    return f"a + 2.0 * b - c * c + np.sum(w * w) + x * w[{min(1, grammar.size - 1)}]"


@st.composite
def programs(draw, grammar=Grammar()):
    """The body of `program(x, v)` over the core constructs, as source text."""
    body = draw(blocks(grammar=grammar))
    # every extra leaf is read at least once, so a wrong value of it shows in the result
    uses = [f"    a = a + 0.5 * {leaf}" for leaf in grammar.leaves]
    start = f"    c = 0.5 - v[{min(1, grammar.size - 1)}]"
    if grammar.integer_start:              # an int first value, floats later
        start = f"    c = {draw(st.integers(0, 2))}"
    ints = ["    n = len(v)"] * (grammar.integer_start or grammar.integer_arithmetic)
    flags = [f"    flag = x > {_constant(draw)}"] * grammar.boolean_flag
    lines = ["def program(x, v):", "    w = v.copy()", "    a = x", "    b = v[0] * x",
             start, *ints, *flags, *uses, *_indent(body),
             f"    return {_result(grammar)}"]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ whole programs
@dataclasses.dataclass(frozen=True)
class Program:
    """A generated program and how to call it.

    `source` is the function (with its decorators); `config` the module-level values it
    reads, `(name, value)`: `cfg.NAME` an attribute of the imported configuration module,
    a bare `NAME` a global of the program's own module; `defaults` the parameters after
    `v` with their default values (`s` positional, `k` keyword-only), each given as a module
    constant that is rebound after the `def`; `passed` those of them a call passes.
    """
    source: str
    size: int
    features: frozenset
    config: tuple = ()
    defaults: tuple = ()
    passed: tuple = ()

    def module_text(self, config_module: str | None) -> str:
        header = "import functools  # noqa: F401\nimport math  # noqa: F401\n\nimport numpy as np\n"
        if config_module is not None:
            header += f"\nimport {config_module} as cfg\n"
        return header + "\n\n" + _MODULE_FUNCTIONS + "\n\n" + self._definition()

    def _definition(self) -> str:
        """Module globals, the function, then the rebinding of its default constants.

        Python evaluates defaults once, at `def`: rebinding the constants afterwards must
        not change what a call without the argument sees.
        """
        before = "".join(f"{name} = {value!r}\n" for name, value in self.config
                         if not name.startswith("cfg."))
        before += "".join(f"{name.upper()}_DEFAULT = {value!r}\n"
                          for name, value in self.defaults)
        after = "".join(f"{name.upper()}_DEFAULT = {_rebound(value)!r}\n"
                        for name, value in self.defaults)
        return ((before + "\n\n" if before else "") + self.source +
                ("\n\n" + after if after else ""))

    def listing(self) -> str:
        """The program as a reader needs it to reproduce a failure."""
        config = "".join(f"# {name} = {value!r}\n" for name, value in self.config
                         if name.startswith("cfg."))
        used = "".join(text + "\n\n" for name, text in _functions().items()
                       if f"{name}(" in self.source or f"@{name}" in self.source)
        return config + used + self._definition()


def _rebound(value: float) -> float:
    return 0.25 - value


_MODULE_FUNCTIONS = '''def helper(p, q):
    if p > q:
        return np.tanh(p - 0.5 * q)
    return np.tanh(p * q)


def smooth(u, t):
    out = np.empty_like(u)
    for i in range(u.shape[0]):
        out[i] = np.tanh(u[i] * t + 0.25)
    return out


def scaled(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return 2.0 * fn(*args, **kwargs) + 0.5
    return wrapper


def shifted(fn):
    @functools.wraps(fn)
    def wrapper(x, *args, **kwargs):
        return fn(x + 0.25, *args, **kwargs)
    return wrapper
'''


def _functions() -> dict:
    """The module's shared functions by name."""
    texts = _MODULE_FUNCTIONS.strip().split("\n\n\n")
    return {text.split("(")[0].removeprefix("def "): text for text in texts}


@st.composite
def whole_programs(draw, allowed=FEATURES, sizes=(1, 2, 3, 4, 5, 6), forced=()):
    """A `Program` using the `forced` features and a random subset of the `allowed` ones."""
    features = frozenset(f for f in allowed if f in forced or draw(st.booleans()))
    size = draw(st.sampled_from(sizes))
    leaves, defaults, passed, config = [], [], [], []
    if "default" in features:
        defaults.append(("s", draw(st.sampled_from((0.5, -1.25, 2.0)))))
        leaves.append("s")
    if "keyword_only" in features:
        defaults.append(("k", draw(st.sampled_from((0.75, -0.5, 1.5)))))
        leaves.append("k")
    for name, _ in defaults:
        if draw(st.booleans()):
            passed.append(name)
    if {"integer_start", "integer_arithmetic"} & features:
        leaves.append("n")
    if "boolean_flag" in features:
        leaves.append("flag")
    if "module_attribute" in features:
        config = [("cfg.SCALE", draw(st.sampled_from((0.5, 1.5, -2.0)))),
                  ("cfg.SHIFT", draw(st.sampled_from((0.25, -0.75)))),
                  ("GAIN", draw(st.sampled_from((0.75, -1.5))))]
        leaves += [name for name, _ in config]
    grammar = Grammar(size=size, early_return="early_return" in features,
                      vector_math="vector_math" in features,
                      vector_rebind="vector_rebind" in features,
                      alias_augmented="alias_augmented" in features,
                      out_of_range="out_of_range" in features,
                      helper_call="helper_call" in features, min_max="min_max" in features,
                      integer_start="integer_start" in features,
                      boolean_flag="boolean_flag" in features,
                      integer_arithmetic="integer_arithmetic" in features,
                      leaves=tuple(leaves))
    body = draw(programs(grammar))
    body = body.replace("def program(x, v):", f"def program({_parameters(defaults)}):", 1)
    if "decorator" in features:
        stack = draw(st.lists(st.sampled_from(("scaled", "shifted")), min_size=1, max_size=2))
        body = "".join(f"@{name}\n" for name in stack) + body
    return Program(body, size, features, tuple(config), tuple(defaults), tuple(passed))


def _parameters(defaults) -> str:
    params = ["x", "v"]
    for name, _ in defaults:
        if name == "k":
            params.append("*")
        params.append(f"{name}={name.upper()}_DEFAULT")
    return ", ".join(params)


# ------------------------------------------------------------------ loading
_modules = itertools.count()


def write_program(directory: pathlib.Path, program: Program):
    """Import `program` from a new module file; returns (function, configuration module).

    Each call writes a new configuration module, so one program text can be loaded
    against two configurations (`dataclasses.replace(program, config=...)`).
    """
    attributes = [(name[4:], value) for name, value in program.config if name.startswith("cfg.")]
    config_name = None
    if attributes:
        config_name = f"hunt_config_{next(_modules)}"
        (directory / f"{config_name}.py").write_text(
            "".join(f"{key} = {value!r}\n" for key, value in attributes))
        if str(directory) not in sys.path:
            sys.path.insert(0, str(directory))
    module = write_module(directory, program.module_text(config_name), {})
    return module.program, config_name and importlib.import_module(config_name)


def change_module_value(fn, config_module, name: str, value) -> None:
    """Set a value `program.config` names: a configuration attribute or a module global."""
    if name.startswith("cfg."):
        setattr(config_module, name[4:], value)
    else:
        fn.__globals__[name] = value
