"""AMP v0.1.0's run-wide state: the HTTP connection, the agents, what the run created, ``/spec``, the
detected conventions, and the cleanup that archives and deletes the run's cells at the end.

Every owner id and keyless agent id derives from the run's namespace (``amp-ct-<run>[-gwN]``), so two
runs against one server never see each other's data.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

import httpx

from amp_conformance.amp01.target import normalise_base_url
from amp_conformance.engine.client import Client, Connection, Reply, at_once
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.http import HttpSession, cleanup_block, closed_cleanup_block, limiter_for
from amp_conformance.engine.options import in_command_mode
from amp_conformance.engine.outcomes import AmbiguousExchange, NotApplicable, ToolError, TransportFailure
from amp_conformance.engine.replay import ReplayContext

if TYPE_CHECKING:
    from amp_conformance.amp01.conventions import Conventions
    from amp_conformance.engine.run import Run


#: The options a check's words may name (the command's spelling, ``--NAME``; the plugin's is
#: ``--amp-NAME``: ``engine.options.OptionSpec``).
_NAMED_OPTIONS = re.compile(
    r"(?<![\w-])--(admin-token|api-keys-file|api-key|allow-global-effects|keep-cells|base-url|no-fuzz|openapi)"
    r"(?![\w-])"
)


def as_options_given(text: str) -> str:
    """``text`` naming the options as this run takes them: ``--admin-token`` from the command,
    ``--amp-admin-token`` under the pytest plugin (a skip reason must name an option the user can give)."""
    return text if in_command_mode() else _NAMED_OPTIONS.sub(r"--amp-\1", text)


@dataclass(frozen=True)
class Amp01Options:
    """The options only AMP v0.1.0 reads (validated by :func:`amp01.protocol.parse_options`)."""

    admin_token: str | None = None
    api_keys: dict[str, str] = field(default_factory=dict)
    allow_global_effects: bool = False
    keep_cells: bool = False
    """Leave what the run created in place (``--keep-cells``): its curl lines stay replayable."""

    @property
    def keys_given(self) -> bool:
        """The run was given API keys (whether it uses them: :attr:`Amp01Session.keys_mode`)."""
        return bool(self.api_keys)

    def public_view(self) -> dict[str, Any]:
        """As the report shows them: secrets reduced to whether they were given."""
        return {
            "admin_token_given": self.admin_token is not None,
            "api_key_agents": sorted(self.api_keys),
            "allow_global_effects": self.allow_global_effects,
            "keep_cells": self.keep_cells,
        }


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


class NotEnoughAgents(NotApplicable, LookupError):
    """Keys mode, and the check needs more distinct agents than keys were given."""


@dataclass
class CreatedCell:
    id: str
    agent: Agent


_T = TypeVar("_T")
_U = TypeVar("_U")

#: ``/memories/{id}`` at the end of a URL (no query): the exchanges that can change a created cell's state.
_CELL_URL = re.compile(r"/memories/([^/?#]+)$")
#: Cleanup threads (one connection each); every request waits for a slot of the run's limiter, so a
#: server sees no more than the limit (``engine.limiter``) from the run, its workers together.
CLEANUP_CONCURRENCY = 16
#: The lifecycle states a swept owner's cells are listed in (a deleted cell is gone already).
SWEPT_STATES = ("active", "stale", "archived")
#: The page size the sweep asks for (the largest AMP v0.1 allows) and the pages it reads at most per
#: listing: a server whose paging never ends costs a bounded number of requests.
SWEEP_PAGE = 100
SWEEP_PAGES = 20


#: The POSTs of v0.1 that only read: sent as requests the client may repeat after a broken exchange.
READ_ONLY_POSTS = ("/memories/search",)


class _TrackingClient(Client):
    """The session's client. It sends :data:`READ_ONLY_POSTS` as reads (``repeatable=True``), and it
    tells its session which owner each create named and as whom, and whether the create's response
    was lost: the cleanup sweeps those owners (a cell made by a create whose answer never came is known
    to nobody but the server)."""

    def __init__(self, session: Amp01Session, connection: Connection, **kwargs: Any) -> None:
        super().__init__(connection, **kwargs)
        self._session = session

    def request(self, method: str, path: str, **kwargs: Any) -> Reply:
        if method == "POST" and path.split("?", 1)[0].endswith(READ_ONLY_POSTS):
            kwargs.setdefault("repeatable", True)
        if method == "DELETE":
            return self._delete(path, **kwargs)
        if method != "POST" or not path.split("?")[0].rstrip("/").endswith("/memories"):
            return super().request(method, path, **kwargs)
        try:
            reply = super().request(method, path, **kwargs)
        except TransportFailure:
            self._session.note_create(self._sender(kwargs), _owner_of(kwargs), broken=True)
            raise
        # an attempt the client repeated may have made a cell of its own
        broken = reply.exchange.retry_of is not None
        sender = self._sender(kwargs)
        self._session.note_create(sender, _owner_of(kwargs), broken=broken)
        cell_id = _created_id(reply)
        if cell_id is not None and sender is not None:
            self._session.note_created(cell_id, sender)
        return reply

    def _delete(self, path: str, **kwargs: Any) -> Reply:
        """A DELETE whose repeat (after a broken first attempt) was refused is ambiguous only if the
        first attempt may have deleted the cell: one read settles it. A cell that still reads as not
        deleted was not deleted by it, so the repeat's answer is the server's answer to this request
        (a DELETE of an active cell refused with 409, judged as such); gone or deleted, the lost
        answer was the one to judge, and the ambiguity stands (the check is re-run)."""
        try:
            return super().request("DELETE", path, **kwargs)
        except AmbiguousExchange as lost:
            repeat = lost.exchange
            if repeat is None or repeat.status is None or path.split("?", 1)[1:]:
                raise
            try:
                read = super().request("GET", path, headers=kwargs.get("headers"))
                body = read.json() if read.status == 200 else None
            except (ToolError, AssertionError):
                raise lost from None
            lifecycle = body.get("lifecycle") if isinstance(body, dict) else None
            status = lifecycle.get("status") if isinstance(lifecycle, dict) else None
            if not isinstance(status, str) or status == "deleted":
                raise
            self.connection.network.count_reconciled()
            return Reply(repeat)

    def _sender(self, kwargs: Mapping[str, Any]) -> Agent | None:
        """The identity the create went out with (its headers, else the body's ``created_by``)."""
        headers = {name.lower(): value for name, value in self.headers.items()}
        for name, value in dict(kwargs.get("headers") or {}).items():
            headers.pop(name.lower(), None)
            if value is not None:
                headers[name.lower()] = value
        agent_id = headers.get("x-amp-agent-id")
        if agent_id is None:
            body = _body_of(kwargs)
            creator = body.get("created_by") if isinstance(body, dict) else None
            agent_id = creator if isinstance(creator, str) else None
        return Agent("sweep", agent_id, headers.get("x-amp-api-key")) if agent_id else None


class Amp01Session(HttpSession):
    """The session-wide state behind the ``amp`` fixture."""

    def __init__(self, run: Run, options: Amp01Options, *, http: httpx.Client | None = None):
        self.options = options
        self.prefix = run.prefix
        suite = run.options
        replay = ReplayContext.for_run(options.admin_token, options.api_keys, suite.json_path)
        api_base, root = normalise_base_url(suite.base_url or "http://127.0.0.1:9")
        self.connection = Connection(
            api_base,
            root=root,
            timeout=suite.timeout,
            http=http,
            replay=replay,
            limiter=limiter_for(suite, http),
        )
        super().__init__(run, self.connection)
        self._owners = itertools.count(1)
        self._agents: dict[str, Agent] = {}
        self._key_agents = list(options.api_keys.items())
        self.created: list[CreatedCell] = []
        self._creators: dict[str, str] = {}
        self._states: dict[str, str] = {}
        """Created cell id -> ``archived`` or ``deleted`` as the server last confirmed it: cleanup skips
        what a check already did."""
        self.connection.observers.append(self._track)
        self._owner_agents: dict[str, dict[str, Agent]] = {}
        """Owner id -> the agents (by id) whose creates named it: who can list and remove its cells."""
        self._suspect_owners: set[str] = set()
        """Owners a create named whose response was lost: they may hold cells the run does not know."""
        self._seen: dict[str, Agent] = {}
        """Every cell id a create of this run answered with, and as whom (:meth:`_orphans`)."""
        self._orphaned: set[str] = set()
        """Orphans a cleanup call already took on."""
        self._noting = threading.Lock()
        self.cleanup: dict[str, Any] = cleanup_block()
        self.cleanup_requests = 0
        self.side_log: list[Exchange] = []
        self._spec: dict[str, Any] | None = None
        self._spec_error: str | None = None
        self.spec_failed_in_transport = False
        self._spec_fetched = False
        self.spec_status: int | None = None
        self._open_routes: dict[str, Exchange] = {}
        """Path -> the session's own answered anonymous GET of ``/health`` or ``/spec`` (the preflight,
        :meth:`fetch_spec`): the checks' one GET of each open route is that request (:meth:`open_route`)."""
        self._conventions: Conventions | None = None
        self._pending_briefing: Callable[[], Mapping[str, Any]] | None = None
        """A parallel run worker's briefing, posted after the worker started: adopted when a check
        first asks for the conventions or /spec (:meth:`adopt_briefing_later`)."""
        """Set once detected (the first check that needs them, or the controller's briefing)."""

    # what the engine reads (the rest: ``HttpSession``) -----------------------------------------------

    def preflight(self) -> str | None:
        """One clear reason not to start the checks (nothing answers, or what answers is no AMP server),
        else None: a wrong URL costs one line, not a hundred failures. A server that answers either
        ``GET /health`` or ``GET /spec`` with a JSON object is checked; its flaws are the checks'."""
        client = self.client(None)
        base_url = self.run.options.base_url
        seen: list[str] = []
        for path in ("/health", "/spec"):
            try:
                reply = client.get(path)
            except TransportFailure as exc:
                reason = exc.exchange.error if exc.exchange and exc.exchange.error else str(exc)
                return f"cannot reach {base_url}: {reason}"
            except ToolError as exc:
                return f"cannot reach {base_url}: {exc}"
            self._open_routes.setdefault(path, reply.exchange)
            kind = reply.headers.get("content-type", "no content type").split(";")[0]
            try:
                body = reply.json() if reply.status == 200 else None
            except AssertionError:
                body = None
            if isinstance(body, dict):
                return None
            seen.append(f"GET {reply.exchange.url} answered {reply.status} ({kind})")
        return (
            f"{base_url} does not look like an AMP server: {'; '.join(seen)}. "
            "Give the server's base URL, with or without /amp/v1."
        )

    def briefing(self) -> dict[str, Any]:
        from amp_conformance.amp01.conventions import detect_conventions

        # GET /spec depends on nothing the detection does: it goes while the detection's chain does
        spec, conventions = self.at_once(self.spec_state, lambda: detect_conventions(self))
        self.conventions = conventions
        return {"spec": spec, "conventions": conventions.as_wire()}

    def at_once(self, first: Callable[[], _T], second: Callable[[], _U]) -> tuple[_T, _U]:
        """``first()`` and ``second()``, at the same time when the connection allows it (the engine's
        ``at_once``: over sockets; an in-process app is asked one request at a time)."""
        one, two = at_once(self.connection, [first, second])
        return cast(_T, one), cast(_U, two)

    def adopt_briefing_later(self, fetch: Callable[[], Mapping[str, Any]]) -> None:
        self._pending_briefing = fetch

    def _settle_briefing(self) -> None:
        fetch, self._pending_briefing = self._pending_briefing, None
        if fetch is not None:
            self.adopt_briefing(fetch())

    @property
    def conventions(self) -> Conventions | None:
        """The server's conventions once detected (or adopted from the controller), else None."""
        self._settle_briefing()
        return self._conventions

    @conventions.setter
    def conventions(self, value: Conventions | None) -> None:
        self._conventions = value

    def adopt_briefing(self, briefing: Mapping[str, Any]) -> None:
        from amp_conformance.amp01.conventions import Conventions

        spec = briefing.get("spec")
        if isinstance(spec, dict):
            self.adopt_spec_state(spec)
        conventions = briefing.get("conventions")
        if isinstance(conventions, dict):
            self.conventions = Conventions.from_wire(conventions)

    def worker_summary(self) -> dict[str, Any]:
        return {**super().worker_summary(), "cleanup": self.cleanup, "broken_reason": self.broken_reason}

    def merge_worker_summary(self, summary: Mapping[str, Any]) -> None:
        cleanup = summary.get("cleanup")
        if isinstance(cleanup, dict):
            self.cleanup["attempted"] += int(cleanup.get("attempted", 0))
            self.cleanup["deleted"] += int(cleanup.get("deleted", 0))
            self.cleanup["problems"] += list(cleanup.get("problems", []))
            self.cleanup["left"] += [dict(entry) for entry in cleanup.get("left", [])]
        super().merge_worker_summary(summary)
        reason = summary.get("broken_reason")
        if reason and self.connection.broken_reason is None:
            self.connection.broken_reason = str(reason)

    def report_blocks(self) -> dict[str, Any]:
        spec = self.fetch_spec() if self.connection.broken_reason is None else None
        return {
            "server": {
                "base_url": self.connection.api_base,
                "spec": spec,
                "spec_error": self._spec_error,
                "unavailable": self.connection.broken_reason,
                **({"keys_note": self.keys_note} if self.keys_note else {}),
            },
            "cleanup": closed_cleanup_block(self.cleanup),
            "conventions": self.conventions.as_report() if self.conventions is not None else None,
            "network": self.network_block(),
        }

    def summary_lines(self) -> list[str]:
        keys = [f"note: {self.keys_note}"] if self.keys_note else []
        if self.conventions is None:
            return keys
        lines = [*keys, "conventions:"]
        for name, entry in self.conventions.as_report().items():
            if name != "problems":
                lines.append(f"  {name:<13} {entry['value'] or 'undetermined'}  ({entry['source']})")
        lines += [f"  note: {problem}" for problem in self.conventions.problems]
        return lines

    # identities ---------------------------------------------------------------------------------

    @property
    def keys_mode(self) -> bool:
        """The run uses its API keys: it was given some and ``/spec`` does not say the server takes none
        (``api_keys_required: false``). A server that says so is checked as keyless: keys it ignores
        would make every keys-mode check a false finding."""
        return self.options.keys_given and not self.keys_refused_by_spec

    @property
    def keys_refused_by_spec(self) -> bool:
        """Keys were given, and ``/spec`` says ``api_keys_required: false`` (a ``/spec`` that cannot be
        read or does not say leaves the keys in use: the user's word stands)."""
        if not self.options.keys_given:
            return False
        spec = self.fetch_spec()
        capabilities = spec.get("capabilities") if isinstance(spec, dict) else None
        return isinstance(capabilities, dict) and capabilities.get("api_keys_required") is False

    @property
    def keys_note(self) -> str | None:
        """Why the run's API keys were not used, for the terminal and the report; None when they were."""
        if self.connection.broken_reason is not None and not self._spec_fetched:
            return None
        if not self.keys_refused_by_spec:
            return None
        return (
            f"{len(self._key_agents)} API key(s) given, but /spec says api_keys_required: false: "
            "the server is checked as keyless (the keys are not sent)"
        )

    def agent(self, role: str, *, taken: int | None = None) -> Agent:
        """The agent playing ``role``. Keyless, its id derives from the run (the same in every worker,
        as the keyed agents are, so a step another worker made is adopted with its agents); in keys mode the
        ``taken``-th keyed agent plays it (a check maps its own roles onto the keys in order of first
        use, so any check needing no more agents than were given can run)."""
        if not self.keys_mode:
            return Agent(role, f"{self.run.run_prefix}-{role}")
        index = len(self._agents) if taken is None else taken
        if role in self._agents and taken is None:
            return self._agents[role]
        if index >= len(self._key_agents):
            raise NotEnoughAgents(
                as_options_given(
                    f"this check needs {index + 1} agents with API keys, "
                    f"{len(self._key_agents)} were given: add another --api-key AGENT=KEY"
                )
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
        return _TrackingClient(
            self,
            self.connection,
            headers=agent.headers() if agent else {},
            log=log if log is not None else self.side_log,
            deadline=deadline,
        )

    def run_client(self, agent: Agent) -> Client:
        return self.client(agent, log=[], deadline=time.monotonic() + self.run.options.timeout * 3)

    # what the server says about itself ----------------------------------------------------------

    def fetch_spec(self) -> dict[str, Any] | None:
        """``GET /spec`` once per run; None (with :attr:`spec_error`) when it cannot be read."""
        self._settle_briefing()
        if not self._spec_fetched:
            self._spec_fetched = True
            try:
                reply = self.client(None).get("/spec")
                self._open_routes.setdefault("/spec", reply.exchange)
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

    def adopt_spec_state(self, state: Mapping[str, Any]) -> None:
        self._spec_fetched = True
        self._spec = state.get("spec")
        self._spec_error = state.get("error")
        self.spec_status = state.get("status")
        self.spec_failed_in_transport = bool(state.get("transport"))

    @property
    def spec_error(self) -> str | None:
        return self._spec_error

    def open_route(self, path: str) -> Exchange | None:
        """The session's answered anonymous ``GET path`` (``/health``, ``/spec``), while the server is
        still reachable, else None (a parallel run's worker: the controller sent them)."""
        return None if self.connection.broken_reason else self._open_routes.get(path)

    # cleanup ------------------------------------------------------------------------------------

    def remember(self, cell_id: str, agent: Agent) -> None:
        self.created.append(CreatedCell(cell_id, agent))
        self._creators.setdefault(cell_id, agent.id)

    def know(self, cell_id: str, agent: Agent) -> None:
        """A cell another worker created in a shared step this worker adopted: its creator is known
        (``creator_of``); its cleanup is its maker's."""
        self._creators.setdefault(cell_id, agent.id)

    def creator_of(self, cell_id: str) -> str | None:
        """The agent id that created ``cell_id`` in this run, if the run created it."""
        return self._creators.get(cell_id)

    def _track(self, exchange: Exchange) -> None:
        """Note a created cell archived (PATCH answered 200 with status archived) or deleted (DELETE
        answered 204), whoever asked."""
        match = _CELL_URL.search(exchange.url)
        if match is None or (match.group(1) not in self._creators and match.group(1) not in self._seen):
            return
        cell_id = match.group(1)
        if exchange.method == "DELETE" and exchange.status == 204:
            self._states[cell_id] = "deleted"
        elif exchange.method == "PATCH" and exchange.status == 200 and _archived(exchange.response_body):
            self._states.setdefault(cell_id, "archived")

    def note_create(self, agent: Agent | None, owner: str | None, *, broken: bool) -> None:
        """A create went out as ``agent`` naming ``owner``; ``broken``: its response was lost (or the
        client repeated it), so the server may hold a cell of that owner the run does not know."""
        if owner is None:
            return  # a create naming no owner makes no cell a listing of the run's owners could find
        with self._noting:
            agents = self._owner_agents.setdefault(owner, {})
            if agent is not None:
                agents.setdefault(agent.id, agent)
            if broken:
                self._suspect_owners.add(owner)

    def note_created(self, cell_id: str, agent: Agent) -> None:
        """A create answered with ``cell_id``: if no check remembers it (its step broke on another
        request first), the cleanup removes it all the same."""
        with self._noting:
            self._seen.setdefault(cell_id, agent)

    def _orphans(self) -> list[CreatedCell]:
        """Cells a create of this run answered that nobody remembered and no DELETE removed."""
        with self._noting:
            seen = dict(self._seen)
        remembered = {cell.id for cell in self.created}
        return [
            CreatedCell(cell_id, agent)
            for cell_id, agent in seen.items()
            if cell_id not in remembered and self._states.get(cell_id) != "deleted"
        ]

    def clean_up(self, *, sparing: Sequence[Any] = ()) -> None:
        """Archive and delete what the run created and is not deleted yet (several at a time), then
        sweep the owners whose creates lost their response (:meth:`_sweep`); what stays on the server
        is ``cleanup.left``, never a failure. ``sparing``: the protocol states of shared steps whose
        cells another worker may still use, left for a later call."""
        spared = {cell_id for state in sparing for cell_id, _ in dict(state or {}).get("cells") or ()}
        created = [*self.created, *(cell for cell in self._orphans() if cell.id not in self._orphaned)]
        now = [cell for cell in created if cell.id not in spared]
        self._orphaned.update(cell.id for cell in now)
        self.created = [cell for cell in self.created if cell.id in spared]
        before = self.connection.requests
        try:
            self._clean_up(now)
            self._sweep(spared)
        finally:
            self.cleanup_requests += self.connection.requests - before

    def _clean_up(self, created: list[CreatedCell]) -> None:
        if self.options.keep_cells:
            if created:
                self.cleanup["problems"].append(f"skipped: --keep-cells left {len(created)} cells")
            return
        pending: dict[str, CreatedCell] = {}
        for cell in created:
            pending.setdefault(cell.id, cell)
        self.cleanup["attempted"] += len(pending)
        left = [cell for cell in pending.values() if self._states.get(cell.id) != "deleted"]
        self.cleanup["deleted"] += len(pending) - len(left)
        self._remove_all(left)

    def _remove_all(self, cells: list[CreatedCell]) -> None:
        lock = threading.Lock()
        if self.connection.http_override is not None or len(cells) < 2:
            for cell in cells:
                self._remove(cell, lock)
            return
        # no more threads than the limiter lets send: a cell's deadline starts when its thread takes it
        limiter = self.connection.limiter
        threads = min(CLEANUP_CONCURRENCY, limiter.limit if limiter is not None else CLEANUP_CONCURRENCY)
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="amp-cleanup") as pool:
            list(pool.map(lambda cell: self._remove(cell, lock), cells))

    def _sweep(self, spared: set[str]) -> None:
        """List the cells of every owner a lost create named (as the agents that created for it, in
        each state a cell can be removed from) and remove those the run did not know: a fault-free
        run lists nothing. An owner holding a spared cell is swept again by the later call."""
        if self.options.keep_cells or self.connection.broken_reason:
            return
        with self._noting:
            owners = set(self._suspect_owners)
        known = {cell.id for cell in self.created} | {entry["id"] for entry in self.cleanup["left"]}
        found: dict[str, CreatedCell] = {}
        swept: set[str] = set()
        for owner in sorted(owners):
            agents = list(self._owner_agents.get(owner, {}).values())
            if not agents and not self.keys_mode:
                agents = [Agent("sweep", owner)]  # keyless, the owner reads and writes its own cells
            try:
                ids = {cell_id: agent for agent in agents for cell_id in self._listed(owner, agent)}
            except (ToolError, ValueError) as exc:  # ValueError: an owner id no URL can carry
                self.cleanup["problems"].append(f"sweep of owner {owner!r}: {exc}")
                continue
            if not ids.keys() & spared:
                swept.add(owner)
            for cell_id, agent in ids.items():
                if cell_id not in spared and cell_id not in known and self._states.get(cell_id) != "deleted":
                    found.setdefault(cell_id, CreatedCell(cell_id, agent))
        with self._noting:
            self._suspect_owners -= swept
        self.cleanup["attempted"] += len(found)
        self._remove_all(list(found.values()))

    def _listed(self, owner: str, agent: Agent) -> list[str]:
        """The ids of ``owner``'s cells ``agent`` can read, in every state a cell can be removed from,
        paging with the server's cursor or offset (bounded)."""
        client = self.run_client(agent)
        ids: list[str] = []
        for status in SWEPT_STATES:
            offset, cursor = 0, None
            for _ in range(SWEEP_PAGES):
                params: dict[str, Any] = {"owner_id": owner, "status": status, "limit": SWEEP_PAGE}
                params.update({"cursor": cursor} if cursor else {"offset": offset})
                reply = client.get("/memories", params=params)
                if reply.status != 200:
                    break  # a state the server does not list: the others still are
                try:
                    page = reply.json_object()
                except AssertionError:
                    break
                results = [r for r in page.get("results") or () if isinstance(r, dict)]
                ids += [r["id"] for r in results if isinstance(r.get("id"), str)]
                cursor = page.get("next_cursor") if isinstance(page.get("next_cursor"), str) else None
                offset += len(results)
                if not results or not (page.get("has_more") or cursor):
                    break
        return ids

    def _remove(self, cell: CreatedCell, lock: threading.Lock) -> None:
        """Archive (unless already archived) and delete one cell; what cannot be removed is
        ``cleanup.left`` with the reason."""
        reason = self.connection.broken_reason
        if reason is None:
            try:
                reason = self._archive_and_delete(self.run_client(cell.agent), cell.id)
            except ToolError as exc:
                reason = str(exc)
        with lock:
            if reason is None:
                self.cleanup["deleted"] += 1
            else:
                self.cleanup["left"].append({"id": cell.id, "reason": reason})

    def _archive_and_delete(self, client: Client, cell_id: str) -> str | None:
        """None once ``cell_id`` is gone, else why it is still there. A lost archive PATCH is settled
        by the DELETE itself (a 409 means it did not land: archive again, delete again); a repeated
        DELETE that finds the cell gone (``AmbiguousExchange``) or a 404/410 is gone."""
        path = f"/memories/{cell_id}"
        if self._states.get(cell_id) != "archived" and self._archive(client, path) is None:
            return None
        for attempt in range(2):
            try:
                reply = client.delete(path)
            except AmbiguousExchange:
                return None  # the broken first attempt deleted it
            if 200 <= reply.status < 300 or reply.status in (404, 410):
                return None
            if reply.status != 409:
                return f"DELETE answered {reply.status}"
            state = self._state_of(client, path)  # a 409 for a cell a lost answer deleted already
            if state is None:
                return None
            if attempt:
                return f"DELETE answered 409 (the cell reads as {state})"
            if self._archive(client, path) is None:
                return None
        return None  # (unreachable: the loop returns)

    def _state_of(self, client: Client, path: str) -> str | None:
        """The cell's lifecycle status as a read shows it, None when it is gone (404, 410, deleted)."""
        try:
            reply = client.get(path)
            body = reply.json() if reply.status == 200 else None
        except (ToolError, AssertionError):
            return "unknown (the read failed)"
        if reply.status in (404, 410):
            return None
        lifecycle = body.get("lifecycle") if isinstance(body, dict) else None
        status = lifecycle.get("status") if isinstance(lifecycle, dict) else None
        if status == "deleted":
            return None
        return str(status) if status is not None else f"unknown (GET answered {reply.status})"

    def _archive(self, client: Client, path: str) -> int | None:
        """PATCH the cell archived: its status (0 when the answer was lost), None when it is gone."""
        archived = {"lifecycle": {"status": "archived"}}
        try:
            reply = client.patch(path, archived)
            if reply.status == 413:  # a cell at the size limit (a size check cut short) grows when archived
                client.patch(path, {"content": {"text": "removed by amp-conformance"}})
                reply = client.patch(path, archived)
        except TransportFailure:  # ambiguous, whatever the client called it: the DELETE after it tells
            return 0
        return None if reply.status in (404, 410) else reply.status


def _archived(body: bytes) -> bool:
    try:
        document = json.loads(body)
    except ValueError:
        return False
    lifecycle = document.get("lifecycle") if isinstance(document, dict) else None
    return isinstance(lifecycle, dict) and lifecycle.get("status") == "archived"


def _body_of(kwargs: Mapping[str, Any]) -> Any:
    """The JSON a request's keyword arguments carry (``json_body``, or ``content`` that parses)."""
    if "json_body" in kwargs:
        return kwargs["json_body"]
    content = kwargs.get("content")
    try:
        return json.loads(content) if content is not None else None
    except (ValueError, RecursionError):
        return None


def _created_id(reply: Reply) -> str | None:
    """The id a create's 2xx answer names, if any."""
    if not 200 <= reply.status < 300:
        return None
    try:
        body = json.loads(reply.content)
    except (ValueError, RecursionError):
        return None
    cell_id = body.get("id") if isinstance(body, dict) else None
    return cell_id if isinstance(cell_id, str) else None


def _owner_of(kwargs: Mapping[str, Any]) -> str | None:
    """The ``identity.owner_id`` of a create's body, if it names one."""
    body = _body_of(kwargs)
    identity = body.get("identity") if isinstance(body, dict) else None
    owner = identity.get("owner_id") if isinstance(identity, dict) else None
    return owner if isinstance(owner, str) else None
