"""Errors: the envelope on every 4xx, the per-route status/code table, 422 details, 401 MISSING_AGENT_ID.

AMP-ERR-01..05 and -07, and the missing-identity 401 on every memories route (AMP-AUTH-01 with
AMP-READ-09, -PATCH-18, -LIST-11, -SRCH-16, -DEL-08). Every 401 probe sends an otherwise valid
request, so the answer cannot depend on whether the server validates the body first (C-15); every
422 probe sends valid identity headers. The probes are sent once per run (``amp.shared``): every
check judges the answers it is about, and shows them all as its evidence. Probes other areas ask too
(the create without identity, two 422 creates, with keys the list and search without identity) are
the run's shared ones (``_shared_cells``), and the active and archived cells are AMP-ERR-07's creates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from amp_conformance import SHOULD, Amp01Context, check
from amp_conformance.amp01.checks._shared_cells import (
    EMPTY_METADATA,
    ORIGINAL_TEXT,
    SCORING_NULL,
    UNICODE_TEXT,
    anonymous_create,
    invalid_list,
    public_cell,
    search_without_query,
    shared_create,
)
from amp_conformance.amp01.checks._shared_cells import odd_cell as _odd_cell
from amp_conformance.amp01.checks._shared_cells import odd_creates as _odd_creates
from amp_conformance.amp01.checks._shared_probes import unknown_probes
from amp_conformance.amp01.checks._support import (
    about,
    error_of,
    expect_error,
    expect_refused_as_invalid,
    member,
    read_back_of,
    shown,
)
from amp_conformance.amp01.conventions import Conventions
from amp_conformance.amp01.envelope import CODE_PATTERN, envelope_problems
from amp_conformance.amp01.session import NotEnoughAgents
from amp_conformance.engine.client import Reply
from amp_conformance.engine.outcomes import TransportFailure

MISSING_AGENT_ID = "MISSING_AGENT_ID"
UNAUTHENTICATED = "UNAUTHENTICATED"


def _missing_identity_codes(amp: Amp01Context) -> tuple[str, ...]:
    """MISSING_AGENT_ID; in keys mode UNAUTHENTICATED is documented too (C-15)."""
    return (MISSING_AGENT_ID, UNAUTHENTICATED) if amp.server_requires_keys else (MISSING_AGENT_ID,)


def _expect_missing_identity(amp: Amp01Context, reply: Reply, what: str) -> None:
    """401 MISSING_AGENT_ID. Each route's own id restates AMP-AUTH-01 (every agent route needs an
    identity), so the finding is filed under AMP-AUTH-01."""
    amp.expect(
        reply.status == 401,
        f"{what} without X-AMP-Agent-ID answered {reply.status}, not 401",
        reply,
        expected="401 " + " or ".join(_missing_identity_codes(amp)),
        requirement="AMP-AUTH-01",
    )
    with about("AMP-AUTH-01"):
        expect_error(amp, reply, 401, _missing_identity_codes(amp))


def _search_body(owner: str) -> dict[str, Any]:
    return {"query": "what does the user prefer?", "owner_id": owner, "limit": 5}


# the provoked errors, gathered once (amp.shared) and judged by each check -------------------------


@dataclass
class Case:
    """One provoked error: what was done, the reply, and the (status, codes) pairs ERR-03 allows."""

    label: str
    reply: Reply
    answers: tuple[tuple[int, tuple[str, ...]], ...]
    requirement: str
    """The route's own rule for this error (a wrong status breaks it; a wrong code breaks the table)."""


Answers = tuple[tuple[int, tuple[str, ...]], ...]


@dataclass
class _Provoked:
    """What the shared step sent, as positions among its exchanges (replies are rebuilt per check)."""

    table: list[tuple[str, int, Answers, str]]
    """The AMP-ERR-03 table's cases: (label, position, allowed answers, the route's rule)."""
    probes: dict[str, int]
    """Every other request by label: the 422 probes of AMP-ERR-04/-05 and the read-backs."""


