"""`import transformer` stays cheap: rule templates are parsed on first use, and the
source printer, the cache-directory lookup, SciPy's submodules and the CLI load only
when needed. Checked by what a fresh process holds after the import, never by time."""
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from transformer import defadjoint
from transformer.primitives import registry
from transformer.templates import Template, rule_from_source

LAZY_MODULES = ("astor", "platformdirs", "codegen.cli", "scipy.special", "scipy.linalg",
                "numba.cuda", "jax")


def _fresh_process(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], check=True,
                          capture_output=True, text=True)
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

