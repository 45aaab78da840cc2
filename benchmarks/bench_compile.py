"""Where the first call's time goes: a cold-cache compile broken down by stage.

    PYTHONPATH=. python benchmarks/bench_compile.py [--cases lj hessian mlp] [--repeat 3]
        [--clock cpu|wall] [--warm] [--helpers] [--tiered] [--imports]

Each case runs `--repeat` times, each time in a fresh process with a fresh, empty
SECANT_CACHE_DIR (so nothing comes from secant's or Numba's disk cache), and the table
gives the median seconds of each stage:

    lj       jit(grad(lj_energy))                      W1, 64 particles
    hessian  jit(hessian(f)), f(x) = sum(tanh(x))      W4, n = 64
    mlp      jit(vmap(grad(mlp_loss), in_axes=(None, 0, 0))) with dict params, W2
    closed   jit(hessian(f)), f(x) = x @ A @ x with A (64, 64) closed over, a new A in
             every process: W4's closed-over matrix

With `--warm`, each case also runs a second time in a new process on the cache the first
run filled (rows `case+warm`): the time to a first result once the code is on disk.

Stages are *exclusive* (a stage nested in another is subtracted from it), so the columns
add up to the first call:

    transform  parsing and secant's passes (everything secant does that is not below)
    emit       gast to source text (`codegen.emit.to_source`)
    load       writing the module and executing it (`codegen.modules.load_module`)
    init       Numba's loading of its implementation registries, once per process on the
               first compile or cache load: the same with `numba.njit(cache=True)`, and
               not secant's cache (`numba.np.arraymath`'s import-time SciPy BLAS check is
               deferred by `codegen/numba_startup.py`: SciPy's import is counted under
               typing, when a BLAS function is typed, and not at all for a program without)
    typing     Numba's type inference passes
    lower      Numba's lowering, LLVM optimization and machine code (`native_lowering`)
    numba      the rest of Numba's compile (under its compiler lock): other passes, dispatch
    cache      reading and writing Numba's disk cache (`codegen.cache_numba.SealedCache`)
    run        the first call's own run, outside any compile

`import` (seconds to `import transformer` in that process) and `second` (the second call)
are printed beside them, and the target for each case's first call (issue #16).

With `--helpers`, each case also runs in a second new process on that cache with the
generated code removed and secant's runtime helpers kept (rows `case+helpers`): the first
call of a new function once an earlier one, in any process, compiled the helpers it shares
(`codegen/cache_numba.py`), as when a user edits a function and runs the script again.

With `--tiered`, each case also runs with `jit`'s tiered execution (rows `case+tiered`,
SECANT_TIERED=1): the first call runs the generated NumPy source while a child process
compiles, so `first` is the transformation and one NumPy run in this process (the child's
CPU time is not in it), and `ready` is the wall-clock seconds from the first call until
calls run the machine code.

`--clock cpu` (the default) times with the process's CPU time, which a loaded machine
inflates far less than wall-clock time (with 8 compiles sharing 2 cores, wall-clock is
3-5x the CPU time); `--clock wall` gives the wall-clock figures.

`--imports` times `import transformer` in fresh processes, with bytecode (written to a
temporary PYTHONPYCACHEPREFIX by a first import) and without it for secant's own modules
(PYTHONDONTWRITEBYTECODE, as the development environment runs; installed packages keep
their bytecode), beside `import numpy, numba`. Never part of the test
run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STAGES = ("transform", "emit", "load", "init", "typing", "lower", "numba", "cache", "run")
CASES = ("lj", "hessian", "mlp", "closed")
TARGETS = {"lj": 1.0, "hessian": 2.0, "mlp": 3.0, "import transformer": 0.5}  # seconds
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
clock = CLOCKS[os.environ.get("SECANT_BENCH_CLOCK", "cpu")]


# --------------------------------------------------------------------------- the profiler
class Stages:
    """Exclusive seconds per stage: each open stage's time minus its nested stages'."""

    def __init__(self):
        self.seconds = dict.fromkeys(STAGES, 0.0)
        self._open: list[list] = []        # [stage, start, seconds spent in nested stages]

    def enter(self, stage: str) -> None:
        self._open.append([stage, clock(), 0.0])

    def leave(self) -> None:
        stage, start, nested = self._open.pop()
        spent = clock() - start
        self.seconds[stage] += spent - nested
        if self._open:
            self._open[-1][2] += spent

    def wrap(self, owner, name: str, stage: str) -> None:
        """Time every call of `owner.name` as `stage`."""
        original = getattr(owner, name)

        def timed(*args, **kwargs):
            self.enter(stage)
            try:
                return original(*args, **kwargs)
            finally:
                self.leave()
        setattr(owner, name, timed)


def _numba_listener(stages: Stages, stage_of):
    import numba.core.event as ev

    class Listener(ev.Listener):
        def on_start(self, event):
            stages.enter(stage_of(event))

        def on_end(self, event):
            stages.leave()
    return Listener()


def _pass_stage(event) -> str:
    name = event.data["name"].split(" [", 1)[0]
    if name == "nopython_type_inference":
        return "typing"
    if name == "native_lowering":
        return "lower"
    return "numba"


def install(stages: Stages) -> None:
    """Route secant's emission and loading and every Numba compile and pass to `stages`."""
    import numba.core.event as ev
    from numba.core import cpu

    from codegen import cache_numba, emit, modules
    import importlib

    jit_module = importlib.import_module("transformer.jit")   # the package's `jit` is the function

    stages.wrap(emit, "to_source", "emit")
    stages.wrap(modules, "load_module", "load")
    stages.wrap(jit_module.Jitted, "_run", "run")
    stages.wrap(cache_numba.SealedCache, "load_overload", "cache")
    stages.wrap(cache_numba.SealedCache, "save_overload", "cache")
    stages.wrap(cpu.CPUContext, "load_additional_registries", "init")
    ev.register("numba:compiler_lock", _numba_listener(stages, lambda _: "numba"))
    ev.register("numba:run_pass", _numba_listener(stages, _pass_stage))


