"""How the user wrote a value that secant's normalizing passes named.

ANF and desugaring bind sub-expressions to names the user never wrote (`reshape_h` for
`h.reshape(2, 3)`, `lst_item` for `lst[0]`, `d_k` for `d["k"]`) and split a rebound name
into versions (`g_1` for the second `g`). A refusal that names one of them points the user
at nothing; `spelled` gives what to show instead: the user's own name, or the source text
of the expression the name was made for.
"""
from __future__ import annotations

import io
import linecache
import re
import tokenize

import gast

from .nodes import walk


def user_names(fn) -> frozenset:
    """The identifiers in the source lines of `fn` (those its nodes come from)."""
    text = _source(fn)
    try:
        tokens = tokenize.generate_tokens(io.StringIO(text).readline)
        return frozenset(t.string for t in tokens if t.type == tokenize.NAME)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return frozenset(re.findall(r"[A-Za-z_]\w*", text))


def spelled(fn, name: str, names: frozenset | None = None) -> str:
    """`'h'` for a name of the user's, `'g'` for a version of one (`g_1`), `` `h.reshape(2,
    3)` `` for a name bound to an expression the user wrote inline; the quoted name when the
    expression's text is not known."""
    names = user_names(fn) if names is None else names
    if name in names:
        return repr(name)
    version = re.fullmatch(r"(.+?)(?:_\d+)+", name)
    if version and version.group(1) in names:
        return repr(version.group(1))
    item = _dict_item(fn, name, names)
    if item is not None:
        return f"`{item}`"
    text = _bound_text(fn, name)
    return f"`{text}`" if text is not None else repr(name)


def _dict_item(fn, name: str, names: frozenset) -> str | None:
    """`d["k"]` for `d_k`, the name a dict's item is flattened to, when the user's source
    spells it so."""
    for split in range(1, len(name) - 1):
        if name[split] != "_" or name[:split] not in names:
            continue
        base, key = name[:split], name[split + 1:]
        for quote in ('"', "'"):
            text = f"{base}[{quote}{key}{quote}]"
            if text in _source(fn):
                return text
    return None


def _source(fn) -> str:
    lines = [n.lineno for n in walk(fn.node) if getattr(n, "lineno", None)]
    first = min([fn.origin.lineno, *lines])
    return "".join(linecache.getline(fn.origin.filename, k)
                   for k in range(first, max([first, *lines]) + 1))


def label(fn, name: str, names: frozenset | None = None) -> str:
    """`spelled` without quotes, for a message a check renders at run time (it quotes the
    label and writes `label = source.copy()` in its hint): the user's spelling when it can
    be assigned to (`h`, `d["k"]`, `lst[0]`), else `name`."""
    text = spelled(fn, name, names)[1:-1]
    try:
        compile(f"{text} = 0", "<label>", "exec")
    except SyntaxError:
        return name
    return text


def _bound_text(fn, name: str) -> str | None:
    """The source text of the expression `name` is first bound to, when it sits on one
    line of the user's file and reads as an expression."""
    for node in walk(fn.node):
        if not (isinstance(node, gast.Assign) and len(node.targets) == 1 and
                isinstance(node.targets[0], gast.Name) and node.targets[0].id == name):
            continue
        value = node.value
        if isinstance(value, gast.Name):    # a copy of another name: nothing to show
            return None
        line, col = getattr(value, "lineno", None), getattr(value, "col_offset", None)
        end = getattr(value, "end_col_offset", None)
        if line is None or col is None or end is None or \
                getattr(value, "end_lineno", line) != line:
            return None
        text = linecache.getline(fn.origin.filename, line)[col:end]
        try:
            compile(text, "<spelled>", "eval")
        except SyntaxError:
            return None
        return text or None
    return None
