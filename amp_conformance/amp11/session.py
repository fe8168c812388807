"""Run-wide state of an AMP v1.1 run: the target, the MCP process, the REST connection, what was created.

One MCP server process serves the whole run (started and initialised on first use, stopped at the
end); a process that cannot be started or initialised makes every MCP check an *error* with that one
reason, never a hang. Memories the checks store are forgotten at the end of the run.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx
from ulid import ULID

from amp_conformance.amp11.channels import MCP, REST, McpChannel, NotOnChannel, RestChannel, VerbResult
from amp_conformance.amp11.mcp import McpExchange, McpSession
from amp_conformance.engine.client import Client, Connection, Reply
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.http import HttpSession
from amp_conformance.engine.limiter import AdaptiveLimiter
from amp_conformance.engine.outcomes import ServerUnavailable, ToolError, TransportFailure

if TYPE_CHECKING:
    from amp_conformance.engine.run import Run


@dataclass(eq=False)  # hashable: pytest registers an instance as a plugin
class Amp11Target:
    """What to test and how patiently. Pass an instance to ``pytest.main(plugins=[...])``."""

    mcp_command: str | list[str] | None = None
    base_url: str | None = None
    timeout: float = 10.0
    deadline: float = 60.0
    run_id: str = field(default_factory=lambda: str(ULID()).lower())
    http: httpx.Client | None = None  # REST through this client (an in-process ASGI app, for example)
    env: dict[str, str] | None = None  # environment of the MCP server process
    cleanup: bool = True

    def channels(self) -> tuple[str, ...]:
        found = []
        if self.mcp_command:
            found.append(MCP)
        if self.base_url:
            found.append(REST)
        return tuple(found)


@dataclass
class Created:
    channel: str
    arguments: dict[str, Any]  # scope (or flat agent_id) and id, ready for amp.forget


class Amp11Session(HttpSession):
    """The session-wide state behind the checks' ``amp`` fixture (the engine's protocol session): its
    MCP process beside the HTTP layer's connection (made on first use, when the target has a base URL)."""

    def __init__(self, target: Amp11Target, run: Run | None = None):
        if run is not None:  # (a test may drive a session without a run)
            self.run = run
        self.http_connection = None
        self.target = target
        self.created: list[Created] = []
        self.backend_errors: list[VerbResult] = []  # every backend_error any check saw (AMP11-ERR-04)
        #: per channel, a plain forced encode in the scope form
        #: (``Amp11Context.blocked_if_scope_form_refused``)
        self.scope_form_controls: dict[str, VerbResult] = {}
        self.cleanup_problems: list[str] = []
        self.cleanup_deleted = 0
        self.cleanup_attempted = 0
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self._mcp: McpSession | None = None
        self._mcp_failure: str | None = None
        self.initialize_exchanges: list[Exchange] = []
        self._tools: dict[str, dict[str, Any]] | None = None
        self.tools_exchange: McpExchange | None = None

    # -- what the engine reads -----------------------------------------------------------------------

    @property
    def target_label(self) -> str:
        parts = []
        if self.target.mcp_command:
            command = self.target.mcp_command
            parts.append(f"MCP: {command if isinstance(command, str) else ' '.join(command)}")
        if self.target.base_url:
            parts.append(f"REST: {self.target.base_url}")
        return "; ".join(parts) or "(no target)"

    @property
    def requests(self) -> int:
        return super().requests + (self._mcp.requests if self._mcp is not None else 0)

    def preflight(self) -> str | None:
        """One line saying why no check can run (the MCP command is unusable, the REST URL
        unreachable), else None. Bounded: an MCP server that hangs costs one timeout, one that exits
        costs nothing. The checks reuse the MCP process it started."""
        target = self.target
        if target.mcp_command:
            try:
                self.mcp()
            except ToolError as exc:
                return f"the MCP server is unusable: {exc}"
        if target.base_url:
            client = Client(self.connection())
            agent = self.unique("preflight")
            answers: list[str] = []
            # two read-only Core verbs: one route that fails (a broken amp.stats) is the checks' to
            # judge; neither answering as AMP v1.1 means nothing here speaks it
            probes: list[Callable[[], Reply]] = [
                lambda: client.get("/v1/memories/stats", params={"agent_id": agent}),
                lambda: client.post("/v1/memories/recall", {"query": "preflight", "agent_id": agent}),
            ]
            for probe in probes:
                try:
                    reply = probe()
                except TransportFailure as exc:
                    if exc.unreachable:
                        reason = exc.exchange.error if exc.exchange and exc.exchange.error else str(exc)
                        return f"cannot reach {target.base_url}: {reason}"
                    return None
                except ToolError as exc:
                    return f"cannot reach {target.base_url}: {exc}"
                answer = _not_v11(reply)
                if answer is None:
                    return None
                answers.append(answer)
            return (
                f"{target.base_url} is not an AMP v1.1 server: {'; '.join(answers)}; give the base URL "
                "of its REST channel (the one serving /v1/memories)"
            )
        return None

    def clean_up(self, *, sparing: Sequence[Any] = ()) -> None:
        # one MCP process: never a parallel run's worker, so nothing is ever spared
        before = self.requests
        try:
            self.cleanup()
        finally:
            self.cleanup_requests += self.requests - before

    def report_blocks(self) -> dict[str, Any]:
        server: dict[str, Any] = {
            "base_url": self.target.base_url,
            "spec": None,
            "spec_error": None,
            "unavailable": self.broken_reason,
        }
        server.update(self.report_info())
        # what ran, per channel (an MCP-only run has no base URL: the command is its target; issue 20 §4)
        server["target"] = self.target_label
        server["targets"] = {
            channel: (self.target.base_url if channel == REST else server.get("mcp_command"))
            for channel in self.target.channels()
        }
        return {"server": server, "cleanup": self.cleanup_info(), "conventions": None}

    # -- identities ---------------------------------------------------------------------------------

    def unique(self, role: str) -> str:
        """An identifier unique to this run and call (``amp11-<run>-<n>-<role>``)."""
        return f"amp11-{self.target.run_id}-{next(self._counter)}-{role}"

    # -- MCP -----------------------------------------------------------------------------------------

    def mcp(self) -> McpSession:
        """The run's MCP session, started and initialised on first use."""
        if not self.target.mcp_command:
            raise NotOnChannel("no MCP server command was given")
        with self._lock:
            if self._mcp_failure is not None:
                raise ServerUnavailable(f"the MCP server is unusable: {self._mcp_failure}")
            if self._mcp is None:
                session = McpSession(
                    self.target.mcp_command, timeout=self.target.timeout, env=self.target.env
                )
                self._mcp = session
                try:
                    session.start()
                    session.initialize(log=self.initialize_exchanges)
                    self._fetch_tools(session)  # the first request after the handshake (INIT-06)
                except ToolError as exc:
                    self._mcp_failure = str(exc)
                    raise
            return self._mcp

    @property
    def server_info(self) -> dict[str, Any]:
        return self._mcp.server_info if self._mcp is not None else {}

    @property
    def declared_level(self) -> str | None:
        """``core`` / ``full`` as ``initialize`` declared it, or None (REST only, or not declared)."""
        if not self.target.mcp_command:
            return None
        try:
            self.mcp()
        except ToolError:
            return None
        level = self.server_info.get("amp_conformance")
        return level if level in ("core", "full") else None

    def tools(self, log: list[Exchange] | None = None) -> dict[str, dict[str, Any]]:
        """``tools/list`` by name (fetched once; the exchange is added to ``log`` each time)."""
        if self._tools is None:
            self._fetch_tools(self.mcp())
        if log is not None and self.tools_exchange is not None and self.tools_exchange not in log:
            log.append(self.tools_exchange)
        return self._tools or {}

    def _fetch_tools(self, session: McpSession) -> None:
        exchange = session.list_tools()
        self.tools_exchange = exchange
        result = (exchange.message or {}).get("result")
        tools = result.get("tools") if isinstance(result, dict) else None
        found: dict[str, dict[str, Any]] = {}
        if isinstance(tools, list):
            for tool in tools:
                if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                    found[tool["name"]] = tool
        self._tools = found

    # -- REST ----------------------------------------------------------------------------------------

    def connection(self) -> Connection:
        if not self.target.base_url:
            raise NotOnChannel("no REST base URL was given")
        if self.http_connection is None:
            run = getattr(self, "run", None)  # (a test may drive a session without a run)
            cap = run.options.max_in_flight if run is not None else None
            self.http_connection = Connection(
                self.target.base_url,
                timeout=self.target.timeout,
                http=self.target.http,
                limiter=None if self.target.http is not None else AdaptiveLimiter(cap=cap),
            )
        return self.http_connection

    # -- channels ------------------------------------------------------------------------------------

    def channel(self, name: str, log: list[Exchange], deadline: float | None) -> McpChannel | RestChannel:
        if name == MCP:
            schemas = {name: tool.get("outputSchema") for name, tool in self.tools().items()}
            return McpChannel(self.mcp(), log, deadline, schemas)
        if name == REST:
            return RestChannel(Client(self.connection(), log=log, deadline=deadline))
        raise ValueError(f"unknown channel {name!r}")

    def remember(self, channel: str, arguments: dict[str, Any]) -> None:
        self.created.append(Created(channel, arguments))

    # -- end of run ----------------------------------------------------------------------------------

    def report_info(self) -> dict[str, Any]:
        """What the report's ``server`` block can say about this run's targets."""
        info: dict[str, Any] = {"channels": list(self.target.channels())}
        if self.target.mcp_command:
            info["mcp_command"] = (
                self.target.mcp_command
                if isinstance(self.target.mcp_command, str)
                else " ".join(self.target.mcp_command)
            )
            info["server_info"] = dict(self.server_info)
            info["declared_level"] = self.server_info.get("amp_conformance")
            info["unavailable"] = self._mcp_failure
            info["stderr_tail"] = self._mcp.stderr_tail() if self._mcp is not None else ""
        if self.target.base_url:
            info["base_url"] = self.target.base_url
        return info

    def cleanup_info(self) -> dict[str, Any]:
        """The report's ``cleanup`` block: memories forgotten at the end, and what went wrong."""
        return {
            "attempted": self.cleanup_attempted,
            "deleted": self.cleanup_deleted,
            "problems": list(self.cleanup_problems),
        }

    def cleanup(self) -> None:
        """Forget what the checks stored (best effort, through the channel that stored it)."""
        if not self.target.cleanup:
            return
        self.cleanup_attempted += len(self.created)
        for item in self.created:
            log: list[Exchange] = []
            channel = item.channel
            try:
                try:
                    result = self.channel(channel, log, None).call("amp.forget", item.arguments)
                except NotOnChannel:
                    # a scope key the REST route does not list (pinned OpenAPI): the other channel, if any
                    if channel != REST or MCP not in self.target.channels():
                        raise
                    result = self.channel(MCP, log, None).call("amp.forget", item.arguments)
            except (ToolError, NotOnChannel) as exc:
                self.cleanup_problems.append(f"forget {item.arguments.get('id')}: {exc}")
                if isinstance(exc, ServerUnavailable):
                    break
                continue
            status = (result.value or {}).get("status")
            if status == "forgotten":
                self.cleanup_deleted += 1
        self.created.clear()

    def close(self) -> None:
        if self._mcp is not None:
            self._mcp.close()
        super().close()


def _not_v11(reply: Reply) -> str | None:
    """What ``reply`` shows that is no AMP v1.1 REST answer, else None. A v1.1 server answers a Core
    verb's route with a JSON object, its result or (refusing the request, say for want of
    credentials) an error body; a missing route (404, 405), a 5xx or a body that is no JSON object (a
    file server, a v0.1 server, one answering 500 to everything) would turn every check into a
    failure that says nothing about an AMP v1.1 server."""
    kind = reply.headers.get("content-type", "no content type").split(";")[0]
    try:
        body = reply.json()
    except AssertionError:
        body = None
    if isinstance(body, dict) and reply.status < 500 and reply.status not in (404, 405):
        return None
    return f"{reply.exchange.method} {reply.exchange.url} answered {reply.status} ({kind})"
