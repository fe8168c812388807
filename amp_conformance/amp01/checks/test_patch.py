"""PATCH /memories/{memory_id}: merge rules, immutable fields, transitions, expiry (AMP-PATCH-*).

Cells are fresh (fresh owner, creator agent "a"). Checks whose probes cannot disturb one another
share one cell and one sequence of requests, sent once by whichever check runs first
(``amp.shared``): each check judges the answers to its own probes, compared with the answer just
before them, so a rule broken shows in its own check only. No shared cell takes more than five
successful PATCHes (a server counting every PATCH against the scoring budget refuses none of them).
A probe that a wrongly allowed transition would disturb comes before that transition; PATCH to
deleted (which a faulty server may grant) comes last on its cell, and the scoring PATCH check (serial:
no lifecycle pass may run meanwhile) takes the lifecycle checks' shared passes' healthy cell and stale
lift when they were made, else a cell of its own. Values are compared with what the server itself
stored (the 201 body or an earlier reply), never with what the check sent, so a server that
normalises numbers or timestamps is judged on the rule, not on formatting.
"""

from __future__ import annotations

import functools
import time
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from typing import Any

import pytest

from amp_conformance import SHOULD, Amp01Context, check
from amp_conformance.amp01.cells import TimestampError, parse_utc_timestamp
from amp_conformance.amp01.checks._lifecycle_passes import BOTH_PASSES, Passes, both_passes
from amp_conformance.amp01.checks._support import (
    expect_member,
    expect_reads_as_deleted_of,
    expect_refusal,
    expect_refused_as_invalid,
    expect_scoring_not_limited,
    expect_step,
    expect_transition_refused,
    expect_unknown_id_answer,
    expect_valid_cell,
    member,
    read_back_of,
    shown,
    step_failed,
)
from amp_conformance.amp01.session import NotEnoughAgents
from amp_conformance.engine.client import Reply
from amp_conformance.engine.steps import Made, Recorder, Step

CLOCK_SKEW = timedelta(seconds=120)
MISSING = object()


# helpers -------------------------------------------------------------------------------------


def _time(amp: Amp01Context, cell: Any, path: str, reply: Reply | None = None) -> datetime:
    """A timestamp member parsed as RFC 3339 UTC (a null or malformed value fails the check)."""
    value = expect_member(amp, cell, path, reply)
    if not isinstance(value, str):
        amp.fail(f"{path} is {shown(value)}, expected a date-time string", reply)
    try:
        return parse_utc_timestamp(value)
    except TimestampError as exc:
        # the timestamp format is AMP-CELL-18's rule: a step for the checks reading the time
        expect_step(amp, False, f"{path}: {exc}", reply, step=f"reading {path}", requirement="AMP-CELL-18")
        raise AssertionError("unreachable") from exc


def _valid_cell(amp: Amp01Context, reply: Reply, what: str) -> dict[str, Any]:
    return expect_valid_cell(amp, reply.json_object(), reply, what)


def _patch(amp: Amp01Context, cell_id: str, body: Any, *, role: str = "a") -> Reply:
    return amp.as_agent(role).patch(f"/memories/{cell_id}", body)


def _patched(amp: Amp01Context, cell_id: str, body: Any, what: str, *, role: str = "a") -> dict[str, Any]:
    """PATCH that must succeed (200 with a cell object)."""
    reply = _patch(amp, cell_id, body, role=role)
    amp.expect_status(reply, 200, what=what)
    return reply.json_object()


def _server_now(reply: Reply) -> datetime:
    """The server's clock from the Date header, else the client's clock."""
    header = reply.headers.get("date")
    if header:
        try:
            return parsedate_to_datetime(header).astimezone(UTC)
        except (TypeError, ValueError):
            pass
    return datetime.now(UTC)


def _same(amp: Amp01Context, before: dict[str, Any], after: dict[str, Any], path: str, reply: Reply) -> None:
    old, new = expect_member(amp, before, path), expect_member(amp, after, path, reply)
    amp.expect(new == old, f"{path} changed from {shown(old)} to {shown(new)}", reply, expected=repr(old))


# shared probe sequences ------------------------------------------------------------------------


def _replies(made: Made[dict[str, Any], Reply]) -> tuple[dict[str, Any], dict[str, Reply]]:
    """A shared sequence as a check reads it: its cell (the 201 body) and its replies by label."""
    return made.value, {label: made[label] for label in made.labels()}


#: The module's shared sequences (each made by the first check that asks; the makers are defined below).
MERGE_RULES: Step[Amp01Context, dict[str, Any], Reply] = Step(
    "patch:merge-rules", lambda amp, rec: _merge_probes(amp, rec), roles=("a",), reply=Reply
)
IMMUTABLE_PROBES: Step[Amp01Context, dict[str, Any], Reply] = Step(
    "patch:immutable", lambda amp, rec: _immutable_probes(amp, rec), roles=("a",), reply=Reply
)
MEMBER_PROBES: Step[Amp01Context, dict[str, Any], Reply] = Step(
    "patch:members", lambda amp, rec: _member_probes(amp, rec), roles=("a", "stranger"), reply=Reply
)
EXPIRY_PROBES: Step[Amp01Context, dict[str, Any], Reply] = Step(
    "patch:expiry", lambda amp, rec: _expiry_probes(amp, rec), roles=("a",), reply=Reply
)
TRANSITION_PROBES: Step[Amp01Context, dict[str, Any], Reply] = Step(
    "patch:transitions", lambda amp, rec: _transition_probes(amp, rec), roles=("a", "stranger"), reply=Reply
)


def _get(amp: Amp01Context, cell_id: str) -> Reply:
    return amp.as_agent("a").get(f"/memories/{cell_id}")


# PATCH-01 .. PATCH-07: one cell, the merge rules -----------------------------------------------

MERGE_TEXT = "Now prefers Go for backend development"
SENT_METADATA = {"domain": "languages", "secondary_language": "go"}
STAMP_GAP = 1.1
"""Seconds between two PATCHes whose last_updated_at must differ (timestamps may have whole seconds)."""


#: The provenance member the access_policy.public PATCH also sends (AMP-PATCH-03/-04 for provenance).
PROVENANCE_SENT = {"source_ref": "conv-2"}


