"""``amp``: what a check works with — identities, requests, the server's claims, and verdicts."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar

from amp_conformance.amp01.conventions import Conventions, answer_of, detect_conventions, label
from amp_conformance.amp01.envelope import envelope_problems, validation_error_problems
from amp_conformance.amp01.session import Agent, Amp01Session, NotEnoughAgents, as_options_given
from amp_conformance.engine.client import Client, Reply, at_once
from amp_conformance.engine.context import CheckContext
from amp_conformance.engine.outcomes import (
    AmbiguousExchange,
    CheckFailure,
    PreconditionFailed,
    ToolError,
    TransportFailure,
)
from amp_conformance.engine.steps import roles_of

if TYPE_CHECKING:
    from amp_conformance.engine.run import Run
    from amp_conformance.engine.spec import CheckSpec

DEFAULT_MAX_PAGE_SIZE = 100
_CELL_IN_URL = re.compile(r"/memories/([^/?#]+)")
KEYS_NEEDED = (
    "the server requires API keys (/spec api_keys_required: true): give the suite keys with "
    "--api-key AGENT=KEY (repeatable) or --api-keys-file"
)


_T = TypeVar("_T")

#: The statuses an owner's list can show a fresh cell with (a scheduled pass may move one on).
_LISTED = ("active", "stale", "archived")
#: Pages of an owner's list read while reconciling a create (an owner of the run holds a few cells).
_RECONCILE_PAGES = 10


@dataclass(frozen=True)
class Adopted:
    """The cell a create whose answer was lost made, found in its owner's list: the stored cell, and
    the list reply that showed it (the step's evidence, in place of the create's answer)."""

    cell: dict[str, Any]
    listing: Reply


def _leaf_values(value: Any, prefix: str = "") -> Iterable[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield from _leaf_values(inner, f"{prefix}{key}.")
    else:
        yield prefix.rstrip("."), value


def _at(cell: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(cell, Mapping):
            return None
        cell = cell.get(part)
    return cell


def _made_from(cell: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    """Whether ``cell`` can be the one ``body`` created: its type, text, owner type, scoring and access
    policy as asked (cells of one owner created at once differ in those)."""
    asked = [("type", body.get("type")), ("content.text", _at(body, "content.text"))]
    asked.append(("identity.owner_type", _at(body, "identity.owner_type")))
    for section in ("scoring", "access_policy"):
        given = body.get(section)
        asked += [(f"{section}.{k}", v) for k, v in _leaf_values(given if isinstance(given, Mapping) else {})]
    return all(_at(cell, path) == value for path, value in asked if value is not None)


def deep_merge(base: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``overrides`` merged in, objects key by key (the input is not changed)."""
    merged = copy.deepcopy(base)
    for key, value in overrides.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _open_route_refused(reply: Reply) -> bool:
    """``GET /spec`` or ``GET /health`` refused with 401/403: both are open to everyone (AMP-AUTH-07)."""
    exchange = reply.exchange
    path = exchange.url.split("?", 1)[0].rstrip("/")
    return exchange.method == "GET" and exchange.status in (401, 403) and path.endswith(("/spec", "/health"))


