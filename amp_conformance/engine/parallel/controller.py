"""The controller's plugin of a parallel run (:class:`Controller`)."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest

from amp_conformance.engine import forkserver
from amp_conformance.engine.forkserver import ForkServer, package_modules
from amp_conformance.engine.parallel.briefing import Briefing
from amp_conformance.engine.parallel.budget import SharedBudget
from amp_conformance.engine.parallel.results import (
    fold_root_steps,
    in_collection_order,
    merge_worker_output,
    result_from_wire,
)
from amp_conformance.engine.parallel.roles import RESULT_ATTRIBUTE, plain_nodeid
from amp_conformance.engine.parallel.scheduler import make_scheduler
from amp_conformance.engine.parallel.startup import (
    INTERRUPT_GATE,
    _read_registry,
    start_niceness,
    usable_cores,
)
from amp_conformance.engine.parallel.units import read_work_units
from amp_conformance.engine.report import prerender
from amp_conformance.engine.run import Run
from amp_conformance.engine.shared_store import mark_done
from amp_conformance.engine.verdict import RootStep


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
        self.budget = SharedBudget()
        """The run's one budget of requests in flight, shared with every worker (``engine.limiter``)."""
        self.budget.open(run.active_session, run.options.max_in_flight)

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
        self.budget.close()
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
        self.budget.brief(node.workerinput)

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
