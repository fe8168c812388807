"""The parallel scheduler starts work on the first worker that has collected (issue 25 §2), on
xdist's public Scheduling protocol (issue 35): fake worker nodes stand for xdist's WorkerController."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from amp_conformance.amp01.protocol import PROTOCOL
from amp_conformance.engine import parallel
from amp_conformance.engine.check_registry import checks_of
from amp_conformance.engine.parallel import units as parallel_units


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
    monkeypatch.setattr(parallel_units, "scope_finder", lambda protocol: lambda nodeid: nodeid.split("::")[0])
    return parallel.make_scheduler(pytest.Config.__new__(pytest.Config), None, PROTOCOL, numnodes=3)


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
    given = len(nodes[0].sent)
    scheduler.add_node_collection(nodes[1], COLLECTION)
    scheduler.schedule()
    assert nodes[1].sent, "a worker that collects later joins"
    assert len(nodes[0].sent) == given, "the first worker is not given another unit by another's arrival"
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
    assert not scheduler.queued_units
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
    monkeypatch.setattr(parallel_units, "scope_finder", lambda protocol: lambda nodeid: nodeid.split("::")[0])
    protocol = SimpleNamespace(unit_costs={"test_cell.py": 9.0, "test_read.py": 1.0})
    scheduler = parallel.make_scheduler(pytest.Config.__new__(pytest.Config), None, protocol, numnodes=3)
    nodes = _three_nodes(scheduler)
    for node in nodes:
        scheduler.add_node_collection(node, COLLECTION)
        scheduler.schedule()
    given = [[COLLECTION[i].split("::")[0] for i in batch] for batch in nodes[0].sent + nodes[1].sent]
    # test_cell's one check cannot start alone (a worker runs a check once it knows the next), so the
    # first worker has the next unit at once
    assert given == [["test_cell.py"], ["test_list.py", "test_list.py"], ["test_read.py", "test_read.py"]]
    assert [len(node.sent) for node in nodes] == [2, 1, 0]


def test_a_worker_gets_its_next_unit_when_one_check_is_left(scheduler: Any) -> None:
    """Not while two are (xdist's rule), which kept the next unit from a worker that would be idle
    sooner; one left is one the worker cannot start without its successor."""
    nodes = _three_nodes(scheduler)
    scheduler.add_node_collection(nodes[0], COLLECTION)
    scheduler.schedule()
    done: list[int] = []
    while scheduler.queued_units:
        sent = [index for batch in nodes[0].sent for index in batch]
        assert len(sent) - len(done) >= 2, "a worker always holds a check to run and its successor"
        units = len(nodes[0].sent)
        done.append(next(index for index in sent if index not in done))
        scheduler.mark_test_complete(nodes[0], done[-1])
        left = len(sent) - len(done)
        assert (len(nodes[0].sent) > units) == (left <= 1), f"{left} checks left"


def test_a_unit_cost_is_measured_or_estimated_from_its_checks() -> None:
    cost = parallel.unit_cost_estimate({"a": 6.0, "gone": 99.0}, {"a": 3, "b": 2})
    assert cost("a") == 6.0 and cost("b") == 4.0  # 2 s per check, as measured on "a"
    assert parallel.unit_cost_estimate({}, {"a": 3})("a") == 3.0  # nothing measured: by checks


def test_the_measured_costs_name_only_units_that_exist() -> None:
    """unit_costs.json (scripts/unit_costs.py) is re-measured when a unit it names is gone."""
    scope_of = parallel.scope_finder(PROTOCOL)
    units = {scope_of(spec.nodeid) for spec in checks_of(PROTOCOL.name)}
    assert PROTOCOL.unit_costs, "amp01/checks/unit_costs.json is missing or unreadable"
    assert set(PROTOCOL.unit_costs) <= units, set(PROTOCOL.unit_costs) - units


def test_the_units_are_the_first_workers_reading_where_it_gave_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """parallel.post_work_units: the scheduler takes the first collecting worker's units; a node id
    the reading lacks is the registry's (here: its module)."""
    monkeypatch.setattr(parallel_units, "scope_finder", lambda protocol: lambda nodeid: nodeid.split("::")[0])
    reading = {nodeid: "one-unit" for nodeid in COLLECTION[:4]}
    asked: list[str] = []

    def units_of(node: Any) -> dict[str, str]:
        asked.append(node.gateway.id)
        return reading

    scheduler = parallel.make_scheduler(
        pytest.Config.__new__(pytest.Config), None, PROTOCOL, units_of=units_of, numnodes=3
    )
    nodes = _three_nodes(scheduler)
    scheduler.add_node_collection(nodes[1], COLLECTION)
    scheduler.schedule()
    assert asked == ["gw1"]
    assert set(scheduler.queued_units) | {u for node in nodes for u in scheduler.held_units(node)} == {
        "one-unit",
        "test_cell.py",
    }


def test_a_workers_reading_of_its_units_crosses_through_the_folder(tmp_path: Path) -> None:
    ids = [spec.nodeid for spec in checks_of(PROTOCOL.name)][:20]
    parallel.post_work_units(str(tmp_path), "gw3", ids, PROTOCOL)
    scope_of = parallel.scope_finder(PROTOCOL)
    assert parallel.read_work_units(str(tmp_path), "gw3") == {nodeid: scope_of(nodeid) for nodeid in ids}
    assert parallel.read_work_units(str(tmp_path), "gw4") == {}
    (tmp_path / "units-gw5.json").write_text("[1, 2]")
    assert parallel.read_work_units(str(tmp_path), "gw5") == {}
    (tmp_path / "units-gw6.json").write_text("{not json")
    assert parallel.read_work_units(str(tmp_path), "gw6") == {}


def test_a_collection_from_a_worker_already_removed_is_ignored(scheduler: Any) -> None:
    """A worker that died (and was removed) before the controller read its collection gets nothing,
    and the run goes on (xdist's scope scheduling asserts instead: an internal error)."""
    nodes = _three_nodes(scheduler)
    scheduler.remove_node(nodes[1])
    scheduler.add_node_collection(nodes[1], COLLECTION)
    scheduler.add_node_collection(nodes[0], COLLECTION)
    scheduler.schedule()
    assert nodes[0].sent and not nodes[1].sent


def _two_workers(
    monkeypatch: pytest.MonkeyPatch, checks: dict[str, float], units: dict[str, float]
) -> tuple[Any, list[FakeNode], list[str], Callable[[FakeNode], list[str]]]:
    """A scheduler of two workers with these measured costs, both collected and given their first
    units; and what each was sent, by unit (the module part of a node id)."""
    monkeypatch.setattr(parallel_units, "scope_finder", lambda protocol: lambda nodeid: nodeid.split("::")[0])
    protocol = SimpleNamespace(unit_costs=units, check_costs=checks)
    scheduler = parallel.make_scheduler(pytest.Config.__new__(pytest.Config), None, protocol, numnodes=2)
    collection = list(checks)
    nodes = [FakeNode("gw0"), FakeNode("gw1")]
    for node in nodes:
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, collection)
        scheduler.schedule()

    def units_sent(node: FakeNode) -> list[str]:
        return [collection[batch[0]].split("::")[0] for batch in node.sent]

    return scheduler, nodes, collection, units_sent


