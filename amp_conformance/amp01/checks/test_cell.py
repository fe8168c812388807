"""The cell model: schema, ids, enumerations, ranges, defaults and timestamps (AMP-CELL-*).

Every cell a check receives goes through :func:`expect_valid_cell`, the shared cell checker
(``amp_conformance.amp01.cells``: jsonschema against our contract, python-ulid for the id, UTC timestamps).
It and the other helpers this module shares with ``test_create`` and ``test_read`` live in ``_support``.
Checks that only judge a create's answer, or read a cell without asserting on its access counters, use
the cells ``_shared_cells`` makes once per run; the checks that PATCH a cell share one of their own,
made once for the four checks judging one sequence of requests on it (AMP-CELL-10/-12: refused PATCHes
and a read; then AMP-CELL-18/-20: reads and PATCHes moving the timestamps).
"""

from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Any

import pytest

from amp_conformance import SHOULD, Amp01Context, check
from amp_conformance.amp01.cells import CellIdError, parse_cell_id
from amp_conformance.amp01.checks._shared_cells import (
    RICH_METADATA,
    created_reply,
    full_read,
    judged_read,
    minimal_cell,
    minimal_listed,
    minimal_read,
    minimal_refused_read,
    owner_set,
    series_cells,
    shared_create,
    without_text,
)
from amp_conformance.amp01.checks._support import (
    SKEW,
    Marks,
    created,
    expect_refusal,
    expect_step,
    expect_valid_cell,
    expect_validation_error,
    member,
    post_cell,
    read,
    read_of,
    server_now_near,
    shared_replies,
    shown,
    step_failed,
    timestamp,
    timestamp_set,
)
from amp_conformance.engine.client import Reply

_REQUIRED = ("amp_version", "id", "type", "content", "identity", "lifecycle")
_SUB_FIELDS = {
    "scoring": ("importance", "confidence", "decay_rate", "access_count"),
    "access_policy": ("readable_by", "writable_by", "public"),
    "provenance": ("source_type", "source_ref", "extraction_method"),
}


def _valid(amp: Amp01Context, made: dict[str, Any], what: str) -> tuple[dict[str, Any], Reply]:
    """A shared cell's create answer, validated as :func:`created` validates a check's own."""
    cell = made["cell"]
    reply = created_reply(amp, cell["id"])
    return expect_valid_cell(amp, cell, reply, f"the cell returned by {what}"), reply


@pytest.mark.smoke
@check("AMP-CELL-01", "AMP-CELL-02")
def test_created_and_read_cells_validate(amp: Amp01Context) -> None:
    """Minimal and full cells validate against the schema on create and on read (six required members)."""
    for label, (made, got) in (("a minimal create", minimal_read(amp)), ("a full create", full_read(amp))):
        cell = made["cell"]
        reply = created_reply(amp, cell["id"])
        missing = [name for name in _REQUIRED if name not in cell]
        amp.expect(not missing, f"{label}: the cell lacks required member(s) {', '.join(missing)}", reply)
        expect_valid_cell(amp, cell, reply, f"the cell returned by {label}")
        amp.expect_status(got, 200, what=f"reading the cell of {label}")
        again = got.json_object()
        missing = [name for name in _REQUIRED if name not in again]
        amp.expect(
            not missing, f"read after {label}: the cell lacks required member(s) {', '.join(missing)}", got
        )
        expect_valid_cell(amp, again, got, f"the cell read after {label}")


@check("AMP-CELL-03")
def test_cell_carries_every_optional_sub_field(amp: Amp01Context) -> None:
    """A minimal cell carries scoring, access_policy and provenance with every sub-field present."""
    cell = minimal_cell(amp)["cell"]
    reply = created_reply(amp, cell["id"])
    missing = []
    for name, fields in _SUB_FIELDS.items():
        part = cell.get(name)
        if not isinstance(part, dict):
            missing.append(name)
            continue
        missing += [f"{name}.{field}" for field in fields if field not in part]
    content = cell.get("content")
    if isinstance(content, dict) and "metadata" not in content:
        missing.append("content.metadata")
    amp.expect(
        not missing, f"the cell omits {', '.join(missing)} instead of returning null, [] or {{}}", reply
    )