def _provoke(amp: Amp01Context) -> _Provoked:
    """Send every error probe of this module once, in an order where no probe changes what a later one
    meets: the 422 probes first, then one request per AMP-ERR-03 table cell the suite can provoke on
    P-BASE, with a read-back after each 401 probe (no identity) that could change something. A
    transition the table expects refused comes after every other probe of its cell."""
    base = len(amp.evidence.exchanges)
    a, anonymous = amp.as_agent("a"), amp.anonymous()
    # probes other checks ask too, each sent once per run (before the stranger is taken, so every
    # check sharing them plays the same agents): the odd creates of AMP-ERR-07 (one of them, a plain
    # cell, is this step's active cell), two 422 creates, the create without identity and its listing
    try:
        odd: tuple[str, list[tuple[str, Reply]]] | None = _odd_creates(amp)
    except TransportFailure:  # an answer lost: AMP-ERR-07's error; the probes make their own cells
        odd = None
    literal = shared_create(amp, "type-literal", lambda maker: maker.cell_body(type="literal"))
    array = shared_create(amp, "json-array", lambda maker: [])
    _, refused_create, refused_listing = anonymous_create(amp)
    # with keys, the list and the search without identity are those test_auth asks of its public
    # cell's owner (shared): the answer is 401 whoever the owner is
    public = public_cell(amp)[1] if amp.keys_mode else None
    # the stranger and unknown-id cases need a second agent (for the server's conventions too): without
    # one (keys mode, one key) only the checks judging the whole table go without (they skip, as they
    # always have); the others still get their answers
    stranger = amp.as_agent("stranger") if amp.optional_agent("stranger") is not None else None
    try:
        conventions: Conventions | None = amp.conventions
    except NotEnoughAgents:
        conventions = None
    if conventions is None:
        stranger = None
    unauthenticated = ((401, _missing_identity_codes(amp)),)
    refusal = ((403, conventions.refusal_codes() if conventions else ()),)
    unknown_answers = tuple(
        (status, (code,) if code else ())
        for status, code in (conventions.unknown_id_answers() if conventions else ())
    )
    transition = ((409, ("INVALID_TRANSITION",)),)
    invalid = ((422, ("VALIDATION_ERROR",)),)
    active = _odd_cell(amp, odd, EMPTY_METADATA, ORIGINAL_TEXT) or amp.create_cell(
        content={"text": ORIGINAL_TEXT}
    )
    archived = _archived_odd_cell(amp, odd)
    owner = active["identity"]["owner_id"] if isinstance(active.get("identity"), dict) else amp.owner()
    # the unknown id's GET, PATCH and DELETE are AMP-DEL-08's, sent once per run
    unknown = unknown_probes(amp)[1] if conventions else None
    text = {"content": {"text": "edited"}}
    probes: dict[str, int] = {}

    def position(reply: Reply) -> int:
        mine = amp.evidence.exchanges[base:]
        return next(i for i, exchange in enumerate(mine) if exchange is reply.exchange)

    def probe(label: str, reply: Reply) -> None:
        probes[label] = position(reply)

    listed = {"owner_id": owner, "limit": 10}
    # shared with AMP-LIST-05 and AMP-SRCH-02 (a fresh owner's each): made before the batches below
    limit_zero, no_query = invalid_list(amp, limit=0), search_without_query(amp)
    table: list[tuple[str, int, Answers, str]] = []

    def case(label: str, reply: Reply, answers: Answers, requirement: str) -> None:
        table.append((label, position(reply), answers, requirement))

    # Requests of one batch go out together (amp.at_once) and are recorded in the order written: none
    # depends on another of its batch, and each batch comes after what it must follow (a read-back
    # after the probe it reads back, a transition after every other probe of its cell).
    cell, dead = f"/memories/{active['id']}", f"/memories/{archived['id']}"
    calls: dict[str, Callable[[], Reply]] = {
        # AMP-ERR-05: 422 probes of kinds the table has none of (the table's own 422 cases serve
        # AMP-ERR-04/-05 too: a limit below the range, a score out of range, a bad enum on the query
        # route, a missing query)
        "POST /memories malformed JSON": lambda: a.post("/memories", content=b'{"type": "semantic",'),
        "GET /memories limit=abc": lambda: a.get("/memories", params={"limit": "abc"}),
        "PATCH readable_by [1]": lambda: a.patch(cell, {"access_policy": {"readable_by": [1]}}),
        "PATCH malformed JSON": lambda: a.patch(cell, content=b"{not json"),
        "POST /memories without content": lambda: a.post("/memories", {"type": "semantic"}),
        "GET /memories/query without identity": lambda: anonymous.get("/memories/query", params=listed),
        "GET /memories/query type=literal": lambda: a.get("/memories/query", params={"type": "literal"}),
        "GET /memories/{id} without identity": lambda: anonymous.get(cell),
    }
    if public is None:
        calls["GET /memories without identity"] = lambda: anonymous.get("/memories", params=listed)
    if stranger is not None:
        calls["GET /memories/{id} by a stranger"] = lambda: stranger.get(cell)
    got = _batch(amp, calls)
    got |= _batch(
        amp,
        {
            "PATCH without identity": lambda: anonymous.patch(cell, {"content": {"text": "anonymous edit"}}),
            "DELETE without identity": lambda: anonymous.delete(dead),
        },
    )
    got |= _batch(
        amp,
        {"reading the cell back": lambda: a.get(cell), "reading the archived cell back": lambda: a.get(dead)},
    )
    calls = {"PATCH importance 2": lambda: a.patch(cell, {"scoring": {"importance": 2}})}
    if stranger is not None:
        calls["PATCH by a stranger"] = lambda: stranger.patch(cell, text)
        calls["DELETE by a stranger"] = lambda: stranger.delete(dead)
    got |= _batch(amp, calls)
    if public is None:
        calls = {"search without identity": lambda: anonymous.post("/memories/search", _search_body(owner))}
    else:
        calls = {}
    calls["PATCH archived -> active"] = lambda: a.patch(dead, {"lifecycle": {"status": "active"}})
    calls["DELETE of an active cell"] = lambda: a.delete(cell)
    got |= _batch(amp, calls)

    probe("POST /memories bad type", literal)
    for label in ("POST /memories malformed JSON", "GET /memories limit=abc"):
        probe(label, got[label])
    probe("POST /memories JSON array", array)
    for label in ("PATCH readable_by [1]", "PATCH malformed JSON"):
        probe(label, got[label])
    # the create without identity and the listing of its owner right after it (sent above)
    case("POST /memories without identity", refused_create, unauthenticated, "AMP-AUTH-01")
    probe("listing the refused create's owner", refused_listing)
    case("POST /memories without content", got["POST /memories without content"], invalid, "AMP-ERR-04")
    case(
        "GET /memories without identity",
        public["anonymous list"] if public else got["GET /memories without identity"],
        unauthenticated,
        "AMP-AUTH-01",
    )
    case("GET /memories limit=0", limit_zero, invalid, "AMP-ERR-04")
    label = "GET /memories/query without identity"
    case(label, got[label], unauthenticated, "AMP-LIST-02")
    case("GET /memories/query type=literal", got["GET /memories/query type=literal"], invalid, "AMP-LIST-02")
    label = "GET /memories/{id} without identity"
    case(label, got[label], unauthenticated, "AMP-AUTH-01")
    if stranger is not None:
        case(
            "GET /memories/{id} by a stranger", got["GET /memories/{id} by a stranger"], refusal, "AMP-ACL-10"
        )
    if unknown is not None:
        case("GET /memories/{unknown id}", unknown["GET"], unknown_answers, "AMP-READ-10")
    case("PATCH without identity", got["PATCH without identity"], unauthenticated, "AMP-AUTH-01")
    probe("reading the cell back", got["reading the cell back"])
    if stranger is not None:
        case("PATCH by a stranger", got["PATCH by a stranger"], refusal, "AMP-ACL-10")
    if unknown is not None:
        case("PATCH of an unknown id", unknown["PATCH"], unknown_answers, "AMP-ERR-03")
    case("PATCH importance 2", got["PATCH importance 2"], invalid, "AMP-ERR-04")
    case("DELETE without identity", got["DELETE without identity"], unauthenticated, "AMP-AUTH-01")
    probe("reading the archived cell back", got["reading the archived cell back"])
    if stranger is not None:
        case("DELETE by a stranger", got["DELETE by a stranger"], refusal, "AMP-ACL-10")
    if unknown is not None:
        case("DELETE of an unknown id", unknown["DELETE"], unknown_answers, "AMP-DEL-08")
    case("PATCH archived -> active", got["PATCH archived -> active"], transition, "AMP-PATCH-12")
    case("DELETE of an active cell", got["DELETE of an active cell"], transition, "AMP-DEL-03")
    case(
        "search without identity",
        public["anonymous search"] if public else got["search without identity"],
        unauthenticated,
        "AMP-AUTH-01",
    )
    case("search without query", no_query, invalid, "AMP-SRCH-02")
    return _Provoked(table, probes)


