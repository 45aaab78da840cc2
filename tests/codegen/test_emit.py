"""Source emission keeps the meaning of the tree it prints."""
import gast

from codegen.emit import to_source
from transformer.syntax import const, name


def test_negative_constant_base_of_power_keeps_its_parentheses():
    tree = gast.Expression(body=gast.BinOp(left=const(-2), op=gast.Pow(), right=name("k")))
    text = to_source(gast.Module(body=[gast.Expr(value=tree.body)], type_ignores=[])).strip()
    assert eval(text, {"k": 2}) == 4 and eval(text, {"k": 3}) == -8
