"""Identity and API keys (AMP-AUTH-02..09; the keyed side of AMP-CRE-07).

Keys mode is in force when ``/spec`` says ``api_keys_required`` or the run was given keys (``--api-key``
/ ``--api-keys-file``) and ``/spec`` does not say ``api_keys_required: false`` (keys a server says it
takes none of are not used: the run is keyless, with a note). Checks that need a working key skip with a
reason naming the flag when the server requires keys and none were given; checks that only provoke
refusals (missing, wrong and unknown-agent keys) run without keys. The 401 ``MISSING_AGENT_ID`` per
route (AMP-AUTH-01) lives in test_errors.py; AMP-AUTH-10 (a broken key file stops start-up) is not
black-box and is left to the reference server's own tests. The refusals AMP-AUTH-03/-04/-05/-08 provoke
are sent once per run (``amp.shared``, with AMP-AUTH-06's), each distinct request once, and judged by
every check they answer; with keys, AMP-AUTH-08's bad-key requests to a private cell and AMP-AUTH-09's
lower-case create go to AMP-AUTH-03's cell (``auth:right-pair``), and the public cell and the refusals
about its owner that test_errors and test_capabilities ask too are ``_shared_cells.public_cell``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from ulid import ULID

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.checks._shared_cells import anonymous_create, created_naming_other, public_cell
from amp_conformance.amp01.checks._support import (
    created_cell_of,
    expect_accepted,
    expect_error,
    open_route_reply,
    remember_created,
    shown,
    step_failed,
)
from amp_conformance.amp01.context import KEYS_NEEDED
from amp_conformance.amp01.session import NotEnoughAgents
from amp_conformance.engine.client import Client, Reply

AGENT_HEADER = "X-AMP-Agent-ID"
KEY_HEADER = "X-AMP-API-Key"
NO_KEYS = (
    "keys mode only: the server does not require API keys (/spec api_keys_required is not true) "
    "and no --api-key was given"
)
KEYS_UNUSED = (
    "keys mode only: the server does not require API keys (/spec api_keys_required: false), so the "
    "run's --api-key keys are not used"
)
NOT_A_KEY = "amp-conformance-not-a-key"


# --------------------------------------------------------------------------------------- helpers


def server_requires_keys(amp: Amp01Context) -> bool:
    return amp.capabilities.get("api_keys_required") is True


def keys_in_force(amp: Amp01Context) -> bool:
    return amp.keys_mode or server_requires_keys(amp)


def no_keys_reason(amp: Amp01Context) -> str:
    """Why keys mode is not in force: no keys given, or the server says it takes none."""
    return KEYS_UNUSED if amp.session.keys_refused_by_spec else NO_KEYS


def need_keys(amp: Amp01Context) -> None:
    """Skip unless the run holds API keys."""
    if not amp.keys_mode:
        amp.skip(KEYS_NEEDED if server_requires_keys(amp) else no_keys_reason(amp))


def need_keys_in_force(amp: Amp01Context) -> None:
    if not keys_in_force(amp):
        amp.skip(no_keys_reason(amp))


def unregistered(amp: Amp01Context, label: str = "unregistered") -> str:
    """An agent id no key file holds: it derives from this run."""
    return f"{amp.run.prefix}-{label}"


def error_triple(reply: Reply) -> tuple[int, Any, Any]:
    try:
        body = reply.json()
    except AssertionError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    error = error if isinstance(error, dict) else {}
    return reply.status, error.get("code"), error.get("message")


REFUSED_LISTED = ("active", "stale")
"""The statuses a cell a refused create stored could be in during the run: new, or decayed by a pass
(archiving takes days of staleness, deletion a request)."""


def _stored_by(amp: Amp01Context, listings: list[Reply], text: str) -> tuple[bool, Reply]:
    """Whether keyed agent "a"'s listings of the refused creates' owner (one per REFUSED_LISTED status;
    anything but 200 breaks AMP-LIST-03) show a cell with ``text``: the texts tell which refused create
    stored it. Cells shown are handed to the clean-up."""
    for status, reply in zip(REFUSED_LISTED, listings, strict=True):
        if reply.status != 200:
            step_failed(amp, reply, f"listing the owner's {status} cells", "AMP-LIST-03", "200")
        results = reply.json_object().get("results")
        mine = [
            item
            for item in (results if isinstance(results, list) else [])
            if isinstance(item, dict) and _text_of(item) == text
        ]
        for item in mine:
            if isinstance(item.get("id"), str):
                amp.remember(item["id"], as_agent="a")
        if mine:
            return True, reply
    return False, listings[-1]


def _text_of(cell: dict[str, Any]) -> Any:
    content = cell.get("content")
    return content.get("text") if isinstance(content, dict) else None


def same_401(amp: Amp01Context, replies: dict[str, Reply], route: str, codes: tuple[str, ...]) -> None:
    """Every reply is 401 with one of ``codes``, and all carry the same status, code and message."""
    for label, reply in replies.items():
        amp.expect(
            reply.status == 401,
            f"{route} with {label}: expected 401, got {reply.status}",
            reply,
            expected="401",
        )
        expect_error(amp, reply, 401, codes)
    triples = {label: error_triple(reply) for label, reply in replies.items()}
    if len(set(triples.values())) > 1:
        seen = "; ".join(f"{label}: {s} {c} {shown(m)}" for label, (s, c, m) in triples.items())
        amp.fail(
            f"{route}: authentication failures are distinguishable (AMP-AUTH-04: one identical 401): {seen}",
            next(iter(replies.values())),
        )
    details = {label: reply.json_object()["error"].get("details") for label, reply in replies.items()}
    if len({repr(value) for value in details.values()}) > 1:
        amp.warn(f"{route}: the 401 bodies differ in error.details: {details}", next(iter(replies.values())))


# ------------------------------------------------------------------------ shared refusal probes


@dataclass
class _Sent:
    """What the shared refusal step sent: each request's position among its exchanges, by label
    (one request can carry several labels: checks asking the same question share its answer)."""

    at: dict[str, int]


class _Sender:
    """Sends each distinct request once and notes its position under every label that asks it.

    ``together``: requests wait until :meth:`flush` (or :meth:`positions`) and then go out at once
    (``amp.at_once``), recorded in the order asked; the step flushes before a request that must follow
    the ones asked before it."""

    def __init__(self, amp: Amp01Context, *, together: bool = False):
        self.amp = amp
        self.base = len(amp.evidence.exchanges)
        self.together = together
        self.at: dict[str, int] = {}
        self._sent: dict[str, int] = {}
        self._waiting: dict[str, Callable[[], Reply]] = {}
        self._asked: dict[str, str] = {}
        """Label -> the key of a request that had not been sent when the label asked it."""

    def __call__(
        self, label: str, headers: dict[str, str] | None, method: str, path: str, role: str = "a", **kw: Any
    ) -> None:
        """Send ``method path`` with exactly ``headers`` (None: as the agent ``role``)."""
        key = json.dumps([headers, role, method, path, kw], sort_keys=True, default=str)
        if key in self._sent:
            self.at[label] = self._sent[key]
            return
        if key not in self._waiting:
            client = self.amp.as_agent(role) if headers is None else self.amp.with_headers(headers)
            self._waiting[key] = functools.partial(client.request, method, path, **kw)
        self._asked[label] = key
        if not self.together:
            self.flush()

    def flush(self) -> None:
        """Send the waiting requests, all at once, and note where each one's exchange is."""
        waiting, self._waiting = self._waiting, {}
        for key, reply in zip(waiting, self.amp.at_once(*waiting.values()), strict=True):
            self._sent[key] = self._position(reply)
        asked, self._asked = self._asked, {}
        for label, key in asked.items():
            self.at[label] = self._sent[key]

    def positions(self) -> dict[str, int]:
        """Every label's position, once the waiting requests are sent."""
        self.flush()
        return self.at

    def _position(self, reply: Reply) -> int:
        mine = self.amp.evidence.exchanges[self.base :]
        return next(i for i, e in enumerate(mine) if e is reply.exchange)

    def adopt(
        self, reply: Reply, label: str, headers: dict[str, str] | None, method: str, path: str, **kw: Any
    ) -> None:
        """Note ``reply`` (a shared step's, its exchange in the evidence) as the answer to the request
        ``label`` describes, so a later label asking the same request gets it too."""
        key = json.dumps([headers, "a", method, path, kw], sort_keys=True, default=str)
        self.use(label, reply)
        self._sent[key] = self.at[label]

    def use(self, label: str, reply: Reply) -> None:
        """Note under ``label`` a reply a shared step already holds (its exchange is in the evidence)."""
        self.at[label] = self._position(reply)