@pytest.mark.smoke
@check("AMP-CELL-04")
def test_amp_version_is_0_1_0_on_every_cell(amp: Amp01Context) -> None:
    """amp_version is "0.1.0" on created, read and listed cells."""
    made, got = minimal_read(amp)
    _, listed = minimal_listed(amp)
    cell = made["cell"]
    reply = created_reply(amp, cell["id"])
    amp.expect(
        cell.get("amp_version") == "0.1.0",
        f"created: amp_version is '0.1.0' (got {shown(cell.get('amp_version'))})",
        reply,
    )
    amp.expect_status(got, 200, what="reading the cell")
    version = got.json_object().get("amp_version")
    amp.expect(version == "0.1.0", f"read: amp_version is '0.1.0' (got {shown(version)})", got)
    if listed.status != 200:
        step_failed(amp, listed, "listing the owner's cells", "AMP-LIST-01", "200")
    page = listed.json()
    results = page.get("results") if isinstance(page, dict) else None
    if not isinstance(results, list):
        step_failed(amp, listed, "listing the owner's cells (a results array)", "AMP-LIST-01", "a page")
    amp.expect(results, "the owner's list contains the new cell", listed)
    for item in results:
        version = item.get("amp_version") if isinstance(item, dict) else None
        amp.expect(version == "0.1.0", f"listed: amp_version is '0.1.0' (got {shown(version)})", listed)


@pytest.mark.smoke
@check("AMP-CELL-05")
def test_id_is_a_ulid(amp: Amp01Context) -> None:
    """The id is a ULID, bare or behind 'mem_' (C-03: either form passes; the form is reported)."""
    cell_id = minimal_cell(amp)["cell"].get("id")
    reply = created_reply(amp, str(cell_id))
    amp.expect(isinstance(cell_id, str), f"id is a string (got {shown(cell_id)})", reply)
    try:
        _, form = parse_cell_id(str(cell_id))
    except CellIdError as exc:
        amp.fail(f"id is a ULID, bare or 'mem_' + ULID: {exc}", reply, expected="a ULID (C-03)")
    amp.note(f"id form: {form} ({cell_id})")


@pytest.mark.smoke
@check("AMP-CELL-06")
def test_ids_are_unique(amp: Amp01Context) -> None:
    """The run's shared cells have distinct ids: ten creates, five of them one owner's identical texts
    sent back to back, three sent 6 ms apart."""
    made = [minimal_cell(amp), *series_cells(amp)]
    owner = owner_set(amp)
    made += [*owner["cells"], owner["other"]]
    ids = [str(m["cell"]["id"]) for m in made]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    amp.expect(
        not duplicates,
        f"{len(ids)} creates gave duplicate ids: {', '.join(duplicates)}",
        created_reply(amp, duplicates[0]) if duplicates else None,
    )


@check("AMP-CELL-07")
def test_ids_follow_creation_order(amp: Amp01Context) -> None:
    """Ids of cells created a few ms apart sort in creation order; the ULID time matches created_at."""
    cells = [
        (str(m["cell"]["id"]), created_reply(amp, m["cell"]["id"]), m["cell"]) for m in series_cells(amp)
    ]
    ulids = []
    for cell_id, reply, cell in cells:
        try:
            ulid, _ = parse_cell_id(cell_id)
        except CellIdError as exc:
            amp.precondition_failed(
                f"the id is not a ULID: {exc}",
                reply,
                step="reading the ULID of an id",
                requirement="AMP-CELL-05",
            )
        ulids.append(ulid)
        made = timestamp(amp, cell, "created_at", reply)
        if made is not None:
            drift = abs((ulid.datetime - made).total_seconds())
            if drift > 2:
                amp.warn(f"the ULID time of {cell_id} is {drift:.1f} s away from created_at (C-03)", reply)
    texts = [str(u) for u in ulids]
    amp.expect(
        texts == sorted(texts),
        f"ids of cells created 6 ms apart sort in creation order: {[c[0] for c in cells]}",
        cells[-1][1],
    )


@pytest.mark.smoke
@check("AMP-CELL-08")
def test_type_is_one_of_the_three_memory_types(amp: Amp01Context) -> None:
    """episodic, semantic and procedural are accepted and echoed; type 'literal' is 422."""
    made = {m["body"]["type"]: m for m in reversed(owner_set(amp)["cells"])}
    for memory_type in ("episodic", "semantic", "procedural"):
        cell, reply = _valid(amp, made[memory_type], f"creating a {memory_type} cell")
        amp.expect(
            cell.get("type") == memory_type,
            f"type {shown(memory_type)} is stored (got {shown(cell.get('type'))})",
            reply,
        )
    # the run's shared create of type 'literal' (test_errors judges its envelope too)
    reply = shared_create(amp, "type-literal", lambda a: a.cell_body(type="literal"))
    expect_validation_error(amp, reply, "type 'literal'")


