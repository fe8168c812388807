"""Parallel runs on pytest-xdist: which process is which, and what crosses between them.

The controller (the process the user started) checks nothing itself: it runs the preflight, settles
what every worker must agree on (the run id, the server's conventions) and hands it to each worker in
``workerinput``; each worker runs checks under its own namespace and cleans up its own cells; its
results come back on the test reports (``report.amp_result``, carried by pytest's own report
serialisation) and its counts in ``workeroutput``. The controller merges them into one :class:`Run`,
which every report renders exactly as a serial run's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pytest

from amp_conformance.engine import forkserver
from amp_conformance.engine.exchange import Exchange, exchange_from_wire, exchange_to_wire
from amp_conformance.engine.forkserver import ForkServer, package_modules
from amp_conformance.engine.marking import check_by_nodeid, checks_of
from amp_conformance.engine.protocol import Protocol
from amp_conformance.engine.registry import level_of
from amp_conformance.engine.replay import ReplayContext
from amp_conformance.engine.report import prerender
from amp_conformance.engine.run import CheckResult, Run
from amp_conformance.engine.shared_store import mark_done
from amp_conformance.engine.verdict import Finding, RootStep, resolve

#: Where a check the registry does not know runs: one at a time, beside nothing (slower, never wrong).
UNKNOWN_GROUP = "passes"

#: What xdist appends to a node id grouped with ``xdist_group`` under ``--dist loadgroup``.
_GROUP_SUFFIX = re.compile(r"@[\w-]+$")
RESULT_ATTRIBUTE = "amp_result"


def is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def is_controller(config: pytest.Config) -> bool:
    """This process hands checks to xdist workers (``-n N`` with N > 0)."""
    if is_worker(config):
        return False
    return bool(getattr(config.option, "tx", None)) and getattr(config.option, "dist", "no") != "no"


def worker_input(config: pytest.Config) -> dict[str, Any]:
    value: dict[str, Any] = getattr(config, "workerinput", {})
    return value


def worker_output(config: pytest.Config) -> dict[str, Any] | None:
    value: dict[str, Any] | None = getattr(config, "workeroutput", None)
    return value


def plain_nodeid(nodeid: str) -> str:
    """The check's node id as a serial run names it: without the ``@group`` suffix xdist's workers add
    under ``--dist loadgroup`` to tests marked ``xdist_group`` (pytest before 9.2)."""
    return _GROUP_SUFFIX.sub("", nodeid) if "@" in nodeid.rsplit("]", 1)[-1] else nodeid


# what crosses -------------------------------------------------------------------------------------


def result_to_wire(result: CheckResult, root_step: RootStep | None) -> dict[str, Any]:
    """A worker's check result as plain data (bytes, strings, numbers, lists and dicts), with the
    broken step it reported as its own failure (``root_step``), which the controller may fold into an
    earlier reporter, as a serial run would have."""
    data: dict[str, Any] = {}
    for field in dataclasses.fields(CheckResult):
        value = getattr(result, field.name)
        if field.name == "exchanges":
            value = [exchange_to_wire(e) for e in value]
        elif field.name == "failing_exchange":
            value = _index_of(result, value)
        elif field.name == "warnings":
            value = [finding.as_report() for finding in value]
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, str):
            value = str(value)  # an Outcome or Level member as the plain string it stands for
        elif isinstance(value, Mapping):
            value = dict(value)
        data[field.name] = value
    data["nodeid"] = plain_nodeid(result.nodeid)
    data["root_step"] = root_step.as_wire() if root_step is not None else None
    return data


def result_from_wire(
    data: dict[str, Any], replay: ReplayContext | None
) -> tuple[CheckResult, RootStep | None]:
    """The check result a worker sent, and its ``root_step``."""
    exchanges = [exchange_from_wire(e, replay) for e in data.get("exchanges", [])]
    values: dict[str, Any] = {}
    for field in dataclasses.fields(CheckResult):
        if field.name not in data:
            continue
        value = data[field.name]
        if field.name == "exchanges":
            value = exchanges
        elif field.name == "failing_exchange":
            value = _exchange_at(exchanges, value, replay)
        elif field.name == "warnings":
            value = [Finding.from_report(entry) for entry in value]
        values[field.name] = value
    step = data.get("root_step")
    return CheckResult(**values), RootStep.from_wire(step) if isinstance(step, dict) else None


def _index_of(result: CheckResult, exchange: Exchange | None) -> int | dict[str, Any] | None:
    """The failing exchange as its place in the check's exchanges (or whole, when it is not there)."""
    if exchange is None:
        return None
    for index, candidate in enumerate(result.exchanges):
        if candidate is exchange:
            return index
    return exchange_to_wire(exchange)


