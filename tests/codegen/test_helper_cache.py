"""secant's runtime helpers (the implementations its `@overload`s pick) are cached on disk
with the generated code: a new function in a later process loads the helpers an earlier
one compiled, keyed so that a different helper never loads another's machine code."""
import json
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from codegen import cache_keys, cache_numba


def _closure(scale):
    return lambda x: x * scale


def _plain(x):
    return x * 2.0


def _other_constant(x):
    return x * 3.0


def test_fingerprint_tells_apart_captured_values_and_constants():
    fp = cache_keys.fingerprint
    assert fp(_closure(2.0)) == fp(_closure(2.0))
    assert fp(_closure(2.0)) != fp(_closure(3.0))
    assert fp(_closure(np.float32(2.0))) != fp(_closure(2.0))
    # same bytecode, different constant: Numba's own key (bytecode only) would not see it
    assert _plain.__code__.co_code == _other_constant.__code__.co_code
    assert fp(_plain) != fp(_other_constant)
    assert fp(_closure(np.arange(3.0))) != fp(_closure(np.arange(3.0) + 1))
    assert fp(_closure(numba.types.float32)) != fp(_closure(numba.types.float64))


def test_fingerprint_of_a_captured_dispatcher_is_stable():
    first, second = numba.njit(_plain), numba.njit(_plain)
    assert cache_keys.fingerprint(_closure(first)) == \
        cache_keys.fingerprint(_closure(second))
    assert cache_keys.fingerprint(_closure(first)) != \
        cache_keys.fingerprint(_closure(numba.njit(_other_constant)))


def _exec_helper(**namespace):
    """A helper as secant's runtime makes them: exec'd text reading its globals."""
    exec(compile("def each(x):\n    return helper(x) + 1.0\n", "<batched helper>", "exec"),
         namespace)
    return namespace["each"]


def test_fingerprint_follows_the_globals_an_exec_helper_reads():
    fp = cache_keys.fingerprint
    assert fp(_exec_helper(helper=_plain)) == fp(_exec_helper(helper=_plain))
    assert fp(_exec_helper(helper=_plain)) != fp(_exec_helper(helper=_other_constant))
    assert fp(_exec_helper(helper=np.tanh)) != fp(_exec_helper(helper=np.exp))
    assert fp(_exec_helper(helper=np.max)) == fp(_exec_helper(helper=np.max))
    with pytest.raises(cache_keys.Unkeyable):
        fp(_exec_helper(helper=pytest))        # a module outside the libraries


def test_a_helper_capturing_an_unnamed_object_is_not_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_numba, "_helper_root", tmp_path)
    assert cache_numba.helper_cache(_closure(object())) is None
    assert isinstance(cache_numba.helper_cache(_closure(2.0)), cache_numba.SealedCache)


def test_runtime_stamp_covers_sources_and_numba_settings(monkeypatch):
    monkeypatch.setattr(cache_numba, "_stamp", None)
    base = cache_numba.runtime_stamp()
    monkeypatch.setattr(cache_numba, "_stamp", None)
    monkeypatch.setattr(numba.config, "OPT", 1 if numba.config.OPT != 1 else 2)
    assert cache_numba.runtime_stamp() != base
    monkeypatch.undo()
    monkeypatch.setattr(cache_numba, "_stamp", None)
    monkeypatch.setattr(cache_keys, "secant_sources_hash", lambda: "an edited source")
    assert cache_numba.runtime_stamp() != base


_PROGRAM = textwrap.dedent("""
    import json, sys
    import numba.core.event as ev
    import numpy as np
    from transformer import grad, jit, vmap

    compiled = []
    class Listener(ev.Listener):
        def on_start(self, event):
            pass
        def on_end(self, event):
            py_func = event.data["dispatcher"].py_func
            if getattr(py_func, "__secant_helper__", False):
                compiled.append(f"{py_func.__code__.co_filename}:{py_func.__qualname__}")
    ev.register("numba:compile", Listener())

    scale = float(sys.argv[1])
    sys.path.insert(0, sys.argv[2])
    from energy_program import energy
    x = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    got = jit(vmap(grad(energy)))(x)
    want = scale * 2 * np.tanh(x) * (1 - np.tanh(x) ** 2)
    print(json.dumps({"helpers": compiled, "error": float(np.max(np.abs(got - want)))}))
""")


