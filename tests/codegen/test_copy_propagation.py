"""Numba's copy propagation under `parallel=True`, as secant corrects it
(`codegen/numba_copy_propagation.py`): a loop rotating values (`b, c = c, f(b)`) beside an
array written in place gave wrong numbers, or a compile that never finished; held to
Python, for programs found by the differential hunt and for drawn ones."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types

import numba
import numpy as np
import pytest

from codegen import numba_copy_propagation
from transformer import jit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
V = np.array([0.46211203222284936, 0.6909595691197057, -0.49231381175432665])


def rotation_then_write(v):
    w = v.copy()
    b = 0.3
    c = 0.5
    for _j in range(2):
        k = 0
        while k < 2:
            k += 1
            b, c = c, b * 0.5 + 1.0
            z = w
            z += c
    return w


def rotation_through_a_temporary(v):
    w = v.copy()
    b = 0.3
    c = 0.5
    for _j in range(2):
        k = 0
        while k < 2:
            k += 1
            t = np.tanh(b ** 2 + 1)
            b = c
            c = t
            z = w
            z += v * c
    return w + b


cfg = types.SimpleNamespace(SCALE=1.5, SHIFT=0.25)


def helper(p, q):
    if p > q:
        return np.tanh(p - 0.5 * q)
    return np.tanh(p * q)


def hunt_example_47(x, v, *, k=1.5):          # the differential hunt's find, as drawn
    w = v.copy()
    a = x
    b = v[0] * x
    c = 0.5 - v[1]
    n = len(v)
    a = a + 0.5 * k
    a = a + 0.5 * n
    a = a + 0.5 * cfg.SCALE
    a = a + 0.5 * cfg.SHIFT
    a = a + 0.5 * -1.5
    w[2] = np.tanh(((cfg.SHIFT % 1.5)) ** 3)
    for _j in range(0, 1 + 1):
        jk = 0
        while jk < 2:
            jk += 1
            b, c = c, np.tanh(b ** 2 + n // 2)
            z = w
            z += v * np.tanh(c + max(w[(jk + 0) % 3], cfg.SCALE))
        if helper(cfg.SHIFT, min(cfg.SCALE, a)) > -1.25:
            continue
    return a + 2.0 * b - c * c + np.sum(w * w) + x * w[1]


@pytest.mark.parametrize("f", [rotation_then_write, rotation_through_a_temporary])
def test_numbas_parallel_compile_of_a_rotation_matches_python(f):
    numba_copy_propagation.install()
    np.testing.assert_allclose(numba.njit(parallel=True)(f)(V.copy()), f(V.copy()),
                               rtol=1e-12)


@pytest.mark.parametrize("f", [rotation_then_write, rotation_through_a_temporary])
def test_jit_parallel_of_a_rotation_matches_python(f):
    np.testing.assert_allclose(jit(f, parallel=True)(V.copy()), f(V.copy()), rtol=1e-12)


def test_the_hunts_program_matches_python_under_jit_parallel():
    for x in (-1.0, 0.0, 0.5):
        np.testing.assert_allclose(jit(hunt_example_47, parallel=True)(x, V.copy()),
                                   hunt_example_47(x, V.copy()), rtol=1e-12)


def test_a_rotation_beside_an_array_update_compiles(tmp_path):
    # Numba's own copy propagation never finished on this one: in a fresh process, with a
    # time limit, so that a return of the fault fails instead of hanging the run
    script = tmp_path / "hang.py"
    script.write_text(textwrap.dedent("""
        import numpy as np
        from transformer import jit

        def rotate(v):
            w = v.copy()
            b = 0.3
            c = 0.5
            for _j in range(2):
                k = 0
                while k < 2:
                    k += 1
                    t = b * 0.5 + 1.0
                    b = c
                    c = t
                    w += v * c
            return w

        v = np.array([0.5, -0.25, 1.0])
        np.testing.assert_allclose(jit(rotate, parallel=True)(v), rotate(v), rtol=1e-12)
        print("ok")
        """))
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               SECANT_CACHE_DIR=str(tmp_path / "cache"))
    done = subprocess.run([sys.executable, str(script)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok"]


def _rotation_program(rng) -> str:
    """A drawn loop nest that rotates two or three scalars and writes an array in place."""
    names = ["b", "c", "d"][:rng.integers(2, 4)]
    rotated = names[1:] + names[:1]
    update = rng.choice([f"np.tanh({names[0]} ** 2 + 1.0)", f"{names[0]} * 0.5 + 1.0",
                         f"{names[-1]} - 0.25 * {names[0]}"])
    values = ", ".join(rotated[:-1] + [update])
    write = rng.choice([f"z = w\n{{i}}z += {names[-1]}", f"w += v * {names[-1]}",
                        f"w[{rng.integers(0, 3)}] += {names[0]}"])
    inner = rng.choice(["k = 0\n{o}while k < 2:\n{i}k += 1", "for k in range(2):"])
    outer = rng.choice(["for j in range(2):", "for j in range(3):"])
    o, i = " " * 8, " " * 12
    lines = ["def program(v):", "    w = v.copy()"]
    lines += [f"    {n} = {0.1 * (p + 2)}" for p, n in enumerate(names)]
    lines += [f"    {outer}", o + inner.format(o=o, i=i),
              f"{i}{', '.join(names)} = {values}", i + write.format(i=i)]
    if rng.integers(0, 2):
        lines.append(f"{o}w[0] = w[0] + {names[1]}")
    lines.append(f"    return w + {names[0]} - {names[-1]}")
    return "\n".join(lines) + "\n"


@pytest.mark.slow
def test_drawn_rotations_match_python_under_jit_parallel(tmp_path):
    rng = np.random.default_rng(20261207)
    for n in range(12):
        source = _rotation_program(rng)
        path = tmp_path / f"rotation_{n}.py"          # jit reads the function's source
        path.write_text("import numpy as np\n\n\n" + source)
        scope = {"__name__": f"rotation_{n}", "__file__": str(path)}
        exec(compile(path.read_text(), str(path), "exec"), scope)
        program = scope["program"]
        np.testing.assert_allclose(jit(program, parallel=True)(V.copy()), program(V.copy()),
                                   rtol=1e-12, err_msg=source)
