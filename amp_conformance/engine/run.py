"""State of one run the engine keeps: its id and namespace, results, root causes, expectations, timing;
and the seam a protocol implements against it (:class:`Protocol`, :class:`ProtocolSession`).

Everything about talking to the server (connections, identities, created data, cleanup) is the
protocol's :class:`ProtocolSession`, held in :attr:`Run.session`; the session holds its run in turn.
The two refer to each other, so they live in one module (``engine.protocol`` presents the seam).
Every identity a protocol derives comes from the run's ULID (:attr:`Run.prefix`), so two runs against
one server never see each other's data.
"""

from __future__ import annotations

import contextlib
import threading
import time
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from ulid import ULID

from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.options import OptionSpec, OptionValues, SuiteOptions
from amp_conformance.engine.verdict import CheckResult, RootStep, RunFacts, Verdict

__all__ = ["CheckResult", "Run"]

if TYPE_CHECKING:
    import httpx

    from amp_conformance.engine.catalogue import Catalogue
    from amp_conformance.engine.outcomes import Evidence
    from amp_conformance.engine.replay import ReplayContext
    from amp_conformance.engine.shared_store import SharedStore
    from amp_conformance.engine.spec import CheckSpec


class Run:
    """The session-wide state of one run (one per process; a parallel run's workers share its id)."""

    def __init__(
        self,
        options: SuiteOptions,
        protocol: AnyProtocol,
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

    def facts(self) -> RunFacts:
        """What of the run a check's verdict depends on (``verdict.judge``)."""
        return RunFacts(
            selected_requirements=frozenset(self.selected_requirements),
            root_causes=self.root_causes,
            server_error_requirement=self.protocol.server_error_requirement,
            server_errors=self.protocol.server_errors,
            level_of=self.protocol.catalogue.level_of,
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


#: The file of measured work-unit costs beside a protocol's checks (:attr:`Protocol.unit_costs`).
UNIT_COSTS_FILE = "unit_costs.json"

OptionsT = TypeVar("OptionsT")
"""What a protocol makes of its own options (None when it has none)."""
SessionT = TypeVar("SessionT", bound="ProtocolSession")
"""The protocol's run-wide session."""


class ContextLike(typing.Protocol):
    """What the engine reads of a check context: the bound of ``ContextT`` (every
    :class:`~amp_conformance.engine.context.CheckContext` has it; structural, since the context
    module builds on this one)."""

    @property
    def check_spec(self) -> CheckSpec: ...

    @property
    def evidence(self) -> Evidence: ...


ContextT = TypeVar("ContextT", bound=ContextLike)
"""The check context (the fixture value) the protocol's checks receive."""


class ProtocolSession(ABC):
    """A protocol's run-wide state: its connection(s), identities, created data and cleanup.

    The engine's :class:`~amp_conformance.engine.run.Run` keeps results, root causes, expectations and
    timing; everything a protocol needs to talk to the server lives here."""

    run: Run
    """The engine's :class:`~amp_conformance.engine.run.Run` this session belongs to."""

    @property
    @abstractmethod
    def target_label(self) -> str:
        """What the run checks, as the summary's header names it (a URL, an MCP command)."""

    @property
    def requests(self) -> int:
        """Requests (HTTP requests, JSON-RPC calls) this process sent so far."""
        return 0

    cleanup_requests: int = 0
    """Requests spent on cleanup (part of :attr:`requests`)."""

    @property
    def broken_reason(self) -> str | None:
        """Why the server is considered gone (the remaining checks end as errors), or None."""
        return None

    @property
    def replay(self) -> ReplayContext | None:
        """The run's secrets and body folder, for exchanges rebuilt from a worker's report."""
        return None

    def preflight(self) -> str | None:
        """One line saying why no check can run (nothing answers, it is not this protocol), else None."""
        return None

    def briefing(self) -> dict[str, Any]:
        """What every worker of a parallel run starts from, detected once by the controller."""
        return {}

    def adopt_briefing(self, briefing: Mapping[str, Any]) -> None:
        """A worker's side of :meth:`briefing`."""

    def adopt_briefing_later(self, fetch: Callable[[], Mapping[str, Any]]) -> None:
        """A worker's side of :meth:`briefing` when the controller posts it after the workers have
        started: ``fetch`` waits for it. A protocol may call it only when a check first needs what it
        holds (so that work starts before); by default it is adopted at once."""
        self.adopt_briefing(fetch())

    def clean_up(self, *, sparing: Sequence[object] = ()) -> None:
        """Remove what the run created (problems are reported, never counted against the server);
        ``sparing``: the protocol states (``CheckContext._shared_state``) of shared steps whose data
        another worker may still use, left for a later call (``engine.shared_store``)."""

    def worker_summary(self) -> dict[str, Any]:
        """What a worker tells the controller at its end (its counts and cleanup)."""
        return {"requests": self.requests, "cleanup_requests": self.cleanup_requests}

    def merge_worker_summary(self, summary: Mapping[str, Any]) -> None:
        """The controller's side of :meth:`worker_summary` (the request counts the engine adds itself)."""

    def report_blocks(self) -> dict[str, Any]:
        """The report's protocol-specific blocks: ``server``, ``cleanup`` and ``conventions`` (JSON
        values; ``engine.http`` gives an HTTP session's defaults)."""
        return {"server": {}, "cleanup": {"attempted": 0, "deleted": 0, "problems": []}, "conventions": None}

    def summary_lines(self) -> list[str]:
        """Lines the terminal summary shows under its header (detected conventions, for example)."""
        return []

    def mark_unavailable(self, reason: str) -> None:
        """The server is gone (a started server exited): stop sending, say why."""

    def close(self) -> None:
        """Release connections and processes (idempotent)."""


class Protocol(ABC, Generic[OptionsT, SessionT, ContextT]):
    """One protocol, as the engine needs to know it. Subclass with its three types
    (``class MyProtocol(Protocol[MyOptions, MySession, MyContext])``), fill the class attributes,
    expose an instance in the ``amp_conformance.protocols`` entry-point group.

    Option values reach it as :class:`OptionValues`, keyed by the names its options were declared
    with (:attr:`options`, :attr:`transport_options`); what :meth:`parse_options` makes of them
    comes back typed from :meth:`own_options`."""

    name: ClassVar[str]
    """``--protocol`` value (``NAME-VERSION`` by convention)."""
    title: ClassVar[str]
    """Human name (``AMP v0.1.0``)."""
    checks_package: ClassVar[str]
    """Dotted name of the package holding the ``test_*.py`` check modules (with its own pytest.ini)."""
    catalogue_package: ClassVar[str]
    """Package shipping ``contract/requirements.json``."""
    options: ClassVar[tuple[OptionSpec, ...]] = ()
    """Options only this protocol reads (``--NAME`` in the command, ``--amp-NAME`` in the plugin)."""
    server_error_requirement: ClassVar[str | None] = None
    """The requirement a 5xx (or its protocol's equivalent) breaks, whatever check saw it."""
    self_test_in_plugin: ClassVar[bool] = False
    """The plugin acts on ``--amp-protocol NAME`` alone (it can start the bundled server itself)."""
    label: ClassVar[str] = ""
    """Short name for badges and matrix columns (a name and version); empty: the :attr:`title`."""
    claims: ClassVar[tuple[str, str] | None] = None
    """What the server says of itself: (where it says it, the report's ``server`` member holding it),
    as ``("/spec", "spec")``; None: nothing."""

    @property
    def transport_options(self) -> tuple[OptionSpec, ...]:
        """Options its transport declares (``engine.http``: ``--base-url``), read like :attr:`options`."""
        return ()

    @property
    def declared_options(self) -> tuple[OptionSpec, ...]:
        """Every option this protocol reads: its transport's, then its own."""
        return (*self.transport_options, *self.options)

    @cached_property
    def checks_dir(self) -> Path:
        return Path(str(resources.files(self.checks_package)))

    @cached_property
    def catalogue(self) -> Catalogue:
        from amp_conformance.engine.catalogue import load_catalogue

        return load_catalogue(self.catalogue_package)

    def target_url(self, values: OptionValues) -> str | None:
        """The URL of the target these option values name (``SuiteOptions.base_url``); None: its
        transport has no URL, or none was given."""
        return None

    def has_target(self, values: OptionValues) -> bool:
        """Whether these option values name a target for this protocol (the plugin acts only then)."""
        return self.self_test_in_plugin

    @abstractmethod
    def parse_options(self, values: OptionValues) -> OptionsT:
        """Its own options as the typed value its session reads (``SuiteOptions.protocol_options``,
        given back by :meth:`own_options`); :class:`UsageError` for bad ones. Return None when it has
        none (``Protocol[None, ...]``)."""

    def own_options(self, options: SuiteOptions) -> OptionsT:
        """What :meth:`parse_options` made for this run, typed (options made without it, as a test
        may, read as the protocol's defaults: its options given no value)."""
        if options.protocol_options is None:
            return self.parse_options(OptionValues())
        return typing.cast(OptionsT, options.protocol_options)  # what parse_options made

    def is_self_test(self, values: OptionValues) -> bool:
        """The command was given no target of this protocol: it checks the bundled server."""
        return True

    def validate(self, options: SuiteOptions) -> None:
        """Raise :class:`UsageError` for options this protocol cannot run with."""

    def parallel_problem(self, options: SuiteOptions, *, in_process: bool) -> str | None:
        """Why this run cannot be spread over workers, or None."""
        if in_process:
            return (
                "an in-process app cannot be shared by parallel workers: give the server a port "
                "(--server-cmd or --base-url) or drop -n/--workers"
            )
        return None

    @abstractmethod
    def open_session(
        self, run: Run, *, http: httpx.Client | None, plugins: Sequence[object] = ()
    ) -> SessionT:
        """The run-wide session (``http``: send through this client instead of sockets; ``plugins``:
        the pytest plugins of the run, where a caller may have passed a target of its own)."""

    @abstractmethod
    def context(self, session: SessionT, spec: CheckSpec) -> ContextT:
        """The check context one check works with (a ``CheckContext`` subclass: the fixture value),
        for ``session`` (what :meth:`open_session` made)."""

    def server_errors(self, exchanges: Sequence[Exchange]) -> list[Exchange]:
        """The exchanges in which the server reported an error of its own (HTTP 5xx by default)."""
        return [e for e in exchanges if e.status is not None and e.status >= 500]

    def serial_group(self, spec: CheckSpec) -> str | None:
        """The serial group a check runs in during a parallel run (one check of a group at a time)."""
        return None

    @cached_property
    def unit_costs(self) -> Mapping[str, float]:
        """Seconds each work unit of a parallel run (``parallel.scope_finder``) took in a measured run,
        by which the scheduler starts the longest first: ``unit_costs.json`` beside the checks when
        there is one (``scripts/unit_costs.py`` writes it from a serial run's JSON report), else none.
        Only an order: a stale or missing figure can cost speed, never a verdict."""
        return self._measured("units")

    @cached_property
    def check_costs(self) -> Mapping[str, float]:
        """Seconds each check took in the same measured run (``unit_costs.json``'s ``checks``, by node
        id below the checks folder), by which the scheduler tells how long a worker has left near the
        end of a run. Only an order, as :attr:`unit_costs`."""
        return self._measured("checks")

    def _measured(self, member: str) -> dict[str, float]:
        """``unit_costs.json``'s ``member``: name -> seconds, the readable figures only."""
        import json

        try:
            document = json.loads((self.checks_dir / UNIT_COSTS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        figures = document.get(member) if isinstance(document, dict) else None
        if not isinstance(figures, dict):
            return {}
        return {
            str(name): float(cost)
            for name, cost in figures.items()
            if isinstance(cost, int | float) and not isinstance(cost, bool) and cost >= 0
        }

    def health_url(self, base_url: str) -> str:
        """For ``--server-cmd``: the URL that answers 2xx once a started server is up (ValueError for
        a base URL this protocol cannot use; by default: a protocol with no HTTP transport)."""
        raise ValueError(f"{self.name} servers are not started with --server-cmd (no HTTP transport)")

    def reachable(self, options: SuiteOptions) -> str | None:
        """The command's cheap reachability probe before pytest starts: a reason, or None."""
        return None

    @contextlib.contextmanager
    def self_test(self, values: OptionValues) -> Iterator[str]:
        """The command with no target: start the bundled server, set its target in ``values`` by the
        options' declared names (``values["base-url"] = url``) and yield the line announcing it."""
        yield f"no target given, checking the bundled {self.title} reference server"

    def __repr__(self) -> str:
        return f"<protocol {self.name}>"


AnyProtocol = Protocol[Any, Any, Any]
"""A protocol the registry found: its types are known only to its own package."""
