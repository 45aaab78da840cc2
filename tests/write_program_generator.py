"""Random programs that write in place through views, aliases and containers, as source text.

Hypothesis draws the body of `program(x, v, a)` (`x` a number, `v` and `a` float vectors of
six elements) from what users write around in-place writes: buffers (`v.copy()`,
`np.zeros`, an arithmetic result, the argument `a` itself), views of them (slices with
steps, negative steps, `reshape`, `.T`, `ravel`, `[None]`, `.view()`), other names for them
(`p = h`, a tuple, list or dict holding one, names unpacked from a tuple, a module helper's
parameter, a helper returning a view), writes through all of those (`u[i] = e`,
`u[i:j] += e`, `u *= c`, `u[np.array([1, 0, 1])] = e` with a repeated position, a
helper's `a[i] = e`), reads before and after the writes, `for` loops and `if`s around
them, and rebinding (`h = h.copy()`, `h = h * 0.5`).

Every name has one shape for the whole program, so a name rebound in a loop or a branch
keeps its meaning; every name is bound before the body, so every program is valid NumPy
whatever path it takes. Every written value goes through `tanh` and scaling factors lie in
[0.25, 0.75], so values stay O(1) and central differences are accurate.

`WriteProgram.module_text()` is the module to import: the module helpers, `program`
(returns a float) and `program_vector` (the same body, returns a vector of three).
"""
from __future__ import annotations

import dataclasses

from hypothesis import strategies as st

SIZE = 6
# name -> shape; every name keeps its shape for the whole program
BUFFERS = {"h": (6,), "g": (6,)}
VIEWS = {"u": (3,), "f": (6,), "M": (2, 3)}
CONTAINERS = ("t", "lst", "d")            # a tuple, a list and a dict, each holding a buffer
SCALARS = ("s", "c")

HELPERS = '''def put(arr, i, e):
    arr[i] = e


def scale(arr, k):
    arr *= k


def bump(arr, e):
    arr[1:3] += e
    return arr


def middle(arr):
    return arr[1:4]


def reverse(arr):
    return arr[::-1]
'''


@dataclasses.dataclass(frozen=True)
class WriteProgram:
    body: tuple      # the lines of the body, unindented

    def function(self, name: str, result: str) -> str:
        lines = [f"def {name}(x, v, a):", *("    " + line for line in self.body),
                 f"    return {result}"]
        return "\n".join(lines) + "\n"

    def module_text(self) -> str:
        return ("import numpy as np\n\n\n" + HELPERS + "\n\n" +
                self.function("program", SCALAR_RESULT) + "\n\n" +
                self.function("program_vector", VECTOR_RESULT))

    def listing(self) -> str:
        return self.function("program", SCALAR_RESULT)


SCALAR_RESULT = ("s + c * x + np.sum(np.tanh(h)) + 0.5 * np.sum(g * g) + np.sum(u) * 0.25 "
                 "+ np.sum(f * v) * 0.125 + M[1, 2] - 0.5 * np.sum(a)")
VECTOR_RESULT = "np.tanh(h[:3]) * s + u * c + g[3:] + a[::2] * x"


def _constant(draw):
    return repr(draw(st.sampled_from((0.25, 0.5, -0.75, 1.5, -1.25))))


def _factor(draw):
    return repr(draw(st.sampled_from((0.25, 0.5, 0.75, -0.5))))


def _element(draw, name):
    """An in-range constant index into `name`, as text."""
    shape = {**BUFFERS, **VIEWS}.get(name, (SIZE,))
    return ", ".join(str(draw(st.integers(-n, n - 1))) for n in shape)


def _sites(draw):
    """A place an element can be read or written: a name, a container's item, a view made on
    the spot; with its index."""
    kind = draw(st.sampled_from(("buffer", "buffer", "view", "view", "container", "argument",
                                 "inline")))
    if kind == "buffer":
        name = draw(st.sampled_from(sorted(BUFFERS)))
        return name, _element(draw, name)
    if kind == "view":
        name = draw(st.sampled_from(sorted(VIEWS)))
        return name, _element(draw, name)
    if kind == "argument":
        return "a", _element(draw, "a")
    if kind == "inline":
        shape = {"h.reshape(2, 3)": (2, 3), "g.reshape(3, 2).T": (2, 3), "h[None]": (1, 6),
                 "g[::-1]": (6,), "h[1::2]": (3,), "np.flip(h.reshape(2, 3), 1)": (2, 3),
                 "g[::-1].reshape(3, 2)": (3, 2)}
        form = draw(st.sampled_from(list(shape)))
        shape = shape[form]
        return form, ", ".join(str(draw(st.integers(-n, n - 1))) for n in shape)
    container = draw(st.sampled_from(CONTAINERS))
    item = {"t": "t[0]", "lst": "lst[1]", "d": 'd["k"]'}[container]
    return item, _element(draw, "h")


