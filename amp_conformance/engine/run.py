"""State of one run the engine keeps: its id and namespace, results, root causes, expectations, timing.

Everything about talking to the server (connections, identities, created data, cleanup) is the
protocol's :class:`~amp_conformance.engine.protocol.ProtocolSession`, held in :attr:`Run.session`.
Every identity a protocol derives comes from the run's ULID (:attr:`Run.prefix`), so two runs against
one server never see each other's data.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ulid import ULID

from amp_conformance.engine.options import SuiteOptions
from amp_conformance.engine.registry import level_of
from amp_conformance.engine.verdict import CheckResult, RootStep, RunFacts, Verdict

__all__ = ["CheckResult", "Run"]

if TYPE_CHECKING:
    from amp_conformance.engine.protocol import Protocol, ProtocolSession
    from amp_conformance.engine.shared_store import SharedStore


class Run:
    """The session-wide state of one run (one per process; a parallel run's workers share its id)."""

    def __init__(
        self,
        options: SuiteOptions,
        protocol: Protocol,
        *,
        run_id: str | None = None,
        worker: str | None = None,
    ):
        self.options = options
        self.protocol = protocol
        self.id = ULID.from_str(run_id) if run_id else ULID()
        self.worker = worker
        """The xdist worker id (``gw0``...) in a parallel run's worker, else None."""
        self.run_prefix = f"amp-ct-{str(self.id).lower()}"
        """The run's namespace, the same in every worker of a parallel run (the agents a protocol
        derives: a step one worker makes is adopted by another playing the same agents)."""
        # a parallel run's workers share the run id; each works under its own namespace
        self.prefix = self.run_prefix + (f"-{worker}" if worker else "")
        """The worker's namespace within the run's (owners and other names no two workers may share)."""
        self.started_at = datetime.now(UTC)
        self.started_monotonic = time.monotonic()
        self.finished_monotonic: float | None = None
        self.session: ProtocolSession | None = None
        """Set right after the run is made (``protocol.open_session``)."""
        self.results: dict[str, CheckResult] = {}
        self.selected_requirements: set[str] = set()
        """Every id the selected checks cite: a broken step whose requirement no selected check asks
        about is reported by the first check it blocks, so a narrow selection still sees it."""
        self.root_causes: dict[str, str] = {}
        """Root-cause requirement -> the check that reports it as a failure."""
        self.root_steps: dict[str, RootStep] = {}
        """Check -> the broken step it reported as its own failure because no selected check asks
        about it."""
        self.worker_requests = 0
        """Requests the workers of a parallel run sent (their cleanup included); 0 in a serial run."""
        self.worker_cleanup_requests = 0
        self.workers = 1
        self.preflight_problem: str | None = None
        """Why no check may run (nothing answers, or it is no server of the protocol); exit 2."""
        self.interrupted = False
        """Set when the session was interrupted (Ctrl-C, a cancelled CI job): the verdict is incomplete."""
        self.expectations_report: dict[str, Any] | None = None
        """Set when an expectations file was applied: ``{"file", "stale"}``."""
        self.cache: dict[str, Any] = {}
        """Values several checks share (``CheckContext.shared``, the fuzz run), made once."""
        self.shared_store: SharedStore | None = None
        """A parallel run worker's view of the steps the workers share (``engine.shared_store``)."""
        self.rendered_exchanges: dict[tuple[Any, ...], dict[str, Any]] = {}
        """Exchanges as the JSON report shows them, by their recorded fields (``report.prerender``:
        a parallel run's controller renders each check's as it arrives, not all at the end)."""

    def facts(self) -> RunFacts:
        """What of the run a check's verdict depends on (``verdict.judge``)."""
        return RunFacts(
            selected_requirements=frozenset(self.selected_requirements),
            root_causes=self.root_causes,
            server_error_requirement=self.protocol.server_error_requirement,
            server_errors=self.protocol.server_errors,
            level_of=level_of,
        )

    def record(self, verdict: Verdict) -> CheckResult:
        """Keep a check's verdict: its result and the root causes it reports."""
        result = verdict.result
        self.results[result.nodeid] = result
        for rid in verdict.reports:
            self.root_causes.setdefault(rid, result.nodeid)
        if verdict.root_step is not None:
            self.root_steps[result.nodeid] = verdict.root_step
        return result

    @property
    def active_session(self) -> ProtocolSession:
        if self.session is None:
            raise RuntimeError("the run has no protocol session yet")
        return self.session

    @property
    def requests_sent(self) -> int:
        """Every request the run sent, its workers' included."""
        own = self.session.requests if self.session is not None else 0
        return own + self.worker_requests

    @property
    def cleanup_requests(self) -> int:
        own = self.session.cleanup_requests if self.session is not None else 0
        return own + self.worker_cleanup_requests

    @property
    def broken_reason(self) -> str | None:
        return self.session.broken_reason if self.session is not None else None

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