def _failure_probes(amp: Amp01Context) -> dict[str, dict[str, str]]:
    """AMP-AUTH-04's authentication failures: the headers of each (keys mode: missing, wrong, another
    agent's and unknown-agent keys; without keys: unknown agents only)."""
    stranger = unregistered(amp)
    probes: dict[str, dict[str, str]] = {}
    if amp.keys_mode:
        a = amp.agent("a")
        assert a.key is not None
        probes["missing key"] = {AGENT_HEADER: a.id}
        probes["wrong key"] = {AGENT_HEADER: a.id, KEY_HEADER: NOT_A_KEY}
        other = amp.optional_agent("b")
        if other is not None and other.key is not None:
            probes["another agent's key"] = {AGENT_HEADER: a.id, KEY_HEADER: other.key}
        probes["unknown agent with a registered key"] = {AGENT_HEADER: stranger, KEY_HEADER: a.key}
    else:
        probes["unknown agent without a key"] = {AGENT_HEADER: stranger}
    probes["unknown agent with a made-up key"] = {AGENT_HEADER: stranger, KEY_HEADER: NOT_A_KEY}
    return probes


def _public_refusals(amp: Amp01Context) -> dict[str, dict[str, str]]:
    """The callers AMP-AUTH-03/-ACL-01 refuse a public cell (keys mode): none of them authenticated."""
    a = amp.agent("a")
    return {
        "no identity": {},
        "an unknown agent": {AGENT_HEADER: unregistered(amp)},
        "a registered agent without its key": {AGENT_HEADER: a.id},
        "a registered agent with a wrong key": {AGENT_HEADER: a.id, KEY_HEADER: NOT_A_KEY},
    }