def test_a_worker_whose_last_check_runs_long_takes_the_smallest_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Near the end, the next costliest unit waits for the worker that frees up first: gw0's last
    check (5 s) outlasts what gw1 has left (3 s), so gw0 takes the smallest unit and gw1, whose last
    check is short, takes the costliest left."""
    checks = {
        "slow.py::a": 0.1,
        "slow.py::z": 5.0,
        "big.py::a": 1.0,
        "big.py::b": 1.0,
        "big.py::c": 1.0,
        "quick.py::a": 0.1,
        "quick.py::b": 0.1,
        "small.py::a": 0.05,
    }
    units = {"slow.py": 5.1, "big.py": 3.0, "quick.py": 0.2, "small.py": 0.05}
    scheduler, nodes, collection, units_sent = _two_workers(monkeypatch, checks, units)

    assert units_sent(nodes[0]) == ["slow.py"] and units_sent(nodes[1]) == ["big.py"]
    scheduler.mark_test_complete(nodes[0], collection.index("slow.py::a"))  # 5 s left, gw1 has 3 s
    assert units_sent(nodes[0]) == ["slow.py", "small.py"]
    for name in ("big.py::a", "big.py::b"):  # 1 s left, gw0 has 5 s
        scheduler.mark_test_complete(nodes[1], collection.index(name))
    assert units_sent(nodes[1]) == ["big.py", "quick.py"]


def test_a_check_cost_is_measured_or_the_mean_of_the_measured() -> None:
    cost = parallel.check_cost_estimate({"t.py::a": 1.0, "t.py::b": 3.0})
    assert cost("t.py::a") == 1.0 and cost("somewhere/checks/t.py::b") == 3.0 and cost("t.py::c") == 2.0
    assert parallel.check_cost_estimate({})("t.py::a") == 0.1


def test_the_measured_check_costs_name_only_checks_that_exist() -> None:
    """unit_costs.json's per-check figures (scripts/unit_costs.py) name checks of the registry."""
    nodeids = {spec.nodeid.split("/checks/", 1)[-1] for spec in checks_of(PROTOCOL.name)}
    assert PROTOCOL.check_costs, "amp01/checks/unit_costs.json has no per-check figures"
    assert set(PROTOCOL.check_costs) <= nodeids, sorted(set(PROTOCOL.check_costs) - nodeids)[:5]