def _batch(amp: Amp01Context, calls: dict[str, Callable[[], Reply]]) -> dict[str, Reply]:
    """The replies by label, the requests sent together (see :meth:`Amp01Context.at_once`)."""
    return dict(zip(calls, amp.at_once(*calls.values()), strict=True))


def _provoked(amp: Amp01Context) -> tuple[list[Case], dict[str, Reply]]:
    """The shared probes (made by the first check that asks, shown as evidence in every check): the
    table's cases and the other probes by label."""
    start = len(amp.evidence.exchanges)
    made = amp.shared("errors:provoked", _provoke)
    replies = [Reply(exchange) for exchange in amp.evidence.exchanges[start:]]
    cases = [Case(label, replies[at], answers, rid) for label, at, answers, rid in made.table]
    probes = {label: replies[at] for label, at in made.probes.items()}
    return cases, probes


def _table(amp: Amp01Context) -> list[Case]:
    """The table's cases, for the checks judging the whole table: they need the stranger's cases, so
    they skip without a second agent (keys mode with one key)."""
    cases = _provoked(amp)[0]
    amp.agent("stranger")
    amp.unknown_id()  # the server's conventions need a second agent too
    return cases


def _table_reply(cases: list[Case], label: str) -> Reply:
    return next(case.reply for case in cases if case.label == label)


