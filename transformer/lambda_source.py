"""The lambdas of a source fragment that does not parse on its own.

`inspect` gives a lambda's source as the lines of the statement it sits in, and that
statement may be a compound one's header (`for f in [lambda x: x ** 2, np.sin]:`,
`try: print(grad(lambda x: f(x))(x0))`) or a piece of a longer expression, neither of which
parses alone. Here each `lambda` keyword's expression is cut out by its tokens and parsed
by itself, placed at its own line and column, so the lambdas' positions are those of the
fragment and the caller can pick the one whose code it holds.
"""
from __future__ import annotations

import io
import tokenize

import gast

from .nodes import walk

_OPEN, _CLOSE = "([{", ")]}"


def lambdas_of(text: str) -> gast.Module:
    """A module holding, as one expression statement each, every lambda expression of
    `text` that parses when cut out; empty if none does."""
    tokens = _tokens(text)
    lines = text.splitlines(keepends=True)
    body = []
    for k, tok in enumerate(tokens):
        if tok.type == tokenize.NAME and tok.string == "lambda":
            end = _lambda_end(tokens, k)
            expression = _parsed(lines, tok.start, end)
            if expression is not None:
                body.append(expression)
    return gast.Module(body=body, type_ignores=[])


def _tokens(text: str) -> list:
    found = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            found.append(tok)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass                    # a statement cut short: the tokens read so far serve
    return found


def _lambda_end(tokens: list, k: int) -> tuple:
    """(line, col) just past the lambda expression whose keyword is `tokens[k]`: the first
    token at the lambda's own bracket depth that cannot continue it (a `,`, a closing
    bracket, a comprehension's `for`, a statement's end, or a `:` after its body)."""
    depth, in_body, last = 0, False, tokens[k].end
    for tok in tokens[k + 1:]:
        text = tok.string
        if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
            break
        if tok.type == tokenize.OP and text in _OPEN:
            depth += 1
        elif tok.type == tokenize.OP and text in _CLOSE:
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and tok.type == tokenize.OP and text == ":":
            if in_body:
                break
            in_body = True
        elif depth == 0 and in_body and (tok.type == tokenize.OP and text in (",", ";", "=")
                                         or tok.type == tokenize.NAME and text == "for"):
            break
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            last = tok.end
    return last


def _parsed(lines: list, start: tuple, end: tuple):
    """The expression statement of the source between `start` and `end` (1-based lines,
    0-based columns), parsed at its own position; None if it does not parse."""
    (line0, col0), (line1, col1) = start, end
    piece = lines[line0 - 1:line1]
    if not piece:
        return None
    if len(piece) == 1:
        piece = [piece[0][col0:col1]]
    else:
        piece = [piece[0][col0:]] + piece[1:-1] + [piece[-1][:col1]]
    # inside the parentheses any indentation parses: the lambda keeps its line and column
    # (on the first line the parenthesis itself takes one column)
    indent = col0 if line0 > 1 else max(col0 - 1, 0)
    text = "(" + "\n" * (line0 - 1) + " " * indent + "".join(piece) + "\n)"
    try:
        module = gast.parse(text)
    except SyntaxError:
        return None
    statement = module.body[0] if module.body else None
    if not isinstance(statement, gast.Expr) or not isinstance(statement.value, gast.Lambda):
        return None
    if line0 == 1 and col0 == 0:     # no room for the parenthesis before it: one column
        for node in walk(statement):
            if getattr(node, "lineno", None) == 1 and hasattr(node, "col_offset"):
                node.col_offset -= 1
                if getattr(node, "end_lineno", None) == 1:
                    node.end_col_offset -= 1
    return statement
