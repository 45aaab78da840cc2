"""Jupyter: generated source renders as code, and examples/quickstart.ipynb runs.

The reprs are tested directly (no kernel); the notebook is executed with nbclient in a
kernel of its own, which imports this checkout's secant through PYTHONPATH.
"""
import html
import importlib.util
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import transformer
from transformer import grad, hessian, jacfwd, jit, value_and_grad, vmap
from transformer.display import SourceCode

ROOT = Path(__file__).resolve().parents[2]


def vector_poly(x):
    s = 0.0
    for i in range(3):
        if x[i] < 1.5:      # a `<` that HTML must escape
            s += x[i] ** 3
    return s


def with_block(x):
    with open("data") as handle:
        handle.read()
    return x


def _text_of(markup: str) -> str:
    """What a browser shows for `markup`: the tags dropped, the entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def test_source_is_the_generated_text_and_prints_as_it(capsys):
    text = transformer.source(grad(vector_poly))
    assert isinstance(text, str) and isinstance(text, SourceCode)
    assert text == grad(vector_poly).source()
    assert "# transforms: grad(argnums=0)" in text and "def " in text
    print(text)
    assert capsys.readouterr().out == str(text) + "\n"


def test_source_html_is_highlighted_and_keeps_every_character():
    pytest.importorskip("pygments", reason="pygments is not installed")
    text = transformer.source(grad(vector_poly))
    markup = text._repr_html_()
    assert '<span style="' in markup               # colours inline: no stylesheet needed
    assert _text_of(markup).strip() == text.strip()


def test_source_html_without_pygments_is_an_escaped_pre(monkeypatch):
    monkeypatch.setitem(sys.modules, "pygments", None)     # import pygments fails
    text = transformer.source(grad(vector_poly))
    markup = text._repr_html_()
    assert markup.startswith("<pre>") and markup.endswith("</pre>")
    assert "&lt; 1.5" in markup and "<span" not in markup
    assert _text_of(markup) == text


def test_markdown_fence_is_longer_than_any_backtick_run_in_the_code():
    assert SourceCode("x = 1")._repr_markdown_() == "```python\nx = 1\n```"
    code = 'doc = "````"'
    assert SourceCode(code)._repr_markdown_() == f"`````python\n{code}\n`````"


def test_ipython_pretty_prints_the_text_not_a_quoted_string():
    pretty = pytest.importorskip("IPython.lib.pretty", reason="IPython is not installed")
    text = transformer.source(grad(vector_poly))
    assert pretty.pretty(text) == str(text)


@pytest.mark.parametrize("make", [
    grad, value_and_grad, jacfwd, hessian, vmap,
    lambda f: jit(f, backend="python"), lambda f: jit(grad(f)),
], ids=["grad", "value_and_grad", "jacfwd", "hessian", "vmap", "jit", "jit_grad"])
def test_transformed_and_jitted_functions_show_their_source_in_html(make):
    fun = make(vector_poly)
    markup = fun._repr_html_()
    assert markup.startswith(f"<p><code>{html.escape(repr(fun))}</code></p>")
    shown = _text_of(markup)
    assert shown.strip().endswith(fun.source().strip())
    assert "def " in shown


def test_html_of_a_function_secant_refuses_shows_the_located_error():
    markup = grad(with_block)._repr_html_()
    shown = _text_of(markup)
    line = with_block.__code__.co_firstlineno + 1
    assert f"test_notebook.py:{line}:5: `with`" in shown
    assert "^" in shown and "hint:" in shown


def test_transformed_function_still_computes_after_display():
    g = grad(vector_poly)
    g._repr_html_()
    x = np.array([0.5, 2.0, 1.0])
    np.testing.assert_allclose(g(x), [3 * 0.25, 0.0, 3.0])


# ---------------------------------------------------------------- the notebook

_MISSING = [m for m in ("nbclient", "nbformat", "ipykernel") if importlib.util.find_spec(m) is None]


@pytest.mark.slow
@pytest.mark.skipif(bool(_MISSING), reason=f"{', '.join(_MISSING)} not installed "
                                           "(pip install 'secant[test]')")
def test_quickstart_notebook_runs_and_renders_source(monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    notebook = nbformat.read(ROOT / "examples" / "quickstart.ipynb", as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "examples")}})
    client.execute()        # a failing cell (each one asserts its check) raises here
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "max |grad - finite difference|" in printed and "max |jit - eager|" in printed
    shown = [o.data for o in outputs if o.output_type == "execute_result"]
    rendered = [d["text/html"] for d in shown if "text/html" in d]
    assert len(rendered) == 2           # source(grad(loss)) and grad(loss) itself
    assert all("def " in _text_of(markup) for markup in rendered)