def _case(amp: Amp01Context, label: str) -> Reply:
    return _table_reply(_provoked(amp)[0], label)


# 401 MISSING_AGENT_ID on every memories route (AMP-AUTH-01) ----------------------------------


@check("AMP-AUTH-01")
def test_create_without_identity_is_401(amp: Amp01Context) -> None:
    """POST /memories with a valid body but no X-AMP-Agent-ID and no created_by is 401 MISSING_AGENT_ID."""
    cases, probes = _provoked(amp)
    reply = _table_reply(cases, "POST /memories without identity")
    _expect_missing_identity(amp, reply, "POST /memories")
    listed = probes["listing the refused create's owner"]
    amp.expect_status(listed, 200, what="listing the owner's cells afterwards")
    results = listed.json_object().get("results")
    amp.expect(
        results == [], f"the refused create stored nothing (got {shown(results)})", listed, expected="[]"
    )


@pytest.mark.smoke
@check("AMP-READ-09", "AMP-AUTH-01")
def test_read_without_identity_is_401(amp: Amp01Context) -> None:
    """GET /memories/{id} of an existing cell without X-AMP-Agent-ID is 401 MISSING_AGENT_ID."""
    _expect_missing_identity(amp, _case(amp, "GET /memories/{id} without identity"), "GET /memories/{id}")


@pytest.mark.smoke
@check("AMP-PATCH-18", "AMP-AUTH-01")
def test_patch_without_identity_is_401(amp: Amp01Context) -> None:
    """PATCH with a valid body but no X-AMP-Agent-ID is 401 MISSING_AGENT_ID and changes nothing."""
    cases, probes = _provoked(amp)
    reply = _table_reply(cases, "PATCH without identity")
    _expect_missing_identity(amp, reply, "PATCH /memories/{id}")
    back = probes["reading the cell back"]
    amp.expect_status(back, 200, what="reading the cell back")
    content = back.json_object().get("content")
    amp.expect(
        isinstance(content, dict) and content.get("text") == ORIGINAL_TEXT,
        "the refused PATCH changed nothing",
        back,
    )


