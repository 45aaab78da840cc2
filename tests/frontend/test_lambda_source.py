"""Lambdas whose source line does not parse alone: in a compound statement's header
(`for f in [lambda x: ...]:`, `try: ...`), several on one line, or spread over lines.
Each transforms to its own function (oracle: central differences), never a neighbour's."""
import ast

import gast
import numpy as np

from transformer import grad, jit
from transformer.lambda_source import lambdas_of
from transformer.test_util import numerical_grad


def test_lambdas_in_a_for_header_each_differentiate_as_themselves():
    got = []
    for f in [lambda x: x ** 2 * np.sin(x), lambda x: np.exp(-x) * x, lambda x: x ** 3]:
        got.append((grad(f)(0.7), numerical_grad(f, (0.7,))))
    for g, want in got:
        assert np.isclose(g, want, atol=1e-6)
    assert len({round(g, 6) for g, _ in got}) == 3


def test_lambda_in_a_one_line_try_and_a_multiline_dict():
    try: value = jit(grad(lambda x: np.sum(np.tanh(x) * x)))(np.ones(3))  # noqa: E701
    except ZeroDivisionError: value = None  # noqa: E701
    assert np.allclose(value, 1 - np.tanh(1.0) ** 2 + np.tanh(1.0))
    table = {"sq": lambda x, k=2.0: k * x * x,
             "cube": lambda x: x * x * x}
    assert np.isclose(grad(table["sq"])(1.5), 6.0)
    assert np.isclose(grad(table["cube"])(1.5), 6.75)


def test_cut_out_lambdas_keep_their_line_and_column():
    text = ("for t in [lambda: grad(lambda x: f(x, np.sin))(x3), lambda v: v]:\n"
            "    fs = {'a': lambda x, y=2: x * y,\n"
            "          'b': lambda x: [v for v in x]}\n")
    lines = text.splitlines()
    found = [(s.value.lineno, s.value.col_offset) for s in lambdas_of(text).body]
    assert found == [(1, 10), (1, 23), (1, 52), (2, 15), (3, 15)]
    for line, col in found:
        assert lines[line - 1][col:].startswith("lambda")
    bodies = [ast.unparse(gast.gast_to_ast(s.value)) for s in lambdas_of(text).body]
    assert bodies[1] == "lambda x: f(x, np.sin)" and bodies[4] == "lambda x: [v for v in x]"
