"""The suite's own scheduling over two workers (tests/conftest.py): the units a worker takes first."""

from __future__ import annotations

import json
from types import SimpleNamespace

from tests import conftest


class Worker:
    """What the scheduler asks of a pytest-xdist worker: the indices of the tests to run."""

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices

    def shutdown(self) -> None:
        self.shutting_down = True


def test_each_worker_starts_on_a_real_release_unit_the_full_runs_first(tmp_path) -> None:
    """pytest-xdist hands each worker its first units when it has queued them by their count of
    tests: the real-release units must be ahead of a module of many quick tests by then."""
    quick = [f"tests/quick.py::test_{n}" for n in range(6)]  # one unit: a module fixture
    real = ["tests/real/test_a.py::test_one", "tests/real/test_a.py::test_two"]
    edits = ["tests/check/test_incremental.py::test_real", "tests/resident/test_resident.py::test_real"]
    collection = [*quick, *real, "tests/single.py::test_alone", *edits]
    groups = {**{nodeid: "tests/quick.py" for nodeid in quick},
              **{nodeid: f"{conftest.REAL_RELEASES_GROUP}:tests/real/test_a.py" for nodeid in real},
              **{nodeid: conftest.FULL_RUNS_GROUP for nodeid in edits}}
    (tmp_path / "gw0.json").write_text(json.dumps(groups))
    values = {"dist": "loadgroup", "tx": ["2*popen"]}
    config = SimpleNamespace(getvalue=values.get, option=SimpleNamespace(loadscopereorder=True),
                             _sglang_contracts_groups=str(tmp_path))
    scheduler = conftest.pytest_xdist_make_scheduler(config, None)
    workers = [Worker("gw0"), Worker("gw1")]
    for worker in workers:
        scheduler.add_node(worker)
        scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    first = [{collection[index] for index in worker.sent[:2]} for worker in workers]
    assert first == [set(edits), set(real)]