@st.composite
def expressions(draw, depth=2):
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        leaf = draw(st.sampled_from(("x", "s", "c", "const", "element", "element",
                                     "reduction")))
        if leaf == "const":
            return _constant(draw)
        if leaf == "element":
            site, index = _sites(draw)
            return f"{site}[{index}]"
        if leaf == "reduction":
            name = draw(st.sampled_from(("h", "g", "u", "f", "M", "a", "t[0]", "lst[1]")))
            return f"np.sum(np.tanh({name}))"
        return leaf
    left = draw(expressions(depth - 1))
    kind = draw(st.sampled_from(("binary", "binary", "tanh", "ratio")))
    if kind == "tanh":
        return f"np.tanh({left})"
    right = draw(expressions(depth - 1))
    if kind == "ratio":
        return f"({left} / (1.5 + {right} * {right}))"
    return f"({left} {draw(st.sampled_from(('+', '-', '*')))} {right})"


def _bounded(expr):
    return f"np.tanh({expr})"


# places `site *= k` may write: a call cannot be assigned to, a tuple's item neither
WHOLE_TARGETS = ("h", "g", "u", "f", "M", "a", "g[::-1]", "h[1::2]", "h[None]", "lst[1]",
                 'd["k"]')

_VIEW_FORMS = {
    "u": ("{b}[1:4]", "{b}[::2]", "{b}[5:2:-1]", "{b}[::-2]", "{b}.reshape(2, 3)[1]",
          "{b}.reshape(3, 2).T[0]", "{b}[:3]", "middle({b})", "{b}[None][0, 3:]",
          # views and copies of strided arrays, where NumPy's rules decide which
          "np.squeeze({b}.reshape(3, 2)[:, :1], 1)", "np.flip({b}[:3])",
          "{b}.reshape(3, 2)[:, 1].reshape(3)", "{b}[::2].flatten()",
          "{b}.reshape(3, 2).T[1].copy()", "np.ravel({b}.reshape(3, 2)[:, 0])"),
    "f": ("{b}", "{b}[::-1]", "{b}.ravel()", "np.ravel({b})", "{b}[None][0]", "{b}.view()",
          "reverse({b})", "{b}[:]", "bump({b}, 0.25)",
          "np.flip({b})", "{b}[::-1].reshape(2, 3).reshape(6)", "{b}.flatten()",
          "{b}.reshape(3, 2).T.ravel()", "{b}.reshape(2, 3)[::-1].reshape(6)",
          "{b}.reshape(2, 3)[:, ::-1].ravel()"),
    "M": ("{b}.reshape(2, 3)", "{b}.reshape(3, 2).T", "{b}.reshape(2, 3)[::-1]",
          "{b}.reshape(2, 3)[:, ::-1]", "np.reshape({b}, (2, 3))",
          "{b}[::-1].reshape(2, 3)", "np.flip({b}.reshape(2, 3), 0)",
          "np.squeeze({b}.reshape(2, 1, 3), 1)", "{b}.reshape(3, 2).T.reshape(2, 3)",
          "np.ascontiguousarray({b}.reshape(3, 2).T)", "{b}.reshape(1, 2, 3)[0]"),
}


@st.composite
def _bind_view(draw):
    name = draw(st.sampled_from(sorted(VIEWS)))
    base = draw(st.sampled_from(("h", "g", "a", "h", "g")))
    if name == "u" and draw(st.integers(0, 4)) == 0:
        base = "f"              # a view of a view
    return f"{name} = {draw(st.sampled_from(_VIEW_FORMS[name])).format(b=base)}"


@st.composite
def _bind_alias(draw):
    """Another name for a buffer: plain, a container, unpacked from a tuple."""
    kind = draw(st.sampled_from(("tuple", "list", "dict", "unpack", "swap", "plain")))
    first, second = draw(st.permutations(("h", "g")))
    if kind == "tuple":
        return [f"t = ({first}, x)"]
    if kind == "list":
        return [f"lst = [x, {first}]"]
    if kind == "dict":
        return [f'd = {{"k": {first}}}']
    if kind == "unpack":
        return [f"f, s2 = {first}, s", "s = s2 * 0.5"]
    if kind == "swap":
        return [f"h, g = {second}, {first}"]
    return [f"{first} = {second}"]


@st.composite
def _rebind(draw):
    name = draw(st.sampled_from(("h", "g")))
    form = draw(st.sampled_from(("{n} = {n}.copy()", "{n} = {n} * 0.5", "{n} = np.tanh({n} + {e})",
                                 "{n} = v.copy()", "{n} = np.zeros(6)", "{n} = a",
                                 "{n} = {n}[::-1].copy()")))
    return form.format(n=name, e=draw(expressions(1)))