def _merge_probes(amp: Amp01Context, rec: Recorder) -> dict[str, Any]:
    """A cell with every section set (the 201 body is the cell before any PATCH: a read then would
    show nothing more but its own access); then a content PATCH (text and metadata), a read, a
    scoring PATCH, an access_policy.public PATCH, a readable_by PATCH 1.1 s after the content PATCH, a
    read, and a metadata-only PATCH (content without text) last, whatever it does."""
    owner = amp.owner()
    cell = amp.create_cell(
        identity={"owner_id": owner, "session_id": "session-1"},
        content={"text": "old text", "metadata": {"domain": "programming", "keep": "me"}},
        scoring={"importance": 0.5, "confidence": 0.95, "decay_rate": 0.05},
        access_policy={
            "readable_by": [f"{owner}-x", "amp-ct-reader-*"],
            "writable_by": ["amp-ct-writer-1"],
            "public": False,
        },
        provenance={"source_type": "conversation", "source_ref": "conv-1", "extraction_method": "rule_based"},
    )
    cell_id = cell["id"]
    rec("content", _patch(amp, cell_id, {"content": {"text": MERGE_TEXT, "metadata": SENT_METADATA}}))
    stamped = time.monotonic()
    rec("read after content", _get(amp, cell_id))
    rec("scoring", _patch(amp, cell_id, {"scoring": {"importance": 0.9}}))
    # one PATCH for two sections keeps the cell within five successful PATCHes
    rec("public", _patch(amp, cell_id, {"access_policy": {"public": True}, "provenance": PROVENANCE_SENT}))
    time.sleep(max(0.0, stamped + STAMP_GAP - time.monotonic()))
    rec("readable_by", _patch(amp, cell_id, {"access_policy": {"readable_by": [f"{owner}-b"]}}))
    rec("read after readable_by", _get(amp, cell_id))
    rec("metadata only", _patch(amp, cell_id, {"content": {"metadata": {"only": "metadata"}}}))
    return cell


def _merge(amp: Amp01Context) -> tuple[dict[str, Any], dict[str, Reply]]:
    return _replies(MERGE_RULES(amp))


@check("AMP-PATCH-01", uses=(MERGE_RULES,))
def test_patch_returns_the_complete_updated_cell(amp: Amp01Context) -> None:
    """A valid PATCH answers 200 with the complete updated cell, and a GET agrees."""
    cell, got = _merge(amp)
    reply = got["content"]
    amp.expect_status(reply, 200)
    updated = _valid_cell(amp, reply, "the PATCH response")
    amp.expect(updated.get("id") == cell["id"], f"the response is cell {cell['id']}", reply)
    text = expect_member(amp, updated, "content.text", reply)
    amp.expect(text == MERGE_TEXT, f"content.text is the new text ({shown(text)})", reply)
    back = got["read after content"]
    stored = read_back_of(amp, back)
    amp.expect(
        expect_member(amp, stored, "content.text", back) == text,
        "a GET after the PATCH returns the new content.text",
        back,
    )


@pytest.mark.smoke
@check("AMP-PATCH-02", uses=(MERGE_RULES,))
def test_sections_not_sent_are_left_as_stored(amp: Amp01Context) -> None:
    """PATCH of content only leaves scoring, access_policy, provenance and identity untouched."""
    before, got = _merge(amp)  # the 201 body: the cell as stored before the PATCH
    reply = got["content"]
    amp.expect_status(reply, 200)
    updated = reply.json_object()
    for section in ("scoring", "access_policy", "provenance", "identity"):
        _same(amp, before, updated, section, reply)
    back = got["read after content"]
    stored = read_back_of(amp, back)
    for section in ("access_policy", "provenance", "identity"):
        _same(amp, before, stored, section, back)


@check("AMP-PATCH-03", uses=(MERGE_RULES,))
def test_scoring_keys_not_sent_keep_their_values(amp: Amp01Context) -> None:
    """PATCH scoring.importance keeps confidence, decay_rate and access_count as stored."""
    _, got = _merge(amp)
    before = read_back_of(amp, got["read after content"])  # access_count 1, so a reset to the default 0 shows
    reply = got["scoring"]
    expect_scoring_not_limited(amp, reply, "a scoring PATCH of a fresh cell")
    amp.expect_status(reply, 200)
    updated = reply.json_object()
    importance = expect_member(amp, updated, "scoring.importance", reply)
    amp.expect(importance == 0.9, f"scoring.importance is 0.9 (got {shown(importance)})", reply)
    for key in ("confidence", "decay_rate", "access_count"):
        _same(amp, before, updated, f"scoring.{key}", reply)


@check("AMP-PATCH-03", uses=(MERGE_RULES,))
def test_access_policy_keys_not_sent_keep_their_values(amp: Amp01Context) -> None:
    """PATCH access_policy.public keeps readable_by and writable_by as stored."""
    _, got = _merge(amp)
    before = read_back_of(amp, got["read after content"])
    reply = got["public"]
    amp.expect_status(reply, 200)
    updated = reply.json_object()
    public = expect_member(amp, updated, "access_policy.public", reply)
    amp.expect(public is True, f"access_policy.public is true (got {shown(public)})", reply)
    for key in ("readable_by", "writable_by"):
        _same(amp, before, updated, f"access_policy.{key}", reply)


@pytest.mark.smoke
@check("AMP-PATCH-03", "AMP-PATCH-04", uses=(MERGE_RULES,))
def test_provenance_keys_not_sent_keep_their_values(amp: Amp01Context) -> None:
    """PATCH provenance.source_ref replaces it and keeps source_type and extraction_method as stored."""
    _, got = _merge(amp)
    before = read_back_of(amp, got["read after content"])
    reply = got["public"]
    amp.expect_status(reply, 200, what="PATCH access_policy.public with provenance.source_ref")
    updated = reply.json_object()
    ref = expect_member(amp, updated, "provenance.source_ref", reply)
    amp.expect(
        ref == "conv-2",
        f"provenance.source_ref is 'conv-2' as sent (got {shown(ref)})",
        reply,
        requirement="AMP-PATCH-04",
    )
    for key in ("source_type", "extraction_method"):
        old = expect_member(amp, before, f"provenance.{key}")
        new = expect_member(amp, updated, f"provenance.{key}", reply)
        amp.expect(
            new == old,
            f"provenance.{key} changed from {shown(old)} to {shown(new)}, though only source_ref was sent",
            reply,
            expected=repr(old),
            requirement="AMP-PATCH-03",
        )


