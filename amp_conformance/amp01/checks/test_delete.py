"""DELETE /memories/{memory_id}: only from archived, 204, terminal, hidden from list and search (AMP-DEL-*).

What a deleted cell reads as is a documented convention (C-05): readable with status ``deleted``
(API reference) or answered like an unknown id (upstream); the check follows the convention the
server showed and fails anything else. One owner's active, archived and deleted cells
(``_shared_cells.status_trio``, shared with the list, read, search and retention checks) serve the
checks that look at the deleted one (the 204 of its DELETE, its read, the lists and searches sent with
it that must leave it out, and last, in this module's order, AMP-DEL-07's attempts to undo the
delete) and the refused DELETE of an active cell (the trio's active one).
"""

from __future__ import annotations

from typing import Any

import pytest

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.checks._lifecycle_passes import stale_after_both, stale_probes
from amp_conformance.amp01.checks._shared_cells import (
    DELETED_SEARCHES,
    TRIO_LISTS,
    UNDO_ATTEMPTS,
    status_trio,
    trio_refused_deletes,
)
from amp_conformance.amp01.checks._shared_probes import unknown_probes
from amp_conformance.amp01.checks._support import (
    about,
    expect_deleted_read_of,
    expect_member,
    expect_reads_as_deleted_of,
    expect_refusal,
    expect_transition_refused,
    expect_unknown_id_answer,
    read_back,
    read_back_of,
    shown,
    step_failed,
)
from amp_conformance.engine.client import Reply


def _status_of(amp: Amp01Context, cell_id: str, *, role: str = "a") -> tuple[str, Reply]:
    stored, reply = read_back(amp, cell_id, role=role)
    return expect_member(amp, stored, "lifecycle.status", reply), reply


def _deleted(amp: Amp01Context) -> tuple[str, str, Reply, dict[str, Any], list[Reply]]:
    """(owner, id, DELETE reply, the shared value, its replies) of the run's deleted cell
    (``_shared_cells.status_trio``'s ``gone``, made once per run, per worker): an archive answered
    other than 200, or a DELETE other than 204, blocks the check as ``amp.delete_cell`` would
    (AMP-DEL-01's own check judges the DELETE)."""
    made, replies = status_trio(amp)
    archive = replies[made["archive"]]
    if archive.status != 200 or made["delete"] is None:
        step_failed(amp, archive, "archiving a cell", "AMP-PATCH-10", "200")
    delete = replies[made["delete"]]
    if delete.status != 204 and "AMP-DEL-01" not in amp.check_spec.requirements:
        step_failed(amp, delete, "deleting an archived cell", "AMP-DEL-01", "204")
    return made["owner"], made["gone"], delete, made, replies


def _ids(amp: Amp01Context, reply: Reply) -> list[Any]:
    results = reply.json_object().get("results")
    if not isinstance(results, list):
        amp.fail("the body has no 'results' array", reply)
    return [r.get("id") for r in results if isinstance(r, dict)]


@pytest.mark.smoke
@check("AMP-DEL-01")
def test_delete_of_an_archived_cell_is_204_with_empty_body(amp: Amp01Context) -> None:
    """DELETE of an archived cell by its creator answers 204 with an empty body."""
    _owner, _id, reply, _, _ = _deleted(amp)
    amp.expect_status(reply, 204)
    amp.expect(len(reply.content) == 0, f"the 204 body is empty (got {len(reply.content)} bytes)", reply)


@pytest.mark.smoke
@check("AMP-DEL-04")
def test_delete_needs_write_access(amp: Amp01Context) -> None:
    """A stranger's DELETE is 403 on an active cell (not 409) and on an archived one; nothing changes."""
    # the status trio's active and archived cells (its lists and searches were sent with them); this
    # check comes before AMP-DEL-03's DELETE of the active one
    made, replies = status_trio(amp)
    amp.archived_step(replies[made["archive archived"]])
    amp.agent("stranger")  # skips without a second agent, as it always has
    # the DELETEs and the reads after them are sent once (AMP-READ-08 judges the archived cell's read)
    refused, sent = trio_refused_deletes(amp)
    cells = (("kept", "active"), ("archived", "archived"))
    for (_, state), at in zip(cells, refused["stranger"], strict=True):
        expect_refusal(amp, sent[at], f"a stranger's DELETE of an {state} cell")
    for name, state in cells:
        got = sent[refused[f"read {name}"]]
        status = expect_member(amp, read_back_of(amp, got), "lifecycle.status", got)
        amp.expect(status == state, f"the {state} cell is still {state!r} (got {shown(status)})", got)


