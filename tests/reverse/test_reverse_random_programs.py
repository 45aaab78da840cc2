"""Randomly generated programs (straight-line code, branches, loops, in-place writes):
the reverse-mode vjp agrees with central finite differences."""
import importlib.util
import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transformer.test_util import check_grads

pytestmark = pytest.mark.slow  # generates and compiles many programs

UNARY = ["np.sin({})", "np.tanh({})", "np.exp(0.3 * {})", "({} * {} + 1.0) ** 0.5",
         "abs({}) + 0.1", "-{}"]
BINARY = ["{} + {}", "{} * {}", "{} - 0.5 * {}", "{} / ({} * {} + 1.0)", "max({}, {})"]
_counter = itertools.count()


@st.composite
def statements(draw, names, depth=0):
    """One statement over the scalar variables in `names`; returns (lines, new names)."""
    kind = draw(st.sampled_from(["unary", "binary", "binary", "if", "loop", "write"]
                                if depth < 2 else ["unary", "binary"]))
    target = f"v{len(names)}"
    pick = st.sampled_from(sorted(names))
    if kind == "unary":
        a = draw(pick)
        return [f"{target} = " + draw(st.sampled_from(UNARY)).format(a, a)], {target}
    if kind == "binary":
        a, b = draw(pick), draw(pick)
        return [f"{target} = " + draw(st.sampled_from(BINARY)).format(a, b, b)], {target}
    if kind == "if":
        test = draw(pick)
        then, _ = draw(statements(names, depth + 1))
        other, _ = draw(statements(names, depth + 1))
        then = [line.replace(f"v{len(names)} =", f"{target} =") for line in then]
        other = [line.replace(f"v{len(names)} =", f"{target} =") for line in other]
        return ([f"if {test} > 0.2:"] + ["    " + s for s in then] + ["else:"] +
                ["    " + s for s in other]), {target}
    if kind == "loop":
        a = draw(pick)
        trips = draw(st.integers(0, 4))
        return [f"{target} = {a}", f"for i in range({trips}):",
                f"    {target} = {target} * 0.7 + np.sin(y[i] * {a})"], {target}
    a = draw(pick)
    return [f"z[{draw(st.integers(0, 3))}] = {a} * y[1]", f"{target} = np.sum(z * y)"], \
        {target}


@st.composite
def programs(draw):
    names = {"x", "w"}
    lines = ["z = y * 0.5"]
    for _ in range(draw(st.integers(1, 6))):
        new_lines, new = draw(statements(names))
        lines += new_lines
        names |= new
    result = " + ".join(sorted(names)) + " + np.sum(z * z)"
    return "def program(x, w, y):\n" + "".join(f"    {s}\n" for s in lines) + \
        f"    return {result}\n"


def load(source: str, directory):
    path = directory / f"random_program_{next(_counter)}.py"
    path.write_text("import numpy as np\n\n\n" + source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.program


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(source=programs(), seed=st.integers(0, 10_000))
def test_random_program_vjp_matches_finite_differences(source, seed, tmp_path):
    program = load(source, tmp_path)
    rng = np.random.default_rng(seed)
    args = (float(rng.uniform(-1, 1)), float(rng.uniform(-1, 1)), rng.uniform(-1, 1, 4))
    check_grads(program, args, atol=1e-4, rtol=1e-3)