def _bad_key(amp: Amp01Context) -> dict[str, str]:
    """AMP-AUTH-08's caller: a registered agent with a wrong key (without keys: an unknown agent)."""
    probes = _failure_probes(amp)
    return probes["wrong key"] if amp.keys_mode else probes["unknown agent with a made-up key"]


PUBLIC_ROUTES = ("GET", "search", "list")
BAD_KEY_TEXT = "a create refused for its key"
NAMED_TEXT = "a create without credentials naming a created_by"


def _create_failures(amp: Amp01Context) -> list[str]:
    """AMP-AUTH-04's failures asked on create: in keys mode the wrong key and the unknown agent (the
    pair an enumerating server tells apart), as list and read ask all of them."""
    labels = list(_failure_probes(amp))
    if amp.keys_mode:
        return ["wrong key", "unknown agent with a made-up key"]
    return labels


NO_AGENT_ID = (("no headers", None), ("a key but no agent id", KEY_HEADER))


def _refusal_probes(amp: Amp01Context) -> _Sent:
    """Every refusal the keys checks provoke, sent once (keys mode: a public cell, whose owner and
    text the probes use, and a private cell, the only one refused requests could change, last):
    AMP-AUTH-04's failures on list, create and read; AMP-AUTH-05's requests without agent id; the
    public cell asked by unauthenticated callers, then read by another agent; AMP-AUTH-08's wrong key
    before validation, state and permission; AMP-AUTH-06's create without credentials naming a
    created_by (its owner is the AMP-AUTH-08 create's, so one listing serves both: the texts tell which
    create stored a cell). Nothing is judged here."""
    send = _Sender(amp, together=True)  # refusals: none changes what another meets
    keys = amp.keys_mode
    # with keys, the run's shared create without any identity (test_errors and test_create judge it
    # too; it lists the owner as "a", so without keys this step sends a create of its own)
    anonymous_create_reply = anonymous_create(amp)[1] if keys else None
    failures = _failure_probes(amp)
    owner, text = amp.owner(), "anything"
    public: dict[str, Any] = {}
    if keys:
        # the run's shared public cell and three refusals about its owner (test_errors and
        # test_capabilities judge them too): this step's requests of the same kind are those
        public, asked = public_cell(amp)
        owner, text = public["identity"]["owner_id"], public["content"]["text"]
        listing = {"params": {"owner_id": owner}}
        send.adopt(asked["anonymous list"], "no headers: GET /memories", {}, "GET", "/memories", **listing)
        searched = {"json_body": {"query": text, "owner_id": owner}}
        send.adopt(
            asked["anonymous search"],
            "no headers: POST /memories/search",
            {},
            "POST",
            "/memories/search",
            **searched,
        )
        send.adopt(
            asked["list without key"],
            "list: missing key",
            failures["missing key"],
            "GET",
            "/memories",
            **listing,
        )
    body = amp.cell_body({"identity": {"owner_id": owner}})
    refused_owner = amp.owner()
    valid = amp.cell_body({"identity": {"owner_id": refused_owner}, "content": {"text": BAD_KEY_TEXT}})
    for label, headers in failures.items():
        send(f"list: {label}", headers, "GET", "/memories", params={"owner_id": owner})
    for label in _create_failures(amp):
        # the wrong key's create is AMP-AUTH-08's valid create (sent once)
        create = valid if label == "wrong key" else body
        send(f"create: {label}", failures[label], "POST", "/memories", json_body=create)
    try:
        missing: str | None = amp.unknown_id()
    except NotEnoughAgents:  # the id's form needs the conventions, which need a second agent
        missing = None
    if keys:
        for label, headers in failures.items():
            send(f"read: {label}", headers, "GET", f"/memories/{public['id']}")
        if missing is not None:
            send("read: unknown id, wrong key", failures["wrong key"], "GET", f"/memories/{missing}")
    key = amp.agent("a").key if keys else NOT_A_KEY
    search = {"query": text, "owner_id": owner}
    for label, header in NO_AGENT_ID:
        headers = {} if header is None else {header: key or NOT_A_KEY}
        send(f"{label}: GET /memories", headers, "GET", "/memories", params={"owner_id": owner})
        if header is None and anonymous_create_reply is not None:
            send.use(f"{label}: POST /memories", anonymous_create_reply)
        else:
            send(f"{label}: POST /memories", headers, "POST", "/memories", json_body=body)
        send(f"{label}: POST /memories/search", headers, "POST", "/memories/search", json_body=search)
    if keys:
        path = f"/memories/{public['id']}"
        for label, headers in _public_refusals(amp).items():
            send(f"public GET: {label}", headers, "GET", path)
            send(f"public search: {label}", headers, "POST", "/memories/search", json_body=search)
            send(f"public list: {label}", headers, "GET", "/memories", params={"owner_id": owner})
        if amp.optional_agent("b") is not None:
            send.flush()  # another agent's read of the public cell, after every refusal of it
            send("public GET: an authenticated agent", None, "GET", path, role="b")
    bad = _bad_key(amp)
    send("bad key: an invalid body", bad, "POST", "/memories", json_body={"type": "not-a-type"})
    send("bad key: an invalid search", bad, "POST", "/memories/search", json_body={"limit": 0})
    send("bad key: an invalid list", bad, "GET", "/memories", params={"limit": 0})
    send("bad key: a valid create", bad, "POST", "/memories", json_body=valid)
    named = amp.agent_id("a") if keys else unregistered(amp, "body-creator")
    claimed = {"identity": {"owner_id": refused_owner, "created_by": named}, "content": {"text": NAMED_TEXT}}
    send(
        "no credentials: a create naming created_by",
        {},
        "POST",
        "/memories",
        json_body=amp.cell_body(claimed),
    )
    send.flush()  # the refused creates' owner is listed after them
    if keys:
        for status in REFUSED_LISTED:
            params = {"owner_id": refused_owner, "status": status}
            send(f"listing the refused create's owner: {status}", None, "GET", "/memories", params=params)
        if missing is not None:
            send("bad key: GET of an unknown id", bad, "GET", f"/memories/{missing}")
        # the private cell's bad-key requests and read-back: sent with AMP-AUTH-03's routes (shared)
        send.flush()
        for label, reply in _right_pair(amp).items():
            if label in BAD_KEY_ON_A_CELL:
                send.use(label, reply)
    return _Sent(send.positions())