@check("AMP-DEL-03", "AMP-ERR-03")
def test_delete_of_an_active_cell_is_refused(amp: Amp01Context) -> None:
    """DELETE of an active cell is 409 INVALID_TRANSITION and the cell stays active."""
    # the status trio's active cell: its lists and searches were sent with it, AMP-DEL-04's refused
    # DELETEs came before this one
    made, _ = status_trio(amp)
    reply = amp.as_agent("a").delete(f"/memories/{made['kept']}")
    expect_transition_refused(amp, reply, "DELETE of an active cell", "AMP-DEL-03")
    status, got = _status_of(amp, made["kept"])
    amp.expect(
        status == "active",
        f"after the refused DELETE the cell's status is {shown(status)}, not active",
        got,
        requirement="AMP-DEL-03",
    )


LOW_SCORE = {"importance": 0.2, "confidence": 1.0, "decay_rate": 0}
"""The stale cell's scoring: below 0.3 for good, so a lifecycle pass at any moment (another check's, in
a parallel run) can make it stale early but never active again: that cell needs no serial group (the
check is serial for the shared passes' ``z``, which no pass may move between them and its DELETE)."""


@check("AMP-DEL-03", "AMP-ERR-03", serial=True)
def test_delete_of_a_stale_cell_is_refused(amp: Amp01Context) -> None:
    """DELETE of a stale cell is 409 INVALID_TRANSITION and the cell stays stale.

    With the lifecycle checks' shared passes made already and their ``z`` stale after both, the DELETE
    is theirs (``stale_probes``: sent once, the lifecycle check of a stale cell judges it too; serial,
    so no pass runs between); else a cell of its own, made stale by hand."""
    passes = stale_after_both(amp)
    if passes is not None:
        probes = stale_probes(amp, passes)
        expect_transition_refused(amp, probes.delete, "DELETE of a stale cell", "AMP-DEL-03")
        amp.expect(
            probes.listed_stale(amp, probes.after_delete),
            "after the refused DELETE the owner's stale list does not show the cell",
            probes.after_delete,
            expected="stale",
            requirement="AMP-DEL-03",
        )
        return
    cell = amp.create_cell(scoring=LOW_SCORE)
    made = amp.as_agent("a").patch(f"/memories/{cell['id']}", {"lifecycle": {"status": "stale"}})
    if made.status != 200 and _status_of(amp, cell["id"])[0] != "stale":  # a pass came first: stale already
        amp.skip(
            f"no stale cell without the admin token: the manual active -> stale write answered {made.status}"
        )
    reply = amp.as_agent("a").delete(f"/memories/{cell['id']}")
    expect_transition_refused(amp, reply, "DELETE of a stale cell", "AMP-DEL-03")
    status, got = _status_of(amp, cell["id"])
    amp.expect(
        status == "stale",
        f"after the refused DELETE the cell's status is {shown(status)}, not stale",
        got,
        requirement="AMP-DEL-03",
    )