# --------------------------------------------------------------------------- the cases
def _case(name: str):
    """(the function to call, its arguments) for case `name`; nothing compiled yet."""
    import numpy as np

    from benchmarks import workloads
    from transformer import grad, hessian, jit, vmap

    if name == "lj":
        pos, eps, sigma, box, rcut = workloads.lj_inputs(64)
        return jit(grad(workloads.lj_energy)), (pos, eps, sigma, box, rcut)
    if name == "hessian":
        x, _, _ = workloads.hessian_inputs(64)
        return jit(hessian(workloads.sum_tanh)), (x,)
    if name == "mlp":
        params, X, Y = workloads.mlp_inputs(batch=32)
        return jit(vmap(grad(workloads.mlp_loss), in_axes=(None, 0, 0))), (params, X, Y)
    if name == "closed":
        A = np.random.default_rng().normal(size=(64, 64))   # a new matrix each process

        def quadratic(x):
            return x @ A @ x
        return jit(hessian(quadratic)), (np.ones(64),)
    raise ValueError(f"unknown case {name!r}; choose from {CASES}")


def measure(name: str) -> dict:
    """One cold first call of case `name` in this process: seconds per stage."""
    started = clock()
    import transformer  # noqa: F401
    imported = clock() - started
    stages = Stages()
    install(stages)
    fn, args = _case(name)
    stages.enter("transform")
    started, wall = clock(), time.perf_counter()
    fn(*args)
    first = clock() - started
    stages.leave()
    started = clock()
    fn(*args)
    second = clock() - started
    times = {**stages.seconds, "first": first, "import": imported, "second": second}
    if os.environ.get("SECANT_TIERED"):
        for function, _, _ in fn._specs.values():
            function.wait()             # a TieredFunction: until the machine code runs
        times["ready"] = time.perf_counter() - wall
    return times


def _environment(**extra) -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
            **extra}


def run_fresh(name: str, warm: bool = False, clock_name: str = "cpu",
              tiered: bool = False, helpers: bool = False) -> dict[str, dict]:
    """`measure(name)` in a new process with an empty cache directory, by row label; with
    `warm`, then again in another new process on the cache the first one filled; with
    `helpers`, again with the generated functions removed from that cache."""
    with tempfile.TemporaryDirectory(prefix="secant-bench-") as cache:
        env = _environment(SECANT_CACHE_DIR=cache, SECANT_BENCH_CLOCK=clock_name,
                           **({"SECANT_TIERED": "1"} if tiered else {}))
        runs = {}
        for label in [name] + [name + "+warm"] * warm + [name + "+helpers"] * helpers:
            if label.endswith("+helpers"):
                _remove_generated(cache)
            out = subprocess.run([sys.executable, __file__, "--measure", name], env=env,
                                 check=True, capture_output=True, text=True).stdout
            runs[label] = json.loads(out.strip().splitlines()[-1])
    return runs


