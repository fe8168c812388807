"""What a protocol is to the engine: a small record found through the registry (as wptrunner finds a
product), and the run-wide session it opens.

A protocol package (one of this distribution's, or a third party's) defines one :class:`Protocol` subclass
and exposes an instance under the ``amp_conformance.protocols`` entry-point group. The plugin and the
command then know it by name alone: its checks package, catalogue, options, how a target is started
and preflighted, the check context its checks receive, what the end of a run adds to the report,
which requirement a server error breaks, its serial groups, and whether workers may share its run.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from amp_conformance.engine.options import OptionSpec, SuiteOptions, UsageError

#: The file of measured work-unit costs beside a protocol's checks (:attr:`Protocol.unit_costs`).
UNIT_COSTS_FILE = "unit_costs.json"

if TYPE_CHECKING:
    import httpx

    from amp_conformance.engine.catalogue import Catalogue
    from amp_conformance.engine.exchange import Exchange
    from amp_conformance.engine.replay import ReplayContext
    from amp_conformance.engine.spec import CheckSpec


class ProtocolSession(ABC):
    """A protocol's run-wide state: its connection(s), identities, created data and cleanup.

    The engine's :class:`~amp_conformance.engine.run.Run` keeps results, root causes, expectations and
    timing; everything a protocol needs to talk to the server lives here."""

    run: Any
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

    def clean_up(self, *, sparing: Sequence[Any] = ()) -> None:
        """Remove what the run created (problems are reported, never counted against the server);
        ``sparing``: the protocol states (``CheckContext._shared_state``) of shared steps whose data
        another worker may still use, left for a later call (``engine.shared_store``)."""

    def worker_summary(self) -> dict[str, Any]:
        """What a worker tells the controller at its end (its counts and cleanup)."""
        return {"requests": self.requests, "cleanup_requests": self.cleanup_requests}

    def merge_worker_summary(self, summary: Mapping[str, Any]) -> None:
        """The controller's side of :meth:`worker_summary` (the request counts the engine adds itself)."""

    def report_blocks(self) -> dict[str, Any]:
        """The report's protocol-specific blocks: ``server``, ``cleanup`` and ``conventions``."""
        return {"server": {}, "cleanup": {"attempted": 0, "deleted": 0, "problems": []}, "conventions": None}

    def summary_lines(self) -> list[str]:
        """Lines the terminal summary shows under its header (detected conventions, for example)."""
        return []

    def mark_unavailable(self, reason: str) -> None:
        """The server is gone (a started server exited): stop sending, say why."""

    def close(self) -> None:
        """Release connections and processes (idempotent)."""


class Protocol(ABC):
    """One protocol, as the engine needs to know it. Subclass, fill the class attributes, expose an
    instance in the ``amp_conformance.protocols`` entry-point group."""

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

    @cached_property
    def checks_dir(self) -> Path:
        return Path(str(resources.files(self.checks_package)))

    @cached_property
    def catalogue(self) -> Catalogue:
        from amp_conformance.engine.catalogue import load_catalogue

        return load_catalogue(self.catalogue_package)

    def has_target(self, values: Mapping[str, Any]) -> bool:
        """Whether these option values name a target for this protocol (the plugin acts only then)."""
        return bool(values.get("amp_base_url")) or self.self_test_in_plugin

    def parse_options(self, values: Mapping[str, Any]) -> Any:
        """Its own options (keyed by :attr:`OptionSpec.dest`) as the typed value its session reads
        (``SuiteOptions.protocol_options``); :class:`UsageError` for bad ones. None: it has none."""
        return None

    def is_self_test(self, values: Mapping[str, Any]) -> bool:
        """The command was given no target of this protocol: it checks the bundled server."""
        return not values.get("amp_base_url")

    def validate(self, options: SuiteOptions) -> None:
        """Raise :class:`UsageError` for options this protocol cannot run with."""
        if not options.base_url:
            raise UsageError("--base-url is required")

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
        self, run: Any, *, http: httpx.Client | None, plugins: Sequence[object] = ()
    ) -> ProtocolSession:
        """The run-wide session (``http``: send through this client instead of sockets; ``plugins``:
        the pytest plugins of the run, where a caller may have passed a target of its own)."""

    @abstractmethod
    def context(self, session: Any, spec: CheckSpec) -> Any:
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
        a base URL this protocol cannot use)."""
        return f"{base_url.rstrip('/')}/health"

    def reachable(self, options: SuiteOptions) -> str | None:
        """The command's cheap reachability probe before pytest starts: a reason, or None."""
        return None

    @contextlib.contextmanager
    def self_test(self, values: dict[str, Any]) -> Iterator[str]:
        """The command with no target: start the bundled server, put its target into ``values`` and
        yield the line announcing it."""
        yield f"no target given, checking the bundled {self.title} reference server"

    def __repr__(self) -> str:
        return f"<protocol {self.name}>"


def protocol_option_error(
    protocol: Protocol, values: Mapping[str, Any], others: list[Protocol]
) -> str | None:
    """A protocol option given to a run of another protocol: which one, said once."""
    own = {spec.dest for spec in protocol.options}
    for other in others:
        for spec in other.options:
            if spec.dest in own:
                continue
            value = values.get(spec.dest)
            if value not in (None, False, [], spec.kwargs.get("default")):
                return f"--{spec.name} goes with --protocol {other.name}"
    return None
