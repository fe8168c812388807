"""The parallel scheduler: xdist's public ``Scheduling`` protocol (``xdist.scheduler.protocol``),
returned from ``pytest_xdist_make_scheduler``, over the run's work units (:func:`units.scope_finder`).

It subclasses no xdist scheduler and reads no xdist attribute beyond what a worker node offers every
scheduler (``gateway.id``, ``shutting_down``, ``send_runtest_some``, ``shutdown``), so xdist can change
its own schedulers freely. Work units as ``xdist_group`` under xdist's ``loadgroup`` were weighed and
not taken: ``loadgroup`` waits for every worker to collect, orders units by nothing, and gives a worker
its next unit while two checks are left, and each of those cost the measured speed-ups below.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import pytest

from amp_conformance.engine.parallel import units
from amp_conformance.engine.protocol import AnyProtocol as AmpProtocol

Work = dict[str, dict[str, bool]]
"""Work units by name, each its node ids and whether each has run."""


class WorkerNode(Protocol):
    """What the scheduler asks of a worker node (xdist's ``WorkerController``)."""

    @property
    def gateway(self) -> Any: ...

    @property
    def shutting_down(self) -> bool: ...

    def send_runtest_some(self, indices: Sequence[int]) -> None: ...

    def shutdown(self) -> None: ...


def _pending(work: Work) -> int:
    return sum(1 for unit in work.values() for done in unit.values() if not done)


def _workers_of(config: pytest.Config) -> int:
    from xdist.workermanage import parse_tx_spec_config  # type: ignore[import-untyped]

    return len(parse_tx_spec_config(config))


class WorkUnitScheduling:
    """Each serial group runs on one worker, one check at a time; a declared scope's checks run
    together; the workers take the next unit as they free up, the serial groups first, then the
    costliest (:func:`units.unit_cost_estimate`).

    Work starts on the first worker that has collected, not once every worker has: on two cores, eight
    workers take seconds to start, and the first ones ready (the serial group of passes, the longest
    chain, on the very first) would otherwise wait for the last. A worker that collects later joins as
    it is ready; its collection must equal the first one's, as xdist asks of all. The units are the
    first worker's reading of its collection (``units_of(node)``, :func:`units.post_work_units`) where
    it gave one, else ``unit_of`` (the controller's registry). A worker gets its next unit when one
    check is left (xdist's scope scheduling: two), and near the end the freer worker is favoured
    (:meth:`_favour_the_freer`, :meth:`_others_take_the_rest`)."""

    def __init__(
        self,
        numnodes: int,
        unit_of: Callable[[str], str],
        unit_costs: Mapping[str, float],
        check_cost: Callable[[str], float],
        *,
        units_of: Callable[[Any], Mapping[str, str]] = lambda node: {},
        log: Callable[..., object] = lambda *args: None,
    ) -> None:
        self.numnodes = numnodes
        self.collection: list[str] | None = None
        """The first worker's collection, once :meth:`schedule` has read it."""
        self._unit_of = unit_of
        self._unit_costs = unit_costs
        self._check_cost = check_cost
        self._units_of = units_of
        self._log = log
        self._queue: OrderedDict[str, dict[str, bool]] = OrderedDict()
        """The units no worker has been given yet, in the order they are given."""
        self._held: dict[Any, Work] = {}
        """Worker node -> the units it was given (every node the scheduler knows is a key)."""
        self._collections: dict[Any, list[str]] = {}
        """Worker node -> its collection, once it equals the first one's."""
        self._positions: dict[Any, dict[str, int]] = {}
        self._serving: set[Any] = set()
        self._units: Mapping[str, str] = {}
        self._ordered = False
        self._unit_cost: Callable[[str], float] = lambda unit: 0.0
        """A unit's expected seconds, set when the queue is first ordered (:meth:`_order`)."""

    # xdist's Scheduling protocol ------------------------------------------------------------------

    @property
    def nodes(self) -> list[Any]:
        return list(self._held)

    @property
    def collection_is_completed(self) -> bool:
        if self.collection == []:  # nothing collected: xdist's own rule, once every worker is in
            return len(self._collections) >= self.numnodes
        return bool(self._collections)

    @property
    def tests_finished(self) -> bool:
        if not self.collection_is_completed or self._queue:
            return False
        return all(_pending(work) < 2 for work in self._held.values())

    @property
    def has_pending(self) -> bool:
        return bool(self._queue) or any(_pending(work) for work in self._held.values())

    @property
    def queued_units(self) -> list[str]:
        """The units no worker has been given yet, in the order they will be."""
        return list(self._queue)

    def held_units(self, node: Any) -> list[str]:
        """The units ``node`` has been given."""
        return list(self._held.get(node, {}))

    def add_node(self, node: Any) -> None:
        if node in self._held:
            raise ValueError(f"worker {node.gateway.id} added twice")
        self._held[node] = {}

    def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
        if node not in self._held:  # removed (it died) before its collection was read
            return
        if self.collection is not None and self._collections and list(collection) != self.collection:
            from xdist.report import report_collection_diff  # type: ignore[import-untyped]

            first = next(iter(self._collections))
            self._log(report_collection_diff(self.collection, collection, first.gateway.id, node.gateway.id))
            return
        self._collections[node] = list(collection)

    def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
        nodeid = self._collections[node][item_index]
        self._held[node][self._unit(nodeid)][nodeid] = True
        self._reschedule(node)

    def mark_test_pending(self, item: str) -> None:
        raise NotImplementedError("work units are never stolen back")

    def remove_pending_tests_from_node(self, node: Any, indices: Sequence[int]) -> None:
        raise NotImplementedError("work units are never stolen back")

    def remove_node(self, node: Any) -> str | None:
        """Forget ``node`` (it finished, or died): the check it was running when it died, whose unit
        goes back in the queue with the rest it held, for the others (a ``KeyError`` for a node the
        scheduler does not know, as xdist expects)."""
        self._serving.discard(node)
        work = self._held.pop(node)
        self._positions.pop(node, None)
        crashed = next((nodeid for unit in work.values() for nodeid, done in unit.items() if not done), None)
        if crashed is None:
            return None
        self._queue.update((name, unit) for name, unit in work.items() if not all(unit.values()))
        for other in list(self._held):
            self._reschedule(other)
        return crashed

    def schedule(self) -> None:
        if self.collection is None:
            first, collection = next(iter(self._collections.items()))
            self.collection = list(collection)
            self._units = self._units_of(first)
            if not self.collection:
                return
            for nodeid in self.collection:
                self._queue.setdefault(self._unit(nodeid), {})[nodeid] = False
        elif not self.collection:
            return
        for node in self.nodes:
            if node in self._serving or node not in self._collections:
                continue  # already working, or still collecting (or its collection differed)
            self._serving.add(node)
            self._reschedule(node)

    # the rules ------------------------------------------------------------------------------------

    def _unit(self, nodeid: str) -> str:
        return self._units.get(nodeid) or self._unit_of(nodeid)

    def _reschedule(self, node: Any) -> None:
        # xdist's scope scheduling gives a worker its next unit while it still has two checks to run;
        # a unit of one or two long checks then holds the next unit back from an idle worker, and the
        # run ends unevenly. Here a worker gets its next unit when one check is left (which it cannot
        # start without the next: pytest tears down knowing what comes next)
        if node not in self._serving or node.shutting_down:
            return
        if not self._queue:
            node.shutdown()
            return
        while self._queue and _pending(self._held[node]) <= 1:
            self._order()
            if self._others_take_the_rest(node):
                node.shutdown()  # it runs what it holds; the units left wait for the freer
                return
            self._favour_the_freer(node)
            self._assign(node)

    def _assign(self, node: Any) -> None:
        name, unit = self._queue.popitem(last=False)
        self._held[node][name] = unit
        positions = self._positions.get(node)
        if positions is None:
            positions = self._positions[node] = {n: i for i, n in enumerate(self._collections[node])}
        node.send_runtest_some([positions[nodeid] for nodeid, done in unit.items() if not done])

    def _left(self, node: Any) -> float:
        """The measured seconds of the checks ``node`` still has to run (the one running included)."""
        return sum(
            self._check_cost(nodeid)
            for unit in self._held[node].values()
            for nodeid, done in unit.items()
            if not done
        )

    def _others_take_the_rest(self, node: Any) -> bool:
        """At the very end: whether the other workers, each taking the next costliest unit as it frees
        up, take every unit left before ``node`` frees up. A unit given to ``node`` then only waits
        behind its last check while a worker that could run it sits idle, and the run ends later:
        ``node`` is let go instead (xdist's scope scheduling gives it the unit)."""
        others = [other for other in self._serving if other is not node and not other.shutting_down]
        if len(others) < len(self._queue):
            return False  # more units left than other workers: never let a worker go that early
        # what each has left is summed only now: until the very end the count above answers
        free = [(self._left(node), 0), *((self._left(other), 1) for other in others)]  # a tie: node
        heapq.heapify(free)
        for unit in self._queue:
            until, other = heapq.heappop(free)
            if not other:
                return False
            heapq.heappush(free, (until + self._unit_cost(unit), 1))
        return True

    def _favour_the_freer(self, node: Any) -> None:
        """Near the end, a worker whose last check runs longer than another worker has left takes the
        smallest unit, leaving the next costliest to the worker that frees up first (a worker holding a
        check cannot wait: it runs that check once it knows what comes next)."""
        if len(self._queue) < 2:
            return
        others = [
            self._left(other) for other in self._serving if other is not node and not other.shutting_down
        ]
        if others and min(others) < self._left(node):
            smallest = min(self._queue, key=self._unit_cost)
            self._queue.move_to_end(smallest, last=False)

    def _order(self) -> None:
        if not self._ordered:
            # the serial groups are the longest chains: they start first, then the costliest units
            self._ordered = True
            self._unit_cost = units.unit_cost_estimate(
                self._unit_costs, {name: len(unit) for name, unit in self._queue.items()}
            )
            ranked = sorted(
                self._queue.items(),
                key=lambda item: (not item[0].startswith("serial:"), -self._unit_cost(item[0])),
            )
            self._queue.clear()
            self._queue.update(ranked)


def make_scheduler(
    config: pytest.Config,
    log: Any,
    protocol: AmpProtocol,
    *,
    units_of: Callable[[Any], Mapping[str, str]] = lambda node: {},
    numnodes: int | None = None,
) -> WorkUnitScheduling:
    """The scheduler of a parallel run of ``protocol`` (its units :func:`units.scope_finder`'s, its
    costs ``Protocol.unit_costs`` and ``check_costs``), for ``numnodes`` workers (by default the
    ``--tx`` specs xdist starts)."""
    producer = None if log is None else getattr(log, "ampsched", None)
    return WorkUnitScheduling(
        _workers_of(config) if numnodes is None else numnodes,
        units.scope_finder(protocol),
        getattr(protocol, "unit_costs", {}),
        units.check_cost_estimate(getattr(protocol, "check_costs", {})),
        units_of=units_of,
        log=producer if callable(producer) else (lambda *args: None),
    )