@pytest.mark.slow
def test_a_new_function_in_a_new_process_loads_the_helpers(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(_PROGRAM)
    env = dict(os.environ, SECANT_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONDONTWRITEBYTECODE="1")       # the edited file is read again
    env["PYTHONPATH"] = os.pathsep.join([os.getcwd(), env.get("PYTHONPATH", "")])
    runs = []
    # the user edits a constant in a helper and runs the script again: the new process
    # compiles the user's code anew and loads secant's helpers, never the old machine code
    for scale in ("2.0", "3.0"):
        (tmp_path / "energy_program.py").write_text(
            f"import numpy as np\n\ndef scaled(x):\n    return np.tanh(x) ** 2 * {scale}\n\n"
            f"def energy(x):\n    return np.sum(scaled(x))\n")
        done = subprocess.run([sys.executable, str(script), scale, str(tmp_path)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert runs[0]["helpers"], "the first process compiles the helpers"
    assert not set(runs[0]["helpers"]) & set(runs[1]["helpers"]), runs
    assert max(run["error"] for run in runs) < 1e-12


def test_concurrent_writers_of_one_index_never_swap_data(tmp_path, monkeypatch):
    """Two processes add different keys to one index at once: the second saves its whole
    entry while the first is between its index and its data. No key may then name the
    other's machine code (with data files numbered by count, both took `.1.nbc`)."""
    folder = tmp_path / "__pycache__"
    folder.mkdir()
    files = [cache_numba._SealedFile(str(folder), "helpers.f-1.py311", "stamp", tmp_path)
             for _ in range(3)]
    first, second, reader = files
    monkeypatch.setattr(second, "_load_index", lambda: {})    # read before `first` saved
    save_data = first._save_data

    def interleaved(name, data):
        monkeypatch.setattr(first, "_save_data", save_data)
        second.save(("key b",), {"code": "b"})
        save_data(name, data)
    monkeypatch.setattr(first, "_save_data", interleaved)
    first.save(("key a",), {"code": "a"})
    assert reader.load(("key b",)) in (None, {"code": "b"})
    assert reader.load(("key a",)) in (None, {"code": "a"})


def test_code_that_does_not_pickle_runs_and_is_not_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_numba, "_helper_root", tmp_path)
    helper = numba.njit(_closure(2.0))
    helper._cache = cache_numba.helper_cache(helper.py_func)

    def unpicklable(data):
        raise TypeError("cannot pickle '_dynfunc._Closure' object")
    monkeypatch.setattr(cache_numba._SealedFile, "_dump", staticmethod(unpicklable))
    assert helper(1.5) == 3.0
    assert not list((tmp_path / "__pycache__").glob("*.nbc"))


def test_numbas_own_implementations_get_the_helper_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_numba, "_helper_root", tmp_path)
    from numba.np import arraymath
    from transformer.runtime import numba_api
    implementation = arraymath.npy_max(numba.types.float64[::1])
    assert numba_api._numba_library(implementation)
    assert isinstance(numba.njit(implementation)._cache, cache_numba.SealedCache)
    assert not isinstance(numba.njit(_plain)._cache, cache_numba.SealedCache)


def test_a_helper_with_an_empty_closure_cell_is_compiled_not_cached(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_numba, "_helper_root", tmp_path)

    def outer():
        def helper(x):
            return later(x)
        before = cache_numba.helper_cache(helper)      # `later` is not bound yet
        later = abs
        return before, cache_numba.helper_cache(helper)
    before, after = outer()
    assert before is None
    assert isinstance(after, cache_numba.SealedCache)


def test_a_save_works_out_the_environments_once_and_writes_them(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_numba, "_helper_root", tmp_path)
    helper = numba.njit(_closure(4.0))
    helper._cache = cache_numba.helper_cache(helper.py_func)
    calls = []
    stand_ins = cache_numba._stand_ins
    monkeypatch.setattr(cache_numba, "_stand_ins",
                        lambda cres: calls.append(cres) or stand_ins(cres))
    assert helper(1.5) == 6.0
    assert len(calls) == 1            # the check's result is what the save writes
    assert list((tmp_path / "__pycache__").glob("*.nbc"))
    reloaded = numba.njit(_closure(4.0))
    reloaded._cache = cache_numba.helper_cache(reloaded.py_func)
    assert reloaded(2.0) == 8.0 and reloaded.stats.cache_hits
