"""Einsum as explicit loops, generated at transform time from constant subscripts.

Numba has no ``np.einsum``. Its subscripts are a constant string in the user's code, so the
contraction is known when transforming: ``np.einsum('ij,jk->ik', A, B)`` becomes a call to
a generated function with one loop per index letter,

    for i in range(n_i):
        for j in range(n_j):
            for k in range(n_k):
                out[i, k] += a0[i, j] * a1[j, k]

The adjoint of operand ``k`` is the same loop nest accumulating
``cotangent[out indices] * (the other operands)`` into ``out[indices of k]``; a letter
repeated in operand ``k`` ('ii') writes its diagonal, which is the scatter its adjoint
needs. A tangent is the forward loop with operand ``k`` replaced by its tangent.

A vmap (a jacrev's rows, a jacfwd's basis) of a derivative whose cotangent or tangent is
batched while the operands are shared is the same loops with the example axes as leading
letters of their own: the adjoint of each example (`adjoint_function(..., lead)`), the
forward einsum with operand ``k`` and the output batched (`with_examples`).

Supported: letters, an explicit or implicit (``'ii'``, ``'ij,jk'``) output, any number of
operands. Refused with a message (``parse`` raises ``ValueError``): ellipsis, an output
letter missing from the inputs or repeated, a subscript count that differs from the
operand count.
"""
from __future__ import annotations

import dataclasses
import functools

import gast
import numpy as np

from . import runtime
from .function import Function, Origin


@dataclasses.dataclass(frozen=True)
class Spec:
    inputs: tuple[str, ...]
    output: str

    @property
    def letters(self) -> str:
        """Every index letter once, in order of first appearance (the loop order)."""
        return "".join(dict.fromkeys("".join(self.inputs)))

    def text(self) -> str:
        return ",".join(self.inputs) + "->" + self.output


def parse(subscripts: str, n_operands: int | None = None) -> Spec:
    """The subscripts of an einsum call, or ValueError saying what is not supported."""
    spec = subscripts.replace(" ", "")
    if "." in spec:
        raise ValueError("ellipsis subscripts (...) are not supported")
    ins, arrow, out = spec.partition("->")
    inputs = tuple(ins.split(","))
    letters = "".join(inputs)
    if not all(c.isalpha() for c in letters + out):
        raise ValueError(f"subscripts {subscripts!r} must be letters separated by ',' "
                         "with an optional '->'")
    if not arrow:       # implicit output: the letters used once, sorted
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    if len(set(out)) != len(out) or any(c not in letters for c in out):
        raise ValueError(f"output subscripts {out!r} must name input letters, each once")
    if n_operands is not None and n_operands != len(inputs):
        raise ValueError(f"subscripts {subscripts!r} name {len(inputs)} operands, "
                         f"the call passes {n_operands}")
    return Spec(inputs, out)


def check_call(call_args, call_keywords) -> None:
    """The derivative rules' check of an ``np.einsum`` call (``templates.CALL_CHECKS``):
    constant, supported subscripts, refused while transforming rather than when run."""
    from .templates import MissingRule
    subscripts = call_args[0] if call_args else call_keywords.get("subscripts")
    if not (isinstance(subscripts, gast.Constant) and isinstance(subscripts.value, str)):
        raise MissingRule("np.einsum is differentiated only with its subscripts written as "
                          "a string literal in the call")
    try:
        parse(subscripts.value, len(call_args) - 1)
    except ValueError as exc:
        raise MissingRule(f"np.einsum has no derivative rule here: {exc}; write the "
                          "contraction with explicit letters") from None


# ---------------------------------------------------------------- loop source


def _index(array: str, letters: str) -> str:
    return f"{array}[{', '.join(letters)}]" if letters else array


def _sizes(spec: Spec, arrays: dict[int, str]) -> list[str]:
    """Statements binding ``n_<letter>`` from the first operand holding it, and checks
    that every other occurrence agrees (Numba would read out of bounds)."""
    lines, seen = [], set()
    for k, letters in enumerate(spec.inputs):
        for axis, c in enumerate(letters):
            size = f"{arrays[k]}.shape[{axis}]"
            if c not in seen:
                seen.add(c)
                lines.append(f"n_{c} = {size}")
            else:
                lines.append(f"if {size} != n_{c}:")
                lines.append(f"    raise ValueError('einsum: operands disagree on the "
                             f"length of index {c}')")
    return lines


def _loops(spec: Spec, body: str, lead: str = "") -> list[str]:
    letters = lead + spec.letters
    lines = [f"{'    ' * depth}for {c} in range(n_{c}):" for depth, c in enumerate(letters)]
    return lines + ["    " * len(letters) + body]