def _remove_generated(cache: str) -> None:
    """Remove the generated modules and their Numba files from `cache`, keeping the Numba
    files of secant's runtime helpers."""
    sys.path.insert(0, ROOT)
    from codegen import cache_store
    for entry_name, entry in cache_store.entries(cache).items():
        if cache_store.is_module_entry(entry_name):
            for path in entry.files:
                os.remove(path)


def print_breakdown(results: dict[str, list[dict]], clock_name: str) -> None:
    columns = STAGES + ("first", "import", "second")
    if any("ready" in run for runs in results.values() for run in runs):
        columns += ("ready",)
    print(f"{'case':<16}" + "".join(f"{c:>10}" for c in columns) + f"{'target':>8}")
    for name, runs in results.items():
        medians = [statistics.median(r.get(c, float("nan")) for r in runs) for c in columns]
        target = f"{TARGETS[name]:>8.1f}" if name in TARGETS else ""
        print(f"{name:<16}" + "".join(f"{m:>10.3f}" for m in medians) + target)
    print(f"({clock_name} seconds, median of {len(next(iter(results.values())))} fresh "
          "processes, cold cache; stages are exclusive and add up to `first`)")


# --------------------------------------------------------------------------- import time
IMPORTS = {"import transformer": "import transformer",
           "import numpy, numba": "import numpy, numba"}


def time_import(statement: str, bytecode: bool, clock_name: str) -> float:
    """Seconds (of `clock_name`) a fresh process spends in `statement`."""
    code = (f"import time; c = time.{CLOCKS[clock_name].__name__}; t = c(); {statement}; "
            "print(c() - t)")
    with tempfile.TemporaryDirectory(prefix="secant-pyc-") as pyc:
        if bytecode:                   # the first import writes the bytecode it then reads
            env = _environment(PYTHONPYCACHEPREFIX=pyc)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            subprocess.run([sys.executable, "-c", statement], env=env, check=True, cwd=ROOT)
        else:                          # installed packages keep their own bytecode
            env = _environment(PYTHONDONTWRITEBYTECODE="1")
            env.pop("PYTHONPYCACHEPREFIX", None)
        out = subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=ROOT,
                             capture_output=True, text=True).stdout
    return float(out.strip().splitlines()[-1])


def print_imports(repeat: int, clock_name: str) -> None:
    print(f"{'import':<22}{'bytecode':>10}{'source':>10}{'target':>8}")
    for label, statement in IMPORTS.items():
        cells = [statistics.median(time_import(statement, bytecode, clock_name)
                                   for _ in range(repeat)) for bytecode in (True, False)]
        target = f"{TARGETS[label]:>8.1f}" if label in TARGETS else ""
        print(f"{label:<22}" + "".join(f"{c:>10.3f}" for c in cells) + target)
    print(f"({clock_name} seconds, median of {repeat} fresh processes; `source`: secant's "
          "modules compiled from source, as under PYTHONDONTWRITEBYTECODE)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warm", action="store_true",
                        help="also time a second process on the filled cache")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="cpu",
                        help="CPU time (default: a loaded machine inflates it less) or wall")
    parser.add_argument("--imports", action="store_true",
                        help="also time `import transformer`, with and without bytecode")
    parser.add_argument("--helpers", action="store_true",
                        help="also time a new function once the runtime helpers are cached")
    parser.add_argument("--tiered", action="store_true",
                        help="also run each case with jit's tiered execution (SECANT_TIERED)")
    parser.add_argument("--json", help="also write the raw runs here")
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        sys.path.insert(0, ROOT)
        print(json.dumps(measure(args.measure)))
        return
    results: dict[str, list[dict]] = {}
    for name in args.cases:
        for _ in range(args.repeat):
            for label, run in run_fresh(name, args.warm, args.clock,
                                        helpers=args.helpers).items():
                results.setdefault(label, []).append(run)
            if args.tiered:
                run, = run_fresh(name, clock_name=args.clock, tiered=True).values()
                results.setdefault(name + "+tiered", []).append(run)
    print_breakdown(results, args.clock)
    if args.imports:
        print_imports(args.repeat, args.clock)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