@pytest.mark.smoke
@check("AMP-DEL-05")
def test_deleted_cell_never_appears_in_list_or_search(amp: Amp01Context) -> None:
    """A deleted cell is absent from list and search whatever status filters are sent (the
    /memories/query alias is asked the one filter that names deleted cells). The default search spans
    every type, so it is not asked again by name; the lists are the ones the status trio's other
    checks ask as well (the default one, status=archived and status=active)."""
    _owner, cell_id, _, made, replies = _deleted(amp)
    # the lists and searches were sent with the shared cell, right after its DELETE (the lists serve
    # AMP-LIST-04 too, the searches AMP-SRCH-08)
    for (path, status), at in zip(TRIO_LISTS, made["lists"], strict=True):
        reply = replies[at]
        if status == "deleted" and reply.status == 422:
            continue
        if path == "/memories/query" and reply.status != 200:
            continue  # whether the alias works at all is AMP-LIST-02's question
        amp.expect_status(reply, 200, what=f"GET {path} status={status}")
        amp.expect(
            cell_id not in _ids(amp, reply),
            f"the deleted cell is listed by GET {path} status={status}",
            reply,
        )
    for extra, at in zip(DELETED_SEARCHES, made["searches"], strict=True):
        reply = replies[at]
        if "status" in extra and reply.status == 422:
            continue
        amp.expect_status(reply, 200, what=f"search with {shown(extra) if extra else 'default filters'}")
        amp.expect(
            cell_id not in _ids(amp, reply),
            f"the deleted cell is returned by search with {shown(extra) if extra else 'default filters'}",
            reply,
        )


@pytest.mark.smoke
@check("AMP-DEL-06", "AMP-DEL-02")
def test_deleted_cell_reads_as_deleted_or_unknown(amp: Amp01Context) -> None:
    """GET of a deleted cell answers 200 with status 'deleted' or the unknown-id answer, per convention."""
    _owner, _id, _, made, replies = _deleted(amp)  # its first read was sent with it, after the lists
    with about("AMP-DEL-06"):  # the read's answer is AMP-DEL-06's; AMP-DEL-02 is what it shows
        expect_deleted_read_of(amp, replies[made["read"]], "GET after DELETE")
    amp.note(f"deleted cells: {amp.conventions.deleted_read or 'convention not detected'} (C-05)")


@pytest.mark.smoke
@check("AMP-DEL-07")
def test_deleted_is_terminal(amp: Amp01Context) -> None:
    """A second DELETE is refused, PATCHes back to archived or active are refused, the cell stays deleted."""
    # the shared deleted cell's attempts, sent after its read (and after every list and search of it)
    _owner, _id, _, made, replies = _deleted(amp)
    expect_reads_as_deleted_of(amp, replies[made["read"]], "reading the cell right after its delete")
    hidden = amp.conventions.deleted_read == "hidden"
    for what, at in zip(UNDO_ATTEMPTS, made["undo"], strict=True):
        reply = replies[at]
        amp.expect(reply.status not in (200, 204), f"{what} was accepted ({reply.status})", reply)
        if reply.status == 409 and not hidden:
            expect_transition_refused(amp, reply, what, "AMP-DEL-07")
        else:
            expect_unknown_id_answer(amp, reply, what)
    expect_deleted_read_of(amp, replies[made["read after undo"]], "GET after the refused attempts")


@check("AMP-DEL-08", "AMP-READ-10", "AMP-ERR-03")
def test_unknown_id_gets_the_same_answer_on_get_patch_and_delete(amp: Amp01Context) -> None:
    """DELETE, PATCH and GET of an unknown id give the server's one unknown-id answer (404 or 403)."""
    # sent once per run: the error table judges all three too
    _, replies = unknown_probes(amp)
    # GET is AMP-READ-10's rule, DELETE AMP-DEL-08's, PATCH the route table's (AMP-ERR-03)
    rules = {"GET": "AMP-READ-10", "PATCH": "AMP-ERR-03", "DELETE": "AMP-DEL-08"}
    for method, reply in replies.items():
        with about(rules[method]):
            expect_unknown_id_answer(amp, reply, f"{method} of an unknown id")
    statuses = {method: reply.status for method, reply in replies.items()}
    amp.expect(
        len(set(statuses.values())) == 1,
        "GET, PATCH and DELETE answer an unknown id differently: "
        + ", ".join(f"{method} {status}" for method, status in statuses.items()),
        replies["DELETE"],
        requirement="AMP-DEL-08",
    )
