"""The test configuration (tests/conftest.py): the quick set's sampling of parametrized
cases and SECANT_QUICK_CASES."""
import os

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def conftest(request):
    """tests/conftest.py as pytest loaded it (`import conftest` may find another directory's
    conftest.py, which pytest loads under the same name)."""
    wanted = os.path.join(TESTS, "conftest.py")
    for plugin in request.config.pluginmanager.get_plugins():
        if os.path.abspath(getattr(plugin, "__file__", "") or "") == wanted:
            return plugin
    raise LookupError(f"pytest has not loaded {wanted}")


class _Item:
    """Just what the sampling reads of a collected test."""

    def __init__(self, path, name, case):
        self.path, self.originalname, self.callspec = path, name, case
        self.keywords, self.marks = {}, []

    def add_marker(self, mark):
        self.marks.append(mark)


def _kept(conftest, n, quick_cases, monkeypatch):
    monkeypatch.setattr(conftest, "QUICK_CASES", quick_cases)
    items = [_Item("t.py", "test_f", k) for k in range(n)]
    conftest._sample_parametrized_cases(items)
    return [item.callspec for item in items if not item.marks]


def test_the_quick_set_keeps_the_first_the_last_and_one_between(conftest, monkeypatch):
    assert _kept(conftest, 10, 3, monkeypatch) == [0, 4, 9]   # round(4.5) is 4
    assert _kept(conftest, 3, 3, monkeypatch) == [0, 1, 2]


def test_one_quick_case_keeps_the_first_of_each_test(conftest, monkeypatch):
    assert _kept(conftest, 10, 1, monkeypatch) == [0]
    assert _kept(conftest, 1, 1, monkeypatch) == [0]


def test_zero_quick_cases_keeps_every_case(conftest, monkeypatch):
    assert _kept(conftest, 10, 0, monkeypatch) == list(range(10))