@pytest.mark.smoke
@check("AMP-DEL-08", "AMP-AUTH-01")
def test_delete_without_identity_is_401(amp: Amp01Context) -> None:
    """DELETE of an archived cell without X-AMP-Agent-ID is 401 MISSING_AGENT_ID; the cell stays archived."""
    cases, probes = _provoked(amp)
    reply = _table_reply(cases, "DELETE without identity")
    _expect_missing_identity(amp, reply, "DELETE /memories/{id}")
    back = probes["reading the archived cell back"]
    status = member(read_back_of(amp, back), "lifecycle.status")
    amp.expect(status == "archived", f"the cell is still archived (got {shown(status)})", back)


@pytest.mark.smoke
@check("AMP-LIST-11", "AMP-AUTH-01")
def test_list_without_identity_is_401(amp: Amp01Context) -> None:
    """GET /memories and GET /memories/query without X-AMP-Agent-ID are 401 MISSING_AGENT_ID."""
    cases, _ = _provoked(amp)
    for path in ("/memories", "/memories/query"):
        reply = _table_reply(cases, f"GET {path} without identity")
        _expect_missing_identity(amp, reply, f"GET {path}")


@pytest.mark.smoke
@check("AMP-SRCH-16", "AMP-AUTH-01")
def test_search_without_identity_is_401(amp: Amp01Context) -> None:
    """POST /memories/search with a complete body but no X-AMP-Agent-ID is 401 MISSING_AGENT_ID."""
    if not amp.keys_mode and amp.server_requires_keys:
        # no agent can act (a keys-mode server, no keys given), so the shared probes cannot be made;
        # this one needs no agent
        reply = amp.anonymous().post("/memories/search", _search_body(amp.owner()))
    else:
        reply = _case(amp, "search without identity")
    _expect_missing_identity(amp, reply, "POST /memories/search")


# the error table, the envelope and its code (AMP-ERR-01..03) ---------------------------------


#: A problem: (what is wrong, the reply, the requirement it breaks; None: the check's own).
Problem = tuple[str, Reply, str | None]


def _first_problem(amp: Amp01Context, problems: list[Problem]) -> None:
    """Fail with every problem listed, filed under the requirement the first one breaks."""
    if problems:
        message = "; ".join(text for text, _, _ in problems[:6])
        more = f" (and {len(problems) - 6} more)" if len(problems) > 6 else ""
        _, reply, requirement = problems[0]
        amp.fail(
            f"{len(problems)} error response(s) break the rule: {message}{more}",
            reply,
            requirement=requirement,
        )


def _envelope_requirement(body: Any) -> str:
    """A framework's own error shape (a top-level ``detail``) is AMP-ERR-05's; any other AMP-ERR-01's."""
    return (
        "AMP-ERR-05" if isinstance(body, dict) and "detail" in body and "error" not in body else "AMP-ERR-01"
    )


@check("AMP-ERR-01", "AMP-ERR-02")
def test_every_error_is_the_json_envelope(amp: Amp01Context) -> None:
    """Every provoked 4xx is application/json {"error": {"code", "message"}} with a SCREAMING_SNAKE code."""
    problems: list[Problem] = []
    for case in _table(amp):
        reply = case.reply
        if not 400 <= reply.status < 500:
            continue  # a wrong success or a crash is judged by the error-table check (and AMP-ERR-07)
        content_type = reply.headers.get("content-type", "")
        try:
            body = reply.json()
        except AssertionError:
            body = None
            problems.append((f"{case.label}: the body is not JSON", reply, "AMP-ERR-01"))
        rid = _envelope_requirement(body)
        if not content_type.startswith("application/json"):
            problems.append(
                (f"{case.label}: Content-Type is {shown(content_type)}, not application/json", reply, rid)
            )
        if body is None:
            continue
        for problem in envelope_problems(body, require_details=False):
            snake = "SCREAMING_SNAKE" in problem and rid == "AMP-ERR-01"
            problems.append((f"{case.label}: {problem}", reply, "AMP-ERR-02" if snake else rid))
    _first_problem(amp, problems)