@st.composite
def _write(draw):
    site, index = _sites(draw)
    expr = _bounded(draw(expressions()))
    kind = draw(st.sampled_from(("set", "set", "add", "mul", "slice add", "whole",
                                 "helper put", "helper scale", "helper bump", "fill",
                                 "gathered set", "gathered add")))
    if kind.startswith("gathered"):
        return _gathered_write(draw, kind, expr)
    if kind == "set":
        return f"{site}[{index}] = {expr}"
    if kind == "add":
        return f"{site}[{index}] {draw(st.sampled_from(('+=', '-=')))} 0.5 * {expr}"
    if kind == "mul":
        return f"{site}[{index}] *= (0.5 + 0.25 * {expr})"
    if kind == "slice add":
        if site in ("M", "h.reshape(2, 3)", "g.reshape(3, 2).T", "h[None]"):
            return f"{site}[:, 1:3] += 0.5 * {expr}"
        return f"{site}[1:3] += 0.5 * {expr}"
    if kind == "fill":
        if site in ("u", "h[1::2]"):
            return f"{site}[:] = np.tanh({site} * {expr})"
        return f"{site}[::2] = {expr}"
    if kind == "whole":
        if site in WHOLE_TARGETS:
            return f"{site} *= {_factor(draw)}"
        return f"{site}[{index}] = {expr}"     # `t[0] *= k` assigns to the tuple's item
    target = draw(st.sampled_from(("h", "g", "u", "f", "a", "t[0]", "lst[1]", 'd["k"]')))
    if kind == "helper put":
        return f"put({target}, {draw(st.integers(-3, 2))}, {expr})"
    if kind == "helper scale":
        return f"scale({target}, {_factor(draw)})"
    return f"bump({target}, 0.5 * {expr})"


# the first axis's length of each place an index array may write into
_GATHERED_SITES = {"h": 6, "g": 6, "f": 6, "u": 3, "a": 6, "g[::-1]": 6, "h[1::2]": 3,
                   "M": 2, "t[0]": 6, "lst[1]": 6, 'd["k"]': 6}


def _gathered_write(draw, kind: str, expr: str) -> str:
    """`site[np.array([i, j, i])] = e` (or `+= e`): an index array that may name a
    position twice (NumPy keeps the last value written there; `+=` adds once)."""
    site = draw(st.sampled_from(sorted(_GATHERED_SITES)))
    n = _GATHERED_SITES[site]
    picks = draw(st.lists(st.integers(-n, n - 1), min_size=2, max_size=4))
    if draw(st.booleans()):
        picks.append(picks[0])                  # a repeat, by position or from the end
    index = f"np.array({picks})"
    values = expr if site == "M" else \
        f"({expr}) * np.linspace(0.25, 0.75, {len(picks)})"
    if kind == "gathered set":
        return f"{site}[{index}] = {values}"
    return f"{site}[{index}] += 0.5 * {values}"


@st.composite
def _read(draw):
    expr = draw(expressions())
    target = draw(st.sampled_from(SCALARS))
    return f"{target} = {_bounded(expr)}" if draw(st.booleans()) else \
        f"{target} = 0.5 * {target} + {_bounded(expr)}"


@st.composite
def statements(draw, depth=2):
    kinds = ["write", "write", "write", "read", "read", "view", "alias", "rebind"]
    if depth > 0:
        kinds += ["if", "for"]
    kind = draw(st.sampled_from(kinds))
    if kind == "write":
        return [draw(_write())]
    if kind == "read":
        return [draw(_read())]
    if kind == "view":
        return [draw(_bind_view())]
    if kind == "alias":
        return draw(_bind_alias())
    if kind == "rebind":
        return [draw(_rebind())]
    if kind == "if":
        body = draw(blocks(depth - 1))
        orelse = draw(blocks(depth - 1))
        return [f"if {draw(expressions(1))} > {_constant(draw)}:", *_indent(body),
                "else:", *_indent(orelse)]
    var = "i" if depth == 2 else "j"
    body = draw(blocks(depth - 1))
    return [f"for {var} in range({draw(st.integers(1, 3))}):", *_indent(body),
            f"    s = 0.5 * s + 0.25 * np.tanh({var} * x)"]


@st.composite
def blocks(draw, depth=2):
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        lines += draw(statements(depth))
    return lines


def _indent(lines):
    return ["    " + line for line in lines]


PROLOGUE_CHOICES = {
    "h": ("v.copy()", "v * x", "np.zeros(6) + x", "a"),
    "g": ("np.zeros(6)", "np.tanh(v) * 0.5", "v[::-1].copy()", "a * 0.5"),
}


@st.composite
def write_programs(draw):
    """A `WriteProgram`: every name bound first, then a drawn body."""
    lines = [f"h = {draw(st.sampled_from(PROLOGUE_CHOICES['h']))}",
             f"g = {draw(st.sampled_from(PROLOGUE_CHOICES['g']))}",
             "s = x * 0.5", "c = np.tanh(v[0])",
             f"u = {draw(st.sampled_from(_VIEW_FORMS['u'][:7])).format(b='h')}",
             f"f = {draw(st.sampled_from(_VIEW_FORMS['f'][:6])).format(b='g')}",
             f"M = {draw(st.sampled_from(_VIEW_FORMS['M'])).format(b='h')}",
             "t = (g, x)", "lst = [x, h]", 'd = {"k": g}']
    lines += draw(blocks())
    return WriteProgram(tuple(lines))