def case_headers(agent_id: str, key: str | None, style: Callable[[str], str]) -> dict[str, str]:
    """The identity headers (and key) with their names written in ``style`` (AMP-AUTH-09)."""
    headers = {style(AGENT_HEADER): agent_id}
    if key is not None:
        headers[style(KEY_HEADER)] = key
    return headers


def case_body(amp: Amp01Context) -> dict[str, Any]:
    """AMP-AUTH-09's create body (a text of its own, so the cell is told apart in any listing)."""
    return amp.cell_body({"content": {"text": f"header case probe {str(ULID()).lower()}"}})


def recorded_as(reply: Reply, agent_id: str) -> dict[str, Any] | None:
    """The cell a create answered, when it is a 2xx cell with an id recorded as created by ``agent_id``."""
    cell = created_cell_of(reply)
    if cell is None:
        return None
    identity = cell.get("identity")
    if not isinstance(identity, dict) or identity.get("created_by") != agent_id:
        return None
    return cell


#: AMP-AUTH-08's requests to a private cell of "a", which :func:`_right_pair` sends.
BAD_KEY_ON_A_CELL = (
    "bad key: GET of another's cell",
    "bad key: PATCH with a forbidden transition",
    "bad key: DELETE of an active cell",
    "the creator reading the cell back",
)