@check("AMP-ERR-01", level=SHOULD, stance="Level line: SHOULD for details being present")
def test_every_error_carries_details(amp: Amp01Context) -> None:
    """Every provoked 4xx envelope also carries an error.details object."""
    problems: list[Problem] = []
    for case in _table(amp):
        if not 400 <= case.reply.status < 500:
            continue
        try:
            body = case.reply.json()
        except AssertionError:
            continue  # the MUST check reports it
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and not isinstance(error.get("details"), dict):
            problems.append((f"{case.label}: error.details is missing or not an object", case.reply, None))
    _first_problem(amp, problems)


@check("AMP-ERR-03", "AMP-ERR-02")
def test_each_route_answers_the_documented_status_and_code(amp: Amp01Context) -> None:
    """Each provoked error answers the (status, code) pair the table gives for its route (C-01/02/15)."""
    problems: list[Problem] = []
    for case in _table(amp):
        reply = case.reply
        code = error_of(reply).get("code")
        statuses = {status for status, _ in case.answers}
        allowed = [
            (status, codes)
            for status, codes in case.answers
            if reply.status == status and (not codes or code in codes)
        ]
        wanted = " or ".join(f"{status} {'/'.join(codes) or '(any code)'}" for status, codes in case.answers)
        got = f"{reply.status} with error code {shown(code)}" if code is not None else f"{reply.status}"
        if reply.status not in statuses:
            # the wrong status breaks the route's own rule
            problems.append((f"{case.label}: answered {got}, not {wanted}", reply, case.requirement))
        elif not allowed:
            # the right status with the wrong code breaks the table; no code at all, the envelope
            try:
                body = reply.json()
            except AssertionError:
                body = None
            rid = "AMP-ERR-03" if code is not None else _envelope_requirement(body)
            shown_code = "no error code" if code is None else f"error code {shown(code)}"
            problems.append(
                (f"{case.label}: answered {reply.status} with {shown_code}, not {wanted}", reply, rid)
            )
        elif isinstance(code, str) and not CODE_PATTERN.match(code):
            problems.append(
                (f"{case.label}: error.code {shown(code)} is not SCREAMING_SNAKE_CASE", reply, "AMP-ERR-02")
            )
    _first_problem(amp, problems)


# 422 details and no framework shapes (AMP-ERR-04, -05) ---------------------------------------


def _locs(error: dict[str, Any]) -> list[list[Any]]:
    details = error.get("details")
    entries = details.get("errors") if isinstance(details, dict) else None
    return [e["loc"] for e in entries or [] if isinstance(e, dict) and isinstance(e.get("loc"), list)]


@check("AMP-ERR-04")
def test_validation_errors_name_the_fields(amp: Amp01Context) -> None:
    """422 VALIDATION_ERROR carries details.errors of {type, loc, msg, input} naming the bad fields."""
    table = {case.label: case.reply for case in _provoked(amp)[0]}
    reply = table["POST /memories without content"]
    error = expect_refused_as_invalid(amp, reply, details=True, rule="AMP-CRE-02")
    ends = {loc[-1] for loc in _locs(error) if loc}
    for name in ("content", "identity"):
        amp.expect(
            name in ends,
            f"an entry of details.errors has a loc ending in {shown(name)} (got {sorted(map(str, ends))})",
            reply,
        )
    for reply, rule, field in (
        (table["GET /memories limit=0"], "AMP-LIST-05", "limit"),
        (table["PATCH importance 2"], "AMP-PATCH-17", "importance"),
        (table["search without query"], "AMP-SRCH-02", "query"),
    ):
        error = expect_refused_as_invalid(amp, reply, details=True, rule=rule)
        amp.expect(
            any(field in loc for loc in _locs(error)),
            f"an entry of details.errors has {shown(field)} in its loc",
            reply,
        )