@check("AMP-PATCH-04", uses=(MERGE_RULES,))
def test_sent_arrays_replace_the_stored_ones(amp: Amp01Context) -> None:
    """A sent readable_by replaces the stored list as a whole (not appended)."""
    cell, got = _merge(amp)
    owner = cell["identity"]["owner_id"]
    reply = got["readable_by"]
    amp.expect_status(reply, 200)
    value = expect_member(amp, reply.json_object(), "access_policy.readable_by", reply)
    amp.expect(value == [f"{owner}-b"], f"readable_by is exactly [{owner}-b] (got {shown(value)})", reply)
    back = got["read after readable_by"]
    value = expect_member(amp, read_back_of(amp, back), "access_policy.readable_by", back)
    amp.expect(value == [f"{owner}-b"], f"a GET shows readable_by [{owner}-b] (got {shown(value)})", back)


@pytest.mark.smoke
@check("AMP-PATCH-05", uses=(MERGE_RULES,))
def test_content_text_and_metadata_are_updated(amp: Amp01Context) -> None:
    """PATCH content with text and metadata applies both (metadata merge or replace is reported)."""
    _, got = _merge(amp)
    reply = got["content"]
    amp.expect_status(reply, 200)
    updated = reply.json_object()
    amp.expect(
        expect_member(amp, updated, "content.text", reply) == MERGE_TEXT,
        f"content.text is {shown(MERGE_TEXT)}",
        reply,
    )
    metadata = expect_member(amp, updated, "content.metadata", reply)
    amp.expect(isinstance(metadata, dict), f"content.metadata is an object (got {shown(metadata)})", reply)
    for key, value in SENT_METADATA.items():
        amp.expect(
            metadata.get(key) == value,
            f"content.metadata.{key} is {shown(value)} (got {shown(metadata.get(key))})",
            reply,
        )
    # C-20 (Info): whether sent metadata merges into or replaces the stored map.
    merged = "keep" in metadata
    amp.note(
        f"content.metadata on PATCH is {'merged key by key' if merged else 'replaced as a whole'} (C-20)"
    )
    # C-20 (Info): a metadata-only PATCH (content without text).
    probe = got["metadata only"]
    amp.expect(probe.status < 500, f"a metadata-only PATCH must not crash (got {probe.status})", probe)
    amp.note(f"a metadata-only PATCH (content without text) answered {probe.status} (C-20)")


@pytest.mark.smoke
@check("AMP-PATCH-06", uses=(MERGE_RULES,))
def test_every_patch_stamps_last_updated_at(amp: Amp01Context) -> None:
    """Each PATCH sets last_updated_at to the server's time: non-null, >= created_at, increasing."""
    cell, got = _merge(amp)
    created = _time(amp, cell, "lifecycle.created_at")
    first = got["content"]
    amp.expect_status(first, 200)
    stamp1 = _time(amp, first.json_object(), "lifecycle.last_updated_at", first)
    amp.expect(stamp1 >= created, f"last_updated_at {stamp1} is not before created_at {created}", first)
    now = _server_now(first)
    amp.expect(
        abs(stamp1 - now) <= CLOCK_SKEW,
        f"last_updated_at {stamp1.isoformat()} is the server's current time (Date: {now.isoformat()})",
        first,
    )
    second = got["readable_by"]  # sent 1.1 s after the first; whether it is applied is AMP-PATCH-04's
    if second.status != 200:
        step_failed(amp, second, "a PATCH of readable_by 1.1 s later", "AMP-PATCH-04", "200")
    stamp2 = _time(amp, second.json_object(), "lifecycle.last_updated_at", second)
    amp.expect(
        stamp2 > stamp1,
        f"a PATCH 1.1 s later moves last_updated_at forward ({stamp1.isoformat()} -> {stamp2.isoformat()})",
        second,
    )


@check("AMP-PATCH-07", uses=(MERGE_RULES,))
def test_patch_is_not_an_access(amp: Amp01Context) -> None:
    """A PATCH leaves access_count and last_accessed_at as they were."""
    before, got = _merge(amp)  # the 201 body: no access yet (access_count 0, last_accessed_at null)
    reply = got["content"]
    amp.expect_status(reply, 200)
    updated = reply.json_object()
    _same(amp, before, updated, "scoring.access_count", reply)
    _same(amp, before, updated, "lifecycle.last_accessed_at", reply)


# PATCH-06, PATCH-08, PATCH-21: one cell, what a PATCH cannot change ----------------------------


def _immutable_probes(amp: Amp01Context, rec: Recorder) -> dict[str, Any]:
    """A cell, then PATCHes sending identity members, lifecycle.created_at, lifecycle.last_updated_at
    and an empty body, a read, and last (a server applying it would move the cell) a PATCH sending
    id, amp_version and type, and a read."""
    cell = amp.create_cell(identity={"session_id": "session-1"})
    cell_id = cell["id"]
    other = amp.owner()  # run-scoped, so a server that applies it still keeps runs apart
    identity = {
        "owner_id": other,
        "owner_type": "organization",
        "created_by": f"{other}-agent",
        "session_id": f"{other}-session",
    }
    text = {"text": "patch with identity members"}
    rec("identity", _patch(amp, cell_id, {"content": text, "identity": identity}))
    created_at = {"content": {"text": "older?"}, "lifecycle": {"created_at": "2020-01-01T00:00:00Z"}}
    rec("created_at", _patch(amp, cell_id, created_at))
    stamp = {"content": {"text": "updated"}, "lifecycle": {"last_updated_at": "2001-01-01T00:00:00Z"}}
    rec("last_updated_at", _patch(amp, cell_id, stamp))
    rec("empty", _patch(amp, cell_id, {}))
    rec("read", _get(amp, cell_id))
    try:
        unknown = amp.unknown_id()
    except NotEnoughAgents:  # the id's form needs the conventions, which need a second agent
        return cell
    members = {"id": unknown, "amp_version": "9.9.9", "type": "episodic"}
    rec("id", _patch(amp, cell_id, {"content": {"text": "patch with id, amp_version and type"}, **members}))
    rec("read after id", _get(amp, cell_id))
    return cell