def _right_pair_probes(amp: Amp01Context) -> _Sent:
    """Keys mode: a private cell of agent "a" and every agent route with its right key (AMP-AUTH-03);
    between the route requests and the archive and delete that end them, AMP-AUTH-08's requests with a
    bad key to that cell (an unknown agent's read, a forbidden transition, a DELETE of the active cell)
    and the creator's read-back (the only requests that could change the cell come after AMP-AUTH-03's
    edit, and the read-back before the archive); AMP-AUTH-09's upper-case read, when served, is
    AMP-AUTH-03's GET. The create is a step; nothing else is judged here."""
    send = _Sender(amp)
    # the cell is AMP-AUTH-09's create with lower-case header names, read back in upper case; when that
    # create did not make a cell recorded as "a", a create of the usual kind
    agent = amp.agent("a")
    lower = amp.with_headers(case_headers(agent.id, agent.key, str.lower)).post("/memories", case_body(amp))
    remember_created(amp, lower, "a")
    send.use("case: create", lower)
    case_cell = recorded_as(lower, agent.id)
    cell = case_cell if case_cell is not None else amp.create_cell()
    path = f"/memories/{cell['id']}"
    if case_cell is not None:
        upper = case_headers(agent.id, agent.key, str.upper)
        send("case: read", upper, "GET", path)
        # the upper-case read is a GET with the right pair (header names are case-insensitive in
        # HTTP): served, it is AMP-AUTH-03's GET too; else that GET is sent with the usual names
        case_read = Reply(amp.evidence.exchanges[send.base + send.at["case: read"]])
        if case_read.status == 200:
            send.use("GET", case_read)
    owner = cell["identity"]["owner_id"]
    if "GET" not in send.at:
        send("GET", None, "GET", path)
    send("PATCH", None, "PATCH", path, json_body={"content": {"text": "edited with a key"}})
    for route in ("/memories", "/memories/query"):
        send(f"GET {route}", None, "GET", route, params={"owner_id": owner})
    send(
        "search",
        None,
        "POST",
        "/memories/search",
        json_body={"query": "edited with a key", "owner_id": owner},
    )
    stranger = {AGENT_HEADER: unregistered(amp), KEY_HEADER: NOT_A_KEY}
    bad = _bad_key(amp)
    send("bad key: GET of another's cell", stranger, "GET", path)
    send(
        "bad key: PATCH with a forbidden transition",
        bad,
        "PATCH",
        path,
        json_body={"lifecycle": {"status": "deleted"}},
    )
    send("bad key: DELETE of an active cell", bad, "DELETE", path)
    send("the creator reading the cell back", None, "GET", path)
    send("archive", None, "PATCH", path, json_body={"lifecycle": {"status": "archived"}})
    send("delete", None, "DELETE", path)
    return _Sent(send.positions())