@pytest.mark.smoke
@check("AMP-CELL-09")
def test_owner_type_is_user_agent_or_organization(amp: Amp01Context) -> None:
    """owner_type user, agent and organization are accepted and echoed; 'team' is 422."""
    made = [minimal_cell(amp), *series_cells(amp)[:2]]
    for owner_type, shared in zip(("user", "agent", "organization"), made, strict=True):
        cell, reply = _valid(amp, shared, f"owner_type {shown(owner_type)}")
        got = member(cell, "identity.owner_type")
        amp.expect(got == owner_type, f"owner_type {shown(owner_type)} is stored (got {shown(got)})", reply)
    reply = post_cell(amp, amp.cell_body(identity={"owner_type": "team"}))
    expect_validation_error(amp, reply, "owner_type 'team'")


#: The refused PATCHes of AMP-CELL-10 and AMP-CELL-12, each with one member out of its range only.
REFUSED_PATCHES = (
    ("status", {"lifecycle": {"status": "expired"}}),
    ("importance", {"scoring": {"importance": -0.1}}),
    ("confidence", {"scoring": {"confidence": 1.5}}),
)
REFUSED_SCORES = (0.6, 0.9)

#: The shared step of the refused PATCHes (AMP-CELL-10, -12) and, after them, the timestamp walk
#: (AMP-CELL-18, -20) on the same cell.
CELL_STEPS = "cell:refused-patches-and-walk"


def _cell_steps(amp: Amp01Context) -> tuple[dict[str, Any], list[Reply]]:
    """One cell of agent "a" (scores :data:`REFUSED_SCORES`), the :data:`REFUSED_PATCHES` sent to it, a
    read after them, then the timestamp walk (:func:`_walk`, that read its first), made once per run
    for the four checks judging them (AMP-CELL-10 and -12 the refused PATCHes and the read, AMP-CELL-18
    and -20 the walk): the value and its replies. Each refused PATCH holds one value out of range only,
    so a correct server changes nothing (a server writing the valid members of a refused PATCH writes
    none here), and the walk, after the read, reads and patches content alone; the create is a step,
    the rest is judged by the checks."""

    def make(a: Amp01Context) -> dict[str, Any]:
        marks = Marks(a)
        importance, confidence = REFUSED_SCORES
        cell, reply = created(a, a.cell_body(scoring={"importance": importance, "confidence": confidence}))
        client = a.as_agent("a")
        path = f"/memories/{cell['id']}"
        # the refused PATCHes at once (amp.at_once): none meets what another did
        sent = a.at_once(*(partial(client.patch, path, body) for _, body in REFUSED_PATCHES))
        patches = {name: marks(reply) for (name, _), reply in zip(REFUSED_PATCHES, sent, strict=True)}
        read = marks(client.get(path))
        made = {"cell": cell, "reply": marks(reply), "patches": patches, "read": read}
        return made | _walk(a, marks, path, read)

    return shared_replies(amp, CELL_STEPS, make)


def _refused_patches(amp: Amp01Context) -> tuple[dict[str, Any], Reply, dict[str, Reply], Reply]:
    """The cell of :func:`_cell_steps`, its create reply, the refused PATCHes' replies by name and the
    read after them."""
    made, replies = _cell_steps(amp)
    patches = {name: replies[at] for name, at in made["patches"].items()}
    return made["cell"], replies[made["reply"]], patches, replies[made["read"]]


@pytest.mark.smoke
@check("AMP-CELL-10")
def test_status_is_one_of_the_four_lifecycle_states(amp: Amp01Context) -> None:
    """A new cell's status is a lifecycle state, and PATCH lifecycle.status 'expired' is 422."""
    cell, reply, patches, got = _refused_patches(amp)  # shared with AMP-CELL-12's refused PATCHes
    status = member(cell, "lifecycle.status")
    amp.expect(
        status in ("active", "stale", "archived", "deleted"),
        f"status is a lifecycle state (got {shown(status)})",
        reply,
    )
    expect_validation_error(amp, patches["status"], "PATCH lifecycle.status 'expired'")
    after = read_of(amp, got)
    status = member(after, "lifecycle.status")
    amp.expect(status == "active", f"the refused PATCH left the status 'active' (got {shown(status)})", got)


