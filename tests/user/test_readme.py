"""The READMEs: the Chinese one matches the English one section for section (heading
levels in the same order, the same code blocks), each links to the other at the top, and
the SciPy pattern the English one shows runs and recovers known parameters."""
import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
ENGLISH = ROOT / "README.md"
CHINESE = ROOT / "README.zh-CN.md"

FENCE = re.compile(r"^( *)```[^\n]*\n.*?^\1```$", re.S | re.M)   # also fences in lists


def headings(text: str) -> list[str]:
    """`#`-headings outside code blocks, as their level markers (`##`)."""
    return [line.split(" ", 1)[0] for line in FENCE.sub("", text).splitlines()
            if re.match(r"#{1,6} ", line)]


def code_blocks(text: str) -> list[str]:
    return [match.group(0) for match in FENCE.finditer(text)]


def test_chinese_readme_has_the_same_sections_in_the_same_order():
    english, chinese = ENGLISH.read_text(), CHINESE.read_text()
    assert len(headings(english)) > 10
    assert headings(chinese) == headings(english)


def test_chinese_readme_has_the_same_code_blocks():
    english, chinese = ENGLISH.read_text(), CHINESE.read_text()
    assert len(code_blocks(english)) > 10
    assert code_blocks(chinese) == code_blocks(english)


def test_each_readme_links_to_the_other_at_the_top():
    english = ENGLISH.read_text().splitlines()[:4]
    chinese = CHINESE.read_text().splitlines()[:4]
    assert any("(README.zh-CN.md)" in line for line in english)
    assert any("(README.md)" in line for line in chinese)


def section(text: str, title: str) -> str:
    return text.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def loss(params, data):
    """Squared error of a two-parameter model; its minimum is at eps = 1.2, sigma = 0.95.
    Scaled so that SLSQP's default tolerance (on changes of the value) is tight enough."""
    total = 0.0
    for k in range(data.shape[0]):
        r = params["eps"] * np.exp(-data[k] / params["sigma"]) - \
            1.2 * np.exp(-data[k] / 0.95)
        total += 100.0 * r * r
    return total


@pytest.mark.slow
def test_the_scipy_pattern_in_the_readme_runs_and_recovers_known_parameters(tmp_path):
    pytest.importorskip("scipy")
    block = code_blocks(section(ENGLISH.read_text(), "SciPy optimizers"))[0]
    code = block.split("\n", 1)[1].rsplit("```", 1)[0]
    path = tmp_path / "readme_scipy.py"      # secant reads functions from their file
    path.write_text("import numpy as np\nfrom test_readme import loss\n"
                    "data = np.linspace(0.2, 3.0, 12)\n" + code)
    spec = importlib.util.spec_from_file_location("readme_scipy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = module.unravel(module.result.x)                     # the SLSQP result
    np.testing.assert_allclose([found["eps"], found["sigma"]], [1.2, 0.95], rtol=1e-4)
    np.testing.assert_allclose([module.params["eps"], module.params["sigma"]],
                               [1.2, 0.95], rtol=1e-4)         # the L-BFGS-B result
    assert found["eps"] * found["sigma"] <= 1.5 + 1e-9