def _right_pair(amp: Amp01Context) -> dict[str, Reply]:
    """:func:`_right_pair_probes`' replies by label (sent once per run, by the first check that asks)."""
    start = len(amp.evidence.exchanges)
    made = amp.shared("auth:right-pair", _right_pair_probes)
    exchanges = amp.evidence.exchanges[start:]
    return {label: Reply(exchanges[at]) for label, at in made.at.items()}


def _refusals(amp: Amp01Context) -> dict[str, Reply]:
    """The shared refusal probes' replies by label (sent by the first check that asks)."""
    start = len(amp.evidence.exchanges)
    made = amp.shared("auth:refusals", _refusal_probes)
    exchanges = amp.evidence.exchanges[start:]
    return {label: Reply(exchanges[at]) for label, at in made.at.items()}


# ------------------------------------------------------------------------------------- keyless


@pytest.mark.smoke
@check("AMP-AUTH-02")
def test_keyless_server_trusts_any_agent_id(amp: Amp01Context) -> None:
    """Without API keys any agent-id string works with no credential: create, read and list succeed."""
    if keys_in_force(amp):
        amp.skip("keyless only: this run uses API keys (AMP-AUTH-03..06 apply instead)")
    claimed = amp.capabilities.get("api_keys_required")
    if claimed is not False:
        amp.note(f"/spec api_keys_required is {shown(claimed)}; a keyless server reports false")
    for role in ("Odd.Agent:ID@example.org/x", "z" * 200):
        agent = amp.agent(role)
        cell = amp.create_cell(as_agent=role)
        got = (cell.get("identity") or {}).get("created_by")
        amp.expect(
            got == agent.id, f"created_by is the arbitrary agent id {shown(agent.id)} (got {shown(got)})"
        )
        reply = amp.as_agent(role).get(f"/memories/{cell['id']}")
        amp.expect_status(reply, 200, what=f"agent {shown(agent.id)} reading its cell without a key")
        owner = cell["identity"]["owner_id"]
        reply = amp.as_agent(role).get("/memories", params={"owner_id": owner})
        amp.expect_status(reply, 200, what=f"agent {shown(agent.id)} listing without a key")
        ids = [item.get("id") for item in reply.json_object().get("results", []) if isinstance(item, dict)]
        amp.expect(cell["id"] in ids, "the cell is listed for its creator", reply)


# ---------------------------------------------------------------------------------------- keys


@check("AMP-AUTH-03")
def test_keys_the_right_pair_works_on_every_agent_route(amp: Amp01Context) -> None:
    """With the registered key for the claimed agent, every agent route behaves normally."""
    need_keys(amp)
    got = _right_pair(amp)  # shared: AMP-AUTH-08's bad-key requests go to this cell too
    amp.expect_status(got["GET"], 200, what="GET by id with the right key")
    amp.expect_status(got["PATCH"], 200, what="PATCH with the right key")
    for route in ("/memories", "/memories/query"):
        amp.expect_status(got[f"GET {route}"], 200, what=f"GET {route} with the right key")
    amp.expect_status(got["search"], 200, what="search with the right key")
    amp.archived_step(got["archive"])
    amp.deleted_step(got["delete"])


@pytest.mark.smoke
@check("AMP-AUTH-04")
def test_keys_every_authentication_failure_gets_the_same_401(amp: Amp01Context) -> None:
    """Missing, wrong, another agent's and unknown-agent keys all get one identical 401 UNAUTHENTICATED."""
    need_keys_in_force(amp)
    got = _refusals(amp)
    labels = list(_failure_probes(amp))
    if not amp.keys_mode:
        amp.note(f"no keys given: only unknown-agent probes ({KEYS_NEEDED})")
    elif "another agent's key" not in labels:
        amp.note("only one keyed agent: the 'another agent's key' probe was left out")
    same_401(amp, {label: got[f"list: {label}"] for label in labels}, "GET /memories", ("UNAUTHENTICATED",))
    create_replies = {label: got[f"create: {label}"] for label in _create_failures(amp)}
    same_401(amp, create_replies, "POST /memories", ("UNAUTHENTICATED",))
    if amp.keys_mode:
        read_replies = {label: got[f"read: {label}"] for label in labels}
        if "read: unknown id, wrong key" not in got:
            amp.unknown_id()  # skips as it always has: the id's form needs a second agent
        read_replies["unknown id, wrong key"] = got["read: unknown id, wrong key"]
        same_401(amp, read_replies, "GET /memories/{id}", ("UNAUTHENTICATED",))


