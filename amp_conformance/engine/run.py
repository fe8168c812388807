"""State of one run the engine keeps: its id and namespace, results, root causes, expectations, timing.

Everything about talking to the server (connections, identities, created data, cleanup) is the
protocol's :class:`~amp_conformance.engine.protocol.ProtocolSession`, held in :attr:`Run.session`.
Every identity a protocol derives comes from the run's ULID (:attr:`Run.prefix`), so two runs against
one server never see each other's data.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ulid import ULID

from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.options import SuiteOptions

if TYPE_CHECKING:
    from amp_conformance.engine.protocol import Protocol, ProtocolSession
    from amp_conformance.engine.shared_store import SharedStore


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
        self.root_steps: dict[str, dict[str, str]] = {}
        """Check -> the broken step it reported as its own failure because no selected check asks
        about it (``{"requirement", "step", "level"}``)."""
        self.worker_requests = 0
        """Requests the workers of a parallel run sent (their cleanup included); 0 in a serial run."""
        self.worker_cleanup_requests = 0
        self.fuzz_requests = 0
        """Requests the fuzz area sent so far (the progress line shows them while it runs)."""
        self._fuzz_lock = threading.Lock()
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

    def note_fuzz_requests(self, count: int) -> None:
        """Called by a fuzz driver as it goes, from the fuzz engine's threads too."""
        with self._fuzz_lock:
            self.fuzz_requests += count

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