def _exchange_at(
    exchanges: list[Exchange], value: int | dict[str, Any] | None, replay: ReplayContext | None
) -> Exchange | None:
    if isinstance(value, int):
        return exchanges[value] if 0 <= value < len(exchanges) else None
    if isinstance(value, dict):
        return exchange_from_wire(value, replay)
    return None


# merging ------------------------------------------------------------------------------------------


def merge_worker_output(run: Run, output: dict[str, Any], *, counted: int = 0) -> None:
    """Add one worker's counts (requests, cleanup) to the controller's run; ``counted``: its requests
    already added as its checks' results came in."""
    counts = output.get("amp")
    if not isinstance(counts, dict):
        return
    run.worker_requests += int(counts.get("requests", 0)) - counted
    run.worker_cleanup_requests += int(counts.get("cleanup_requests", 0))
    run.active_session.merge_worker_summary(counts)  # cleanup, and whether the server went away


def fold_root_steps(run: Run, root_steps: Mapping[str, RootStep], order: list[str]) -> None:
    """Workers decide alone whether a broken step nobody asks about is theirs to report; a serial run
    lets only the first check (in collection order) report it and blocks the others under it
    (``verdict.resolve``)."""
    resolution = resolve(
        run.results, level_of, root_causes=run.root_causes, root_steps=root_steps, order=order
    )
    run.results, run.root_causes = resolution.results, resolution.root_causes


def in_collection_order(run: Run, order: list[str]) -> None:
    """Put the merged results in the order a serial run would have produced them."""
    position = {nodeid: index for index, nodeid in enumerate(order)}
    ranked = sorted(run.results.items(), key=lambda item: position.get(item[0], len(position)))
    run.results = dict(ranked)


# the controller's side ----------------------------------------------------------------------------


# the briefing -------------------------------------------------------------------------------------

#: Where a worker finds the path of the briefing file in its ``workerinput``.
BRIEFING_PATH_KEY = "amp_briefing_path"
#: Where the briefing names the file its second part (what the protocol detects) is posted to.
DETAIL_PATH_KEY = "amp_briefing_detail_path"


