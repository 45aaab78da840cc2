"""`import transformer` stays cheap: rule templates are parsed on first use, and the
source printer, the cache-directory lookup, SciPy's submodules, `transformer.random` and the
CLI load only when needed; the garbage collector is paused while it runs. Checked by what a
fresh process holds after the import, never by time."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from transformer import defadjoint
from transformer.primitives import registry
from transformer.templates import Template, rule_from_source

LAZY_MODULES = ("astor", "platformdirs", "codegen.cli", "scipy.special", "scipy.linalg",
                "numba.cuda", "jax", "transformer.random", "transformer.runtime.random")


def _fresh_process(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True,
                          capture_output=True, text=True)
    return done.stdout.strip()


def _fresh_script(tmp_path, code: str) -> str:
    """`_fresh_process` for code that transforms its own functions (their source is read
    from a file)."""
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(code))
    done = subprocess.run([sys.executable, str(script)], check=True, capture_output=True,
                          text=True)
    return done.stdout.strip()


def _templates():
    return [value for record in registry.records() for value in vars(record).values()
            if isinstance(value, Template)]


def test_import_loads_no_lazy_module_and_parses_no_rule_template():
    out = _fresh_process(f"""
        import sys
        import transformer
        from transformer.primitives import registry
        from transformer.templates import Template
        templates = [v for r in registry.records() for v in vars(r).values()
                     if isinstance(v, Template)]
        parsed = sum(t._parsed is not None for t in templates)
        print(len(templates), parsed,
              [m for m in {LAZY_MODULES!r} if m in sys.modules])
    """)
    count, parsed, loaded = out.split(" ", 2)
    assert int(count) > 100          # the registry is filled ...
    assert int(parsed) == 0          # ... but no template is parsed yet
    assert loaded == "[]"


@pytest.mark.slow
def test_random_loaded_on_first_use_registers_its_samplers_before_a_pass_looks(tmp_path):
    """Each way a user reaches `transformer.random` after `import transformer`: its samplers
    are primitives by the time a transformation meets them (nondifferentiable under grad,
    lowered under jit, listed in the table), and the collector is on after the import."""
    out = _fresh_script(tmp_path, """
        import gc
        import numpy as np
        import transformer
        from transformer import grad, jit
        assert gc.isenabled() and gc.get_freeze_count() == 0
        import transformer.random as jr           # the module's own import statement

        def noisy(w, key):
            return np.sum(w * jr.normal(key, (3,)))
        key = jr.PRNGKey(0)
        g = grad(noisy)(np.ones(3), key)
        assert np.allclose(g, jr.normal(key, (3,))), g
        assert np.allclose(jit(noisy)(np.ones(3), key), noisy(np.ones(3), key))
        names = [row["name"] for row in transformer.primitives()]
        print(transformer.random is jr, "transformer.random.gamma" in names)
    """)
    assert out == "True True"
    assert _fresh_process("""
        from transformer import random
        print(random.__name__, "random" in dir(__import__("transformer")))
    """) == "transformer.random True"


def test_import_leaves_its_objects_old_and_every_cycle_collectable():
    """After `import transformer` the young generation is nearly empty (the import's objects
    were moved to the oldest one, not left for the first young pass to walk), nothing is
    frozen, and a cycle the user dropped before the import is still collected."""
    assert _fresh_process("""
        import gc, weakref

        class Node:
            pass
        gc.collect()                     # counts at zero: no pass before the import
        a, b = Node(), Node()
        a.other, b.other = b, a
        alive = weakref.ref(a)
        del a, b
        import transformer
        young = gc.get_count()[0]
        frozen = gc.get_freeze_count()
        gc.collect()
        print(young < 5000, frozen, alive() is None)
    """) == "True 0 True"


def test_collector_pause_restores_the_state_it_found():
    import gc

    from transformer.collector import paused
    assert gc.isenabled()
    with paused():
        assert not gc.isenabled()
        with paused():                       # nested: leaves the outer pause in charge
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled()            # a caller's own choice is kept
    finally:
        gc.enable()
    with pytest.raises(RuntimeError), paused():
        raise RuntimeError("inside the pause")
    assert gc.isenabled()


def test_every_builtin_rule_template_parses_with_its_parameters():
    for template in _templates():
        assert template.body, template
        if template.has_result:
            assert template.params, template
        assert list(template.signature.parameters) == template.params


def test_a_rule_is_parsed_on_first_use_of_its_parts():
    rule = rule_from_source("def scaled(z, x, k=2.0):\n    d[x] += k * d[z]\n", {"np": np})
    assert rule._parsed is None
    assert rule.params == ["z", "x", "k"] and rule.name == "scaled"
    assert rule.signature.parameters["k"].default == 2.0
    assert len(rule.body) == 1


def test_a_user_rule_without_a_result_parameter_is_refused_where_it_is_defined():
    def softsign(x):
        return x / (1.0 + abs(x))

    with pytest.raises(ValueError, match="needs a result parameter"):
        @defadjoint(softsign)
        def softsign_adjoint():
            pass