class Amp01Context(CheckContext[Amp01Session]):
    """The per-check API of AMP v0.1.0: the engine's verdicts plus identities, cells and envelopes.
    Requests made through it are recorded as the check's evidence."""

    def __init__(self, run: Run, spec: CheckSpec, session: Amp01Session):
        super().__init__(run, spec, session)
        self._roles: dict[str, Agent] = {}

    def skip(self, reason: str) -> NoReturn:
        """Skip, the reason naming the options as this run takes them (the command's ``--admin-token``,
        the plugin's ``--amp-admin-token``)."""
        super().skip(as_options_given(reason))

    # identities ------------------------------------------------------------------------------

    def agent(self, role: str = "a") -> Agent:
        """The agent playing ``role``; skips when the server requires keys the run was not given."""
        if not self.keys_mode and self.capabilities.get("api_keys_required") is True:
            self.skip(KEYS_NEEDED)
        if role not in self._roles:
            self._take_declared_roles()
        if role not in self._roles:
            try:
                self._roles[role] = self.session.agent(role, taken=len(self._roles))
            except NotEnoughAgents as exc:
                self.skip(str(exc))
        return self._roles[role]

    def optional_agent(self, role: str) -> Agent | None:
        """The agent for ``role``, or None (no skip) when keys mode has run out of agents."""
        self._take_declared_roles()
        if role in self._roles:
            return self._roles[role]
        try:
            agent = self.session.agent(role, taken=len(self._roles))
        except NotEnoughAgents:
            return None
        self._roles[role] = agent
        return agent

    def _take_declared_roles(self) -> None:
        """The roles of the shared steps the check declares (``@check(uses=...)``), first and in their
        order, so that a step is adopted with the agents its maker played, whatever the check asks
        for first (in keys mode the roles take the keys in order of first use)."""
        if self._roles:
            return
        for declared in roles_of((*self.check_spec.uses, *self.check_spec.adopts)):
            try:
                self._roles[declared] = self.session.agent(declared, taken=len(self._roles))
            except NotEnoughAgents:
                return  # the check skips once it asks for a role no key is left for

    def agent_id(self, role: str = "a") -> str:
        return self.agent(role).id

    def as_agent(self, role: str = "a") -> Client:
        """A client sending ``role``'s identity (and key in keys mode)."""
        return self.session.client(self.agent(role), log=self.evidence.exchanges, deadline=self.deadline)

    def anonymous(self) -> Client:
        """A client sending no identity and no key."""
        return self.session.client(None, log=self.evidence.exchanges, deadline=self.deadline)

    def with_headers(self, headers: Mapping[str, str]) -> Client:
        """A client sending exactly ``headers`` (for identity and key probes)."""
        client = self.session.client(None, log=self.evidence.exchanges, deadline=self.deadline)
        client.headers = dict(headers)
        return client

    def at_once(self, *calls: Callable[[], _T]) -> list[_T]:
        """The calls' results in order, their requests sent at the same time (engine ``at_once``):
        only for requests that do not depend on one another; judge the replies after, not in a call."""
        return at_once(self.session.connection, calls)

    def owner(self) -> str:
        """A fresh owner id, unique to this run."""
        return self.session.new_owner()

    @property
    def keys_mode(self) -> bool:
        """The run uses API keys: given, and the server does not say it takes none (the session's)."""
        return self.session.keys_mode

    @property
    def server_requires_keys(self) -> bool:
        """The server is held to the keys-mode rules: the run was given keys, or /spec says keys are
        required (a keys-mode server checked without keys is still a keys-mode server)."""
        return self.keys_mode or self.capabilities.get("api_keys_required") is True

    # what the server claims --------------------------------------------------------------------

    @property
    def spec(self) -> dict[str, Any]:
        """``/spec`` ``capabilities``; the check fails when the server cannot say."""
        body = self.session.fetch_spec()
        if body is None:
            message = f"GET /spec is needed by this check and failed: {self.session.spec_error}"
            if self.session.spec_failed_in_transport:
                raise ToolError(message)
            # /spec refused to a caller without credentials breaks "open to all" (AMP-AUTH-07), not its shape
            root = "AMP-AUTH-07" if self.session.spec_status in (401, 403) else "AMP-CAP-01"
            raise PreconditionFailed(message, step="reading GET /spec", requirement=root)
        capabilities = body.get("capabilities")
        if not isinstance(capabilities, dict):
            raise PreconditionFailed(
                "GET /spec has no capabilities object", step="reading GET /spec", requirement="AMP-CAP-01"
            )
        return capabilities

    @property
    def capabilities(self) -> dict[str, Any]:
        """``/spec`` capabilities, or ``{}`` when the server cannot say (never fails the check)."""
        body = self.session.fetch_spec()
        capabilities = body.get("capabilities") if isinstance(body, dict) else None
        return capabilities if isinstance(capabilities, dict) else {}

    @property
    def max_page_size(self) -> int:
        value = self.spec.get("max_page_size")
        return value if isinstance(value, int) and value > 0 else DEFAULT_MAX_PAGE_SIZE

    @property
    def conventions(self) -> Conventions:
        found = self.session.conventions
        if not isinstance(found, Conventions):
            found = detect_conventions(self.session)
            self.session.conventions = found
        return found

    # cells -------------------------------------------------------------------------------------

    def cell_body(self, overrides: Mapping[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
        """A valid create body for a fresh owner, with ``overrides`` deep-merged in."""
        body: dict[str, Any] = {
            "type": "semantic",
            "content": {"text": "The user prefers Python for backend development"},
            "identity": {"owner_id": self.owner(), "owner_type": "user"},
        }
        return deep_merge(deep_merge(body, overrides or {}), fields)

    def create_cell(
        self, overrides: Mapping[str, Any] | None = None, *, as_agent: str = "a", **fields: Any
    ) -> dict[str, Any]:
        """Create a cell. A step, not a question: a 2xx with an id will do (AMP-CRE-01 insists on 201
        itself); anything else blocks the check under AMP-CRE-01. An answer lost in transport is
        reconciled (:meth:`send_create`)."""
        body = self.cell_body(overrides, **fields)
        return self.created_cell(self.send_create(body, as_agent=as_agent), as_agent=as_agent)

    def send_create(self, body: Any, *, as_agent: str = "a") -> Reply | Adopted:
        """``POST /memories`` of ``body`` as a step: its reply, or, when the answer was lost (the server
        may or may not have stored the cell), the cell it made, found in the owner's list.

        The body's owner is the run's own (:meth:`owner`), so the list tells: the one cell of that owner
        the run does not know yet and that matches the body is adopted (remembered for the cleanup);
        no unknown cell at all, the create certainly did not happen and is sent once more; anything else
        (the list failing, several candidates) leaves the failure standing, never a guess. For creates
        whose answer the check judges, send the POST itself: there is nothing to reconcile then."""
        client = self.as_agent(as_agent)
        try:
            return self._remembered(client.post("/memories", body), as_agent)
        except TransportFailure as lost:
            try:
                found = self._find_created(client, body)
            except (ToolError, CheckFailure):  # the list broke too (or is no JSON): it cannot tell
                raise lost from None
            if found is None:
                raise
            if isinstance(found, Adopted):
                self.remember(found.cell["id"], as_agent=as_agent)
                self._network("count_reconciled")
                self.note(
                    f"the answer to creating cell {found.cell['id']} was lost ({lost}); the owner's list "
                    "shows the cell it made, taken as the step's"
                )
                return found
        self._network("count_repeated")
        self.note("a create's answer was lost and the owner's list shows no such cell: sent once more")
        return self._remembered(client.post("/memories", body), as_agent)

    def _remembered(self, reply: Reply, as_agent: str) -> Reply:
        """``reply``, its cell remembered at once: a create sent beside it (``at_once``) that must
        reconcile then knows this cell is not its own."""
        try:
            cell = reply.json() if 200 <= reply.status < 300 and reply.text else None
        except CheckFailure:
            return reply
        if isinstance(cell, dict) and isinstance(cell.get("id"), str):
            self.remember(cell["id"], as_agent=as_agent)
        return reply

    def _find_created(self, client: Client, body: Any) -> Adopted | Literal[False] | None:
        """What the owner's list says of ``body``'s create: the cell (:class:`Adopted`), False when
        the owner has no cell the run does not know (the create did not happen), None when it cannot
        tell. Lists by status, each page by page, until a status shows a cell the run does not know."""
        owner = _at(body, "identity.owner_id") if isinstance(body, Mapping) else None
        if not isinstance(owner, str):
            return None
        for status in _LISTED:
            unknown: list[tuple[dict[str, Any], Reply]] = []
            offset = 0
            for _ in range(_RECONCILE_PAGES):
                params: dict[str, Any] = {"owner_id": owner, "status": status}
                if offset:
                    params["offset"] = offset
                reply = client.get("/memories", params=params)
                page = reply.json() if reply.status == 200 else None
                results = page.get("results") if isinstance(page, dict) else None
                if not isinstance(results, list):
                    return None
                for cell in results:
                    if (
                        isinstance(cell, dict)
                        and isinstance(cell.get("id"), str)
                        and self.session.creator_of(cell["id"]) is None
                    ):
                        unknown.append((cell, reply))
                if not isinstance(page, dict) or page.get("has_more") is not True or not results:
                    break
                offset += len(results)
            else:
                return None  # more pages than an owner of the run holds: not the run's to guess
            if unknown:
                matching = [(cell, reply) for cell, reply in unknown if _made_from(cell, body)]
                return Adopted(*matching[0]) if len(matching) == 1 else None
        return False

    def _network(self, count: str) -> None:
        """Count on the run's network log (the connection's, once the client keeps one)."""
        network = getattr(self.session.connection, "network", None)
        if network is not None:
            getattr(network, count)()

    def created_cell(self, reply: Reply | Adopted, *, as_agent: str = "a") -> dict[str, Any]:
        """The cell a create answered, judged as :meth:`create_cell` judges its own (for creates sent
        together, ``at_once``): a 2xx with an id, remembered for the cleanup, or the check is blocked.
        A cell :meth:`send_create` adopted is already remembered."""
        if isinstance(reply, Adopted):
            return reply.cell
        cell = reply.json() if 200 <= reply.status < 300 and reply.text else None
        if not isinstance(cell, dict) or not isinstance(cell.get("id"), str):
            shown = (
                f"status {reply.status}" if not 200 <= reply.status < 300 else "a body without a string id"
            )
            self.precondition_failed(
                f"creating a cell answered {shown}", reply, step="creating a cell", requirement="AMP-CRE-01"
            )
        if self.session.creator_of(cell["id"]) is None:  # not remembered by send_create already
            self.remember(cell["id"], as_agent=as_agent)
        return cell

    def remember(self, cell_id: str, *, as_agent: str = "a") -> None:
        """Register a cell created outside :meth:`create_cell`, so the run cleans it up."""
        self.session.remember(cell_id, self.agent(as_agent))

    def archive(self, cell_id: str, *, as_agent: str = "a") -> dict[str, Any]:
        """Archive a cell (a step: anything but 200 with an object blocks the check under AMP-PATCH-10);
        an answer lost in transport is settled as :meth:`send_archive` does."""
        return self.archived_step(self.send_archive(cell_id, as_agent=as_agent))

    def send_archive(self, cell_id: str, *, as_agent: str = "a") -> Reply:
        """The archive PATCH of a step: its reply, or, when the answer was lost, the cell read back
        (GET, an access): archived, that read is the step's reply (200 with the cell as stored); still
        active or stale, the PATCH is sent once more; anything else leaves the failure standing. For an
        archive whose answer the check judges, send the PATCH itself."""
        client = self.as_agent(as_agent)
        path = f"/memories/{cell_id}"
        try:
            return client.patch(path, {"lifecycle": {"status": "archived"}})
        except TransportFailure as lost:
            try:
                read = client.get(path)
                cell = read.json() if read.status == 200 else None
            except (ToolError, CheckFailure):
                raise lost from None
            status = _at(cell, "lifecycle.status")
            if status == "archived":
                self._network("count_reconciled")
                self.note(f"archiving {cell_id}: the answer was lost; the cell reads back archived")
                return read
            if status not in ("active", "stale"):
                raise
        self._network("count_repeated")
        self.note(f"archiving {cell_id}: the answer was lost and the cell reads {status}: sent once more")
        return client.patch(path, {"lifecycle": {"status": "archived"}})

    def archived_step(self, reply: Reply) -> dict[str, Any]:
        """Judge an archive PATCH (sent here or by a shared step) as a step: 200 with an object."""
        body = reply.json() if reply.status == 200 else None
        if not isinstance(body, dict):
            self.precondition_failed(
                f"archiving a cell answered status {reply.status}",
                reply,
                step="archiving a cell",
                requirement="AMP-ACL-08" if self.creator_refused(reply) else "AMP-PATCH-10",
            )
        return body

    def delete_cell(self, cell_id: str, *, as_agent: str = "a") -> None:
        """Archive, then delete (steps: a refusal blocks the check under AMP-PATCH-10 or AMP-DEL-01).
        A DELETE repeated after a broken attempt that finds the cell gone is the step done."""
        self.archive(cell_id, as_agent=as_agent)
        client = self.as_agent(as_agent)
        try:
            reply = client.delete(f"/memories/{cell_id}")
        except AmbiguousExchange as lost:
            if not self._gone(client, cell_id, lost):
                raise
            self._network("count_reconciled")
            self.note(f"deleting {cell_id}: the first answer was lost; the repeat finds the cell gone")
            return
        self.deleted_step(reply)

    def _gone(self, client: Client, cell_id: str, lost: AmbiguousExchange) -> bool:
        """Whether an ambiguous DELETE left the cell gone: the repeat answered 404/410, or the cell
        reads as deleted (either documented answer for a deleted cell)."""
        exchange = lost.exchange
        if exchange is not None and exchange.method == "DELETE" and exchange.status in (404, 410):
            return True
        try:
            read = client.get(f"/memories/{cell_id}")
            if read.status in (404, 410):
                return True
            return read.status == 200 and _at(read.json(), "lifecycle.status") == "deleted"
        except (ToolError, CheckFailure):
            return False

    def deleted_step(self, reply: Reply) -> None:
        """Judge the DELETE of an archived cell (sent here or by a shared step) as a step: 204."""
        if reply.status != 204:
            self.precondition_failed(
                f"deleting an archived cell answered status {reply.status}",
                reply,
                step="deleting an archived cell",
                requirement="AMP-ACL-08" if self.creator_refused(reply) else "AMP-DEL-01",
                expected="204",
            )

    def _shared_begin(self) -> Any:
        return len(self.session.created)

    def _shared_state(self, begun: Any) -> Any:
        # every role the maker held (later checks play the same parts), and the cells it created
        # (another worker adopting the step must know who created them: creator_of, the cleanup)
        cells = self.session.created[begun if isinstance(begun, int) else len(self.session.created) :]
        return {"roles": dict(self._roles), "cells": [(cell.id, cell.agent) for cell in cells]}

    def _adopt_shared_state(self, name: str, state: Any, *, foreign: bool = False) -> None:
        state = dict(state or {})
        for role, agent in dict(state.get("roles") or {}).items():
            taken = role not in self._roles and agent in self._roles.values()
            if self._roles.get(role, agent) != agent or taken:
                raise ToolError(f"shared {name!r}: call amp.shared before acting as another agent")
            self._roles[role] = agent
        if foreign:
            for cell_id, agent in state.get("cells") or ():
                self.session.know(cell_id, agent)

    def unknown_id(self) -> str:
        """A well-formed id no server has issued, in the server's id form."""
        from ulid import ULID

        value = str(ULID())
        return value if self.conventions.id_form == "bare" else f"mem_{value}"

    # verdicts ----------------------------------------------------------------------------------

    def creator_refused(self, reply: Reply) -> bool:
        """Whether ``reply`` refuses (401/403) the agent that created the cell the request names: the
        creator's access is AMP-ACL-08's question, a step for every other check."""
        exchange = reply.exchange
        if exchange.status not in (401, 403):
            return False
        match = _CELL_IN_URL.search(exchange.url)
        agent = {k.lower(): v for k, v in exchange.request_headers.items()}.get("x-amp-agent-id")
        return match is not None and agent is not None and self.session.creator_of(match.group(1)) == agent

    def reattribute(self, failure: CheckFailure) -> CheckFailure:
        """The failure as the root cause it stands for. A list or search by a cell's creator that misses
        the creator's own cells, on a server that refuses creators their own cells, is AMP-ACL-08's
        finding: for every other check, a step it depends on is broken."""
        exchange = failure.exchange
        if (
            exchange is None
            or isinstance(failure, PreconditionFailed)
            or "AMP-ACL-08" in self.check_spec.requirements
            or (
                not (exchange.method == "GET" and "/memories" in exchange.url)
                and not exchange.url.endswith("/memories/search")
            )
        ):
            return failure
        agent = {k.lower(): v for k, v in exchange.request_headers.items()}.get("x-amp-agent-id")
        if (
            agent is None
            or agent not in {c.agent.id for c in self.session.created}
            or self._creators_served()
        ):
            return failure
        return PreconditionFailed(
            failure.message,
            step="the creator listing or searching its own cells",
            requirement="AMP-ACL-08",
            expected=failure.expected,
            exchange=exchange,
        )

    def _creators_served(self) -> bool:
        """Whether a creator may read its own fresh cell (probed once per run, outside any check)."""
        known = self.run.cache.get("creator_reads_own_cell")
        if known is None:
            agent = self.session.agent("a")
            client = self.session.run_client(agent)
            body = {
                "type": "semantic",
                "content": {"text": "amp-conformance creator probe"},
                "identity": {"owner_id": self.session.new_owner(), "owner_type": "user"},
            }
            try:
                created = client.post("/memories", body)
                cell = created.json() if 200 <= created.status < 300 else None
                if isinstance(cell, dict) and isinstance(cell.get("id"), str):
                    self.session.remember(cell["id"], agent)
                    known = client.get(f"/memories/{cell['id']}").status not in (401, 403)
                else:
                    known = True  # nothing to learn: the create's own checks report it
            except ToolError:
                return True  # the network's doing, not the server's answer: asked again next time
            except AssertionError:
                known = True
            self.run.cache["creator_reads_own_cell"] = known
        return bool(known)

    def creator_step_failed(self, message: str, reply: Reply) -> NoReturn:
        """The creator was refused its own cell: AMP-ACL-08's finding, a broken step for other checks."""
        message += ": the cell's creator was refused"
        if "AMP-ACL-08" in self.check_spec.requirements:
            self.fail(message, reply, requirement="AMP-ACL-08")
        self.precondition_failed(
            message, reply, step="the creator acting on its own cell", requirement="AMP-ACL-08"
        )

    def expect_status(
        self, reply: Reply, *statuses: int, what: str | None = None, requirement: str | None = None
    ) -> None:
        if reply.status not in statuses:
            wanted = " or ".join(str(s) for s in statuses)
            subject = what or f"{reply.exchange.method} {reply.exchange.url}"
            if requirement is None and self.creator_refused(reply) and not {401, 403} & set(statuses):
                self.creator_step_failed(f"{subject} answered {reply.status}, not {wanted}", reply)
            if requirement is None and _open_route_refused(reply) and not {401, 403} & set(statuses):
                message = f"{subject} answered {reply.status}: an open route asked for credentials"
                if "AMP-AUTH-07" in self.check_spec.requirements:
                    self.fail(message, reply, expected=wanted, requirement="AMP-AUTH-07")
                self.precondition_failed(
                    message,
                    reply,
                    step="reading /spec or /health without credentials",
                    requirement="AMP-AUTH-07",
                )
            self.fail(
                f"{subject} answered {reply.status}, not {wanted}",
                reply,
                expected=wanted,
                requirement=requirement,
            )

    def expect_error(
        self, reply: Reply, status: int | Iterable[int], codes: str | Iterable[str] | None = None
    ) -> dict[str, Any]:
        """The reply is an error with ``status`` and one of ``codes``, in the AMP envelope."""
        statuses = (status,) if isinstance(status, int) else tuple(status)
        wanted_codes = (codes,) if isinstance(codes, str) else tuple(codes or ())
        expectation = " or ".join(str(s) for s in statuses)
        if wanted_codes:
            expectation += " with code " + " or ".join(wanted_codes)
        if reply.status not in statuses and not {401, 403} & set(statuses) and self.creator_refused(reply):
            self.creator_step_failed(f"answered {reply.status}, not {expectation}", reply)
        self.expect(
            reply.status in statuses,
            f"answered {reply.status}, not {expectation}",
            reply,
            expected=expectation,
        )
        body = reply.json()
        # details is a SHOULD (AMP-ERR-01): the errors checks judge it, not every check that sees an error
        problems = envelope_problems(body, require_details=False)
        self.expect(not problems, "error body is not the AMP envelope: " + "; ".join(problems), reply)
        code = body["error"]["code"]
        if wanted_codes:
            self.expect(
                code in wanted_codes, f"expected error code {' or '.join(wanted_codes)}, got {code!r}", reply
            )
        error: dict[str, Any] = body["error"]
        return error

    def expect_validation_error(self, reply: Reply) -> dict[str, Any]:
        """422 ``VALIDATION_ERROR`` with well-formed ``details.errors`` (AMP-ERR-04)."""
        self.expect(reply.status == 422, f"answered {reply.status}, not 422", reply, expected="422")
        problems = validation_error_problems(reply.json())
        self.expect(not problems, "422 body: " + "; ".join(problems), reply)
        error: dict[str, Any] = reply.json()["error"]
        return error

    def expect_unknown_id_answer(self, reply: Reply, what: str) -> None:
        """The server's convention for an unknown id (404 NOT_FOUND or 403), in the envelope."""
        answers = self.conventions.unknown_id_answers()
        got = answer_of(reply)
        self.expect(
            got in answers,
            f"{what}: expected the server's unknown-id answer ({' or '.join(label(a) for a in answers)}), "
            f"got {label(got)}",
            reply,
            expected=" or ".join(label(a) for a in answers),
        )
        self.expect_error(reply, got[0])

    def expect_refusal(self, reply: Reply, what: str) -> None:
        """403 with the server's refusal code (FORBIDDEN or ACCESS_DENIED)."""
        codes = self.conventions.refusal_codes()
        self.expect(reply.status == 403, f"{what}: expected 403, got {reply.status}", reply, expected="403")
        self.expect_error(reply, 403, codes)

    def admin(self) -> Client:
        """A client carrying the admin token; skips unless the run may have global effects."""
        options = self.session.options
        if options.admin_token is None:
            self.skip("needs the admin token: give --admin-token and --allow-global-effects")
        if not options.allow_global_effects:
            self.skip("runs a store-wide lifecycle pass: give --allow-global-effects to allow it")
        client = self.session.client(None, log=self.evidence.exchanges, deadline=self.deadline)
        client.headers = {"X-AMP-Admin-Token": options.admin_token}
        return client