def _immutable(amp: Amp01Context) -> tuple[dict[str, Any], dict[str, Reply]]:
    return _replies(IMMUTABLE_PROBES(amp))


@check("AMP-PATCH-06", uses=(IMMUTABLE_PROBES,))
def test_client_sent_last_updated_at_is_replaced_by_server_time(amp: Amp01Context) -> None:
    """A client-sent lifecycle.last_updated_at is not stored: the server stamps its own time."""
    cell, got = _immutable(amp)
    created = _time(amp, cell, "lifecycle.created_at")
    reply = got["last_updated_at"]
    if reply.status == 422:
        amp.note("a client-sent lifecycle.last_updated_at is refused with 422")
        return
    amp.expect_status(reply, 200)
    stamp = _time(amp, reply.json_object(), "lifecycle.last_updated_at", reply)
    amp.expect(
        stamp >= created,
        f"last_updated_at is the server's time, not the client's 2001 value (got {stamp.isoformat()})",
        reply,
    )


@pytest.mark.smoke
@check("AMP-PATCH-08", uses=(IMMUTABLE_PROBES,))
def test_identity_cannot_be_patched(amp: Amp01Context) -> None:
    """identity members sent in a PATCH are ignored: 200, identity unchanged."""
    cell, got = _immutable(amp)
    reply = got["identity"]
    amp.expect_status(reply, 200, what="PATCH with identity members (ignored, not refused)")
    for key in ("owner_id", "owner_type", "created_by", "session_id"):
        _same(amp, cell, reply.json_object(), f"identity.{key}", reply)
    back = got["read"]
    _same(amp, cell, read_back_of(amp, back), "identity", back)


@pytest.mark.smoke
@check("AMP-PATCH-08", uses=(IMMUTABLE_PROBES,))
def test_created_at_cannot_be_patched(amp: Amp01Context) -> None:
    """A client-sent lifecycle.created_at is ignored: 200, created_at unchanged."""
    cell, got = _immutable(amp)
    reply = got["created_at"]
    amp.expect_status(reply, 200, what="PATCH with lifecycle.created_at (ignored, not refused)")
    _same(amp, cell, reply.json_object(), "lifecycle.created_at", reply)
    back = got["read"]
    _same(amp, cell, read_back_of(amp, back), "lifecycle.created_at", back)


@check("AMP-PATCH-08", uses=(IMMUTABLE_PROBES,))
def test_id_version_and_type_cannot_be_patched(amp: Amp01Context) -> None:
    """id, amp_version and type sent in a PATCH are ignored: 200, values unchanged."""
    cell, got = _immutable(amp)
    if "id" not in got:
        amp.unknown_id()  # skips as it always has: the id's form needs a second agent
    reply = got["id"]
    amp.expect_status(reply, 200, what="PATCH with id, amp_version and type (ignored, not refused)")
    for key in ("id", "amp_version", "type"):
        _same(amp, cell, reply.json_object(), key, reply)
    back = got["read after id"]
    stored = read_back_of(amp, back)
    for key in ("id", "amp_version", "type"):
        _same(amp, cell, stored, key, back)


@check("AMP-PATCH-21", uses=(IMMUTABLE_PROBES,))
def test_empty_body_changes_nothing(amp: Amp01Context) -> None:
    """An empty PATCH body {} is accepted and changes nothing but last_updated_at."""
    cell, got = _immutable(amp)
    reply = got["empty"]
    if reply.status == 422:
        amp.note("an empty PATCH body {} is refused with 422 (allowed)")
        return
    amp.expect_status(reply, 200)
    # the cell as it stood just before: the last PATCH before this one that was applied
    before = cell
    for label in ("identity", "created_at", "last_updated_at"):
        if got[label].status == 200:
            before = got[label].json_object()
    updated = reply.json_object()
    for path in ("id", "type", "content", "identity", "scoring", "access_policy", "provenance"):
        _same(amp, before, updated, path, reply)
    for path in (
        "lifecycle.created_at",
        "lifecycle.status",
        "lifecycle.expires_at",
        "lifecycle.last_accessed_at",
    ):
        _same(amp, before, updated, path, reply)


# PATCH-07, PATCH-09, PATCH-11, PATCH-12, PATCH-17: one cell, refusals first --------------------

BAD_BODIES: tuple[dict[str, Any], ...] = (
    {"scoring": {"importance": 2}},
    {"scoring": {"confidence": -0.1}},
    {"scoring": {"decay_rate": "fast"}},
    {"access_policy": {"readable_by": [1]}},
    {"access_policy": {"public": "yes please"}},
    {"content": {"text": 42}},
)


