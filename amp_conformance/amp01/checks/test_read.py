"""Read by id: ``GET /memories/{memory_id}`` (AMP-READ-*).

AMP-READ-07 (a stale cell is readable) needs a lifecycle pass, hence the admin token: it belongs with
the lifecycle checks. Checks whose verdict does not hang on a cell's access counters read the cells
``_shared_cells`` makes once per run; those that count accesses share a cell only with the checks
judging the same sequence of requests (AMP-READ-06 and AMP-SRCH-18: searches, then lists, then a read;
after it, on the same cell, AMP-READ-02 and -03: three reads) or make their own.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.checks._shared_cells import (
    created_reply,
    full_read,
    judged_read,
    minimal_cell,
    minimal_read,
    minimal_refused_read,
    status_trio,
    trio_refused_deletes,
    unknown_read,
    unread_cell,
)
from amp_conformance.amp01.checks._support import (
    Marks,
    expect_refusal,
    expect_step,
    expect_unknown_id_answer,
    expect_valid_cell,
    list_owner,
    member,
    read,
    read_of,
    server_now_near,
    shared_replies,
    shown,
    step_failed,
    timestamp,
    timestamp_set,
)
from amp_conformance.amp01.conventions import answer_of, label
from amp_conformance.engine.client import Reply


def _other_id_form(cell_id: str) -> str:
    return cell_id[len("mem_") :] if cell_id.startswith("mem_") else f"mem_{cell_id}"


@pytest.mark.smoke
@check("AMP-READ-01")
def test_an_allowed_reader_gets_the_full_cell(amp: Amp01Context) -> None:
    """The creator and an agent in readable_by get 200 and the full, valid cell."""
    made, shared = full_read(amp)  # the creator's read is sent once per run (AMP-CELL-01 judges it too)
    cell = made["cell"]
    for role, who in (("a", "the creator"), ("b", "an agent in readable_by")):
        what = f"{who} reading the cell"
        stored, reply = (
            judged_read(amp, shared, what) if role == "a" else read(amp, cell["id"], role=role, what=what)
        )
        for path in ("id", "type", "content", "identity", "access_policy", "provenance"):
            amp.expect(
                member(stored, path) == member(cell, path),
                f"{who}: {path} is {shown(member(stored, path))}, "
                f"the created cell has {shown(member(cell, path))}",
                reply,
            )


def _raw_accessed(reply: Reply) -> Any:
    try:
        body = reply.json()
    except AssertionError:
        return None
    return member(body, "lifecycle.last_accessed_at") if isinstance(body, dict) else None


def _three_reads(amp: Amp01Context) -> dict[str, Any]:
    """The shared unread cell (``_shared_cells.unread_cell``: searched and listed, then read once by id,
    the sequence AMP-READ-06 and AMP-SRCH-18 judge, sent first), then read three times in a row by its
    creator, each read's client send/receive times kept; when the first two of them show the same
    last_accessed_at (a coarse clock), one more read 1.1 s later. Nothing is judged here: AMP-READ-02
    judges the counts (each read one more than the read before it), AMP-READ-03 the timestamps, each
    from the same answers (a fault in one never shows in the other's question)."""
    marks = Marks(amp)
    unread, unread_replies = unread_cell(amp)
    cell = unread["cell"]
    made: dict[str, Any] = {"cell": cell, "create": marks(created_reply(amp, cell["id"]))}
    made |= {"first": marks(unread_replies[unread["read"]]), "reads": [], "later": None}
    client = amp.as_agent("a")
    replies: list[Reply] = []
    for _ in range(3):
        sent = datetime.now(UTC)
        # each read counts (AMP-READ-02): a repeat after a lost answer would count twice
        replies.append(client.get(f"/memories/{cell['id']}", repeatable=False))
        made["reads"].append({"at": marks(replies[-1]), "sent": sent, "received": datetime.now(UTC)})
    if _raw_accessed(replies[0]) == _raw_accessed(replies[1]):
        time.sleep(1.1)
        made["later"] = marks(client.get(f"/memories/{cell['id']}", repeatable=False))
    return made


@pytest.mark.smoke
@check("AMP-READ-02")
def test_each_read_adds_one_to_access_count(amp: Amp01Context) -> None:
    """Every successful read adds exactly 1 to access_count, and the reply already shows it."""
    made, replies = shared_replies(amp, "read:three-reads", _three_reads)
    # the cell's first read by id came before (AMP-READ-06 asks whether it showed 1): each of the
    # three reads after it adds one to what it showed
    first = replies[made["first"]]
    before = member(read_of(amp, first, "the first read by id"), "scoring.access_count")
    expect_step(
        amp,
        isinstance(before, int) and not isinstance(before, bool),
        f"the cell's first read by id shows access_count {shown(before)}, not a count",
        first,
        step="the access_count before the three reads",
        requirement="AMP-READ-02",
    )
    for added, entry in enumerate(made["reads"], start=1):
        expected = before + added
        reply = replies[entry["at"]]
        stored = read_of(amp, reply, f"read {added}")
        count = member(stored, "scoring.access_count")
        amp.expect(
            count == expected and not isinstance(count, bool),
            f"access_count is {expected} after {added} more read(s) (got {shown(count)})",
            reply,
            expected=str(expected),
        )


@pytest.mark.smoke
@check("AMP-READ-03")
def test_each_read_sets_last_accessed_at_to_now(amp: Amp01Context) -> None:
    """Every read sets last_accessed_at to the server's current time (after created_at, moving forward)."""
    shared, replies = shared_replies(amp, "read:three-reads", _three_reads)
    cell = shared["cell"]
    made = timestamp(amp, cell, "created_at", replies[shared["create"]])
    seen: list[datetime] = []
    for index, entry in enumerate(shared["reads"][:2]):
        sent, received, reply = entry["sent"], entry["received"], replies[entry["at"]]
        stored = read_of(amp, reply, f"read {index + 1}")
        accessed = timestamp_set(
            amp, stored, "last_accessed_at", reply, f"after read {index + 1}, last_accessed_at is set"
        )
        amp.expect(
            server_now_near(accessed, sent, received, reply),
            f"last_accessed_at {accessed.isoformat()} is the time of the read "
            f"(client clock {sent.isoformat()})",
            reply,
        )
        if made is not None:
            amp.expect(
                accessed >= made, f"last_accessed_at {accessed.isoformat()} is not before created_at", reply
            )
        if seen:
            amp.expect(
                accessed >= seen[-1],
                f"last_accessed_at moved backwards: {seen[-1].isoformat()} then {accessed.isoformat()}",
                reply,
            )
        seen.append(accessed)
    if seen[1] == seen[0]:
        # Two quick reads may share a coarse timestamp; one more, a second later, must be later.
        if shared["later"] is None:  # the raw values differed but name the same instant
            amp.note("the first two reads name the same instant in different forms; no later read was made")
            return
        reply = replies[shared["later"]]
        stored = read_of(amp, reply, "read 4, 1.1 s later")
        later = timestamp(amp, stored, "last_accessed_at", reply)
        amp.expect(
            later is not None and later > seen[0],
            "a read 1.1 s later moves last_accessed_at forward "
            f"(still {shown(member(stored, 'lifecycle.last_accessed_at'))})",
            reply,
        )


@check("AMP-READ-04")
def test_a_read_does_not_touch_last_updated_at(amp: Amp01Context) -> None:
    """A read leaves last_updated_at as it was (null for a never-patched cell)."""
    _, shared = minimal_read(amp)  # the run's one read of the shared minimal cell
    stored, reply = judged_read(amp, shared, "reading the cell")
    value = member(stored, "lifecycle.last_updated_at")
    amp.expect(
        value is None,
        f"after a read of a never-patched cell, last_updated_at is null (got {shown(value)})",
        reply,
    )


@check("AMP-READ-05")
def test_a_refused_read_does_not_count(amp: Amp01Context) -> None:
    """Refused reads (403 stranger, 401 anonymous) change neither access_count nor last_accessed_at."""
    # the cell AMP-READ-02/-03 read (the run's shared sequence, sent first): its last read is the
    # baseline, the refused reads come after it
    made, replies = shared_replies(amp, "read:three-reads", _three_reads)
    cell = made["cell"]
    last = replies[made["later"] if made["later"] is not None else made["reads"][-1]["at"]]
    before = read_of(amp, last, "the last read before the refused ones")
    count, accessed = member(before, "scoring.access_count"), member(before, "lifecycle.last_accessed_at")
    expect_step(
        amp,
        isinstance(count, int) and not isinstance(count, bool),
        f"the cell's last read shows access_count {shown(count)}, not a count",
        last,
        step="the access_count before the refused reads",
        requirement="AMP-READ-02",
    )
    if made["later"] is not None:
        time.sleep(1.1)  # a coarse clock: refused reads stamping the cell must show a later second
    expect_refusal(
        amp, amp.as_agent("stranger").get(f"/memories/{cell['id']}"), "a stranger reading the cell"
    )
    anonymous = amp.anonymous().get(f"/memories/{cell['id']}")
    amp.expect_status(anonymous, 401, what="reading without X-AMP-Agent-ID")
    results, listed = list_owner(amp, cell["identity"]["owner_id"])
    listed_cell = next((r for r in results if isinstance(r, dict) and r.get("id") == cell["id"]), None)
    if listed_cell is None:
        amp.note("the owner's list did not show the cell; last_accessed_at not observed before the read")
    else:
        value = member(listed_cell, "lifecycle.last_accessed_at")
        amp.expect(
            value == accessed,
            f"after refused reads, last_accessed_at is still {shown(accessed)} (got {shown(value)})",
            listed,
        )
    stored, reply = read(amp, cell["id"], what="the creator's first read after the refused ones")
    got = member(stored, "scoring.access_count")
    amp.expect(
        got == count + 1,
        f"only the creator's read counted: access_count is {count + 1} (got {shown(got)})",
        reply,
    )


@check("AMP-READ-06")
def test_list_and_search_do_not_count_as_reads(amp: Amp01Context) -> None:
    """Lists and searches hitting the cell change neither access_count nor last_accessed_at (C-25)."""
    made, replies = unread_cell(amp)  # shared with AMP-SRCH-18, which judges the searches
    cell = made["cell"]
    for at in made["searches"]:
        if replies[at].status != 200:
            amp.note(f"search answered {replies[at].status}; only lists were observed")
    results: list[Any] = []
    listed = replies[made["lists"][-1]]
    for at in made["lists"]:
        listed = replies[at]
        if listed.status != 200:
            step_failed(amp, listed, "listing the owner's cells", "AMP-LIST-01", "200")
        found = listed.json()
        page = found.get("results") if isinstance(found, dict) else None
        if not isinstance(page, list):
            step_failed(amp, listed, "listing the owner's cells (a results array)", "AMP-LIST-01", "a page")
        results = page
        for item in results:
            if isinstance(item, dict) and item.get("id") == cell["id"]:
                expect_valid_cell(amp, item, listed, "a listed cell")
    listed_cell = next((r for r in results if isinstance(r, dict) and r.get("id") == cell["id"]), None)
    amp.expect(listed_cell is not None, "the owner's list contains the cell", listed)
    assert listed_cell is not None
    seen = (member(listed_cell, "scoring.access_count"), member(listed_cell, "lifecycle.last_accessed_at"))
    amp.expect(
        seen == (0, None),
        f"after 2 searches and 2 lists, the list shows access_count 0 and last_accessed_at null (got {seen})",
        listed,
    )
    reply = replies[made["read"]]
    stored = read_of(amp, reply, "the first read by id")
    count = member(stored, "scoring.access_count")
    amp.expect(count == 1, f"the first read by id gives access_count 1 (got {shown(count)})", reply)


@check("AMP-READ-08")
def test_an_archived_cell_is_readable(amp: Amp01Context) -> None:
    """An archived cell reads back with 200 and status 'archived'."""
    made, replies = status_trio(amp)  # one owner's active, archived and deleted cells
    amp.archived_step(replies[made["archive archived"]])
    # the creator's read of it, sent once per run after a stranger's refused DELETE (AMP-DEL-04's)
    refused, sent = trio_refused_deletes(amp)
    reply = sent[refused["read archived"]]
    stored = read_of(amp, reply, "reading the archived cell")
    status = member(stored, "lifecycle.status")
    amp.expect(
        status == "archived", f"the archived cell reads back as 'archived' (got {shown(status)})", reply
    )


@pytest.mark.smoke
@check("AMP-READ-10")
def test_unknown_and_forbidden_ids(amp: Amp01Context) -> None:
    """An unknown id gets the documented unknown-id answer; a forbidden cell 403 (C-01, C-02)."""
    _, forbidden = minimal_refused_read(amp)  # sent once per run (AMP-CELL-16 judges it too)
    _, unknown = unknown_read(amp)  # sent once per run (AMP-DEL-08 judges it too)
    expect_unknown_id_answer(amp, unknown, "reading an unknown id")
    expect_refusal(amp, forbidden, "a stranger reading an existing cell")
    amp.note(f"unknown id: {label(answer_of(unknown))}; forbidden cell: {label(answer_of(forbidden))}")
    if answer_of(unknown) != answer_of(forbidden):  # AMP-ACL-11's finding, reported by its own check
        amp.note(
            f"unknown ids ({label(answer_of(unknown))}) and forbidden cells ({label(answer_of(forbidden))}) "
            "answer differently: an existence oracle (RFC §5; documented by the API reference, C-01)",
        )


@check("AMP-READ-11")
def test_a_malformed_id_is_answered_like_an_unknown_one(amp: Amp01Context) -> None:
    """'not-an-id' and an existing cell's id in the other form (bare / mem_) answer like an unknown id."""
    cell = minimal_cell(amp)["cell"]
    for probe, what in (
        ("not-an-id", "reading the malformed id 'not-an-id'"),
        (_other_id_form(cell["id"]), "reading an existing cell's ULID in the other id form"),
    ):
        reply = amp.as_agent("a").get(f"/memories/{probe}")
        expect_unknown_id_answer(amp, reply, what)
