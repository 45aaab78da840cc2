"""Random loop programs for `jit(..., parallel=True)`: some with independent trips (which
`transformer/parallel_loops.py` runs as `prange`), some with trips that depend on each
other in the ways that must keep a loop serial (a value carried to the next trip, a
reduction, a read of another trip's row, a view or alias of the written array, a `break`).

`program_text(rng)` writes one `def program(x, y, s)` over two float vectors of one length
and a number (some independent loops written with `prange`, as a Numba user would); the
oracle is the same text run by Python, where `numba.prange` is `range`.
"""
from __future__ import annotations


_UNARY = ["np.tanh({})", "math.exp(min({}, 3.0))", "abs({})", "np.sin({})", "({}) * ({})",
          "-({})", "np.float64({})", "math.sqrt(1.0 + ({}) * ({}))"]
_BINARY = ["({}) + ({})", "({}) - ({})", "({}) * ({})", "({}) / (1.5 + abs({}))",
           "max({}, {})", "min({}, {})", "({}) if ({}) > 0.0 else 0.25"]


def _expr(rng, atoms: list, depth: int = 0) -> str:
    if depth >= 2 or rng.random() < 0.3:
        return atoms[rng.integers(len(atoms))]
    if rng.random() < 0.4:
        form = _UNARY[rng.integers(len(_UNARY))]
        inner = _expr(rng, atoms, depth + 1)
        return form.format(*[inner] * form.count("{}"))
    form = _BINARY[rng.integers(len(_BINARY))]
    return form.format(*(_expr(rng, atoms, depth + 1) for _ in range(form.count("{}"))))


def program_text(rng, hazard: str | None = None) -> str:
    """One program; its loop may or may not have independent trips (`hazard`, drawn when
    None: "none", or what makes a trip depend on another)."""
    start = int(rng.choice([0, 0, 1, 2]))
    rng_form = f"range({start}, x.shape[0])" if start or rng.random() < 0.3 \
        else "range(x.shape[0])"
    hazard = hazard or rng.choice(["none", "none", "none", "carry", "reduction", "neighbour",
                                   "alias", "view", "break", "after", "one_path", "inner"])
    # np.empty_like only where every element is written before it is read (a `break`
    # leaves some unwritten, a neighbour, alias or view reads one not written yet)
    allocate = rng.choice(["zeros_like", "ones_like"] + ["empty_like"] * (hazard == "none"))
    lines = ["def program(x, y, s):", f"    out = np.{allocate}(x)",
             "    out2 = np.zeros((x.shape[0], 3))", "    total = 0.0", "    carry = s"]
    if start:
        lines += [f"    out[{k}] = x[{k}] * 2.0" for k in range(start)]
    if hazard == "alias":
        lines.append("    other = out")
    if hazard == "view":
        lines.append("    other = out[1:]")
    lines.append(f"    for i in {rng_form}:")
    atoms = ["x[i]", "y[i]", "s", "float(i)", "(i - 3) * 0.5", "float(-i)"]
    if rng.random() < 0.25:     # indices the loop's bounds do not prove: checked, serial
        atoms += ["x[0]", "y[x.shape[0] - 1 - i]"]
    body = []
    for k in range(int(rng.integers(1, 4))):
        body.append(f"v{k} = {_expr(rng, atoms)}")
        atoms = atoms + [f"v{k}"]
    if rng.random() < 0.4:
        body += [f"if {_expr(rng, atoms)} > 0.1:", f"    w = {_expr(rng, atoms)}",
                 "else:", f"    w = {_expr(rng, atoms)}"]
        atoms = atoms + ["w"]
    if hazard == "carry":
        body.append(f"carry = carry * 0.5 + {_expr(rng, atoms)}")
        atoms = atoms + ["carry"]
    if hazard == "reduction":
        body.append(f"total += {_expr(rng, atoms)}")
    if hazard == "neighbour":
        atoms = atoms + ["out[i - 1]"]
    if hazard in ("alias", "view"):
        atoms = atoms + ["other[min(i + 1, x.shape[0] - 2)]"]
    if hazard == "break":
        body += [f"if {atoms[-1]} > 1.5:", "    break"]
    if hazard == "one_path":
        body += [f"if {_expr(rng, atoms)} > 0.0:", f"    late = {_expr(rng, atoms)}",
                 f"out2[i, 2] = {'late' if rng.random() < 0.5 else atoms[-1]}"]
        lines.insert(2, "    late = 0.0")
    body.append(f"out[i] = {_expr(rng, atoms)}")
    if rng.random() < 0.3:
        body.append(f"out[i] += {_expr(rng, atoms)}")
    if hazard == "inner" or rng.random() < 0.3:
        body += ["for j in range(3):", f"    out[i] += {_expr(rng, atoms)} * j"]
    if rng.random() < 0.2:
        body += ["for j in range(3):", f"    out2[i, j] = {_expr(rng, atoms)} + j"]
    lines += ["        " + line for line in body]
    if hazard == "none" and not start and rng.random() < 0.4:
        # the user's own prange, whose index Numba types unsigned
        loop = lines.index(f"    for i in {rng_form}:")
        lines[loop] = "    for i in prange(x.shape[0]):"
    result = "out, out2, total, carry"
    if hazard == "after":
        result += ", v0, i"
    lines.append(f"    return {result}")
    return "\n".join(lines) + "\n"


def arguments(rng, size: int):
    return (rng.normal(size=size), rng.normal(size=size), float(rng.normal()))
