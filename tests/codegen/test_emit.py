"""Source emission keeps the meaning of the tree it prints."""
import gast

from codegen.emit import annotate, to_source
from transformer.syntax import const, name


def test_negative_constant_base_of_power_keeps_its_parentheses():
    tree = gast.Expression(body=gast.BinOp(left=const(-2), op=gast.Pow(), right=name("k")))
    text = to_source(gast.Module(body=[gast.Expr(value=tree.body)], type_ignores=[])).strip()
    assert eval(text, {"k": 2}) == 4 and eval(text, {"k": 3}) == -8


def _annotated_function():
    inner = annotate(gast.parse("y = x + 1.0").body[0], "grad of: y = x + 1.0\nsecond line")
    loop = gast.parse("for i in range(3):\n    pass").body[0]
    loop.body = [annotate(gast.parse("x = x * 2.0").body[0], "inside the loop")]
    function = gast.parse("def f(x):\n    return x").body[0]
    function.body = [inner, loop] + function.body
    return gast.Module(body=[function], type_ignores=[])


def test_comments_precede_their_statements_and_the_tree_is_left_as_it_was():
    module = _annotated_function()
    before = gast.dump(module)
    body, loop_body = module.body[0].body, module.body[0].body[1].body
    text = to_source(module)
    assert text == ("def f(x):\n    # grad of: y = x + 1.0\n    # second line\n"
                    "    y = x + 1.0\n    for i in range(3):\n        # inside the loop\n"
                    "        x = x * 2.0\n    return x\n")
    # the markers put in to print the comments are taken out again
    assert gast.dump(module) == before
    assert module.body[0].body is body and module.body[0].body[1].body is loop_body
    assert to_source(module) == text


def test_negative_constants_of_the_tree_stay_as_they_were():
    module = gast.Module(body=[gast.Expr(value=const(-2.5))], type_ignores=[])
    assert to_source(module).strip() == "-2.5"
    assert module.body[0].value.value == -2.5
