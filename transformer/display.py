"""Generated source as text in a terminal and as highlighted code in Jupyter.

`SourceCode` is a `str`: everything that used the text of `source(f)` before keeps working,
and `print` shows it as it is. IPython and Jupyter find its `_repr_html_` (highlighted by
pygments when installed, else an escaped `<pre>`), `_repr_markdown_` (a fenced block) and
`_repr_pretty_` (the text itself, not a quoted string). `ShowsSource` gives the objects
that transformations and `jit` return a `_repr_html_`: their repr over their source.
"""
from __future__ import annotations

import abc
import html
import re

from .errors import TransformError


class SourceCode(str):
    """Python source text that Jupyter displays as highlighted code."""

    __slots__ = ()

    def _repr_html_(self) -> str:
        return highlight_html(str(self))

    def _repr_markdown_(self) -> str:
        fence = "`" * max(3, 1 + _longest_backtick_run(self))
        return f"{fence}python\n{self}\n{fence}"

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(str(self))


def highlight_html(text: str) -> str:
    """`text` as Python in HTML: pygments' colours inline (a notebook has no pygments
    stylesheet), or an escaped `<pre>` block when pygments is not installed."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return f"<pre>{html.escape(text)}</pre>"
    return highlight(text, PythonLexer(), HtmlFormatter(noclasses=True))


def _longest_backtick_run(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)


class ShowsSource(abc.ABC):
    """Base for objects with a `source()` method: in Jupyter they show their code.

    A function secant cannot transform shows its located error instead of code, so that
    displaying an object never raises the error its first call would.
    """

    @abc.abstractmethod
    def source(self) -> str:
        """The generated source text (raises the function's TransformError if it has one)."""

    def _repr_html_(self) -> str:
        title = f"<p><code>{html.escape(repr(self))}</code></p>\n"
        try:
            text = self.source()
        except TransformError as exc:
            return title + f"<pre>{html.escape(str(exc))}</pre>"
        return title + highlight_html(text)