def _member_probes(amp: Amp01Context, rec: Recorder) -> dict[str, Any]:
    """A cell; the PATCHes that must be refused with 422 (bad values, an unknown status), then one
    read; then a PATCH to the current status, one with unknown members and a read, and
    PATCHes of access_count and last_accessed_at; then the cell archived, asked back to active by a
    stranger and without identity (both refused before any transition), deleted, read, and PATCHed."""
    cell = amp.create_cell(
        scoring={"importance": 0.6}, access_policy={"readable_by": ["amp-ct-reader-1"], "writable_by": []}
    )
    cell_id = cell["id"]
    refused = [*BAD_BODIES, {"lifecycle": {"status": "expired"}}]
    client, path = amp.as_agent("a"), f"/memories/{cell_id}"
    # sent together: each is refused with the cell unchanged, so none meets what another did
    replies = amp.at_once(*(functools.partial(client.patch, path, body) for body in refused))
    for index, reply in enumerate(replies[:-1]):
        rec(f"bad {index}", reply)
    rec("expired", replies[-1])
    # one read shows both: the bad values touch no status, "expired" touches only the status
    rec("read after the refusals", _get(amp, cell_id))
    rec("same status", _patch(amp, cell_id, {"lifecycle": {"status": "active"}}))
    rec("unknown members", _patch(amp, cell_id, {"foo": 1, "content": {"text": "x", "bar": 2}}))
    rec("read after unknown members", _get(amp, cell_id))
    rec("access_count", _patch(amp, cell_id, {"scoring": {"access_count": 7}}))
    accessed = {"lifecycle": {"last_accessed_at": "2001-01-01T00:00:00Z"}}
    rec("last_accessed_at", _patch(amp, cell_id, accessed))
    # archived: transitions asked without the right to ask (AMP-PATCH-20)
    rec("archive", _patch(amp, cell_id, {"lifecycle": {"status": "archived"}}))
    back_to_active = {"lifecycle": {"status": "active"}}
    if amp.optional_agent("stranger") is not None:  # without a second agent, PATCH-20 skips
        rec("stranger asks archived -> active", _patch(amp, cell_id, back_to_active, role="stranger"))
    rec("anonymous asks archived -> active", amp.anonymous().patch(f"/memories/{cell_id}", back_to_active))
    # deleted: PATCHes of a deleted cell (AMP-PATCH-19)
    rec("delete", amp.as_agent("a").delete(f"/memories/{cell_id}"))
    rec("read after delete", _get(amp, cell_id))
    # a content PATCH, not a status one: deleted -> active by PATCH is AMP-DEL-07's probe
    rec("content of a deleted cell", _patch(amp, cell_id, {"content": {"text": "back from the dead"}}))
    rec("read after the deleted PATCHes", _get(amp, cell_id))
    return cell


def _members(amp: Amp01Context) -> tuple[dict[str, Any], dict[str, Reply]]:
    return _replies(MEMBER_PROBES(amp))


@check("AMP-PATCH-07", uses=(MEMBER_PROBES,))
def test_client_cannot_write_access_fields(amp: Amp01Context) -> None:
    """A PATCH cannot set access_count or last_accessed_at (C-21, C-22)."""
    _, got = _members(amp)
    reply = got["access_count"]
    expect_scoring_not_limited(amp, reply, "a scoring PATCH of a fresh cell")
    if reply.status != 422:
        amp.expect_status(reply, 200, what="PATCH scoring.access_count")
        count = expect_member(amp, reply.json_object(), "scoring.access_count", reply)
        if count == 7:
            amp.warn("a PATCH set scoring.access_count to the client's value 7 (C-22)", reply)
    reply = got["last_accessed_at"]
    if reply.status != 422:
        amp.expect_status(reply, 200, what="PATCH lifecycle.last_accessed_at")
        value = expect_member(amp, reply.json_object(), "lifecycle.last_accessed_at", reply)
        if isinstance(value, str) and value.startswith("2001-01-01"):
            amp.warn(
                "a PATCH stored the client's lifecycle.last_accessed_at, moving the decay clock (C-21)", reply
            )


@pytest.mark.smoke
@check("AMP-PATCH-09", uses=(MEMBER_PROBES,))
def test_unknown_patch_members_are_ignored(amp: Amp01Context) -> None:
    """Unknown members in a PATCH body are ignored: 200, not stored, not echoed."""
    _, got = _members(amp)
    reply = got["unknown members"]
    amp.expect_status(reply, 200)
    back = got["read after unknown members"]
    for body, where in ((reply.json_object(), reply), (read_back_of(amp, back), back)):
        amp.expect("foo" not in body, "the unknown top-level member 'foo' is not in the cell", where)
        content = expect_member(amp, body, "content", where)
        amp.expect(
            isinstance(content, dict) and "bar" not in content,
            "the unknown member content.bar is not stored",
            where,
        )
        amp.expect(content.get("text") == "x", "content.text is 'x'", where)


@check("AMP-PATCH-11", uses=(MEMBER_PROBES,))
def test_setting_the_current_status_again_is_accepted(amp: Amp01Context) -> None:
    """PATCH lifecycle.status 'active' on an active cell answers 200 and the cell stays active."""
    _, got = _members(amp)
    reply = got["same status"]
    amp.expect_status(reply, 200)
    status = expect_member(amp, reply.json_object(), "lifecycle.status", reply)
    amp.expect(status == "active", f"lifecycle.status is still 'active' (got {shown(status)})", reply)


@check("AMP-PATCH-12", "AMP-ERR-04", uses=(MEMBER_PROBES,))
def test_unknown_status_is_a_validation_error(amp: Amp01Context) -> None:
    """PATCH lifecycle.status 'expired' (not a status) is 422 VALIDATION_ERROR; the cell stays active."""
    _, got = _members(amp)
    expect_refused_as_invalid(amp, details=True, reply=got["expired"])
    _expect_status_in(amp, got["read after the refusals"], "active")


@pytest.mark.smoke
@check("AMP-PATCH-17", "AMP-ERR-04", uses=(MEMBER_PROBES, TRANSITION_PROBES))
def test_out_of_range_or_mistyped_values_are_refused(amp: Amp01Context) -> None:
    """Out-of-range or wrongly typed values are 422 VALIDATION_ERROR and change nothing."""
    cell, got = _members(amp)
    for index in range(len(BAD_BODIES)):
        expect_refused_as_invalid(amp, details=True, reply=got[f"bad {index}"])
    back = got["read after the refusals"]
    stored = read_back_of(amp, back)
    for path in (
        "scoring.importance",
        "scoring.confidence",
        "scoring.decay_rate",
        "access_policy",
        "content",
    ):
        _same(amp, cell, stored, path, back)
    # ... and nothing means nothing: not even a valid member sent beside the invalid one
    _, transitions = _transitions(amp)
    mixed = transitions["refused 422"]
    expect_refused_as_invalid(amp, mixed, "PATCH content with importance 2")
    what = "a PATCH of content with importance 2"
    _expect_text_not(amp, transitions["read after 422 and 403"], REFUSED_422_TEXT, what, "AMP-PATCH-17")


# PATCH-11, PATCH-14: one cell, expiry then manual transitions ----------------------------------

EXPIRY = "2030-01-01T00:00:00Z"


