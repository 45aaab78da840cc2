"""Rule templates are parsed on first use, from the function's source file. A file changed
under a running process (an upgrade, a checkout) would be read at the old line numbers -
another rule's text, a silently wrong derivative. Such a read is refused instead."""
import importlib.util
import os

import pytest

from transformer.templates import Template

RULES = '''def first(z, x):
    d[x] += d[z] * 2.0


def second(z, x):
    d[x] += d[z] * 3.0
'''


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_rule_read_after_its_file_changed_is_refused(tmp_path):
    path = tmp_path / "late_rules.py"
    path.write_text(RULES)
    module = load(path)
    template = Template(module.second, {})
    # lines inserted above: `second`'s old line number now holds `first`
    path.write_text("# a new header line\n" * 5 + RULES)
    stamp = os.stat(path).st_mtime_ns + 1_000_000
    os.utime(path, ns=(stamp, stamp))
    with pytest.raises(RuntimeError, match="changed on disk after this process imported "
                                           "it.*restart Python"):
        _ = template.body


def test_a_rule_read_from_its_unchanged_file_is_parsed(tmp_path):
    path = tmp_path / "kept_rules.py"
    path.write_text(RULES)
    template = Template(load(path).second, {})
    assert template.name == "second" and template.params == ["z", "x"]