@pytest.mark.smoke
@check("AMP-AUTH-05")
def test_keys_a_request_without_agent_id_is_401(amp: Amp01Context) -> None:
    """With keys on, a request without X-AMP-Agent-ID is 401 (UNAUTHENTICATED or MISSING_AGENT_ID, C-15)."""
    need_keys_in_force(amp)
    got = _refusals(amp)
    codes = ("UNAUTHENTICATED", "MISSING_AGENT_ID")
    seen: set[str] = set()
    for label, _ in NO_AGENT_ID:
        for route in ("GET /memories", "POST /memories", "POST /memories/search"):
            reply = got[f"{label}: {route}"]
            amp.expect(
                reply.status == 401,
                f"{route} with {label}: expected 401, got {reply.status}",
                reply,
                expected="401",
            )
            error = expect_error(amp, reply, 401, codes)
            seen.add(error["code"])
    amp.note(f"401 code for a missing agent id in keys mode: {', '.join(sorted(seen))} (C-15)")


@pytest.mark.smoke
@check("AMP-AUTH-06")
def test_keys_create_does_not_fall_back_to_the_body_created_by(amp: Amp01Context) -> None:
    """With keys on, a create with no headers and a body created_by is 401, and no cell is stored."""
    need_keys_in_force(amp)
    got = _refusals(amp)
    named = amp.agent_id("a") if amp.keys_mode else unregistered(amp, "body-creator")
    reply = got["no credentials: a create naming created_by"]
    if reply.status in (200, 201):
        try:
            cell_id = reply.json_object().get("id")
        except AssertionError:
            cell_id = None
        if isinstance(cell_id, str) and amp.keys_mode:
            amp.remember(cell_id, as_agent="a")
        amp.fail(
            f"a create without credentials was stored as the body's created_by {shown(named)}: anyone can "
            "create cells as any agent",
            reply,
            expected="401",
        )
    expect_error(amp, reply, 401, ("UNAUTHENTICATED", "MISSING_AGENT_ID"))
    if amp.keys_mode:
        listings = [got[f"listing the refused create's owner: {s}"] for s in REFUSED_LISTED]
        stored, listed = _stored_by(amp, listings, NAMED_TEXT)
        amp.expect(not stored, "the refused create stored nothing", listed)


@pytest.mark.smoke
@check("AMP-AUTH-06", "AMP-CRE-07", "AMP-ACL-13")
def test_keys_body_created_by_cannot_impersonate(amp: Amp01Context) -> None:
    """A keyed caller whose body names another agent as created_by is recorded as itself (C-10)."""
    need_keys(amp)
    caller = amp.agent("a")
    other = amp.agent_id("b")
    cell, reply = created_naming_other(amp)  # the run's shared cell: "a" creates, naming "b"
    got = (cell.get("identity") or {}).get("created_by")
    amp.expect(
        got == caller.id,
        f"created_by is the authenticated caller {shown(caller.id)}, not the body's {shown(other)} "
        f"(got {shown(got)}); "
        "with API keys anything else is impersonation (C-10)",
        reply,
    )


@check("AMP-AUTH-07")
def test_health_and_spec_stay_open(amp: Amp01Context) -> None:
    """GET /health and GET /spec answer 200 JSON without agent id or key, with or without API keys."""
    for path in ("/health", "/spec"):
        reply = open_route_reply(amp, path)  # the run's one anonymous GET of each (test_health's too)
        hint = " (keys mode: these stay open)" if keys_in_force(amp) else ""
        amp.expect_status(reply, 200, what=f"GET {path} without identity or key{hint}")
        reply.json_object()
    if keys_in_force(amp):
        reply = amp.with_headers({AGENT_HEADER: unregistered(amp), KEY_HEADER: NOT_A_KEY}).get("/spec")
        if reply.status != 200:
            amp.warn(f"GET /spec with an unknown agent and key answered {reply.status}, not 200", reply)