@pytest.mark.smoke
@check("AMP-CELL-11")
def test_provenance_enumerations(amp: Amp01Context) -> None:
    """Every documented source_type and extraction_method round-trips; undocumented values are 422."""
    for made in (owner_set(amp)["other"], *series_cells(amp)):
        sent = made["body"]["provenance"]
        what = f"provenance {sent['source_type']}/{sent['extraction_method']}"
        cell, reply = _valid(amp, made, what)
        got = cell.get("provenance")
        amp.expect(got == sent, f"provenance {sent} round-trips (got {shown(got)})", reply)
    for field, value in (("source_type", "telepathy"), ("extraction_method", "guesswork")):
        reply = post_cell(amp, amp.cell_body(provenance={field: value}))
        expect_validation_error(amp, reply, f"provenance.{field} {shown(value)}")


@pytest.mark.smoke
@check("AMP-CELL-12")
def test_importance_and_confidence_are_in_the_unit_interval(amp: Amp01Context) -> None:
    """importance/confidence 0 and 1 are accepted; 1.5 and -0.1 are 422 on create and on patch.

    Each field's two bounds are asked once, crosswise: importance 1.5 and confidence -0.1 on create,
    importance -0.1 and confidence 1.5 on a PATCH (both paths refuse both fields out of range)."""
    for made in series_cells(amp)[:2]:
        importance, confidence = made["body"]["scoring"]["importance"], made["body"]["scoring"]["confidence"]
        cell, reply = _valid(amp, made, f"importance {importance}, confidence {confidence}")
        got = (member(cell, "scoring.importance"), member(cell, "scoring.confidence"))
        amp.expect(
            got == (importance, confidence),
            f"scores ({importance}, {confidence}) are stored (got {got})",
            reply,
        )
    for field, value in (("importance", 1.5), ("confidence", -0.1)):
        reply = post_cell(amp, amp.cell_body(scoring={field: value}))
        expect_validation_error(amp, reply, f"create with scoring.{field} {value}")
    # the run's shared cell and refused PATCHes (AMP-CELL-10's 'expired' is sent to it too, first)
    _, _, patches, reread = _refused_patches(amp)
    for field, value in (("importance", -0.1), ("confidence", 1.5)):
        expect_validation_error(amp, patches[field], f"PATCH scoring.{field} {value}")
    after = read_of(amp, reread)
    scores = (member(after, "scoring.importance"), member(after, "scoring.confidence"))
    amp.expect(
        scores == REFUSED_SCORES,
        f"the refused PATCHes left the scores at (0.6, 0.9) (got {scores})",
        reread,
    )


@pytest.mark.smoke
@check("AMP-CELL-13")
def test_decay_rate_is_non_negative_and_unbounded(amp: Amp01Context) -> None:
    """decay_rate 0 and 20000 are accepted and stored; -0.01 is 422."""
    for made in series_cells(amp)[1:]:
        rate = made["body"]["scoring"]["decay_rate"]
        cell, reply = _valid(amp, made, f"decay_rate {rate}")
        got = member(cell, "scoring.decay_rate")
        amp.expect(got == rate, f"decay_rate {rate} is stored (got {shown(got)})", reply)
    reply = post_cell(amp, amp.cell_body(scoring={"decay_rate": -0.01}))
    expect_validation_error(amp, reply, "decay_rate -0.01")


@pytest.mark.smoke
@check("AMP-CELL-14")
def test_access_count_is_a_non_negative_integer(amp: Amp01Context) -> None:
    """scoring.access_count is an integer >= 0 on create and after a read."""
    made, got = minimal_read(amp)
    cell, reply = _valid(amp, made, "creating a cell")
    seen = [(member(cell, "scoring.access_count"), reply)]
    after, _ = judged_read(amp, got, "reading the cell")
    seen.append((member(after, "scoring.access_count"), got))
    for value, where in seen:
        amp.expect(
            isinstance(value, int) and not isinstance(value, bool) and value >= 0,
            f"access_count is an integer >= 0 (got {shown(value)})",
            where,
        )