@check("AMP-ERR-05")
def test_validation_failures_never_use_a_framework_shape(amp: Amp01Context) -> None:
    """Rejected bodies, queries and malformed JSON answer the AMP envelope, never a top-level 'detail'."""
    cases, probes = _provoked(amp)
    replies = [
        ("POST /memories {type} only", _table_reply(cases, "POST /memories without content")),
        ("GET /memories/query type=literal", _table_reply(cases, "GET /memories/query type=literal")),
        ("search without query", _table_reply(cases, "search without query")),
    ]
    replies += [
        (label, probes[label])
        for label in (
            "POST /memories bad type",
            "POST /memories malformed JSON",
            "POST /memories JSON array",
            "GET /memories limit=abc",
            "PATCH readable_by [1]",
            "PATCH malformed JSON",
        )
    ]
    for label, reply in replies:
        amp.expect(400 <= reply.status < 500, f"{label} answered {reply.status}, not a 4xx refusal", reply)
        with about("AMP-ERR-01"):  # a body that is not JSON at all is the envelope rule's finding
            body = reply.json()
        amp.expect(
            not (isinstance(body, dict) and "detail" in body),
            f'{label}: the body has a framework-style top-level "detail"',
            reply,
        )
        problems = envelope_problems(body, require_details=False)
        amp.expect(
            not problems,
            f"{label}: not the AMP envelope: " + "; ".join(problems),
            reply,
            requirement="AMP-ERR-01",
        )
        if reply.status == 422:
            expect_refused_as_invalid(amp, details=True, reply=reply)


# robustness (AMP-ERR-07) ---------------------------------------------------------------------


def _archived_odd_cell(amp: Amp01Context, odd: tuple[str, list[tuple[str, Reply]]] | None) -> dict[str, Any]:
    """The error probes' archived cell: the scoring-null create's cell once archived (AMP-ERR-07 judges
    only its create answer), or, when that create or its archive did not succeed, a fresh cell archived
    as a step (AMP-PATCH-10)."""
    cell = _odd_cell(amp, odd, SCORING_NULL)
    if cell is not None:
        reply = amp.as_agent("a").patch(f"/memories/{cell['id']}", {"lifecycle": {"status": "archived"}})
        if reply.status == 200:
            return cell
    cell = amp.create_cell()
    amp.archive(cell["id"])
    return cell


@check("AMP-ERR-07")
def test_odd_but_valid_requests_do_not_crash(amp: Amp01Context) -> None:
    """Unicode text, a long agent id and null sections never produce a 5xx."""
    a = amp.as_agent("a")
    owner, made = _odd_creates(amp)  # shared: the error probes use the empty-metadata cell
    replies: list[tuple[str, Reply]] = list(made)
    unicode_text = UNICODE_TEXT
    created = replies[0][1]
    long_agent = amp.with_headers({"X-AMP-Agent-ID": f"{owner}-" + "x" * 1000})
    replies.append(
        ("list with a 1000-character agent id", long_agent.get("/memories", params={"owner_id": owner}))
    )
    replies.append(
        ("search for Unicode text", a.post("/memories/search", {"query": unicode_text, "owner_id": owner}))
    )
    cell_id: str | None = None
    back: Reply | None = None
    if created.status == 201 and isinstance(created.json_object().get("id"), str):
        cell_id = created.json_object()["id"]
        back = a.get(f"/memories/{cell_id}")
        replies.append(("GET of the Unicode cell", back))
    # the odd PATCHes go to the Unicode cell once it has been read back (a fresh cell if none was made)
    if cell_id is None:
        cell_id = amp.create_cell()["id"]
    for label, body in (
        ("PATCH scoring null", {"scoring": None}),
        ("PATCH content null", {"content": None}),
        ("PATCH lifecycle null", {"lifecycle": None}),
        ("PATCH Unicode text", {"content": {"text": f"{unicode_text} (edited)"}}),
        ("PATCH empty access_policy", {"access_policy": {}}),
    ):
        replies.append((label, a.patch(f"/memories/{cell_id}", body)))
    if back is not None and back.status == 200:
        content = back.json_object().get("content")
        text = content.get("text") if isinstance(content, dict) else None
        amp.expect(text == unicode_text, f"the Unicode text reads back unchanged (got {shown(text)})", back)
    crashes = [(label, reply) for label, reply in replies if reply.status >= 500]
    amp.expect(
        not crashes,
        "server errors: " + "; ".join(f"{label} -> {reply.status}" for label, reply in crashes),
        crashes[0][1] if crashes else None,
    )