def _expiry_probes(amp: Amp01Context, rec: Recorder) -> dict[str, Any]:
    """A cell; expires_at set, an invalid expires_at, a read (showing both), expires_at cleared; the manual
    active -> stale -> active writes; then PATCH to deleted and a read."""
    cell = amp.create_cell()
    cell_id = cell["id"]
    rec("set", _patch(amp, cell_id, {"lifecycle": {"expires_at": EXPIRY}}))
    rec("invalid", _patch(amp, cell_id, {"lifecycle": {"expires_at": "tomorrow"}}))
    rec("read after invalid", _get(amp, cell_id))
    rec("cleared", _patch(amp, cell_id, {"lifecycle": {"expires_at": None}}))
    for target in ("stale", "active"):
        rec(target, _patch(amp, cell_id, {"lifecycle": {"status": target}}))
    # last: a server that grants it deletes the cell (AMP-PATCH-12)
    rec("to deleted", _patch(amp, cell_id, {"lifecycle": {"status": "deleted"}}))
    rec("read after to deleted", _get(amp, cell_id))
    return cell


def _expiry(amp: Amp01Context) -> tuple[dict[str, Any], dict[str, Reply]]:
    return _replies(EXPIRY_PROBES(amp))


@check("AMP-PATCH-14", uses=(EXPIRY_PROBES,))
def test_expires_at_can_be_set(amp: Amp01Context) -> None:
    """lifecycle.expires_at can be set and is echoed; an invalid date-time is 422 and changes nothing."""
    _, got = _expiry(amp)
    reply = got["set"]
    amp.expect_status(reply, 200)
    wanted = datetime(2030, 1, 1, tzinfo=UTC)
    value = _time(amp, reply.json_object(), "lifecycle.expires_at", reply)
    amp.expect(value == wanted, f"expires_at is {EXPIRY} (got {value.isoformat()})", reply)
    expect_refused_as_invalid(amp, details=True, reply=got["invalid"])
    # one read shows both: expires_at was stored, and the refused PATCH left it as set
    back = got["read after invalid"]
    amp.expect(
        _time(amp, read_back_of(amp, back), "lifecycle.expires_at", back) == wanted,
        "a GET after the refused PATCH shows the expires_at that was set",
        back,
    )


@pytest.mark.smoke
@check(
    "AMP-PATCH-14",
    level=SHOULD,
    stance="C-19: clearing with null is documented, not required",
    uses=(EXPIRY_PROBES,),
)
def test_expires_at_can_be_cleared(amp: Amp01Context) -> None:
    """PATCH lifecycle.expires_at null clears a set expiry (C-19: warn only)."""
    _, got = _expiry(amp)
    amp.expect_status(got["set"], 200, what="setting expires_at (precondition)")
    reply = got["cleared"]
    amp.expect_status(reply, 200)
    value = expect_member(amp, reply.json_object(), "lifecycle.expires_at", reply)
    amp.expect(
        value is None, f"expires_at is null after clearing (got {shown(value)})", reply, expected="null"
    )


@check("AMP-PATCH-11", uses=(EXPIRY_PROBES,))
def test_manual_active_stale_transitions_are_accepted(amp: Amp01Context) -> None:
    """Manual active -> stale and stale -> active writes answer 200 with the new status."""
    _, got = _expiry(amp)
    for target in ("stale", "active"):
        reply = got[target]
        amp.expect_status(reply, 200, what=f"manual transition to {target}")
        status = expect_member(amp, reply.json_object(), "lifecycle.status", reply)
        amp.expect(status == target, f"lifecycle.status is {shown(target)} (got {shown(status)})", reply)


# PATCH-10, PATCH-12, PATCH-13: transitions (PATCH to deleted keeps a cell of its own) ------------


def _make_stale(amp: Amp01Context, cell_id: str) -> Reply:
    """Try the manual active -> stale write (AMP-PATCH-11, MAY); the caller decides what a refusal means."""
    return _patch(amp, cell_id, {"lifecycle": {"status": "stale"}})


#: The valid member a refused PATCH carries beside the member that gets it refused: a server that
#: stores it broke AMP-PATCH-12 (a 409 leaves the cell unchanged) or AMP-PATCH-17 (a 422 changes nothing).
REFUSED_409_TEXT = "applied by the PATCH refused with 409"
REFUSED_422_TEXT = "applied by the PATCH refused with 422"
REFUSED_403_TEXT = "applied by the PATCH refused with 403"


def _expect_text_not(amp: Amp01Context, got: Reply, text: str, what: str, requirement: str) -> None:
    """A read after a refused mixed-body PATCH does not show the text that PATCH sent."""
    stored = member(read_back_of(amp, got), "content.text")
    amp.expect(
        stored != text,
        f"{what} was refused, yet its valid member was written: content.text is now {shown(stored)}",
        got,
        expected="the text from before the refused PATCH",
        requirement=requirement,
    )


def _transition_probes(amp: Amp01Context, rec: Recorder) -> dict[str, Any]:
    """One cell, sent content with an invalid importance, then content by a stranger, read, made stale by
    hand, archived (a status-only body), asked back to active and to stale (one read after both), sent
    content with a return to active, read, and last sent PATCH to deleted and read. A wrongly allowed
    transition comes after the probes it could disturb; each refusal is judged against the answer just
    before it."""
    cell = amp.create_cell(content={"text": "original"})
    cell_id = cell["id"]
    invalid = {"content": {"text": REFUSED_422_TEXT}, "scoring": {"importance": 2}}
    rec("refused 422", _patch(amp, cell_id, invalid))
    edit = {"content": {"text": REFUSED_403_TEXT}}
    if amp.optional_agent("stranger") is not None:  # without a second agent, PATCH-13 skips
        rec("refused 403", _patch(amp, cell_id, edit, role="stranger"))
    rec("read after 422 and 403", _get(amp, cell_id))
    rec("stale", _make_stale(amp, cell_id))
    rec("archive the stale cell", _patch(amp, cell_id, {"lifecycle": {"status": "archived"}}))
    for target in ("active", "stale"):
        rec(f"archived -> {target}", _patch(amp, cell_id, {"lifecycle": {"status": target}}))
    # one read shows both: either transition applied leaves the cell out of 'archived'
    rec("read after archived -> active and stale", _get(amp, cell_id))
    returned = {"content": {"text": REFUSED_409_TEXT}, "lifecycle": {"status": "active"}}
    rec("refused 409", _patch(amp, cell_id, returned))
    rec("read after 409", _get(amp, cell_id))
    # last: a server that grants it deletes the cell (AMP-PATCH-12)
    rec("archived -> deleted", _patch(amp, cell_id, {"lifecycle": {"status": "deleted"}}))
    rec("read after archived -> deleted", _get(amp, cell_id))
    return cell


