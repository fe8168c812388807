"""The HTTP layer of the seam: what every protocol spoken over HTTP shares, so that its package writes
only what is its own.

:class:`HttpProtocol` declares ``--base-url``, validates it, names the ``/health`` URL a started
server answers and reads whether the option values name a target; :class:`HttpSession` holds the
run's :class:`~amp_conformance.engine.client.Connection` (its request count and the breaker that
stops sending to a dead server), the target label, the ``/health`` preflight and the report's
default blocks. A protocol over another transport subclasses the bare
:class:`~amp_conformance.engine.protocol.Protocol` and assumes none of this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from amp_conformance.engine.client import Client, Connection
from amp_conformance.engine.configuration import check_url
from amp_conformance.engine.limiter import DEFAULT_CAP, AdaptiveLimiter
from amp_conformance.engine.options import OptionSpec, OptionValues, SuiteOptions, UsageError
from amp_conformance.engine.outcomes import ToolError, TransportFailure
from amp_conformance.engine.protocol import ContextT, OptionsT, Protocol, ProtocolSession

if TYPE_CHECKING:
    import httpx

    from amp_conformance.engine.replay import ReplayContext
    from amp_conformance.engine.run import Run

#: ``--base-url``: an HTTP protocol's target (a protocol may declare its own wording of it).
BASE_URL = OptionSpec("base-url", "URL of the server under test (enables the suite)")
#: ``--max-in-flight``: the cap of the adaptive limit of requests in flight to the target.
MAX_IN_FLIGHT = OptionSpec(
    "max-in-flight",
    f"at most N requests in flight to the server at once, all workers together (default: adapts to "
    f"the server's latency, from 4 up to {DEFAULT_CAP}; 1: one at a time)",
    {"metavar": "N"},
)


def limiter_for(options: SuiteOptions, http: httpx.Client | None) -> AdaptiveLimiter | None:
    """The run's budget of requests in flight to its target (``engine.limiter``): none for an
    in-process app (asked one request at a time)."""
    return None if http is not None else AdaptiveLimiter(cap=options.max_in_flight)


def cleanup_block(
    attempted: int = 0,
    deleted: int = 0,
    problems: list[str] | None = None,
    left: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The report's ``cleanup`` block: ``left`` lists what stays on the server, ``{"id", "reason"}``."""
    return {
        "attempted": attempted,
        "deleted": deleted,
        "problems": list(problems or []),
        "left": [dict(entry) for entry in left or ()],
    }


def closed_cleanup_block(block: dict[str, Any]) -> dict[str, Any]:
    """``block`` as the report shows it at the end (``left`` always a list; the reports name the cells
    left, ``engine.report.left_named_line``)."""
    return {**block, "problems": list(block.get("problems") or ()), "left": list(block.get("left") or ())}


class HttpSession(ProtocolSession):
    """A session that talks HTTP through one :class:`Connection` (``http_connection``; None while a
    protocol whose REST channel is optional has none)."""

    health_path: ClassVar[str] = "/health"
    """What :meth:`preflight` asks; a 2xx means something answers."""

    def __init__(self, run: Run, connection: Connection | None) -> None:
        self.run = run
        self.http_connection = connection

    @property
    def target_label(self) -> str:
        return self.http_connection.api_base if self.http_connection is not None else "(no target)"

    @property
    def requests(self) -> int:
        return self.http_connection.requests if self.http_connection is not None else 0

    @property
    def broken_reason(self) -> str | None:
        """The connection's breaker: why it stopped sending (the remaining checks end as errors)."""
        return self.http_connection.broken_reason if self.http_connection is not None else None

    @property
    def replay(self) -> ReplayContext | None:
        return self.http_connection.replay if self.http_connection is not None else None

    def preflight(self) -> str | None:
        """``GET`` :attr:`health_path`: nothing answers, or it answers other than 2xx, in one line."""
        if self.http_connection is None:
            return None
        where = self.run.options.base_url or self.http_connection.api_base
        try:
            reply = Client(self.http_connection).get(self.health_path)
        except TransportFailure as exc:
            reason = exc.exchange.error if exc.exchange and exc.exchange.error else str(exc)
            return f"cannot reach {where}: {reason}"
        except ToolError as exc:
            return f"cannot reach {where}: {exc}"
        if not 200 <= reply.status < 300:
            return f"GET {reply.exchange.url} answered {reply.status}"
        return None

    def server_block(self) -> dict[str, Any]:
        """The report's ``server`` block: the base URL and whether the server was given up on."""
        base_url = self.http_connection.api_base if self.http_connection is not None else None
        return {"base_url": base_url, "unavailable": self.broken_reason}

    def network_block(self) -> dict[str, Any] | None:
        """The report's ``network`` block (what the network did; never a finding), None without HTTP."""
        return self.http_connection.network.as_block() if self.http_connection is not None else None

    def worker_summary(self) -> dict[str, Any]:
        return {**super().worker_summary(), "network": self.network_block()}

    def merge_worker_summary(self, summary: Mapping[str, Any]) -> None:
        network = summary.get("network")
        if isinstance(network, dict) and self.http_connection is not None:
            self.http_connection.network.merge(network)

    def report_blocks(self) -> dict[str, Any]:
        blocks = {"server": self.server_block(), "cleanup": cleanup_block(), "conventions": None}
        network = self.network_block()
        if network is not None:
            blocks["network"] = network
        return blocks

    def mark_unavailable(self, reason: str) -> None:
        if self.http_connection is not None and self.http_connection.broken_reason is None:
            self.http_connection.broken_reason = reason

    def close(self) -> None:
        if self.http_connection is not None:
            self.http_connection.close()


HttpSessionT = TypeVar("HttpSessionT", bound=HttpSession)


class HttpProtocol(Protocol[OptionsT, HttpSessionT, ContextT]):
    """A protocol spoken over HTTP: ``--base-url`` names its target (required unless
    :attr:`base_url_required` is False), and a started server is up once ``/health`` answers."""

    base_url_option: ClassVar[OptionSpec] = BASE_URL
    """The ``--base-url`` declaration (a protocol may reword its help; the name stays)."""
    base_url_required: ClassVar[bool] = True

    @property
    def transport_options(self) -> tuple[OptionSpec, ...]:
        return (self.base_url_option, MAX_IN_FLIGHT)

    def target_url(self, values: OptionValues) -> str | None:
        return values.text(self.base_url_option.name)

    def has_target(self, values: OptionValues) -> bool:
        return self.target_url(values) is not None or self.self_test_in_plugin

    def is_self_test(self, values: OptionValues) -> bool:
        return self.target_url(values) is None

    def validate(self, options: SuiteOptions) -> None:
        if not options.base_url:
            if self.base_url_required:
                raise UsageError("--base-url is required")
            return
        check_url("--base-url", options.base_url)

    def health_url(self, base_url: str) -> str:
        return f"{base_url.rstrip('/')}/health"