_DEFAULTS = {
    "scoring.importance": 0.5,
    "scoring.confidence": 1.0,
    "scoring.decay_rate": 0.01,
    "scoring.access_count": 0,
    "access_policy.public": False,
    "access_policy.readable_by": [],
    "access_policy.writable_by": [],
    "content.metadata": {},
    "identity.session_id": None,
    "provenance.source_type": None,
    "provenance.source_ref": None,
    "provenance.extraction_method": None,
    "lifecycle.status": "active",
    "lifecycle.last_accessed_at": None,
    "lifecycle.last_updated_at": None,
    "lifecycle.expires_at": None,
}


@pytest.mark.smoke
@check("AMP-CELL-15")
def test_omitted_fields_take_the_documented_defaults(amp: Amp01Context) -> None:
    """A minimal create stores every documented default (importance 0.5, confidence 1.0, ...)."""
    cell, reply = _valid(amp, minimal_cell(amp), "a minimal create")
    wrong = []
    for path, default in _DEFAULTS.items():
        parent, _, name = path.rpartition(".")
        part = member(cell, parent)
        if parent in _SUB_FIELDS and not (isinstance(part, dict) and name in part):
            continue  # an absent scoring/access_policy/provenance member is AMP-CELL-03 (SHOULD)
        value = member(cell, path)
        if value != default or isinstance(value, bool) != isinstance(default, bool):
            wrong.append(f"{path} is {shown(value)}, expected {shown(default)}")
    amp.expect(not wrong, "defaults of a minimal create: " + "; ".join(wrong), reply)


@pytest.mark.smoke
@check("AMP-CELL-16")
def test_public_never_defaults_to_true(amp: Amp01Context) -> None:
    """Without access_policy, public is false and a stranger's read is refused."""
    made, refused = minimal_refused_read(amp)
    cell, reply = _valid(amp, made, "creating a cell")
    public = member(cell, "access_policy.public")
    amp.expect(public is not True, "access_policy.public is not true by default", reply)
    expect_refusal(amp, refused, "a stranger reading a cell created without access_policy")


@check("AMP-CELL-17")
def test_text_is_required_and_metadata_round_trips(amp: Amp01Context) -> None:
    """content.text is a required string; arbitrary JSON metadata round-trips on create and read."""
    cell, reply = _valid(amp, series_cells(amp)[0], "a create with rich metadata")
    got = member(cell, "content.metadata")
    amp.expect(got == RICH_METADATA, f"metadata round-trips on create (got {shown(got)})", reply)
    after, read_reply = read(amp, cell["id"])
    got = member(after, "content.metadata")
    amp.expect(got == RICH_METADATA, f"metadata round-trips on read (got {shown(got)})", read_reply)
    text = member(after, "content.text")
    amp.expect(isinstance(text, str), f"content.text is a string (got {shown(text)})", read_reply)
    # the run's shared create without text (AMP-CRE-02 judges it too)
    reply = shared_create(amp, "without-text", without_text)
    expect_validation_error(amp, reply, "a create without content.text")
    expect_validation_error(amp, post_cell(amp, amp.cell_body(content={"text": None})), "content.text null")
    reply = post_cell(amp, amp.cell_body(content={"metadata": ["not", "an", "object"]}))
    expect_validation_error(amp, reply, "content.metadata as an array")


@pytest.mark.smoke
@check("AMP-CELL-17", level=SHOULD, stance="C-23: refusing an empty text is a SHOULD")
def test_empty_text_is_refused(amp: Amp01Context) -> None:
    """An empty content.text is refused with 422 (C-23: a 201 is a warning)."""
    reply = post_cell(amp, amp.cell_body(content={"text": ""}))
    expect_validation_error(amp, reply, 'content.text "" (schema minLength 1)')


#: The timestamp walk's reads and content PATCHes (AMP-CELL-20), before the PATCH of expires_at.
WALK = ("read", "patch", "read", "patch")
EXPIRES_AT = "2099-01-01T00:00:00Z"


def _walk(amp: Amp01Context, marks: Marks, path: str, read: int) -> dict[str, Any]:
    """:data:`WALK` (a read by id, a PATCH of content.text, ...) on ``path`` as agent "a", its first
    read the one just sent (position ``read``: a second would show only its own access), then a PATCH
    setting only lifecycle.expires_at: the positions {"walk", "expires"}."""
    client = amp.as_agent("a")
    walk = [read] + [
        marks(
            client.get(path)
            if step == "read"
            else client.patch(path, {"content": {"text": f"revision {index}"}})
        )
        for index, step in enumerate(WALK)
        if index
    ]
    return {"walk": walk, "expires": marks(client.patch(path, {"lifecycle": {"expires_at": EXPIRES_AT}}))}