def _transitions(amp: Amp01Context) -> tuple[dict[str, Any], dict[str, Reply]]:
    return _replies(TRANSITION_PROBES(amp))


@pytest.mark.smoke
@check("AMP-PATCH-10", uses=(MEMBER_PROBES, TRANSITION_PROBES))
def test_status_only_body_archives_the_cell(amp: Amp01Context) -> None:
    """{"lifecycle":{"status":"archived"}} archives an active (or stale) cell; nothing else changes."""
    # an active cell: the members cell's archive, after its last answer that showed the whole cell
    _, members = _members(amp)
    cell, reply = _before_archive(members), members["archive"]
    amp.expect_status(reply, 200)
    archived = reply.json_object()
    status = expect_member(amp, archived, "lifecycle.status", reply)
    amp.expect(status == "archived", f"lifecycle.status is 'archived' (got {shown(status)})", reply)
    for path in ("lifecycle.created_at", "content", "scoring", "identity", "access_policy"):
        _same(amp, cell, archived, path, reply)
    _, got = _transitions(amp)
    made = got["stale"]
    if made.status != 200:
        amp.note(f"stale -> archived not checked: the manual active -> stale write answered {made.status}")
        return
    reply = got["archive the stale cell"]
    amp.expect_status(reply, 200, what="archiving a stale cell")
    status = expect_member(amp, reply.json_object(), "lifecycle.status", reply)
    amp.expect(status == "archived", f"a stale cell archives (status {shown(status)})", reply)


def _before_archive(got: dict[str, Reply]) -> dict[str, Any]:
    """The members cell as the last answer before its archive showed it: the latest accepted PATCH of
    an access field, else the read after the unknown members."""
    for label in ("last_accessed_at", "access_count"):
        if got[label].status == 200:
            return got[label].json_object()
    return got["read after unknown members"].json_object()


def _expect_invalid_transition(amp: Amp01Context, reply: Reply, what: str) -> None:
    expect_transition_refused(amp, reply, what, "AMP-PATCH-12")


def _expect_status_in(amp: Amp01Context, got: Reply, wanted: str) -> None:
    """A read after a refused PATCH shows the status ``wanted`` (AMP-PATCH-12)."""
    stored = read_back_of(amp, got)
    status = expect_member(amp, stored, "lifecycle.status", got)
    amp.expect(
        status == wanted,
        f"after the refused PATCH the cell's status is {shown(status)}, not {shown(wanted)}",
        got,
        expected=wanted,
        requirement="AMP-PATCH-12",
    )


@pytest.mark.smoke
@check("AMP-PATCH-12", "AMP-ERR-03", uses=(TRANSITION_PROBES,))
def test_archived_cell_cannot_return(amp: Amp01Context) -> None:
    """archived -> active and archived -> stale are refused with 409 INVALID_TRANSITION."""
    _, got = _transitions(amp)
    amp.archived_step(got["archive the stale cell"])
    for target in ("active", "stale"):
        _expect_invalid_transition(amp, got[f"archived -> {target}"], f"archived -> {target}")
    _expect_status_in(amp, got["read after archived -> active and stale"], "archived")
    # the refusal leaves the cell unchanged: the content sent beside the forbidden status too
    what = "content with archived -> active"
    _expect_invalid_transition(amp, got["refused 409"], what)
    _expect_text_not(amp, got["read after 409"], REFUSED_409_TEXT, f"a PATCH of {what}", "AMP-PATCH-12")


@check("AMP-PATCH-12", "AMP-ERR-03", uses=(EXPIRY_PROBES, TRANSITION_PROBES))
def test_patch_cannot_set_deleted(amp: Amp01Context) -> None:
    """PATCH lifecycle.status 'deleted' is refused with 409 from active (or stale) and from archived."""
    _, expiry = _expiry(amp)
    _, transitions = _transitions(amp)
    # the status the first cell had: the manual writes before may or may not have been accepted
    status = "active"
    for label in ("stale", "active"):
        if expiry[label].status == 200:
            status = str(member(expiry[label].json_object(), "lifecycle.status"))
    _expect_invalid_transition(amp, expiry["to deleted"], f"{status} -> deleted by PATCH")
    _expect_status_in(amp, expiry["read after to deleted"], status)
    amp.archived_step(transitions["archive the stale cell"])
    # archived on a correct server; the refused returns before may have moved it (AMP-PATCH-12's
    # archived-cell check judges those), so the status before is the one the last read showed
    status = str(member(read_back_of(amp, transitions["read after 409"]), "lifecycle.status"))
    reply = transitions["archived -> deleted"]
    _expect_invalid_transition(amp, reply, f"{status} -> deleted by PATCH (DELETE is the way)")
    _expect_status_in(amp, transitions["read after archived -> deleted"], status)


@check("AMP-PATCH-13", uses=(TRANSITION_PROBES,))
def test_refused_patch_applies_nothing(amp: Amp01Context) -> None:
    """A PATCH refused with 409, 422 or 403 leaves every member of its body unapplied."""
    cell, got = _transitions(amp)
    amp.agent("stranger")  # skips without a second agent, as it always has
    amp.expect_status(got["refused 422"], 422, what="content + importance 2")
    amp.expect_status(got["refused 403"], 403, what="a stranger's PATCH")
    # one read shows both: each refused PATCH sent its own text
    back = got["read after 422 and 403"]
    _same(amp, cell, read_back_of(amp, back), "content.text", back)
    amp.archived_step(got["archive the stale cell"])
    amp.expect_status(got["refused 409"], 409, what="content + archived -> active")
    before, back = got["read after archived -> active and stale"], got["read after 409"]
    _same(amp, read_back_of(amp, before), read_back_of(amp, back), "content.text", back)


