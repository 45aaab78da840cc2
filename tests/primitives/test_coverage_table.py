"""The README's coverage table is the registry's: regenerate it with
`python -m codegen.cli primitives --readme README.md` when this fails."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codegen import cli
from transformer.primitives.catalog import (TABLE_END, TABLE_START, format_table, primitives,
                                            with_table)

README = Path(__file__).resolve().parents[2] / "README.md"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="the table is generated on Python 3.11+, "
                    "whose math module has cbrt and exp2")
def test_the_readme_table_is_the_registrys():
    pytest.importorskip("scipy.special")       # the table lists scipy.special's functions
    text = README.read_text()
    assert with_table(text, format_table(primitives(), "markdown")) == text, (
        "README.md's coverage table differs from the registry; regenerate it with "
        "`python -m codegen.cli primitives --readme README.md`")


def test_the_markdown_table_has_a_row_per_function_and_the_cli_writes_it(tmp_path, capsys):
    rows = primitives()
    table = format_table(rows, "markdown")
    lines = table.splitlines()
    assert lines[0] == "| function | kind | grad | jvp | vmap | jit | cuda | why not |"
    assert len(lines) == len(rows) + 2
    uniform = next(line for line in lines if line.startswith("| `transformer.random.uniform` |"))
    assert "| no | no |" in uniform and "minval + (maxval - minval)" in uniform
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{TABLE_START}\nstale\n{TABLE_END}\noutro\n")
    assert cli.main(["primitives", "--readme", str(readme)]) == 0
    assert readme.read_text() == f"intro\n{TABLE_START}\n{table}\n{TABLE_END}\noutro\n"
    assert cli.main(["primitives", "--format", "markdown"]) == 0
    assert capsys.readouterr().out.strip() == table