def _end_of_run(slow_last: float, big_each: float) -> dict[str, float]:
    """The checks' seconds of the let-go tests: slow.py's last check, big.py's three, last.py's one."""
    return {
        "slow.py::a": 0.1,
        "slow.py::z": slow_last,
        "big.py::a": big_each,
        "big.py::b": big_each,
        "big.py::c": big_each,
        "last.py::a": 1.0,
    }


def test_a_worker_whose_last_check_outlasts_the_others_is_let_go_at_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At the very end, a worker whose last check runs long is shut down rather than given the last
    unit, which the worker that frees up first takes: given to the slow one, it would wait behind
    that check (5 s) while the other sat idle."""
    checks = _end_of_run(slow_last=5.0, big_each=1.0)
    units = {"slow.py": 5.1, "big.py": 3.0, "last.py": 1.0}
    scheduler, nodes, collection, units_sent = _two_workers(monkeypatch, checks, units)

    assert units_sent(nodes[0]) == ["slow.py"] and units_sent(nodes[1]) == ["big.py"]
    scheduler.mark_test_complete(nodes[0], collection.index("slow.py::a"))  # 5 s left, gw1 has 3 s
    assert units_sent(nodes[0]) == ["slow.py"] and nodes[0].shutting_down
    for name in ("big.py::a", "big.py::b"):
        scheduler.mark_test_complete(nodes[1], collection.index(name))
    assert units_sent(nodes[1]) == ["big.py", "last.py"] and not nodes[1].shutting_down


def test_a_worker_is_not_let_go_while_it_would_free_up_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same end with the costs the other way round: the worker asking frees up first, so it takes
    the last unit and nobody is let go."""
    checks = _end_of_run(slow_last=0.5, big_each=3.0)
    units = {"big.py": 9.0, "slow.py": 2.0, "last.py": 1.0}
    scheduler, nodes, collection, units_sent = _two_workers(monkeypatch, checks, units)

    assert units_sent(nodes[0]) == ["big.py"] and units_sent(nodes[1]) == ["slow.py"]
    scheduler.mark_test_complete(nodes[1], collection.index("slow.py::a"))  # 0.5 s left, gw0 has 9 s
    assert units_sent(nodes[1]) == ["slow.py", "last.py"] and not nodes[1].shutting_down


def test_the_scheduler_is_xdists_public_protocol_and_no_subclass_of_an_xdist_scheduler() -> None:
    """Issue 35: every member of xdist.scheduler.protocol.Scheduling, nothing inherited from xdist."""
    from xdist.scheduler.protocol import Scheduling  # type: ignore[import-untyped]

    members = {name for name in vars(Scheduling) if not name.startswith("_")}
    assert members >= {"schedule", "add_node", "remove_node", "mark_test_complete", "collection_is_completed"}
    assert all(hasattr(parallel.WorkUnitScheduling, name) for name in members), members
    assert not [c for c in parallel.WorkUnitScheduling.__mro__ if c.__module__.startswith("xdist")]


def test_a_worker_that_dies_gives_its_unfinished_unit_to_another(scheduler: Any) -> None:
    """xdist asks remove_node for the check a dead worker was running; the rest of its units goes to
    a worker that frees up, its finished checks not again; an unknown node is a KeyError."""
    nodes = _three_nodes(scheduler)
    for node in nodes[:2]:
        scheduler.add_node_collection(node, COLLECTION)
        scheduler.schedule()
    first = [index for batch in nodes[0].sent for index in batch]
    scheduler.mark_test_complete(nodes[0], first[0])
    dead_units = scheduler.held_units(nodes[0])
    assert scheduler.remove_node(nodes[0]) == COLLECTION[first[1]]
    with pytest.raises(KeyError):
        scheduler.remove_node(nodes[0])
    for batch in list(nodes[1].sent):
        for index in batch:
            scheduler.mark_test_complete(nodes[1], index)
    taken = {COLLECTION[i] for batch in nodes[1].sent for i in batch}
    assert COLLECTION[first[1]] in taken and COLLECTION[first[0]] not in taken
    assert COLLECTION[first[1]].split("::")[0] in scheduler.held_units(nodes[1])
    assert COLLECTION[first[0]].split("::")[0] in dead_units


def test_no_private_internals_of_xdist_pytest_atexit_or_asyncio_are_used() -> None:
    """Issue 35's bar: the names of the private surfaces parallel runs, interrupts and exits stood on."""
    import re

    package = Path(parallel.__file__).parents[2]
    private = re.compile(
        r"_split_scope|_assign_work_unit|workqueue|assigned_work|registered_collections"
        r"|_report_keyboardinterrupt|_run_exitfuncs|_get_running_loop|\._transport\b|\"_transport\""
    )
    hits = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if private.search(line)
    ]
    assert not hits, hits
