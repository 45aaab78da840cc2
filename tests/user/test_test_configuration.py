"""The test configuration (tests/conftest.py): the quick set's sampling of parametrized
cases, SECANT_QUICK_CASES, and --runslow starting the longest files first."""
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


def test_every_longest_file_exists(conftest):
    root = os.path.dirname(TESTS)
    missing = [name for name in conftest.LONGEST_FILES_FIRST
               if not os.path.isfile(os.path.join(root, name))]
    assert not missing


def test_runslow_starts_the_longest_files_first(conftest):
    class Config:
        rootpath = "/repo"

    class Item:
        def __init__(self, path):
            self.path = path

    first, second = conftest.LONGEST_FILES_FIRST[:2]
    items = [Item("/repo/tests/a.py"), Item(f"/repo/{second}"), Item("/repo/tests/b.py"),
             Item("/repo/tests/b.py"), Item(f"/repo/{first}")]
    conftest._start_longest_files_first(Config, items)
    assert [item.path for item in items] == [f"/repo/{first}", f"/repo/{second}",
                                             "/repo/tests/b.py", "/repo/tests/b.py",
                                             "/repo/tests/a.py"]


class _Worker:
    """What pytest-xdist's scheduler reads of a worker: its id, and the tests it is sent."""

    def __init__(self, name):
        self.gateway = type("Gateway", (), {"id": name})()
        self.sent, self.shutting_down = [], False

    def send_runtest_some(self, indices):
        self.sent.extend(indices)

    def shutdown(self):
        pass


class _TwoWorkers:
    """The session's configuration, as pytest-xdist's scheduler reads it, with two workers
    (also under `pytest -n0`)."""

    def __init__(self, config):
        self.option = config.option

    def getvalue(self, name):
        return ["2*popen"] if name == "tx" else getattr(self.option, name)


def test_xdist_hands_out_the_files_in_the_order_they_were_sorted(pytestconfig):
    """pytest-xdist sorts files by their number of tests unless told not to (setup.cfg's
    --no-loadscope-reorder); sorted so, a file of a few ten-minute tests would start last."""
    scheduling = pytest.importorskip("xdist.scheduler")
    collection = ["tests/long.py::test_a", "tests/many.py::test_1", "tests/many.py::test_2",
                  "tests/many.py::test_3", "tests/short.py::test_x"]
    scheduler = scheduling.LoadFileScheduling(_TwoWorkers(pytestconfig))
    workers = [_Worker("gw0"), _Worker("gw1")]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    first_sent = [collection[worker.sent[0]].split("::")[0] for worker in workers]
    assert first_sent == ["tests/long.py", "tests/many.py"]