@pytest.mark.smoke
@check("AMP-ACL-02", uses=(TRANSITION_PROBES,))
def test_a_strangers_refused_patch_writes_nothing(amp: Amp01Context) -> None:
    """A stranger's PATCH refused with 403 writes nothing: the write is refused, not only the answer."""
    _, got = _transitions(amp)
    amp.agent("stranger")  # skips without a second agent, as AMP-PATCH-13 does
    amp.expect_status(got["refused 403"], 403, what="a stranger's PATCH")
    _expect_text_not(amp, got["read after 422 and 403"], REFUSED_403_TEXT, "a stranger's PATCH", "AMP-ACL-02")


# PATCH-16 (serial: no lifecycle pass may run during it) ---------------------------------------


def _listed_status(amp: Amp01Context, cell: dict[str, Any], status: str) -> bool:
    """Whether the cell is listed for its owner with ``status`` (observing without a read bump)."""
    owner = expect_member(amp, cell, "identity.owner_id")
    reply = amp.as_agent("a").get("/memories", params={"owner_id": owner, "status": status, "limit": 100})
    amp.expect_status(reply, 200, what="listing the owner's cells")
    results = reply.json_object().get("results")
    return isinstance(results, list) and any(
        isinstance(r, dict) and r.get("id") == cell["id"] for r in results
    )


def _passes_cells(amp: Amp01Context) -> Passes | None:
    """The lifecycle checks' shared passes when they were made already (this check never makes one):
    their ``high`` cell (importance 0.9, decay_rate 0, active after both) is lowered here, after every
    check judging it, and their lift of the stale ``y`` to 0.9 is a scoring PATCH of a stale cell."""
    if not amp.shared_made(BOTH_PASSES):
        return None
    passes = both_passes(amp)
    second = passes.after_second()
    expect_step(
        amp,
        second.status(passes.ids["high"]) == "active",
        f"after two passes the importance 0.9 cell is {second.shown_as(passes.ids['high'])}, not active",
        second.lists["active"],
        step="a healthy cell active after a pass",
        requirement="AMP-LC-03",
        expected="active",
    )
    return passes


@check("AMP-PATCH-16", serial=True)
def test_scoring_patch_does_not_flip_the_status(amp: Amp01Context) -> None:
    """A scoring PATCH leaves lifecycle.status as it was (active, then stale); the next pass decides.

    With the lifecycle checks' shared passes made already, the active cell is their healthy one and the
    stale one the cell their second pass lifted; else a fresh cell, then the same cell made stale by
    hand."""
    passes = _passes_cells(amp)
    cell: dict[str, Any]
    if passes is None:
        cell = amp.create_cell()
    else:
        cell = {"id": passes.ids["high"], "identity": {"owner_id": passes.owner}}
    reply = _patch(amp, cell["id"], {"scoring": {"importance": 0.05}})
    expect_scoring_not_limited(amp, reply, "a scoring PATCH of an active cell")
    amp.expect_status(reply, 200)
    status = expect_member(amp, reply.json_object(), "lifecycle.status", reply)
    amp.expect(
        status == "active",
        f'the scoring PATCH flipped the status: the response says {shown(status)}, not "active"',
        reply,
    )
    if not _listed_status(amp, cell, "active"):
        amp.warn("the cell left 'active' right after a scoring PATCH, before any lifecycle pass (C-34)")
    if passes is not None:
        # a stale cell given a high importance: the second pass's lift of y (stale after the first)
        passes.step_stale_after_first(amp, "y")
        reply = passes.lifts["y"]
    else:
        # the same cell, made stale by hand, then given a high importance
        made = _make_stale(amp, cell["id"])
        if made.status != 200:
            amp.note(f"stale case not checked: the manual active -> stale write answered {made.status}")
            return
        reply = _patch(amp, cell["id"], {"scoring": {"importance": 0.9}})
    expect_scoring_not_limited(amp, reply, "a scoring PATCH of a stale cell")
    amp.expect_status(reply, 200)
    status = expect_member(amp, reply.json_object(), "lifecycle.status", reply)
    amp.expect(
        status == "stale",
        f"the scoring PATCH of a stale cell flipped its status: the response says {shown(status)}, "
        'not "stale"',
        reply,
    )


# PATCH-19, PATCH-20: the members cell, archived and then deleted -----------------------------


@pytest.mark.smoke
@check("AMP-PATCH-19", uses=(MEMBER_PROBES,))
def test_deleted_cell_cannot_be_patched(amp: Amp01Context) -> None:
    """PATCH of a deleted cell is refused (unknown-id answer, or 409 where deleted cells stay readable)."""
    _, got = _members(amp)
    amp.archived_step(got["archive"])
    amp.deleted_step(got["delete"])
    expect_reads_as_deleted_of(amp, got["read after delete"])
    readable = amp.conventions.deleted_read
    reply = got["content of a deleted cell"]
    amp.expect(reply.status != 200, "a PATCH of a deleted cell is refused, got 200", reply)
    if readable != "hidden" and reply.status == 409:
        expect_transition_refused(amp, reply, "PATCH of a deleted cell", "AMP-PATCH-19")
    else:
        expect_unknown_id_answer(amp, reply, "PATCH of a deleted cell")
    after = got["read after the deleted PATCHes"]
    if after.status == 200:
        status = expect_member(amp, after.json_object(), "lifecycle.status", after)
        amp.expect(
            status == "deleted",
            f'after the refused PATCHes the cell reads with status {shown(status)}, not "deleted"',
            after,
        )
    else:
        expect_unknown_id_answer(amp, after, "GET of a deleted cell after the refused PATCH")


@check("AMP-PATCH-20", uses=(MEMBER_PROBES,))
def test_permission_is_checked_before_the_transition(amp: Amp01Context) -> None:
    """A forbidden transition asked by a stranger is 403 (not 409); without identity it is 401."""
    _, got = _members(amp)
    amp.agent("stranger")  # skips without a second agent, as it always has
    amp.archived_step(got["archive"])
    expect_refusal(amp, got["stranger asks archived -> active"], "a stranger asking archived -> active")
    amp.expect_status(
        got["anonymous asks archived -> active"], 401, what="archived -> active without X-AMP-Agent-ID"
    )
