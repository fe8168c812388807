"""Run-wide state of an AMP v1.1 run: the target, the MCP process, the REST connection, what was created.

One MCP server process serves the whole run (started and initialised on first use, stopped at the
end); a process that cannot be started or initialised makes every MCP check an *error* with that one
reason, never a hang. Memories the checks store are forgotten at the end of the run.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import httpx
from ulid import ULID

from amp_conformance.amp11.channels import (
    MCP,
    REST,
    ROUTE_SCOPE_KEYS,
    McpChannel,
    NotOnChannel,
    RestChannel,
    VerbResult,
)
from amp_conformance.amp11.mcp import McpExchange, McpSession
from amp_conformance.engine.client import Client, Connection, Reply
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.http import HttpSession, closed_cleanup_block
from amp_conformance.engine.limiter import AdaptiveLimiter
from amp_conformance.engine.outcomes import ServerUnavailable, ToolError, TransportFailure

if TYPE_CHECKING:
    from amp_conformance.engine.run import Run


#: Export pages the sweep reads at most per scope (a server whose cursor never ends costs a bound).
SWEEP_PAGES = 20


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
        self.cleanup_left: list[dict[str, str]] = []
        """What the cleanup could not forget, ``{"id", "reason"}`` (the report's ``cleanup.left``)."""
        self.cleanup_deleted = 0
        self.cleanup_attempted = 0
        self._own: dict[str, Created] = {}
        """Memories a check stored to forget itself (``remember=False``), until it did: one its check
        never got to forget is the cleanup's."""
        self._suspects: list[tuple[str, dict[str, Any], str | None]] = []
        """(channel, scope arguments, content) of each storing verb whose answer never came: the
        cleanup sweeps those scopes for memories the run does not know."""
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
                lambda: client.post(
                    "/v1/memories/recall", {"query": "preflight", "agent_id": agent}, repeatable=True
                ),
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
        blocks = {"server": server, "cleanup": self.cleanup_info(), "conventions": None}
        network = self.network_block()
        if network is not None:
            blocks["network"] = network
        return blocks

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
            self.http_connection.observers.append(self._observe)
        return self.http_connection

    # -- channels ------------------------------------------------------------------------------------

    def channel(self, name: str, log: list[Exchange], deadline: float | None) -> McpChannel | RestChannel:
        channel: McpChannel | RestChannel
        if name == MCP:
            schemas = {name: tool.get("outputSchema") for name, tool in self.tools().items()}
            channel = McpChannel(self.mcp(), log, deadline, schemas)
        elif name == REST:
            channel = RestChannel(Client(self.connection(), log=log, deadline=deadline))
        else:
            raise ValueError(f"unknown channel {name!r}")
        channel.on_broken = self.note_broken_write
        if isinstance(channel, McpChannel):
            channel.on_forgotten = self.forgotten
        return channel

    def note_broken_write(self, channel: str, verb: str, arguments: dict[str, Any]) -> None:
        """A storing verb's answer never came: its scope may hold a memory the run does not know. A
        forget that failed: its memory is the cleanup's (the cleanup's own forget says if it is gone)."""
        if verb == "amp.forget":
            if isinstance(arguments.get("id"), str) and arguments["id"]:
                with self._lock:
                    self.created.append(Created(channel, dict(arguments)))
            return
        scope = arguments.get("scope")
        if isinstance(scope, dict):
            where: dict[str, Any] = {"scope": dict(scope)}
        elif isinstance(arguments.get("agent_id"), str):
            where = {"agent_id": arguments["agent_id"]}
        else:
            return  # (an import's rows name their own scopes: the re-run's fresh scope is what counts)
        content = arguments.get("content") if verb == "amp.encode" else None
        with self._lock:
            self._suspects.append((channel, where, content if isinstance(content, str) else None))

    def remember(self, channel: str, arguments: dict[str, Any]) -> None:
        self.created.append(Created(channel, arguments))

    def remember_own(self, channel: str, arguments: dict[str, Any]) -> None:
        """A memory its check means to forget itself: the cleanup's only if that never happens."""
        with self._lock:
            self._own[str(arguments.get("id"))] = Created(channel, arguments)

    def forgotten(self, memory_id: str) -> None:
        """A forget of ``memory_id`` succeeded (whoever sent it)."""
        with self._lock:
            self._own.pop(memory_id, None)

    def _observe(self, exchange: Exchange) -> None:
        """A REST ``DELETE /v1/memories/{id}`` answered 2xx: that memory is forgotten."""
        if exchange.method == "DELETE" and exchange.status is not None and 200 <= exchange.status < 300:
            path = httpx.URL(exchange.url).path
            if path.startswith("/v1/memories/") and path.count("/") == 3:
                self.forgotten(unquote(path.rsplit("/", 1)[1]))

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
        """The report's ``cleanup`` block: memories forgotten at the end, what is left, what went wrong."""
        return closed_cleanup_block(
            {
                "attempted": self.cleanup_attempted,
                "deleted": self.cleanup_deleted,
                "problems": list(self.cleanup_problems),
                "left": [dict(entry) for entry in self.cleanup_left],
            }
        )

    def cleanup(self) -> None:
        """Forget what the checks stored, through the channel that stored it or else the other one (an
        MCP process that died leaves REST to do it), then sweep the scopes whose storing verbs lost
        their answer (:meth:`_sweep`). What cannot be forgotten is ``cleanup.left``."""
        if not self.target.cleanup:
            return
        with self._lock:
            pending = [*self.created, *self._own.values()]
            self.created, self._own = [], {}
        # one forget per memory and scope (an import may keep an id in another scope)
        created = list(
            {json.dumps(item.arguments, sort_keys=True, default=str): item for item in pending}.values()
        )
        self.cleanup_attempted += len(created)
        forgotten: set[str] = set()
        dead: dict[str, str] = {}
        for item in created:
            memory_id = item.arguments.get("id")
            reason = self._forget(item.channel, item.arguments, dead)
            if reason is None:
                self.cleanup_deleted += 1
                forgotten.add(str(memory_id))
            else:
                self.cleanup_problems.append(f"forget {memory_id}: {reason}")
                self.cleanup_left.append({"id": str(memory_id), "reason": reason})
        self._sweep(forgotten | {entry["id"] for entry in self.cleanup_left}, dead)

    def _quiet_channel(self, name: str) -> McpChannel | RestChannel:
        """A channel for the cleanup's own calls: a failure there is the cleanup's ``left``, not a
        memory noted for a cleanup that already runs."""
        channel = self.channel(name, [], None)
        channel.on_broken = None
        return channel

    def _channels_for(self, first: str) -> list[str]:
        return [first, *(c for c in self.target.channels() if c != first)]

    def _forget(self, channel: str, arguments: dict[str, Any], dead: dict[str, str]) -> str | None:
        """``amp.forget`` over ``channel``, else the other channel: None once the memory is gone, else
        why it is not. ``dead``: channel -> why it can no longer be used (filled as they fail)."""
        reason = "no channel can carry its amp.forget"
        attempts = [(name, arguments) for name in self._channels_for(channel)]
        narrowed = _narrowed(arguments)
        if narrowed is not None and REST in self.target.channels():
            attempts.append((REST, narrowed))  # last: the scope keys the REST route lists
        for name, sent in attempts:
            if name in dead:
                reason = dead[name]
                continue
            try:
                result = self._quiet_channel(name).call("amp.forget", sent)
            except NotOnChannel as exc:
                reason = str(exc)  # e.g. a scope key the pinned REST route does not list
                continue
            except ToolError as exc:
                reason = str(exc)
                if isinstance(exc, ServerUnavailable) or getattr(exc, "unreachable", False):
                    dead[name] = reason
                continue
            if result.ok or result.error_code == "not_found":
                return None
            return f"amp.forget answered {result.describe()}"
        return reason

    def _sweep(self, known: set[str], dead: dict[str, str]) -> None:
        """Find the memories a lost encode or import may have stored (an export of the scope, else a
        recall of the encode's content) and forget those the run did not know. A fault-free run has
        no such scope: it sends nothing here."""
        with self._lock:
            suspects, self._suspects = self._suspects, []
        seen: set[str] = set(known)
        for channel, where, content in suspects:
            for name in self._channels_for(channel):
                if name in dead:
                    continue
                try:
                    found = self._listed(name, where, content)
                except (ToolError, NotOnChannel) as exc:
                    self.cleanup_problems.append(f"sweep of scope {json.dumps(where)} over {name}: {exc}")
                    if isinstance(exc, ServerUnavailable) or getattr(exc, "unreachable", False):
                        dead[name] = str(exc)
                    continue
                for memory_id in [m for m in found if m not in seen]:
                    seen.add(memory_id)
                    self.cleanup_attempted += 1
                    reason = self._forget(name, {**where, "id": memory_id}, dead)
                    if reason is None:
                        self.cleanup_deleted += 1
                    else:
                        self.cleanup_left.append({"id": memory_id, "reason": reason})
                break

    def _listed(self, channel: str, where: dict[str, Any], content: str | None) -> list[str]:
        """The ids ``where`` holds: its export (paged, bounded), or a recall of ``content`` when the
        server exports nothing (a Core server)."""
        call = self._quiet_channel(channel).call
        ids: list[str] = []
        cursor: str | None = None
        for _ in range(SWEEP_PAGES):
            result = call("amp.export", {**where, **({"cursor": cursor} if cursor else {})})
            if not result.ok:
                break
            value = result.value or {}
            for line in str(value.get("ndjson") or "").splitlines():
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                if isinstance(row, dict) and isinstance(row.get("id"), str):
                    ids.append(row["id"])
            cursor = value.get("next_cursor") if isinstance(value.get("next_cursor"), str) else None
            if cursor is None:
                return ids
        if content is not None:
            recalled = call("amp.recall", {**where, "query": content, "top_k": 50})
            results = (recalled.value or {}).get("results")
            ids += [r["id"] for r in results or () if isinstance(r, dict) and isinstance(r.get("id"), str)]
        return ids

    def close(self) -> None:
        if self._mcp is not None:
            self._mcp.close()
        super().close()


def _narrowed(arguments: dict[str, Any]) -> dict[str, Any] | None:
    """``amp.forget``'s arguments with only the scope keys its REST route lists (the pinned OpenAPI
    has no ``session_id`` nor ``org_id`` there), or None when nothing would change or nothing be left.
    Scopes match by strict AND (§2), and the run's scopes all hold its unique ``agent_id``: fewer keys
    still name that one memory."""
    scope = arguments.get("scope")
    if not isinstance(scope, dict):
        return None
    listed = {key: value for key, value in scope.items() if key in ROUTE_SCOPE_KEYS["amp.forget"]}
    if not listed or len(listed) == len(scope):
        return None
    return {**arguments, "scope": listed}


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