@pytest.mark.smoke
@check("AMP-AUTH-03", "AMP-ACL-01")
def test_keys_a_public_cell_needs_an_authenticated_caller(amp: Amp01Context) -> None:
    """With keys on, a public cell is readable by any authenticated agent, and by no one else (C-35)."""
    need_keys(amp)
    got = _refusals(amp)
    for label in _public_refusals(amp):
        for route in PUBLIC_ROUTES:
            reply = got[f"public {route}: {label}"]
            amp.expect(
                reply.status == 401,
                f"{route} of a public cell by {label}: expected 401 (C-35), got {reply.status}",
                reply,
                expected="401",
            )
            expect_error(amp, reply, 401, ("UNAUTHENTICATED", "MISSING_AGENT_ID"))
    read = got.get("public GET: an authenticated agent")
    if read is None:
        amp.note("only one keyed agent: an authenticated non-creator read was not tried")
        return
    amp.expect_status(read, 200, what="an authenticated agent reading a public cell")


@check("AMP-AUTH-08")
def test_keys_authentication_comes_before_anything_else(amp: Amp01Context) -> None:
    """With keys on, a bad key is 401 before validation, permission or state, and stores nothing."""
    need_keys_in_force(amp)
    got = _refusals(amp)
    for label, what in (
        ("an invalid body", "an invalid body with a wrong key"),
        ("an invalid search", "an invalid search with a wrong key"),
        ("an invalid list", "an invalid list with a wrong key"),
        ("a valid create", "a valid create with a wrong key"),
    ):
        reply = got[f"bad key: {label}"]
        amp.expect(reply.status == 401, f"{what} is 401, not {reply.status}", reply)
    if not amp.keys_mode:
        return
    listings = [got[f"listing the refused create's owner: {s}"] for s in REFUSED_LISTED]
    stored, listed = _stored_by(amp, listings, BAD_KEY_TEXT)
    amp.expect(not stored, "the create refused for its key stored nothing", listed)
    for label in (
        "GET of another's cell",
        "PATCH with a forbidden transition",
        "DELETE of an active cell",
        "GET of an unknown id",
    ):
        if f"bad key: {label}" not in got:
            amp.unknown_id()  # skips as it always has: the id's form needs a second agent
        reply = got[f"bad key: {label}"]
        amp.expect(reply.status == 401, f"{label} with a wrong key is 401, not {reply.status}", reply)
    reply = got["the creator reading the cell back"]
    amp.expect_status(reply, 200, what="the creator reading the cell back")
    status = (reply.json_object().get("lifecycle") or {}).get("status")
    amp.expect(status == "active", f"the refused requests changed nothing (status {shown(status)})", reply)


@pytest.mark.smoke
@check("AMP-AUTH-09")
def test_header_names_are_case_insensitive(amp: Amp01Context) -> None:
    """X-AMP-Agent-ID (and X-AMP-API-Key) work in lower and upper case: a create in lower case is
    recorded as the agent, and a read in upper case of that cell (private to its creator) is served."""
    agent = amp.agent("a")

    def client(style: Callable[[str], str]) -> tuple[Client, str]:
        headers = case_headers(agent.id, agent.key, style)
        return amp.with_headers(headers), ", ".join(headers)

    lower, names = client(str.lower)
    shared_read: Reply | None = None
    if amp.keys_mode:  # with keys the create is AMP-AUTH-03's cell (shared), read back at once
        pair = _right_pair(amp)
        reply, shared_read = pair["case: create"], pair.get("case: read")
    else:
        reply = lower.post("/memories", case_body(amp))
    expect_accepted(amp, reply, f"a create with the header names {names}")
    cell = reply.json_object()
    if isinstance(cell.get("id"), str):
        amp.remember(cell["id"], as_agent="a")
    got = (cell.get("identity") or {}).get("created_by")
    amp.expect(
        got == agent.id,
        f"created_by is {shown(agent.id)} with header names {names} (got {shown(got)})",
        reply,
    )
    # the create showed the lower-case names; the read shows the upper-case ones
    reader, names = client(str.upper)
    reply = shared_read or reader.get(f"/memories/{cell['id']}")
    amp.expect_status(reply, 200, what=f"a read with the header names {names}")
