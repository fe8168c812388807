"""The parallel scheduler starts work on the first worker that has collected (issue 25 §2), with
xdist's own bookkeeping: fake worker nodes stand for xdist's WorkerController."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest

from amp_conformance.amp01.protocol import PROTOCOL
from amp_conformance.engine import parallel


@dataclass(eq=False)
class FakeNode:
    """What the scheduler asks of a worker node: run these indexes, shut down."""

    name: str
    sent: list[list[int]] = field(default_factory=list)
    shutting_down: bool = False

    @property
    def gateway(self) -> SimpleNamespace:
        return SimpleNamespace(id=self.name)

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.append(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


COLLECTION = [
    "test_read.py::test_a",
    "test_read.py::test_b",
    "test_list.py::test_c",
    "test_list.py::test_d",
    "test_cell.py::test_e",
]


@pytest.fixture
def scheduler(monkeypatch: pytest.MonkeyPatch) -> Any:
    import xdist.scheduler.loadscope as loadscope  # type: ignore[import-untyped]

    monkeypatch.setattr(loadscope, "parse_tx_spec_config", lambda config: ["popen"] * 3)
    monkeypatch.setattr(parallel, "scope_finder", lambda protocol: lambda nodeid: nodeid.split("::")[0])
    return parallel.make_scheduler(pytest.Config.__new__(pytest.Config), None, PROTOCOL)


def _three_nodes(scheduler: Any) -> list[FakeNode]:
    """Three workers the scheduler knows, none of which has collected yet."""
    nodes = [FakeNode(f"gw{i}") for i in range(3)]
    for node in nodes:
        scheduler.add_node(node)
    return nodes


def test_the_first_worker_to_collect_starts_before_the_others(scheduler: Any) -> None:
    nodes = _three_nodes(scheduler)
    scheduler.add_node_collection(nodes[0], COLLECTION)
    assert scheduler.collection_is_completed
    scheduler.schedule()
    assert nodes[0].sent and not nodes[1].sent and not nodes[2].sent
    scheduler.add_node_collection(nodes[1], COLLECTION)
    scheduler.schedule()
    assert nodes[1].sent, "a worker that collects later joins"
    assert len(nodes[0].sent) == 1, "the first worker is not given a second unit by another's arrival"
    sent = [i for node in nodes for batch in node.sent for i in batch]
    assert len(sent) == len(set(sent)), "no check is sent twice"


def test_a_worker_whose_collection_differs_gets_no_work(scheduler: Any) -> None:
    nodes = _three_nodes(scheduler)
    scheduler.add_node_collection(nodes[0], COLLECTION)
    scheduler.schedule()
    scheduler.add_node_collection(nodes[1], COLLECTION[:-1])
    scheduler.schedule()
    assert not nodes[1].sent


def test_a_worker_ready_after_the_queue_emptied_is_shut_down(scheduler: Any) -> None:
    nodes = _three_nodes(scheduler)
    scheduler.add_node_collection(nodes[0], COLLECTION)
    scheduler.schedule()
    for _ in range(3):  # the first worker takes every unit as it frees up
        for index in nodes[0].sent[-1]:
            scheduler.mark_test_complete(nodes[0], index)
    assert not scheduler.workqueue
    scheduler.add_node_collection(nodes[2], COLLECTION)
    scheduler.schedule()
    assert nodes[2].shutting_down and not nodes[2].sent


def test_an_empty_collection_waits_for_every_worker_as_xdist_does(scheduler: Any) -> None:
    nodes = _three_nodes(scheduler)
    scheduler.add_node_collection(nodes[0], [])
    scheduler.schedule()
    assert scheduler.collection == [] and not scheduler.collection_is_completed


def test_the_costliest_units_start_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Longest-processing-time order from the measured costs; a unit without a figure is estimated
    from its checks at the measured seconds per check (test_list: 2 checks x 10/3 s)."""
    import xdist.scheduler.loadscope as loadscope

    monkeypatch.setattr(loadscope, "parse_tx_spec_config", lambda config: ["popen"] * 3)
    monkeypatch.setattr(parallel, "scope_finder", lambda protocol: lambda nodeid: nodeid.split("::")[0])
    protocol = SimpleNamespace(unit_costs={"test_cell.py": 9.0, "test_read.py": 1.0})
    scheduler = parallel.make_scheduler(pytest.Config.__new__(pytest.Config), None, protocol)
    nodes = _three_nodes(scheduler)
    for node in nodes:
        scheduler.add_node_collection(node, COLLECTION)
        scheduler.schedule()
    first = [[COLLECTION[i].split("::")[0] for i in node.sent[0]] for node in nodes]
    assert first == [["test_cell.py"], ["test_list.py", "test_list.py"], ["test_read.py", "test_read.py"]]


def test_a_unit_cost_is_measured_or_estimated_from_its_checks() -> None:
    cost = parallel.unit_cost_estimate({"a": 6.0, "gone": 99.0}, {"a": 3, "b": 2})
    assert cost("a") == 6.0 and cost("b") == 4.0  # 2 s per check, as measured on "a"
    assert parallel.unit_cost_estimate({}, {"a": 3})("a") == 3.0  # nothing measured: by checks


def test_the_measured_costs_name_only_units_that_exist() -> None:
    """unit_costs.json (scripts/unit_costs.py) is re-measured when a unit it names is gone."""
    from amp_conformance.engine.marking import checks_of

    scope_of = parallel.scope_finder(PROTOCOL)
    units = {scope_of(spec.nodeid) for spec in checks_of(PROTOCOL.name)}
    assert PROTOCOL.unit_costs, "amp01/checks/unit_costs.json is missing or unreadable"
    assert set(PROTOCOL.unit_costs) <= units, set(PROTOCOL.unit_costs) - units