class Briefing:
    """What every worker starts from, settled by the controller's preflight *while the workers start*.

    The preflight asks the server several things one after the other (a second or more against a
    distant server) and the workers take a second or more of imports to start: done in turn, one
    waits for the other. So the controller starts the workers at once with only the path of a file
    in their ``workerinput``, runs the preflight in a thread, and writes its outcome there (whole, by
    an atomic rename); each worker reads it once it has collected, before it takes work. Where no
    temporary folder can be made, the briefing goes in ``workerinput`` as before (the preflight first)."""

    def __init__(self) -> None:
        self.folder: str | None = None
        self._thread: threading.Thread | None = None
        self._outcome: dict[str, Any] | None = None

    @property
    def path(self) -> str | None:
        return None if self.folder is None else os.path.join(self.folder, "briefing.json")

    @property
    def detail_path(self) -> str | None:
        """Where the second part goes: what the protocol detects (:meth:`start`'s ``detail``)."""
        return None if self.folder is None else os.path.join(self.folder, "briefing-detail.json")

    def open(self) -> bool:
        """Make the folder the briefing will be written to; False when none can be made."""
        try:
            self.folder = tempfile.mkdtemp(prefix="amp-conformance-briefing-")
        except OSError:
            self.folder = None
        return self.folder is not None

    def start(
        self, settle: Callable[[], dict[str, Any]], detail: Callable[[], dict[str, Any]] | None = None
    ) -> None:
        """Run ``settle`` (the preflight) in a thread and post its outcome; then, when it found no
        problem, ``detail`` (what the protocol detects once for all, a few requests more), posted as
        a second part that the outcome names (``DETAIL_PATH_KEY``): the workers start on the first
        and read the second when a check first needs it (``ProtocolSession.adopt_briefing_later``)."""

        def work() -> None:
            try:
                outcome = settle()
            except BaseException as exc:  # the thread ends with an outcome, never a traceback
                outcome = {"amp_preflight_problem": f"the preflight stopped: {type(exc).__name__}: {exc}"}
            if detail is None or outcome.get("amp_preflight_problem"):
                self._outcome = outcome
                self._post(self.path, outcome)
                return
            self._post(self.path, {**outcome, DETAIL_PATH_KEY: self.detail_path})
            try:
                found = detail()
            except BaseException:
                found = {}
            self._post(self.detail_path, found)
            self._outcome = {**outcome, "amp_protocol": found}

        self._thread = threading.Thread(target=work, name="amp-preflight", daemon=True)
        self._thread.start()

    def _post(self, path: str | None, outcome: dict[str, Any]) -> None:
        if path is None:
            return
        with contextlib.suppress(OSError):  # a worker that cannot read it stops with the reason
            with open(f"{path}.part", "w", encoding="utf-8") as handle:
                json.dump(outcome, handle)
            os.replace(f"{path}.part", path)

    def outcome(self, timeout: float | None) -> dict[str, Any] | None:
        """The preflight's outcome once it is known (None if it is not within ``timeout``)."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._outcome

    def close(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None


def await_briefing(path: str, timeout: float) -> dict[str, Any]:
    """A worker's wait for the controller's briefing file: its content, or a preflight problem saying
    why there is none (the worker then runs nothing, as after a failed preflight)."""
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            with open(path, encoding="utf-8") as handle:
                briefing = json.load(handle)
            if isinstance(briefing, dict):
                return briefing
            return {"amp_preflight_problem": "the controller's briefing is not a JSON object"}
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            return {"amp_preflight_problem": f"cannot read the controller's briefing: {exc}"}
        if time.monotonic() >= deadline:
            return {"amp_preflight_problem": f"no briefing from the controller within {timeout:.0f} s"}
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


class Controller:
    """The pytest plugin of a parallel run's controller: it briefs every worker (``workerinput``),
    turns the results that come back on the reports into the run's, and adds up what the workers
    counted when they stop."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.briefing: dict[str, Any] = {}
        """What every worker starts from (set before the workers start): the run id and the briefing
        file's path, or (without a file) the whole briefing."""
        self.deferred = Briefing()
        self.order: list[str] = []
        self.root_steps: dict[str, RootStep] = {}
        self.missing: list[str] = []
        """Checks a worker was given and never reported (it died with them)."""
        self._counted: dict[str, int] = {}
        """Worker id -> requests its checks reported so far (the progress line shows them)."""
        self._released: list[Any] = []
        """Gateways of workers let go as they finished (:meth:`_release`)."""
        self._started = 0
        """Worker processes started so far (their start-up tiers, :func:`start_niceness`)."""
        self.fork_server: ForkServer | None = None
        """Where the workers are forked from, when they are (:meth:`fork_workers`)."""

    def fork_workers(self, config: pytest.Config) -> None:
        """Start the workers of a plain ``-n N`` run from a fork server that imports the engine and the
        protocol's checks once (``engine.forkserver``) instead of in every worker; any other ``--tx``
        is left as given."""
        specs = list(getattr(config.option, "tx", None) or ())
        if len(specs) < 2 or any(spec != "popen" for spec in specs):
            return
        checks = package_modules(self.run.protocol.checks_package)
        self.fork_server = forkserver.take_early()  # the command started it with its first line
        if self.fork_server is not None:
            self.fork_server.preload(checks)
        else:
            self.fork_server = ForkServer.start([*forkserver.WORKER_MODULES, *checks])
        if self.fork_server is not None:
            config.option.tx = [f"popen//python={self.fork_server.python()}"] * len(specs)

    def close(self) -> None:
        """Once the run is over: the briefing's folder, the workers let go, the fork server."""
        self.deferred.close()
        self.join_released()
        if self.fork_server is not None:
            self.fork_server.close()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Any) -> None:
        INTERRUPT_GATE.hold()  # until every worker has started (:meth:`pytest_collection`)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        INTERRUPT_GATE.release()  # the controller's next step once xdist has started the workers
        # The check registry, for the node ids no worker's reading of its units names
        # (post_work_units); read now, not while the workers start: it holds the interpreter for a
        # while, and xdist starts the workers one after the other from this thread
        threading.Thread(
            target=_read_registry, args=(self.run.protocol.name,), name="amp-check-registry", daemon=True
        ).start()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_newgateway(self, gateway: Any) -> None:
        # before the worker imports anything (xdist sends its code next): later tiers yield the cores
        niceness = start_niceness(self._started, self.run.workers, usable_cores())
        self._started += 1
        if niceness and self.fork_server is None:  # a forked worker has little start-up to yield
            channel = gateway.remote_exec(
                f"import os\nif hasattr(os, 'nice'):\n    os.nice({niceness})\nchannel.send(None)"
            )
            channel.receive(timeout=10)
            channel.waitclose(timeout=10)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput.update(self.briefing)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self.order:
            self.order = [plain_nodeid(nodeid) for nodeid in ids]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # before the terminal, JUnit and progress see it: the report names the check as a serial run does
        report.nodeid = plain_nodeid(report.nodeid)
        data = getattr(report, RESULT_ATTRIBUTE, None)
        if not isinstance(data, dict):
            return
        result, root_step = result_from_wire(data, self.run.active_session.replay)
        self.run.results[result.nodeid] = result
        prerender(self.run, result)
        node = getattr(report, "node", None)  # the worker that sent it (set by xdist)
        worker = str(node.gateway.id) if node is not None else ""
        self._counted[worker] = self._counted.get(worker, 0) + (result.requests or 0)
        self.run.worker_requests += result.requests or 0
        self.run.selected_requirements.update(result.requirements)
        if root_step is not None:
            self.root_steps[result.nodeid] = root_step

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        folder = self.deferred.folder
        return make_scheduler(
            config,
            log,
            self.run.protocol,
            units_of=lambda node: read_work_units(folder, str(node.gateway.id)) if folder else {},
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", None)
        if isinstance(output, dict):
            merge_worker_output(self.run, output, counted=self._counted.get(str(node.gateway.id), 0))
        if self.deferred.folder is not None:  # a worker that died never said it: the others stop waiting
            mark_done(self.deferred.folder, str(node.gateway.id))
        if error is None and isinstance(output, dict):
            self._release(node)

    def _release(self, node: Any) -> None:
        """Let a worker that has finished (it sent its results and cleaned up) exit now rather than
        when the last one has: a process's exit takes a while, and xdist would otherwise wait for all of
        them one after the other at the end of the run. :meth:`join_released` waits for them."""
        gateway = getattr(node, "gateway", None)
        if gateway is None:
            return
        with contextlib.suppress(Exception):  # xdist's own teardown stops it otherwise
            gateway.exit()
            self._released.append(gateway)

    def join_released(self, timeout: float = 10.0) -> None:
        """Wait (at most ``timeout`` seconds in all) for the workers let go to have exited."""
        deadline = time.monotonic() + timeout
        for gateway in self._released:
            with contextlib.suppress(Exception):
                gateway.join(max(0.0, deadline - time.monotonic()))
        self._released.clear()

    def merge(self) -> None:
        """Once every worker is done: the results in serial order, each broken step reported once."""
        order = self.order or list(self.run.results)
        self.missing = [nodeid for nodeid in self.order if nodeid not in self.run.results]
        in_collection_order(self.run, order)
        fold_root_steps(self.run, self.root_steps, order)


# start-up -----------------------------------------------------------------------------------------


def _read_registry(protocol_name: str) -> None:
    with contextlib.suppress(Exception):  # whoever needs it reads it again and reports what fails
        checks_of(protocol_name)


class _InterruptGate:
    """An interrupt that arrives while the workers' processes are being started waits until they all
    are: a worker interrupted between its start and the first line execnet sends it reads nothing
    and dies with a traceback of its own on the run's output. The command's signal handler asks
    :meth:`defer` before it raises."""

    def __init__(self) -> None:
        self._holding = False
        self._held: list[int] = []

    def defer(self, signum: int) -> bool:
        """Keep ``signum`` for :meth:`release` if the gate is holding (True), else leave it (False)."""
        if self._holding:
            self._held.append(signum)
        return self._holding

    def hold(self) -> None:
        self._holding, self._held = True, []

    def release(self) -> None:
        """Stop holding; raise the interrupt that came meanwhile, if one did."""
        self._holding = False
        if self._held:
            raise KeyboardInterrupt(f"signal {self._held[0]}")


INTERRUPT_GATE = _InterruptGate()


def usable_cores() -> int:
    """The cores this process may run on (its affinity, as a container or ``taskset`` limits it)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        try:
            return max(1, len(affinity(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def start_niceness(index: int, workers: int, cores: int) -> int:
    """The scheduling niceness worker ``index`` (in start order) of ``workers`` starts at, on ``cores``.

    Starting a worker is ~1 CPU-second of imports and collection. Eight started at once on two cores
    share them evenly and are all ready only ~4 s later; work starts on the first ready (the
    scheduler below), so what matters is how soon the first ones are. Workers start in tiers of one per
    core: the first tier at the run's own priority, each later tier lower (up to 19, the lowest), so the
    first tier has the cores nearly to itself, then the next, and no core sits idle meanwhile. A worker
    mostly waits on the server once started, so the lower priority it keeps costs it little; with a
    core per worker every worker starts at 0."""
    tiers = -(-workers // cores)
    if tiers <= 1:
        return 0
    return min(19, round((index // cores) * 19 / (tiers - 1)))


# scheduling ---------------------------------------------------------------------------------------


def scope_finder(protocol: Protocol) -> Callable[[str], str]:
    """The work unit a node id (relative to the checks folder) belongs to in a parallel run: its serial
    group (``serial:passes``...: the protocol's :meth:`~Protocol.serial_group` of the check), else the
    ``scope`` its ``@check`` names, else its module: a module's checks make their shared values in the
    order a serial run does (units of one check were tried: a check that acts as another agent and
    then adopts a value another worker made with other roles is refused, and the counts vary with the
    schedule). Read from the check registry, without a collection. A node id the registry does not
    know goes to the first serial group: slower, never wrong."""

    def scope_of(nodeid: str) -> str:
        nodeid = plain_nodeid(nodeid)
        spec = check_by_nodeid(protocol.name, nodeid)
        if spec is None:
            return f"serial:{UNKNOWN_GROUP}"
        group = protocol.serial_group(spec)
        if group is not None:
            return f"serial:{group}"
        path = nodeid.split("::", 1)[0]
        return f"{path}::{spec.scope}" if spec.scope else path

    return scope_of


def serial_check_finder(protocol: Protocol) -> Callable[[str], str | None]:
    """The serial group a node id's check runs in, or None."""
    scope_of = scope_finder(protocol)

    def group_of(nodeid: str) -> str | None:
        scope = scope_of(nodeid)
        return scope.removeprefix("serial:") if scope.startswith("serial:") else None

    return group_of


def unit_cost_estimate(measured: Mapping[str, float], checks: Mapping[str, int]) -> Callable[[str], float]:
    """A work unit's expected cost: its measured seconds (``Protocol.unit_costs``), else its checks
    times the measured seconds per check of the units that have a figure (one when none has).
    Scheduling the costliest first (longest-processing-time order) keeps the workers' ends close."""
    known = [unit for unit in checks if unit in measured]
    counted = sum(checks[unit] for unit in known)
    per_check = sum(measured[unit] for unit in known) / counted if counted else 1.0

    def cost(unit: str) -> float:
        return measured[unit] if unit in measured else checks.get(unit, 1) * per_check

    return cost


def check_cost_estimate(measured: Mapping[str, float]) -> Callable[[str], float]:
    """A check's expected seconds: its measured figure (``Protocol.check_costs``, by node id below the
    checks folder), else the mean of the measured ones (a tenth of a second when none is)."""
    mean = sum(measured.values()) / len(measured) if measured else 0.1

    def cost(nodeid: str) -> float:
        return measured.get(nodeid.split("/checks/", 1)[-1], mean)

    return cost


def post_work_units(folder: str, worker: str, nodeids: Iterable[str], protocol: Protocol) -> None:
    """A worker's reading of the work units of what it collected (:func:`scope_finder`), put beside
    the briefing for the controller's scheduler: the worker has the check modules imported already,
    while the controller may still be importing them to read its own registry."""
    scope_of = scope_finder(protocol)
    units = {nodeid: scope_of(nodeid) for nodeid in nodeids}
    path = os.path.join(folder, f"units-{worker}.json")
    with contextlib.suppress(OSError):  # the scheduler then reads the registry itself
        with open(f"{path}.part", "w", encoding="utf-8") as handle:
            json.dump(units, handle)
        os.replace(f"{path}.part", path)


def read_work_units(folder: str, worker: str) -> dict[str, str]:
    """What :func:`post_work_units` put there for ``worker`` (empty when nothing readable is)."""
    try:
        with open(os.path.join(folder, f"units-{worker}.json"), encoding="utf-8") as handle:
            units = json.load(handle)
    except (OSError, ValueError):
        return {}
    if not isinstance(units, dict):
        return {}
    return {str(nodeid): str(unit) for nodeid, unit in units.items()}


def make_scheduler(
    config: pytest.Config,
    log: Any,
    protocol: Protocol,
    *,
    units_of: Callable[[Any], Mapping[str, str]] = lambda node: {},
) -> Any:
    """xdist's scope scheduling over :func:`scope_finder`'s work units: each serial group runs on one
    worker, one check at a time; a declared scope's checks run together; the workers take the next
    unit as they free up, the costliest first (:func:`unit_cost_estimate`).

    Work starts on the first worker that has collected, not once every worker has: on two cores,
    eight workers take seconds to start, and the first ones ready (the serial group of passes, the
    longest chain, on the very first) would otherwise wait for the last. A worker that collects later
    joins as it is ready; its collection must equal the first one's, as xdist asks of all. The units
    are the first worker's reading of its collection (``units_of(node)``, :func:`post_work_units`)
    where it gave one, else the controller's registry."""
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    scope_of = scope_finder(protocol)
    check_cost = check_cost_estimate(getattr(protocol, "check_costs", {}))

    class AmpScheduling(LoadScopeScheduling):  # type: ignore[misc]
        _ordered = False
        collection: list[str] | None
        registered_collections: dict[Any, list[str]]
        numnodes: int

        def __init__(self, config: pytest.Config, log: Any = None) -> None:
            super().__init__(config, log)
            self._serving: set[Any] = set()
            self._units: Mapping[str, str] = {}
            self._unit_cost: Callable[[str], float] = lambda unit: 0.0
            """A unit's expected seconds, set when the queue is first ordered (:meth:`_order`)."""

        @property
        def collection_is_completed(self) -> bool:
            if self.collection == []:  # nothing collected: xdist's own path, once every worker is in
                return len(self.registered_collections) >= self.numnodes
            return bool(self.registered_collections)

        def schedule(self) -> None:
            if self.collection is None:
                first, collection = next(iter(self.registered_collections.items()))
                self.collection = list(collection)
                self._units = units_of(first)
                if not self.collection:
                    return
                for nodeid in self.collection:
                    self.workqueue.setdefault(self._split_scope(nodeid), {})[nodeid] = False
            elif not self.collection:
                return
            for node in self.nodes:
                if node in self._serving or node not in self.registered_collections:
                    continue  # already working, or still collecting (or its collection differed)
                self._serving.add(node)
                self._reschedule(node)

        def add_node_collection(self, node: Any, collection: Sequence[str]) -> None:
            if node not in self.assigned_work:  # removed (it died) before its collection was read
                return
            super().add_node_collection(node, collection)

        def _reschedule(self, node: Any) -> None:
            # xdist's scope scheduling gives a worker its next unit while it still has two checks to
            # run; a unit of one or two long checks then holds the next unit back from an idle
            # worker, and the run ends unevenly. Here a worker gets its next unit when one check is
            # left (which it cannot start without the next: pytest tears down knowing what comes next)
            if node not in self._serving or node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            while self.workqueue and self._pending_of(self.assigned_work[node]) <= 1:
                self._order()
                if self._others_take_the_rest(node):
                    node.shutdown()  # it runs what it holds; the units left wait for the freer
                    return
                self._favour_the_freer(node)
                self._assign_work_unit(node)

        def _left(self, node: Any) -> float:
            """The measured seconds of the checks ``node`` still has to run (the one running included)."""
            return sum(
                check_cost(nodeid)
                for unit in self.assigned_work[node].values()
                for nodeid, done in unit.items()
                if not done
            )

        def _others_take_the_rest(self, node: Any) -> bool:
            """At the very end: whether the other workers, each taking the next costliest unit as it
            frees up, take every unit left before ``node`` frees up. A unit given to ``node`` then
            only waits behind its last check while a worker that could run it sits idle, and the run
            ends later: ``node`` is let go instead (xdist's scope scheduling gives it the unit)."""
            others = [other for other in self._serving if other is not node and not other.shutting_down]
            if len(others) < len(self.workqueue):
                return False  # more units left than other workers: never let a worker go that early
            # what each has left is summed only now: until the very end the count above answers
            free = [(self._left(node), 0), *((self._left(other), 1) for other in others)]  # a tie: node
            heapq.heapify(free)
            for unit in self.workqueue:
                until, other = heapq.heappop(free)
                if not other:
                    return False
                heapq.heappush(free, (until + self._unit_cost(unit), 1))
            return True

        def _favour_the_freer(self, node: Any) -> None:
            """Near the end, a worker whose last check runs longer than another worker has left takes
            the smallest unit, leaving the next costliest to the worker that frees up first (a worker
            holding a check cannot wait: it runs that check once it knows what comes next)."""
            if len(self.workqueue) < 2:
                return
            others = [
                self._left(other) for other in self._serving if other is not node and not other.shutting_down
            ]
            if others and min(others) < self._left(node):
                smallest = min(self.workqueue, key=self._unit_cost)
                self.workqueue.move_to_end(smallest, last=False)

        def remove_node(self, node: Any) -> Any:
            self._serving.discard(node)
            return super().remove_node(node)

        def _split_scope(self, nodeid: str) -> str:
            return self._units.get(nodeid) or scope_of(nodeid)

        def _order(self) -> None:
            if not self._ordered:
                # the serial groups are the longest chains: they start first, then the costliest units
                self._ordered = True
                self._unit_cost = unit_cost_estimate(
                    protocol.unit_costs, {u: len(c) for u, c in self.workqueue.items()}
                )
                units = sorted(
                    self.workqueue.items(),
                    key=lambda u: (not u[0].startswith("serial:"), -self._unit_cost(u[0])),
                )
                self.workqueue.clear()
                self.workqueue.update(units)

        def _assign_work_unit(self, node: Any) -> None:
            self._order()
            super()._assign_work_unit(node)

    return AmpScheduling(config, log)
