"""Machine code loaded from the disk cache never shares a symbol with a different function
compiled in the loading process (`codegen/numba_symbols.py`).

Numba names a function's code `module.qualname` plus a count that restarts at 1 in each
process. A first script compiled `tanh(p * q)` as the fused `impl$2`; a second script,
compiling `tanh(p - 0.5 * q)` as its own `impl$2` and loading the first from the cache,
linked both branches of its function to one of them: a wrong number, silently.
"""
import json
import os
import subprocess
import sys
import textwrap


_FUNCTIONS = textwrap.dedent("""
    import numpy as np

    def product(p, q):
        return np.tanh(p * q)

    def branches(p, q):
        if p > q:
            return np.tanh(p - 0.5 * q)
        return np.tanh(p * q)
""")

_RUN = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    sys.path.insert(0, sys.argv[1])
    from transformer import jit
    import functions

    def results(name):
        f = getattr(functions, name)
        return [[float(jit(f)(p, q)), float(f(p, q))] for p, q in [(0.3, 0.7), (0.7, 0.3)]]

    names = sys.argv[2].split(",")
    if sys.argv[3] == "fork":       # the first in a forked child, as a pool or a hunt does
        pid = os.fork()
        if pid == 0:
            results(names[0])
            os._exit(0)
        os.waitpid(pid, 0)
        names = names[1:]
    print(json.dumps({name: results(name) for name in names}))
""")


def _run(tmp_path, cache, names, how):
    env = dict(os.environ, SECANT_CACHE_DIR=str(tmp_path / cache))
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, str(tmp_path / "run.py"), str(tmp_path), names,
                           how], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_code_cached_by_one_process_is_not_confused_with_code_compiled_by_the_next(tmp_path):
    (tmp_path / "functions.py").write_text(_FUNCTIONS)
    (tmp_path / "run.py").write_text(_RUN)
    runs = [_run(tmp_path, "one", "product", "plain"),
            _run(tmp_path, "one", "branches", "plain"),       # loads the first's `impl`
            _run(tmp_path, "two", "product,branches", "fork")]
    for run in runs:
        for name, pairs in run.items():
            for got, want in pairs:
                assert abs(got - want) < 1e-12, (name, run)


_FORKED = textwrap.dedent("""
    import os
    from numba.core.bytecode import FunctionIdentity
    from codegen import numba_symbols
    numba_symbols.make_ids_distinct()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(write, str(next(FunctionIdentity._unique_ids)).encode())
        os._exit(0)
    os.close(write)
    child = int(os.read(read, 64))
    os.waitpid(pid, 0)
    print(child, next(FunctionIdentity._unique_ids))
""")


def test_a_forked_child_counts_from_its_own_start():
    # in a process of its own: this one may run threads (JAX's) that a fork would copy
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(),
                                                       os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", _FORKED], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    child, parent = map(int, done.stdout.split())
    assert min(child, parent) > 2 ** 32 and abs(child - parent) > 1000
