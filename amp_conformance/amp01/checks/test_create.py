"""Create: ``POST /memories`` (AMP-CRE-*).

The checks that only judge a plain create's answer or read it back take the run's shared minimal and
full cells (``_shared_cells``); the checks that send odd members send their own. The members AMP-CRE-03,
-04, -05, -07 (a body created_by) and -08 each send for the server to ignore go in one create
(``ignored_members``), read and listed at once after it for AMP-CRE-05 and -09, and judged by each check
while the other probes left no trace on it (else each sends its own, as alone). Probes another area asks
too (a create without identity, the 422 creates, the oversized create) are sent once per run
(``_shared_cells``, ``_size_cells``)."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.checks._shared_cells import (
    CLIENT_COUNT,
    CLIENT_LIFECYCLE,
    UNKNOWN_MEMBERS,
    anonymous_create,
    create_bracket,
    created_naming_other,
    created_reply,
    full_read,
    ignored_members,
    lifecycle_applied,
    minimal_cell,
    minimal_read,
    read_and_list,
    shared_create,
    without_text,
)
from amp_conformance.amp01.checks._size_cells import MAX_PROBED_BYTES, over_create
from amp_conformance.amp01.checks._support import (
    Marks,
    about,
    create_step,
    created,
    expect_accepted,
    expect_error,
    expect_valid_cell,
    expect_validation_error,
    list_owner,
    listed_results,
    member,
    post_cell,
    read,
    read_of,
    remember_created,
    shared_replies,
    shown,
    timestamp,
)
from amp_conformance.engine.client import Reply

#: Members a read is allowed to change (AMP-READ-02/03).
_READ_COUNTERS = ("scoring.access_count", "lifecycle.last_accessed_at")


def _differences(left: Any, right: Any, path: str = "") -> list[str]:
    """Paths at which two JSON values differ (objects compared key by key)."""
    if isinstance(left, dict) and isinstance(right, dict):
        found: list[str] = []
        for key in sorted(set(left) | set(right)):
            where = f"{path}.{key}" if path else key
            if key not in left or key not in right:
                found.append(where)
            else:
                found += _differences(left[key], right[key], where)
        return found
    same = left == right and isinstance(left, bool) == isinstance(right, bool)
    return [] if same else [path or "(root)"]


def _keys_required(amp: Amp01Context) -> bool:
    if amp.keys_mode:
        return True
    return amp.spec.get("api_keys_required") is True


@pytest.mark.smoke
@check("AMP-CRE-01")
def test_create_returns_201_with_the_stored_cell(amp: Amp01Context) -> None:
    """A valid create answers 201 with the stored cell: the body equals a later GET but for read counters."""
    # the run's shared minimal and full cells and their shared reads: the creates are judged here
    for label, (made, got) in (("a minimal create", minimal_read(amp)), ("a full create", full_read(amp))):
        reply = created_reply(amp, made["cell"]["id"])
        expect_accepted(amp, reply, label)
        cell = expect_valid_cell(amp, reply.json_object(), reply, f"the body of {label}")
        stored = read_of(amp, got, f"reading the cell of {label}")
        differ = [p for p in _differences(cell, stored) if p not in _READ_COUNTERS]
        hint = ""
        if differ == ["lifecycle.last_updated_at"]:
            hint = " (or the read stamped last_updated_at, which AMP-READ-04 also forbids)"
        amp.expect(
            not differ,
            f"{label}: the 201 body differs from the stored cell (GET) at {', '.join(differ)}{hint}",
            got,
            expected="the 201 body is the complete stored cell",
        )


@pytest.mark.smoke
@check("AMP-CRE-02")
def test_each_required_field_is_required(amp: Amp01Context) -> None:
    """Dropping type, content.text, identity.owner_id or identity.owner_type gives 422 VALIDATION_ERROR."""
    # the run's shared create without text (AMP-CELL-17 judges it too); the others sent at once
    replies = {"content.text": shared_create(amp, "without-text", without_text)}
    bodies: dict[str, dict[str, Any]] = {}
    for path in ("type", "content", "identity", "identity.owner_id", "identity.owner_type"):
        body = bodies[path] = amp.cell_body()
        parent, _, name = path.rpartition(".")
        holder = body[parent] if parent else body
        del holder[name]
    replies |= _created_at_once(amp, bodies)
    for path in ("type", "content", "content.text", "identity", "identity.owner_id", "identity.owner_type"):
        expect_validation_error(amp, replies[path], f"a create without {path}")


def _created_at_once(amp: Amp01Context, bodies: dict[str, Any]) -> dict[str, Reply]:
    """Creates as agent "a" sent at once (``amp.at_once``; refusals, none meets another's effect), by
    label; a cell a create made anyway is remembered for the cleanup."""
    client = amp.as_agent("a")
    sent = amp.at_once(*(partial(client.post, "/memories", body) for body in bodies.values()))
    for reply in sent:
        remember_created(amp, reply, "a")
    return dict(zip(bodies, sent, strict=True))


def _probed(amp: Amp01Context, probe: str) -> tuple[Reply, str, datetime, datetime]:
    """A create carrying ``probe``'s members ("id", "lifecycle" or "count"): (reply, the id sent, when
    it was sent, when answered). The run's create carrying every member the server must ignore when
    it answers the question cleanly (``ignored_members``); else the check's own create carrying only
    its members, as it would alone."""
    shared = ignored_members(amp, probe)
    if shared is not None:
        made, replies = shared
        return (replies[made["reply"]], made["id"], *create_bracket(made))
    sent_id = amp.unknown_id()
    members = {"id": {"id": sent_id}, "lifecycle": CLIENT_LIFECYCLE, "count": CLIENT_COUNT}[probe]
    sent = datetime.now(UTC)
    reply = post_cell(amp, amp.cell_body(members))
    return reply, sent_id, sent, datetime.now(UTC)


@pytest.mark.smoke
@check("AMP-CRE-03")
def test_the_server_chooses_the_id(amp: Amp01Context) -> None:
    """An id sent in the create body is not used (one well-formed id in the server's own form: the
    id a server honouring client ids would most readily take)."""
    reply, sent, _, _ = _probed(amp, "id")  # shared with AMP-CRE-04, -05, -07, -08 when clean
    expect_accepted(amp, reply, f"a create carrying id {shown(sent)}")
    cell = expect_valid_cell(amp, reply.json_object(), reply, "the created cell")
    amp.expect(cell["id"] != sent, f"the server chose the id: the client's {shown(sent)} was used", reply)


@pytest.mark.smoke
@check("AMP-CRE-04")
def test_client_lifecycle_and_version_are_not_applied(amp: Amp01Context) -> None:
    """Client lifecycle/amp_version are ignored: status active, fresh created_at, null last_*, 0.1.0."""
    reply, _, sent, received = _probed(amp, "lifecycle")  # shared with AMP-CRE-03, -05, -07, -08
    expect_accepted(amp, reply, "a create carrying lifecycle and amp_version")
    cell = expect_valid_cell(amp, reply.json_object(), reply, "the created cell")
    made = timestamp(amp, cell, "created_at", reply)
    problems = lifecycle_applied(cell, made, sent, received, reply)
    amp.expect(not problems, "the client's lifecycle/amp_version were applied: " + "; ".join(problems), reply)


def _fresh_create(amp: Amp01Context) -> tuple[Reply, Reply | None, Reply | None]:
    """A create with unknown members (ttl, content.colour), then, when it made a cell, agent "a"'s read
    of it and list of its owner at once: (create, read, list). AMP-CRE-05 judges the create and the
    read; AMP-CRE-09 the read and the list (unknown members are ignored, so the cell is as readable
    as any). The run's create carrying every member the server must ignore when it answers cleanly
    (``ignored_members``: no other probe left a trace, so the cell is active, fresh and "a"'s); else
    a create carrying only the unknown members, sent once per run. Nothing is judged here."""

    def make(a: Amp01Context) -> dict[str, Any]:
        marks = Marks(a)
        body = a.cell_body(UNKNOWN_MEMBERS)
        reply = post_cell(a, body)
        return {"reply": marks(reply), "read": None, "listed": None} | read_and_list(a, marks, reply, body)

    shared = ignored_members(amp, "unknown")
    made, replies = shared if shared is not None else shared_replies(amp, "create:unknown-members", make)
    read_reply = replies[made["read"]] if made["read"] is not None else None
    listed = replies[made["listed"]] if made["listed"] is not None else None
    return replies[made["reply"]], read_reply, listed


@check("AMP-CRE-05")
def test_unknown_create_members_are_ignored(amp: Amp01Context) -> None:
    """Unknown members (ttl, content.colour) are accepted, not stored and not echoed."""
    reply, shared_read, _ = _fresh_create(amp)  # shared with AMP-CRE-09 (and -03, -04, -07, -08 if clean)
    expect_accepted(amp, reply, "a create with unknown members ttl and content.colour")
    cell = reply.json_object()
    if shared_read is None:
        stored, got = read(amp, str(cell.get("id")))
    else:
        stored, got = read_of(amp, shared_read), shared_read
    for where, body in (("create", reply), ("read", got)):
        value = body.json_object()
        amp.expect("ttl" not in value, f"{where}: the unknown member 'ttl' is not echoed", body)
        content = value.get("content")
        amp.expect(
            not (isinstance(content, dict) and "colour" in content),
            f"{where}: the unknown member 'content.colour' is not echoed",
            body,
        )
    expect_valid_cell(amp, stored, got, "the stored cell")


@pytest.mark.smoke
@check("AMP-CRE-06")
def test_supplied_optional_values_are_stored_as_sent(amp: Amp01Context) -> None:
    """The API reference's example body is stored as sent (scoring, policy, provenance, session, metadata)."""
    made, got = full_read(amp)  # the run's shared full cell (never patched) and its shared read
    body = made["body"]
    reply = created_reply(amp, made["cell"]["id"])
    create_step(amp, reply, "creating the example cell")
    cell = expect_valid_cell(amp, reply.json(), reply, "the cell returned by creating the example cell")
    stored = read_of(amp, got)
    for label, value, where in (("create", cell, reply), ("read", stored, got)):
        wrong = []
        for path in (
            "type",
            "content.text",
            "content.metadata",
            "identity.owner_id",
            "identity.owner_type",
            "identity.session_id",
            "access_policy",
            "provenance",
            "scoring.importance",
            "scoring.confidence",
            "scoring.decay_rate",
        ):
            if _differences(member(body, path), member(value, path)):
                wrong.append(f"{path} is {shown(member(value, path))}, sent {shown(member(body, path))}")
        amp.expect(not wrong, f"{label}: supplied values are stored as sent: " + "; ".join(wrong), where)


@pytest.mark.smoke
@check("AMP-CRE-07")
def test_created_by_is_the_header_agent(amp: Amp01Context) -> None:
    """created_by is the X-AMP-Agent-ID of the create, with or without a body created_by (C-10)."""
    made = minimal_cell(amp)  # the run's shared minimal cell: a create without identity.created_by
    header_agent, body_agent = amp.agent_id("a"), amp.agent_id("b")
    reply = created_reply(amp, made["cell"]["id"])
    what = "a create without identity.created_by"
    create_step(amp, reply, what)
    cell = expect_valid_cell(amp, reply.json(), reply, f"the cell returned by {what}")
    got = member(cell, "identity.created_by")
    amp.expect(
        got == header_agent, f"created_by is the header agent {shown(header_agent)} (got {shown(got)})", reply
    )
    # the run's shared cell "a" created naming "b" as created_by (test_auth judges it with keys too)
    cell, reply = created_naming_other(amp)
    got = member(cell, "identity.created_by")
    if got == body_agent:
        message = f"the body's created_by {shown(body_agent)} won over the header agent {shown(header_agent)}"
        if _keys_required(amp):
            amp.fail(message + ": with API keys that is impersonation (C-10)", reply)
        amp.warn(message + " (C-10: keyless body-wins is a warning)", reply)
    else:
        amp.expect(
            got == header_agent,
            f"created_by is the header agent {shown(header_agent)} (got {shown(got)})",
            reply,
        )


@check("AMP-CRE-07")
def test_body_created_by_is_the_keyless_fallback(amp: Amp01Context) -> None:
    """Without X-AMP-Agent-ID (and without keys) the body's created_by is the creator; with keys it is 401."""
    body_agent = amp.agent_id("b")
    reply = post_cell(amp, amp.cell_body(identity={"created_by": body_agent}), role=None, remember_as="b")
    if _keys_required(amp):
        # in keys mode the body's created_by is no fallback: AMP-AUTH-06's rule, restated here
        with about("AMP-AUTH-06"):
            amp.expect_status(reply, 401, what="a create without credentials on a server with API keys")
            expect_error(amp, reply, 401)
        return
    expect_accepted(amp, reply, "a create without X-AMP-Agent-ID but with identity.created_by")
    cell = expect_valid_cell(amp, reply.json_object(), reply, "the created cell")
    got = member(cell, "identity.created_by")
    amp.expect(got == body_agent, f"created_by is the body's {shown(body_agent)} (got {shown(got)})", reply)
    read(amp, cell["id"], role="b", what="the body-named creator reading the cell")


@check("AMP-CRE-07")
def test_create_without_any_identity_is_401(amp: Amp01Context) -> None:
    """A create with neither X-AMP-Agent-ID nor created_by is 401 MISSING_AGENT_ID."""
    # the run's shared anonymous create and the list of its owner right after (test_errors judges it too)
    _, reply, listed = anonymous_create(amp)
    codes = ("MISSING_AGENT_ID", "UNAUTHENTICATED") if _keys_required(amp) else ("MISSING_AGENT_ID",)
    # with no created_by to fall back on, this is AMP-AUTH-01's rule: every agent route needs an identity
    with about("AMP-AUTH-01"):
        expect_error(amp, reply, 401, codes)
    results = listed_results(amp, listed)
    amp.expect(not results, f"the refused create stored a cell anyway: the owner has {len(results)}", listed)


@pytest.mark.smoke
@check("AMP-CRE-08")
def test_a_new_cell_starts_unread_and_unexpired(amp: Amp01Context) -> None:
    """A new cell has access_count 0 and null last_accessed_at, last_updated_at and expires_at."""
    made = minimal_cell(amp)  # the run's shared minimal cell: its create answer is judged
    reply = created_reply(amp, made["cell"]["id"])
    create_step(amp, reply, "creating a cell")
    cell = expect_valid_cell(amp, reply.json(), reply, "the cell returned by creating a cell")
    wrong = [
        f"{path} is {shown(member(cell, path))}"
        for path, value in (
            ("scoring.access_count", 0),
            ("lifecycle.last_accessed_at", None),
            ("lifecycle.last_updated_at", None),
            ("lifecycle.expires_at", None),
        )
        if member(cell, path) != value or isinstance(member(cell, path), bool)
    ]
    amp.expect(not wrong, "a new cell starts unread: " + "; ".join(wrong), reply)
    what = "a create sending access_count 7"
    reply, _, _, _ = _probed(amp, "count")  # shared with AMP-CRE-03, -04, -05, -07 when clean
    create_step(amp, reply, what)
    cell = expect_valid_cell(amp, reply.json(), reply, f"the cell returned by {what}")
    count = member(cell, "scoring.access_count")
    if count == 7:
        amp.warn("the client-sent scoring.access_count 7 was stored (C-22)", reply)
    else:
        amp.expect(count == 0, f"access_count of a new cell is 0 (got {shown(count)})", reply)


@pytest.mark.smoke
@check("AMP-CRE-09")
def test_a_new_cell_is_readable_and_listed_at_once(amp: Amp01Context) -> None:
    """Right after the create, the creator reads the cell and the owner's list contains it."""
    what = "reading the cell right after creating it"
    # AMP-CRE-05's create, read and listed at once (shared); a create of its own when that made no cell
    reply, shared_read, shared_list = _fresh_create(amp)
    if shared_read is not None and shared_list is not None:
        create_step(amp, reply, "creating a cell")
        cell = expect_valid_cell(amp, reply.json(), reply, "the cell returned by creating a cell")
        stored, got = read_of(amp, shared_read, what), shared_read
        results, listed = listed_results(amp, shared_list), shared_list
        ids = [item.get("id") for item in results if isinstance(item, dict)]
        amp.expect(
            stored.get("id") == cell["id"],
            f"the read returns the created cell (got {shown(stored.get('id'))})",
            got,
        )
        amp.expect(cell["id"] in ids, f"the owner's list contains the new cell (got ids {ids})", listed)
        return
    body = amp.cell_body()
    cell, _ = created(amp, body)
    stored, got = read(amp, cell["id"], what=what)
    amp.expect(
        stored.get("id") == cell["id"],
        f"the read returns the created cell (got {shown(stored.get('id'))})",
        got,
    )
    results, listed = list_owner(amp, body["identity"]["owner_id"])
    ids = [item.get("id") for item in results if isinstance(item, dict)]
    amp.expect(cell["id"] in ids, f"the owner's list contains the new cell (got ids {ids})", listed)


#: Bodies that are not a JSON object: not JSON, then each kind of JSON value but an object (a scalar
#: is where a server building the error's ``input`` from the body may crash).
NOT_OBJECTS = (
    ("not JSON", "not json"),
    ("a JSON array", "[]"),
    ("a JSON string", '"semantic"'),
    ("a JSON number", "42"),
    ("the JSON literal true", "true"),
    ("the JSON literal null", "null"),
)


@pytest.mark.smoke
@check("AMP-CRE-10")
def test_a_body_that_is_not_a_json_object_is_422(amp: Amp01Context) -> None:
    """A body that is not JSON, or JSON but not an object, is 422 VALIDATION_ERROR in the envelope."""
    # the run's shared create of a JSON array (test_errors judges it too); the others sent at once
    array = shared_create(amp, "json-array", lambda a: [])
    client = amp.as_agent("a")
    others = [(label, content) for label, content in NOT_OBJECTS if content != "[]"]
    json_type = {"Content-Type": "application/json"}
    sent = amp.at_once(
        *(
            partial(client.request, "POST", "/memories", content=content, headers=json_type)
            for _, content in others
        )
    )
    replies = dict(zip((label for label, _ in others), sent, strict=True))
    for reply in sent:
        remember_created(amp, reply, "a")
    for label, content in NOT_OBJECTS:
        reply = array if content == "[]" else replies[label]
        expect_validation_error(amp, reply, f"a create body that is {label}")


#: Do not send bodies above this size, whatever the server advertises.
_MAX_PROBE_BYTES = 4 * 1024 * 1024


@pytest.mark.smoke
@check("AMP-CRE-11")
def test_an_oversized_create_is_413_and_stores_nothing(amp: Amp01Context) -> None:
    """A create larger than max_cell_size_bytes is 413 CELL_TOO_LARGE and the owner has no cell afterwards."""
    limit = amp.spec.get("max_cell_size_bytes")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        amp.skip(f"/spec advertises no max_cell_size_bytes (got {shown(limit)}); AMP-CAP covers that")
    if limit + 1024 > _MAX_PROBE_BYTES:
        amp.skip(f"max_cell_size_bytes {limit} is too large to probe (over {_MAX_PROBE_BYTES} bytes)")
    if limit <= MAX_PROBED_BYTES:
        # the run's shared create one byte over the limit and the list of its owner after the 413
        # (test_size's AMP-SIZE-01 and -02 judge them too)
        _, reply, shared_list = over_create(amp)
    else:
        body = amp.cell_body(content={"text": "x" * (limit + 1024)})
        reply, shared_list = post_cell(amp, body), None
    # AMP-CRE-11 restates the size rules: the refusal is AMP-SIZE-01's, storing nothing AMP-SIZE-02's
    with about("AMP-SIZE-01"):
        expect_error(amp, reply, 413, "CELL_TOO_LARGE")
    if shared_list is not None:
        results, listed = listed_results(amp, shared_list), shared_list
    else:
        results, listed = list_owner(amp, body["identity"]["owner_id"])
    amp.expect(
        not results,
        f"the refused oversized create stored a cell anyway: the owner has {len(results)}",
        listed,
        requirement="AMP-SIZE-02",
    )