def _function(name: str, params: list[str], body: list[str], result: str) -> str:
    inner = "\n".join("    " + line for line in body + [f"return {result}"])
    return f"def {name}({', '.join(params)}):\n{inner}\n"


def forward_source(spec: Spec, name: str) -> str:
    arrays = {k: f"a{k}" for k in range(len(spec.inputs))}
    product = " * ".join(_index(arrays[k], s) for k, s in enumerate(spec.inputs))
    shape = "".join(f"n_{c}, " for c in spec.output)
    body = _sizes(spec, arrays)
    body.append(f"out = einsum_zeros(({shape}), ({', '.join(arrays.values())},))")
    body += _loops(spec, f"out[{', '.join(spec.output) or '()'}] += {product}")
    return _function(name, list(arrays.values()), body, "out" if spec.output else "out[()]")


def adjoint_source(spec: Spec, k: int, name: str, lead: str = "") -> str:
    """``name(cotangent, a0, a1, ...)``: the adjoint of operand ``k``. With ``lead``
    letters (none of the spec's), the cotangent has leading example axes named by them and
    the result the same axes before operand ``k``'s: the adjoint of each example (the
    operands are shared by all examples)."""
    arrays = {j: f"a{j}" for j in range(len(spec.inputs))}
    factors = [_index("cotangent", lead + spec.output)]
    factors += [_index(arrays[j], s) for j, s in enumerate(spec.inputs) if j != k]
    body = [f"n_{c} = cotangent.shape[{axis}]" for axis, c in enumerate(lead)]
    body += _sizes(spec, arrays)
    operands = ", ".join(["cotangent"] + [arrays[j] for j in arrays if j != k])
    shape = f"({''.join(f'n_{c}, ' for c in lead)}) + {arrays[k]}.shape" if lead \
        else f"{arrays[k]}.shape"
    body.append(f"out = einsum_zeros({shape}, ({operands},))")
    target = lead + spec.inputs[k]
    body += _loops(spec, f"out[{', '.join(target) or '()'}] += {' * '.join(factors)}", lead)
    return _function(name, ["cotangent"] + list(arrays.values()), body,
                     "out" if target else "out[()]")


def fresh_letters(spec: Spec, count: int) -> str:
    """``count`` letters the spec does not use (the example axes of a batched form)."""
    free = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBAzyxwvutsrqponmlkjihgfedcba"
            if c not in spec.letters + spec.output]
    if len(free) < count:
        raise ValueError(f"subscripts {spec.text()!r} leave no letters for {count} "
                         "example axes")
    return "".join(free[:count])


def with_examples(spec: Spec, k: int, lead: str) -> Spec:
    """``spec`` with operand ``k`` and the output given leading axes ``lead``: the
    forward einsum of each example when only operand ``k`` is batched."""
    inputs = list(spec.inputs)
    inputs[k] = lead + inputs[k]
    return Spec(tuple(inputs), lead + spec.output)


# ---------------------------------------------------------------- as Functions

_ENV = {"einsum_zeros": runtime.einsum_zeros, "range": range, "ValueError": ValueError,
        "np": np}


def _name(spec: Spec, kind: str) -> str:
    text = spec.text().replace(",", "_").replace("->", "_to_")
    return f"einsum_{kind}{text}"


@functools.lru_cache(maxsize=256)
def _generated(spec: Spec, k: int | None, lead: str = "") -> Function:
    label = f"einsum({spec.text()!r}) as loops"
    if k is None:
        name = _name(spec, "")
        source = forward_source(spec, name)
    else:
        name = _name(spec, f"grad{k}_") + (f"_each{len(lead)}" if lead else "")
        source = adjoint_source(spec, k, name, lead)
        label += f", adjoint of operand {k}" + (f" of each example ({len(lead)} example "
                                                 "axes)" if lead else "")
    node = gast.parse(source).body[0]
    origin = Origin("<einsum>", name, 1)
    return Function(node, dict(_ENV), origin, (label,))


def forward_function(spec: Spec) -> Function:
    """``f(a0, a1, ...)`` computing ``np.einsum(spec, a0, a1, ...)`` with loops."""
    return _generated(spec, None)


def adjoint_function(spec: Spec, k: int, lead: str = "") -> Function:
    """``f(cotangent, a0, a1, ...)``: the adjoint of operand ``k`` of ``spec`` (of each
    example where the cotangent has example axes ``lead``, see `adjoint_source`)."""
    return _generated(spec, k, lead)