def _timestamp_walk(amp: Amp01Context) -> tuple[dict[str, Any], Reply, list[Reply], Reply]:
    """The walk of :func:`_cell_steps` (sent after the refused PATCHes and their read): (cell, create
    reply, the walk's replies, the expires_at PATCH). AMP-CELL-18 judges the create, the walk's first
    read and the last PATCH; AMP-CELL-20 the walk."""
    made, replies = _cell_steps(amp)
    walk = [replies[at] for at in made["walk"]]
    return made["cell"], replies[made["reply"]], walk, replies[made["expires"]]


@pytest.mark.smoke
@check("AMP-CELL-18")
def test_every_timestamp_is_utc(amp: Amp01Context) -> None:
    """created_at, last_accessed_at, last_updated_at and expires_at are RFC 3339 UTC timestamps."""
    cell, reply, walk, patched = _timestamp_walk(amp)  # shared with AMP-CELL-20
    seen: list[tuple[str, Reply, dict[str, Any]]] = [("create", reply, cell)]
    got = walk[WALK.index("read")]
    seen.append(("read", got, read_of(amp, got)))
    amp.expect_status(patched, 200, what="setting expires_at (PATCH)")
    seen.append(
        ("patch", patched, expect_valid_cell(amp, patched.json_object(), patched, "the patched cell"))
    )
    for label, where, body in seen:
        for name in ("created_at", "last_accessed_at", "last_updated_at", "expires_at"):
            timestamp(amp, body, name, where)
        amp.expect(
            timestamp(amp, body, "created_at", where) is not None, f"{label}: created_at is set", where
        )
    last = seen[-1][2]
    # whether a read and a PATCH set these is their own rules'; this check needs them set to judge them
    setters = {
        "last_accessed_at": "AMP-READ-03",
        "last_updated_at": "AMP-PATCH-06",
        "expires_at": "AMP-PATCH-14",
    }
    for name, rule in setters.items():
        expect_step(
            amp,
            timestamp(amp, last, name, patched) is not None,
            f"after a read and a PATCH, {name} is still null",
            patched,
            step=f"a read and a PATCH setting {name}",
            requirement=rule,
        )


@pytest.mark.smoke
@check("AMP-CELL-19")
def test_created_at_is_the_time_of_creation(amp: Amp01Context) -> None:
    """created_at is the server's time of the create (within 120 s of the client clock or Date)."""
    shared = minimal_cell(amp)
    sent, received = shared["sent"], shared["received"]
    cell, reply = _valid(amp, shared, "creating a cell")
    made = timestamp_set(amp, cell, "created_at", reply, "created_at is set")
    amp.expect(
        server_now_near(made, sent, received, reply),
        f"created_at {made.isoformat()} is the time of creation (client clock {sent.isoformat()}, "
        f"Date {shown(reply.headers.get('date'))}, allowed skew {SKEW.seconds} s)",
        reply,
    )


@check("AMP-CELL-20")
def test_timestamps_are_consistent_and_move_forward(amp: Amp01Context) -> None:
    """last_accessed_at / last_updated_at are never before created_at and only move forward."""
    cell, reply, walk, _ = _timestamp_walk(amp)  # shared with AMP-CELL-18 (its expires_at PATCH is last)
    made = timestamp(amp, cell, "created_at", reply)
    previous: dict[str, datetime] = {}
    for index, (step, where) in enumerate(zip(WALK, walk, strict=True)):
        if step == "read":
            body = read_of(amp, where)
        else:
            amp.expect_status(where, 200, what="patching content.text")
            body = expect_valid_cell(amp, where.json_object(), where, "the patched cell")
        for name in ("last_accessed_at", "last_updated_at"):
            value = timestamp(amp, body, name, where)
            if value is None:
                amp.expect(name not in previous, f"after {step} {index + 1}, {name} went back to null", where)
                continue
            if made is not None:
                amp.expect(value >= made, f"{name} {value.isoformat()} is not before created_at", where)
            if name in previous:
                amp.expect(
                    value >= previous[name],
                    f"{name} moved backwards: {previous[name].isoformat()} then {value.isoformat()}",
                    where,
                )
            previous[name] = value
    amp.expect(
        len(previous) == 2, "after reads and patches both last_accessed_at and last_updated_at are set", reply
    )
