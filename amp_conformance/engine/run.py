"""State of one run: its id, identities, connection, what it created, and what it found.

Every owner id and keyless agent id derives from the run's ULID, so two runs against one server
never see each other's data, and everything the run created can be cleaned up at the end.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import httpx
from ulid import ULID

from amp_conformance.engine.client import Client, Connection
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.options import SuiteOptions
from amp_conformance.engine.outcomes import ToolError
from amp_conformance.engine.replay import ReplayContext


class ConventionsReport(Protocol):
    """What the engine needs of a protocol's detected conventions: a report entry and its notes."""

    problems: list[str]

    def as_report(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Agent:
    """An identity the suite acts as; ``key`` is set in keys mode."""

    role: str
    id: str
    key: str | None = None

    def headers(self) -> dict[str, str]:
        headers = {"X-AMP-Agent-ID": self.id}
        if self.key is not None:
            headers["X-AMP-API-Key"] = self.key
        return headers


class NotEnoughAgents(LookupError):
    """Keys mode, and the check needs more distinct agents than keys were given."""


@dataclass
class CheckResult:
    """One check's outcome, as the report and the terminal summary show it."""

    nodeid: str
    name: str
    title: str
    requirements: tuple[str, ...]
    level: str
    area: str
    outcome: str
    message: str = ""
    duration: float = 0.0
    warnings: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    failing_exchange: Exchange | None = None
    finding_requirements: tuple[str, ...] = ()
    """The ids the fail or warn is about (the check's own unless the finding named others)."""
    expected: str | None = None
    """What the check expected, when a failure said so."""
    requests: int | None = None
    """Requests the check sent itself (None when its protocol does not count them)."""
    blocked_by: dict[str, Any] | None = None
    """For ``blocked``: ``{"requirement", "step", "check"}``, the root cause and the check reporting it."""
    expectation: dict[str, Any] | None = None
    """Set when an expectations file named this check: ``{"outcome", "reason", "link", "met"}``."""


@dataclass
class CreatedCell:
    id: str
    agent: Agent


#: ``/memories/{id}`` at the end of a URL (no query): the exchanges that can change a created cell's state.
_CELL_URL = re.compile(r"/memories/([^/?#]+)$")
#: Cleanup requests in flight at once (one connection each); a server sees at most this many.
CLEANUP_CONCURRENCY = 8


class Run:
    """The session-wide state behind the ``amp`` fixture."""

    def __init__(
        self,
        options: SuiteOptions,
        *,
        http: httpx.Client | None = None,
        run_id: str | None = None,
        worker: str | None = None,
    ):
        self.options = options
        self.id = ULID.from_str(run_id) if run_id else ULID()
        self.worker = worker
        """The xdist worker id (``gw0``...) in a parallel run's worker, else None."""
        # a parallel run's workers share the run id; each works under its own namespace
        self.prefix = f"amp-ct-{str(self.id).lower()}" + (f"-{worker}" if worker else "")
        self.started_at = datetime.now(UTC)
        self.started_monotonic = time.monotonic()
        self.finished_monotonic: float | None = None
        replay = ReplayContext.for_run(options.admin_token, options.api_keys, options.json_path)
        # A protocol that talks through its own channels (AMP v1.1) may have no base URL: the connection
        # then points nowhere and sends nothing.
        self.connection = Connection(
            options.base_url or "http://127.0.0.1:9", timeout=options.timeout, http=http, replay=replay
        )
        self._owners = itertools.count(1)
        self._agents: dict[str, Agent] = {}
        self._key_agents = list(options.api_keys.items())
        self.created: list[CreatedCell] = []
        self._creators: dict[str, str] = {}
        self._states: dict[str, str] = {}
        """Created cell id -> ``archived`` or ``deleted`` as the server last confirmed it: cleanup skips
        what a check already did."""
        self.connection.observers.append(self._track)
        self.results: dict[str, CheckResult] = {}
        self.selected_requirements: set[str] = set()
        """Every id the selected checks cite: a broken step whose requirement no selected check asks
        about is reported by the first check it blocks, so a narrow selection still sees it."""
        self.root_causes: dict[str, str] = {}
        """Root-cause requirement -> the check that reports it as a failure."""
        self.root_steps: dict[str, dict[str, str]] = {}
        """Check -> the broken step it reported as its own failure because no selected check asks
        about it (``{"requirement", "step", "level"}``)."""
        self.cleanup: dict[str, Any] = {"attempted": 0, "deleted": 0, "problems": []}
        self.cleanup_requests = 0
        self.worker_requests = 0
        """Requests the workers of a parallel run sent (their cleanup included); 0 in a serial run."""
        self.workers = 1
        self.preflight_problem: str | None = None
        self.interrupted = False
        """Set when the session was interrupted (Ctrl-C, a cancelled CI job): the verdict is incomplete."""
        """Why no check may run (nothing answers, or it is no AMP server); the run then ends with 2."""
        self.protocol_blocks: dict[str, Any] = {}
        """Report blocks a protocol package supplies at the end (``server``, ``cleanup``, ``requests``)."""
        self.expectations_report: dict[str, Any] | None = None
        """Set when an expectations file was applied: ``{"file", "stale"}``."""
        self.side_log: list[Exchange] = []
        self._spec: dict[str, Any] | None = None
        self._spec_error: str | None = None
        self.spec_failed_in_transport = False
        self._spec_fetched = False
        self.spec_status: int | None = None
        self.spec_at_end: dict[str, Any] | None = None
        self.conventions: ConventionsReport | None = None
        """Set once by the protocol package when it has detected the server's conventions."""
        self.cache: dict[str, Any] = {}
        """Results that several checks share (for example the fuzz run), computed once."""

    # identities -----------------------------------------------------------------------------

    def agent(self, role: str, *, taken: int | None = None) -> Agent:
        """The agent playing ``role``. Keyless, its id derives from the run; in keys mode the
        ``taken``-th keyed agent plays it (a check maps its own roles onto the keys in order of first
        use, so any check needing no more agents than were given can run)."""
        if not self._key_agents:
            return Agent(role, f"{self.prefix}-{role}")
        index = len(self._agents) if taken is None else taken
        if role in self._agents and taken is None:
            return self._agents[role]
        if index >= len(self._key_agents):
            raise NotEnoughAgents(
                f"this check needs {index + 1} agents with API keys, "
                f"{len(self._key_agents)} were given: add another --api-key AGENT=KEY"
            )
        agent_id, key = self._key_agents[index]
        agent = Agent(role, agent_id, key)
        if taken is None:
            self._agents[role] = agent
        return agent

    def new_owner(self) -> str:
        return f"{self.prefix}-o{next(self._owners)}"

    def client(
        self, agent: Agent | None, *, log: list[Exchange] | None = None, deadline: float | None = None
    ) -> Client:
        return Client(
            self.connection,
            headers=agent.headers() if agent else {},
            log=log if log is not None else self.side_log,
            deadline=deadline,
        )

    # what the server says about itself ---------------------------------------------------------

    def fetch_spec(self) -> dict[str, Any] | None:
        """``GET /spec`` once per run; None (with :attr:`spec_error`) when it cannot be read."""
        if not self._spec_fetched:
            self._spec_fetched = True
            try:
                reply = self.client(None).get("/spec")
                body = reply.json() if reply.status == 200 else None
            except ToolError as exc:
                self._spec_error = str(exc)
                self.spec_failed_in_transport = True
                return None
            except AssertionError as exc:
                self._spec_error = f"GET /spec did not return JSON: {exc}"
                return None
            self.spec_status = reply.status
            if isinstance(body, dict):
                self._spec = body
            else:
                self._spec_error = f"GET /spec answered {reply.status}"
        return self._spec

    def spec_state(self) -> dict[str, Any]:
        """What ``GET /spec`` gave, as plain data (a parallel run's workers adopt the controller's)."""
        self.fetch_spec()
        return {
            "spec": self._spec,
            "error": self._spec_error,
            "status": self.spec_status,
            "transport": self.spec_failed_in_transport,
        }

    def adopt_spec_state(self, state: dict[str, Any]) -> None:
        self._spec_fetched = True
        self._spec = state.get("spec")
        self._spec_error = state.get("error")
        self.spec_status = state.get("status")
        self.spec_failed_in_transport = bool(state.get("transport"))

    @property
    def spec_error(self) -> str | None:
        return self._spec_error

    def conventions_if_detected(self) -> ConventionsReport | None:
        """The conventions the protocol package detected (it sets :attr:`conventions`), if any."""
        return self.conventions

    # cleanup -----------------------------------------------------------------------------------

    def remember(self, cell_id: str, agent: Agent) -> None:
        self.created.append(CreatedCell(cell_id, agent))
        self._creators.setdefault(cell_id, agent.id)

    def creator_of(self, cell_id: str) -> str | None:
        """The agent id that created ``cell_id`` in this run, if the run created it."""
        return self._creators.get(cell_id)

    def _track(self, exchange: Exchange) -> None:
        """Note a created cell archived (PATCH answered 200 with status archived) or deleted (DELETE
        answered 204), whoever asked."""
        match = _CELL_URL.search(exchange.url)
        if match is None or match.group(1) not in self._creators:
            return
        cell_id = match.group(1)
        if exchange.method == "DELETE" and exchange.status == 204:
            self._states[cell_id] = "deleted"
        elif exchange.method == "PATCH" and exchange.status == 200 and _archived(exchange.response_body):
            self._states.setdefault(cell_id, "archived")

    def state_of(self, cell_id: str) -> str | None:
        """``archived`` or ``deleted`` when the server confirmed it for a created cell, else None."""
        return self._states.get(cell_id)

    def clean_up(self) -> None:
        """Archive and delete what the run created and is not deleted yet (several at a time);
        problems are reported, never counted as failures."""
        before = self.connection.requests
        try:
            self._clean_up()
        finally:
            self.cleanup_requests += self.connection.requests - before

    def _clean_up(self) -> None:
        if self.options.keep_cells:
            if self.created:
                self.cleanup["problems"].append(f"skipped: --keep-cells left {len(self.created)} cells")
            return
        if self.connection.broken_reason:
            if self.created:
                self.cleanup["problems"].append(
                    f"skipped: {len(self.created)} cells left ({self.connection.broken_reason})"
                )
            return
        pending: dict[str, CreatedCell] = {}
        for cell in self.created:
            pending.setdefault(cell.id, cell)
        self.cleanup["attempted"] += len(pending)
        left = [cell for cell in pending.values() if self._states.get(cell.id) != "deleted"]
        self.cleanup["deleted"] += len(pending) - len(left)
        lock = threading.Lock()
        if self.connection.http_override is not None or len(left) < 2:
            for cell in left:
                if not self._remove(cell, lock):
                    break
            return
        with ThreadPoolExecutor(max_workers=CLEANUP_CONCURRENCY, thread_name_prefix="amp-cleanup") as pool:
            list(pool.map(lambda cell: self._remove(cell, lock), left))

    def _remove(self, cell: CreatedCell, lock: threading.Lock) -> bool:
        """Archive (unless already archived) and delete one cell; False once the server is gone."""
        if self.connection.broken_reason:
            return False
        client = self.run_client(cell.agent)
        problem: str | None = None
        deleted = False
        try:
            if self._states.get(cell.id) != "archived":
                archived = client.patch(f"/memories/{cell.id}", {"lifecycle": {"status": "archived"}})
                if archived.status != 200:
                    return True  # already deleted or gone: nothing left to do
            reply = client.delete(f"/memories/{cell.id}")
            deleted = reply.status == 204
            if not deleted:
                problem = f"DELETE {cell.id} answered {reply.status}"
        except ToolError as exc:
            problem = f"{cell.id}: {exc}"
        with lock:
            if deleted:
                self.cleanup["deleted"] += 1
            if problem:
                self.cleanup["problems"].append(problem)
        return not self.connection.broken_reason

    @property
    def requests_sent(self) -> int:
        """Every request the run sent, its workers' included."""
        return self.connection.requests + self.worker_requests

    def run_client(self, agent: Agent) -> Client:
        return self.client(agent, log=[], deadline=time.monotonic() + self.options.timeout * 3)

    def close(self) -> None:
        self.connection.close()


def _archived(body: bytes) -> bool:
    try:
        document = json.loads(body)
    except ValueError:
        return False
    lifecycle = document.get("lifecycle") if isinstance(document, dict) else None
    return isinstance(lifecycle, dict) and lifecycle.get("status") == "archived"
