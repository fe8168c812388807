"""Cells that several read-only checks share, made once per run (per worker) through ``amp.shared``.

Each cell costs a create and, at cleanup, an archive and a delete: the cell, list, search and read
checks that only look at a cell's create answer, read it (reads bump the counters, so no check asserts
on a shared cell's access_count value or last access) or list and search its owner take these instead
of making their own; a check that changes a cell, or counts its accesses, makes its own (except
:func:`unread_cell`, made for the two checks that judge one sequence of searches, lists and a read
on it). Making one only creates: what a check
judges about the answers it judges itself, so a verdict never depends on which check happened to
make the cells.

In keys mode a check's roles take the keyed agents in order of first use, and ``amp.shared`` hands a
check only the roles its maker newly took. So every getter here takes "a" (and, when the cells name
"b", "b") before asking for the value: "a" is then the first keyed agent and "b" the second in every
check, whichever check made the value and whatever it had taken before. A shared value is never
changed by a check: no PATCH, archive or delete of these cells.

The probes at the end (:func:`shared_create`, :func:`anonymous_create`, :func:`created_naming_other`,
:func:`public_cell`) are requests checks of two areas ask the same question of: sent once per run,
judged by each. Last, :func:`ignored_members`: one create carrying every member the server must ignore
(test_create's AMP-CRE-03, -04, -05, -08 and :func:`created_naming_other`'s created_by), each check
judging it only while the other members left no trace on it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

from amp_conformance import Amp01Context
from amp_conformance.amp01.cells import TimestampError, parse_utc_timestamp, validate_cell
from amp_conformance.amp01.checks._lifecycle_passes import together
from amp_conformance.amp01.checks._support import (
    Marks,
    create_step,
    created,
    created_cell_of,
    expect_valid_cell,
    full_body,
    member,
    post_cell,
    server_now_near,
    shared_replies,
    shown,
    step_failed,
)
from amp_conformance.amp01.context import Adopted
from amp_conformance.engine.client import Reply
from amp_conformance.engine.outcomes import CheckFailure, TransportFailure

#: The text of the owner set's cells (identical, so search order is decided by the decay score).
SET_TEXT = "The user prefers Python for backend development"

#: Metadata with every JSON kind, for AMP-CELL-17's round trip (the series' first cell carries it).
RICH_METADATA: dict[str, Any] = {
    "domain": "programming",
    "count": 3,
    "ratio": 0.25,
    "negative": -7,
    "flag": True,
    "off": False,
    "nothing": None,
    "tags": ["a", 1, None, True],
    "nested": {"list": [1, 2], "name": "Grüße, 日本語"},
}

#: The series: three cells created 6 ms apart, each carrying values the cell-model checks need to
#: see stored (owner types, provenance pairs, scoring bounds, metadata).
SERIES: tuple[dict[str, Any], ...] = (
    {
        "identity": {"owner_type": "agent"},
        "provenance": {"source_type": "document", "source_ref": None, "extraction_method": "rule_based"},
        "scoring": {"importance": 0, "confidence": 1},
        "content": {"metadata": RICH_METADATA},
    },
    {
        "identity": {"owner_type": "organization"},
        "provenance": {"source_type": "inference", "source_ref": None, "extraction_method": "user_explicit"},
        "scoring": {"importance": 1, "confidence": 0, "decay_rate": 0},
    },
    {
        "provenance": {"source_type": "user_explicit", "source_ref": None, "extraction_method": None},
        "scoring": {"decay_rate": 20000},
    },
)
SERIES_PAUSE = 0.006

#: The owner set, in creation order: (type, importance, confidence, readable by "b"). decay_rate 0 and
#: identical texts rank them by importance x confidence alone: the reverse of creation order (so a
#: server ranking ties by creation order shows), c4/c3 differing only in confidence and c2/c1/c0 only
#: in importance. Cells "b" may read and cells it may not alternate both in list (creation) order and in
#: ranked order. Every score stays >= 0.4, so no lifecycle pass makes one stale.
OWNER_SET: tuple[tuple[str, float, float, bool], ...] = (
    ("episodic", 0.4, 1.0, True),
    ("semantic", 0.55, 1.0, False),
    ("procedural", 0.7, 1.0, True),
    ("semantic", 1.0, 0.8, False),
    ("semantic", 1.0, 1.0, True),
)


def _create(amp: Amp01Context, body: dict[str, Any], *, judged: bool = False) -> dict[str, Any]:
    """Create ``body`` as agent "a": {"body", "cell", "sent", "received"}. A step: anything but a 2xx
    with a JSON object holding a string id blocks every check sharing it under AMP-CRE-01.

    An answer lost in transport is reconciled (``amp.send_create``). For a cell whose create answer
    checks judge (``judged``; its owner is its own) the cell adopted goes to the cleanup and the same
    body is created once more for a fresh owner, so that every check judges a real answer; otherwise
    the cell is the one the owner's list shows (a check asking for its create answer then errors in
    :func:`created_reply`)."""
    sent = datetime.now(UTC)
    made = amp.send_create(body)
    if isinstance(made, Adopted) and judged:
        body = {**body, "identity": {**body["identity"], "owner_id": amp.owner()}}
        sent = datetime.now(UTC)
        made = amp.send_create(body)
    received = datetime.now(UTC)
    if isinstance(made, Adopted):
        return {"body": body, "cell": made.cell, "sent": sent, "received": received}
    reply = made  # its cell remembered by send_create
    create_step(amp, reply, "creating a shared cell")
    try:
        cell = reply.json()
    except CheckFailure as failure:
        amp.precondition_failed(
            f"creating a cell: {failure.message}", reply, step="creating a cell", requirement="AMP-CRE-01"
        )
    if not isinstance(cell, dict) or not isinstance(cell.get("id"), str):
        amp.precondition_failed(
            "creating a cell answered a body without a string id",
            reply,
            step="creating a cell",
            requirement="AMP-CRE-01",
        )
    return {"body": body, "cell": cell, "sent": sent, "received": received}


def created_reply(amp: Amp01Context, cell_id: str) -> Reply:
    """The answer that created a shared cell, from the check's evidence (amp.shared adds the requests
    that made it), for findings about the create answer to show."""
    for exchange in reversed(amp.evidence.exchanges):
        if exchange.method != "POST" or not exchange.url.split("?", 1)[0].endswith("/memories"):
            continue
        try:
            body = json.loads(exchange.response_body)
        except ValueError:
            continue
        if isinstance(body, dict) and body.get("id") == cell_id:
            return Reply(exchange)
    # the network's doing, not the check's: a transport failure, so the engine re-runs the check on
    # fresh cells (its shared steps made again for it, the create's answer then in its evidence)
    raise TransportFailure(
        f"the answer that created the shared cell {cell_id} is not in the check's evidence (lost in "
        "transport, the cell found in its owner's list)"
    )


def take_roles(amp: Amp01Context, *, reader: bool = False) -> None:
    """Take "a", then (when there is a key for it) "b", before sharing: see the module's docstring."""
    amp.agent("a")
    if reader:
        amp.optional_agent("b")


def minimal_cell(amp: Amp01Context) -> dict[str, Any]:
    """One minimal create (type, text, owner): never patched; checks read it, list its owner (it is
    the owner's only cell) and judge its create answer (defaults, id, created_at)."""
    take_roles(amp)
    return amp.shared("cell:minimal", lambda a: _create(a, a.cell_body(), judged=True))


def full_cell(amp: Amp01Context) -> dict[str, Any]:
    """The API reference's create example (readable and writable by "b"): never patched."""
    take_roles(amp, reader=True)
    return amp.shared("cell:full", lambda a: _create(a, full_body(a), judged=True))


def series_cells(amp: Amp01Context) -> list[dict[str, Any]]:
    """The :data:`SERIES` cells, each of a fresh owner, created in a row 6 ms apart."""
    take_roles(amp)

    def make(a: Amp01Context) -> list[dict[str, Any]]:
        made = []
        for index, fields in enumerate(SERIES):
            if index:
                time.sleep(SERIES_PAUSE)
            body = a.cell_body(fields, content={"text": f"ordering probe {index}"})
            made.append(_create(a, body, judged=True))
        return made

    return amp.shared("cell:series", make)


def owner_set(amp: Amp01Context) -> dict[str, Any]:
    """One owner's :data:`OWNER_SET` cells made by "a" (creator, reads all), and one cell with the same
    text of an owner whose id has this owner's as a prefix (and AMP-CELL-11's conversation provenance):
    {"owner", "cells", "readable", "hidden", "other_owner", "other"}. "b" may read ``readable`` only (the
    others name nobody in readable_by); with a single keyed agent no check plays "b", and the checks
    that read as "b" skip."""
    take_roles(amp, reader=True)

    def make(a: Amp01Context) -> dict[str, Any]:
        owner = a.owner()
        agent = a.optional_agent("b")
        reader = agent.id if agent is not None else f"{owner}-reader"
        cells: list[dict[str, Any]] = []
        readable: list[str] = []
        hidden: list[str] = []
        for kind, importance, confidence, visible in OWNER_SET:
            policy = {"readable_by": [reader] if visible else [f"{owner}-nobody"], "writable_by": []}
            scoring = {"importance": importance, "confidence": confidence, "decay_rate": 0}
            body = a.cell_body(
                type=kind,
                content={"text": SET_TEXT},
                identity={"owner_id": owner},
                scoring=scoring,
                access_policy=policy,
            )
            made = _create(a, body)
            cells.append(made)
            (readable if visible else hidden).append(made["cell"]["id"])
        other_owner = f"{owner}-2"
        provenance = {
            "source_type": "conversation",
            "source_ref": None,
            "extraction_method": "llm_extraction",
        }
        other = _create(
            a,
            a.cell_body(
                content={"text": SET_TEXT}, identity={"owner_id": other_owner}, provenance=provenance
            ),
        )
        return {
            "owner": owner,
            "cells": cells,
            "readable": readable,
            "hidden": hidden,
            "other_owner": other_owner,
            "other": other,
        }

    return amp.shared("cells:owner-set", make)


def ids_by_rank(owner: dict[str, Any], *, reader: str = "a") -> list[str]:
    """The owner set's ids best first (the reverse of creation order), as ``reader`` sees them."""
    ranked = [made["cell"]["id"] for made in reversed(owner["cells"])]
    return ranked if reader == "a" else [cell_id for cell_id in ranked if cell_id in owner["readable"]]


def unread_cell(amp: Amp01Context) -> tuple[dict[str, Any], list[Reply]]:
    """A fresh cell of agent "a", searched twice, then listed twice, then read once by id, and the
    replies: {"body", "cell", "searches", "lists", "read"} (positions among the replies). Nothing is
    judged but the create (a step): AMP-SRCH-18 judges the searches, AMP-READ-06 the lists, and both
    the read (searches come first, so the searches' own answers never show a list's effect)."""
    take_roles(amp)

    def make(a: Amp01Context) -> dict[str, Any]:
        marks = Marks(a)
        body = a.cell_body()
        cell, reply = created(a, body)
        if reply.exchange.method != "POST":  # adopted (its answer lost): checks judge the answer
            body = {**body, "identity": {**body["identity"], "owner_id": a.owner()}}
            cell, _ = created(a, body)
        owner = body["identity"]["owner_id"]
        client = a.as_agent("a")
        query = {"query": body["content"]["text"], "owner_id": owner}
        searches = [marks(client.post("/memories/search", query)) for _ in range(2)]
        lists = [marks(client.get("/memories", params={"owner_id": owner})) for _ in range(2)]
        # a read by id counts (AMP-READ-02, -06): never repeated blind, a lost one re-runs the check
        read = marks(client.get(f"/memories/{cell['id']}", repeatable=False))
        return {"body": body, "cell": cell, "searches": searches, "lists": lists, "read": read}

    return shared_replies(amp, "read:unread-cell", make)


# shared answers: one request several checks judge, each its own part --------------------------------


def _shared_reply(amp: Amp01Context, name: str, send: Callable[[Amp01Context], Reply]) -> Reply:
    """``send(amp)``'s answer, sent once per run under ``name``: its exchange is the shared value, so
    every check gets the same answer (and the request as evidence) and judges it itself."""
    return Reply(amp.shared(name, lambda a: send(a).exchange))


def minimal_read(amp: Amp01Context) -> tuple[dict[str, Any], Reply]:
    """The minimal cell and agent "a"'s GET of it (a read: it bumps the cell's counters, which no check
    asserts on for this cell; sent once, not per check)."""
    made = minimal_cell(amp)
    cell_id = made["cell"]["id"]
    return made, _shared_reply(amp, "read:minimal", lambda a: a.as_agent("a").get(f"/memories/{cell_id}"))


def full_read(amp: Amp01Context) -> tuple[dict[str, Any], Reply]:
    """The full cell and agent "a"'s GET of it."""
    made = full_cell(amp)
    cell_id = made["cell"]["id"]
    return made, _shared_reply(amp, "read:full", lambda a: a.as_agent("a").get(f"/memories/{cell_id}"))


def minimal_refused_read(amp: Amp01Context) -> tuple[dict[str, Any], Reply]:
    """The minimal cell (no access_policy) and a stranger's GET of it, which must be refused."""
    made = minimal_cell(amp)
    cell_id = made["cell"]["id"]
    return made, _shared_reply(
        amp, "read:minimal-by-stranger", lambda a: a.as_agent("stranger").get(f"/memories/{cell_id}")
    )


def minimal_listed(amp: Amp01Context) -> tuple[dict[str, Any], Reply]:
    """The minimal cell and agent "a"'s GET /memories?owner_id= of its owner (the owner's only cell)."""
    made = minimal_cell(amp)
    owner = made["body"]["identity"]["owner_id"]
    return made, _shared_reply(
        amp, "list:minimal-owner", lambda a: a.as_agent("a").get("/memories", params={"owner_id": owner})
    )


def judged_read(amp: Amp01Context, reply: Reply, what: str) -> tuple[dict[str, Any], Reply]:
    """A shared read judged as ``_support.read`` judges a check's own: 200 (a step under AMP-READ-01)
    with a valid cell."""
    if reply.status != 200:
        step_failed(amp, reply, what, "AMP-READ-01", "200")
    return expect_valid_cell(amp, reply.json(), reply, f"the cell returned by {what}"), reply


# shared probes: one request that checks of several areas ask, each judging its own part -----------


def shared_create(amp: Amp01Context, name: str, body: Callable[[Amp01Context], Any]) -> Reply:
    """Agent "a"'s ``POST /memories`` of ``body(amp)``, sent once per run under ``create:<name>``: a
    create two areas ask the same question of (a body refused with 422 that the cell model and the
    error envelope both judge). A cell it stored anyway is handed to the clean-up."""
    take_roles(amp)
    return _shared_reply(amp, f"create:{name}", lambda a: post_cell(a, body(a)))


def anonymous_create(amp: Amp01Context) -> tuple[dict[str, Any], Reply, Reply]:
    """A valid create without X-AMP-Agent-ID, key or created_by, for a fresh owner, then agent "a"'s
    list of that owner's active cells: (body, create reply, list reply), sent once per run. AMP-AUTH-01's
    question on POST /memories (test_errors' table, test_create's AMP-CRE-07 and, with keys,
    AMP-AUTH-05's request without agent id): nothing is judged here."""
    take_roles(amp)

    def make(a: Amp01Context) -> dict[str, Any]:
        marks = Marks(a)
        body = a.cell_body(identity={"owner_id": a.owner()})
        reply = marks(post_cell(a, body, role=None))
        params = {"owner_id": body["identity"]["owner_id"], "status": "active"}
        listed = marks(a.as_agent("a").get("/memories", params=params))
        return {"body": body, "reply": reply, "listed": listed}

    made, replies = shared_replies(amp, "create:anonymous", make)
    return made["body"], replies[made["reply"]], replies[made["listed"]]


def created_naming_other(amp: Amp01Context) -> tuple[dict[str, Any], Reply]:
    """A cell agent "a" creates whose body names agent "b" as identity.created_by (C-10: the header's
    agent is the creator), made once per run: test_create's AMP-CRE-07 and, with keys, test_auth's
    impersonation check judge its create answer. It is the run's create carrying every member the
    server must ignore when that is clean (:func:`ignored_members`), else a create of its own. Nothing
    is judged here but the create (a step)."""
    take_roles(amp, reader=True)
    what = "a create naming another creator"
    # the run's create carrying every member the server must ignore, when clean (ignored_members)
    shared = ignored_members(amp, "creator")
    if shared is not None:
        reply = shared[1][shared[0]["reply"]]
        create_step(amp, reply, what)
        return expect_valid_cell(amp, reply.json(), reply, f"the cell returned by {what}"), reply

    def make(a: Amp01Context) -> dict[str, Any]:
        body = a.cell_body(identity={"created_by": a.agent_id("b")})
        cell, _ = created(a, body, what=what)
        return {"body": body, "cell": cell}

    made = amp.shared("cell:created-by-other", make)
    return made["cell"], created_reply(amp, made["cell"]["id"])


def without_text(amp: Amp01Context) -> dict[str, Any]:
    """A create body whose content has no text (AMP-CRE-02 and AMP-CELL-17 refuse it with 422)."""
    body = amp.cell_body()
    del body["content"]["text"]
    return body


def public_cell(amp: Amp01Context) -> tuple[dict[str, Any], dict[str, Reply]]:
    """For keys mode: a public cell of agent "a" and three requests about its owner that a server with
    API keys must refuse with 401, made once per run: (cell, replies by name) for "anonymous list"
    (no identity), "anonymous search" (no identity, the cell's text) and "list without key" (agent
    "a"'s id without its key). test_auth judges them (AMP-AUTH-03/-04/-05, AMP-ACL-01), test_errors
    the two without identity (AMP-AUTH-01) and test_capabilities the keyless list (AMP-CAP-05).
    The create is a step; nothing else is judged here."""
    take_roles(amp)

    def make(a: Amp01Context) -> dict[str, Any]:
        marks = Marks(a)
        cell = a.create_cell({"access_policy": {"public": True}})
        owner, text = cell["identity"]["owner_id"], cell["content"]["text"]
        anonymous = a.anonymous()
        probes = {
            "anonymous list": marks(anonymous.get("/memories", params={"owner_id": owner})),
            "anonymous search": marks(anonymous.post("/memories/search", {"query": text, "owner_id": owner})),
            "list without key": marks(
                a.with_headers({"X-AMP-Agent-ID": a.agent_id("a")}).get(
                    "/memories", params={"owner_id": owner}
                )
            ),
        }
        return {"cell": cell, "probes": probes}

    made, replies = shared_replies(amp, "cell:public", make)
    return made["cell"], {name: replies[at] for name, at in made["probes"].items()}


# one owner's active, archived and deleted cells ------------------------------------------------------

#: The text of the status trio's cells (what the searches for them ask).
BEES = "The user keeps bees on the roof of the office"

#: The searches of the trio's owner, sent once its cell is deleted: the default one (every type,
#: active cells), ``include_stale``, and the two status filters that name deleted cells.
DELETED_SEARCHES: tuple[dict[str, Any], ...] = (
    {},
    {"include_stale": True},
    {"status": ["deleted"]},
    {"status": ["active", "stale", "archived", "deleted"]},
)

#: The lists of the trio's owner, sent with the searches: (path, status filter; None: none sent).
TRIO_LISTS: tuple[tuple[str, str | None], ...] = (
    ("/memories", None),
    ("/memories", "archived"),
    ("/memories", "active"),
    ("/memories", "deleted"),
    ("/memories/query", "deleted"),
)


#: The trio's active cell scores 1.0 (and never decays); beside it, one active cell of the owner
#: (importance 0.5, never decaying) holds a text the ranking question is about, :data:`TRIO_QUERY`.
TRIO_KEPT: dict[str, Any] = {"importance": 1.0, "confidence": 1.0, "decay_rate": 0}
TRIO_RELEVANT: dict[str, Any] = {"importance": 0.5, "confidence": 1.0, "decay_rate": 0}
TRIO_QUERY = "which programming language does the user prefer for backend work"


#: What AMP-DEL-07 sends to the deleted cell (judged in this order): a second DELETE, then PATCHes back.
UNDO_ATTEMPTS = ("a second DELETE", "PATCH deleted -> archived", "PATCH deleted -> active")


def purge_probes(cell_id: str) -> tuple[tuple[str, str, dict[str, str] | None], ...]:
    """One of each form a purge route takes (method, path, query): a flag on DELETE, a sub-resource."""
    return (
        ("DELETE", f"/memories/{cell_id}", {"purge": "true"}),
        ("POST", f"/memories/{cell_id}/purge", None),
    )


def status_trio(amp: Amp01Context) -> tuple[dict[str, Any], list[Reply]]:
    """One fresh owner's three cells of agent "a" with the same text: ``kept`` (scoring
    :data:`TRIO_KEPT`) left active, ``archived`` archived, ``gone`` archived and deleted, and a fourth,
    ``relevant`` (:data:`SET_TEXT`, :data:`TRIO_RELEVANT`), left active; then (once ``gone``'s archive
    answered 200) the owner searched with each of :data:`DELETED_SEARCHES` and listed with each of
    :data:`TRIO_LISTS` (before the archives, with all four active, it is searched with
    :data:`TRIO_QUERY`: ``ranked``); last ``gone`` is read, sent :data:`UNDO_ATTEMPTS`, read, sent
    :func:`purge_probes` (at once) and read; and the replies: {"owner", "kept", "archived", "gone",
    "relevant", "ranked", "archive archived", "archive", "delete", "searches", "lists", "read",
    "undo", "read after undo", "purges", "read after purges"} (positions among the replies; ``delete``
    None and nothing after it when ``gone``'s archive was refused).

    Nothing is judged here: each check judges the steps it needs (the archives, the DELETE) and the
    answers it asks about: AMP-DEL-01 the DELETE, AMP-DEL-05 the lists and searches, AMP-SRCH-08 the
    searches (``kept`` shows that a search returning nothing is no working search), AMP-LIST-04 the
    lists of the active and archived cells, AMP-SRCH-13 the ranked search (``relevant`` before the
    unrelated ``kept``, which scores higher), AMP-DEL-06 the first read of ``gone``, AMP-DEL-07 the
    attempts to undo the delete (after that read), AMP-RET-02 the purge probes (after the read that
    follows the attempts). The searches and lists come before any probe that could change what they
    see; the refused DELETEs of ``kept`` and ``archived`` (AMP-DEL-03, -04) come afterwards, in the
    checks, and nothing else changes ``archived`` (AMP-READ-08 reads it)."""
    take_roles(amp)

    def make(a: Amp01Context) -> dict[str, Any]:
        marks = Marks(a)
        owner = a.owner()

        def create(text: str, scoring: dict[str, Any] | None = None) -> str:
            fields: dict[str, Any] = {"identity": {"owner_id": owner}, "content": {"text": text}}
            if scoring is not None:
                fields["scoring"] = scoring
            return str(a.create_cell(fields)["id"])

        kept, archived, gone = create(BEES, TRIO_KEPT), create(BEES), create(BEES)
        relevant = create(SET_TEXT, TRIO_RELEVANT)
        client = a.as_agent("a")
        made: dict[str, Any] = {"owner": owner, "kept": kept, "archived": archived, "gone": gone}
        made["relevant"] = relevant
        # first (it needs no archive): the cells a ranking is asked about are all active now
        made["ranked"] = marks(client.post("/memories/search", {"query": TRIO_QUERY, "owner_id": owner}))
        # two cells' archives, then (below) the searches and lists: each lot sent at once (amp.at_once)
        archived_reply, archive = a.at_once(partial(a.send_archive, archived), partial(a.send_archive, gone))
        made["archive archived"] = marks(archived_reply)
        made |= {"archive": marks(archive), "delete": None, "searches": [], "lists": []}
        if archive.status != 200:
            return made
        made["delete"] = marks(client.delete(f"/memories/{gone}"))
        searches = [
            partial(client.post, "/memories/search", {"query": BEES, "owner_id": owner, **extra})
            for extra in DELETED_SEARCHES
        ]
        lists = [
            partial(client.get, path, params={"owner_id": owner, "status": status})
            for path, status in TRIO_LISTS
        ]
        replies = [marks(reply) for reply in a.at_once(*searches, *lists)]
        made["searches"], made["lists"] = replies[: len(searches)], replies[len(searches) :]
        # last, the deleted cell read, then the attempts to undo its delete (AMP-DEL-07), read again,
        # then the purge-looking requests (AMP-RET-02, at once) and a last read: each judged by the
        # check asking, against the read just before its probes
        path = f"/memories/{gone}"
        made["read"] = marks(client.get(path))
        made["undo"] = [
            marks(client.delete(path)),
            marks(client.patch(path, {"lifecycle": {"status": "archived"}})),
            marks(client.patch(path, {"lifecycle": {"status": "active"}})),
        ]
        made["read after undo"] = marks(client.get(path))
        purges: list[Callable[[], Reply]] = [
            partial(client.request, m, p, params=q) for m, p, q in purge_probes(gone)
        ]
        made["purges"] = [marks(reply) for reply in together(a, purges)]
        made["read after purges"] = marks(client.get(path))
        return made

    return shared_replies(amp, "cells:status-trio", make)


def trio_refused_deletes(amp: Amp01Context) -> tuple[dict[str, Any], list[Reply]]:
    """The status trio's (:func:`status_trio`, the caller judged its archive of ``archived``) refused
    DELETEs, sent once per run: a stranger's DELETE of ``kept`` and of ``archived`` (none without a
    second agent), then agent "a"'s reads of ``kept`` and ``archived``; the replies: {"stranger":
    [kept, archived] positions, "read kept", "read archived"}. AMP-DEL-04 judges the DELETEs and both
    reads (nothing changed), AMP-READ-08 the read of the archived cell (200, status archived)."""
    trio, _ = status_trio(amp)

    def make(a: Amp01Context) -> dict[str, Any]:
        marks = Marks(a)
        made: dict[str, Any] = {"stranger": []}
        if a.optional_agent("stranger") is not None:
            stranger = a.as_agent("stranger")
            made["stranger"] = [marks(stranger.delete(f"/memories/{trio[n]}")) for n in ("kept", "archived")]
        client = a.as_agent("a")
        for name in ("kept", "archived"):
            made[f"read {name}"] = marks(client.get(f"/memories/{trio[name]}"))
        return made

    return shared_replies(amp, "cells:trio-refused-deletes", make)


def unknown_read(amp: Amp01Context) -> tuple[str, Reply]:
    """A well-formed id no server has issued and agent "a"'s GET of it, sent once per run: AMP-READ-10
    and AMP-DEL-08 each judge that answer (AMP-DEL-08 sends its PATCH and DELETE to the same id)."""
    take_roles(amp)

    def make(a: Amp01Context) -> dict[str, Any]:
        marks = Marks(a)
        unknown = a.unknown_id()
        return {"id": unknown, "read": marks(a.as_agent("a").get(f"/memories/{unknown}"))}

    made, replies = shared_replies(amp, "read:unknown-id", make)
    return str(made["id"]), replies[made["read"]]


# shared lists and searches: one request that checks of several areas ask ---------------------------


def invalid_list(amp: Amp01Context, **params: Any) -> Reply:
    """Agent "a"'s ``GET /memories`` of a fresh owner with ``params`` that must be refused, sent once
    per run under ``list:invalid:<params>``: the checks asking the same invalid parameter (the list's
    own rule, the alias answering like the list, the error table, the page-size claim) each judge
    this one answer."""
    take_roles(amp)
    name = "list:invalid:" + ",".join(f"{key}={value}" for key, value in sorted(params.items()))
    return _shared_reply(
        amp, name, lambda a: a.as_agent("a").get("/memories", params={"owner_id": a.owner(), **params})
    )


def fresh_owner_list(amp: Amp01Context) -> Reply:
    """Agent "a"'s list of a fresh owner (no cells) without limit or offset, sent once per run: the
    default limit and offset are judged on it, and (with keys) it is AMP-CAP-05's keyed list, sent
    beside the refused one without a key."""
    take_roles(amp)
    return _shared_reply(
        amp,
        "list:fresh-owner-defaults",
        lambda a: a.as_agent("a").get("/memories", params={"owner_id": a.owner()}),
    )


def owner_set_page(
    amp: Amp01Context, owner: str, *, role: str, limit: int, offset: int | None = None
) -> Reply:
    """``role``'s page of the owner set with ``limit`` (and ``offset``), sent once per run under
    ``list:owner-set:<role>:<window>``. The caller takes the owner set first (``owner_set``)."""
    window: dict[str, Any] = {"limit": limit} if offset is None else {"limit": limit, "offset": offset}
    name = f"list:owner-set:{role}:" + ",".join(f"{key}={value}" for key, value in window.items())
    return _shared_reply(
        amp, name, lambda a: a.as_agent(role).get("/memories", params={"owner_id": owner, **window})
    )


def owner_set_search(amp: Amp01Context, **fields: Any) -> tuple[dict[str, Any], Reply]:
    """The owner set and agent "a"'s search of its owner for :data:`SET_TEXT` with ``fields`` (such as
    a limit), sent once per run under ``search:owner-set:a:<fields>``: the search-limit check and the
    page-size claim ask the same limits of the same owner."""
    shared = owner_set(amp)
    owner = shared["owner"]
    name = "search:owner-set:a:" + ",".join(f"{key}={value}" for key, value in sorted(fields.items()))
    body = {"query": SET_TEXT, "owner_id": owner, **fields}
    return shared, _shared_reply(amp, name, lambda a: a.as_agent("a").post("/memories/search", body))


def search_without_query(amp: Amp01Context) -> Reply:
    """Agent "a"'s search of a fresh owner without ``query``, sent once per run: AMP-SRCH-02 and the
    error table (AMP-ERR-03/-04) each judge this one 422."""
    take_roles(amp)
    return _shared_reply(
        amp,
        "search:without-query",
        lambda a: a.as_agent("a").post("/memories/search", {"owner_id": a.owner()}),
    )


# AMP-ERR-07's odd creates (test_errors), whose plain cells other checks use too --------------------

#: A ligature (U+FB01), full-width letters, a Roman numeral, a precomposed and a decomposed accent, a
#: non-breaking space: NFC, NFD, NFKC or NFKD each rewrite some of it. The text of the scoring-null
#: odd create, whose cell test_values reads back (AMP-CELL-17: text is stored as sent).
UNNORMALISED = "\ufb01ne \uff26\uff55\uff4c\uff4c \u2168 caf\u00e9 cafe\u0301\u00a0end"

#: The text of the error probes' active cell (the empty-metadata odd create's).
ORIGINAL_TEXT = "text before the anonymous edit"


def _remember_created(amp: Amp01Context, reply: Reply) -> None:
    """Hand a cell created outside ``amp.create_cell`` to the run's clean-up."""
    if reply.status != 201:
        return
    try:
        body = reply.json()
    except AssertionError:
        return
    if isinstance(body, dict) and isinstance(body.get("id"), str):
        amp.remember(body["id"], as_agent="a")


UNICODE_TEXT = "Prefers 日本語 and émoji 🐍 — “quotes”, RTL עברית, zero\u200bwidth"
EMPTY_METADATA = "create with empty metadata"
SCORING_NULL = "create with scoring null"
ACCESS_POLICY_NULL = "create with access_policy null"


def odd_creates(amp: Amp01Context) -> tuple[str, list[tuple[str, Reply]]]:
    """AMP-ERR-07's creates, sent once per run: (the Unicode cell's owner, [(label, reply)]). One
    oddity per request: a body refused for one oddity would never reach the code another crashes in.
    The empty-metadata create carries :data:`ORIGINAL_TEXT`, so the cell it makes (a plain cell of
    agent "a") is also the active cell of the error probes; the scoring-null cell (whose text is
    :data:`UNNORMALISED`) is their archived one and the cell test_values reads back for AMP-CELL-17;
    the access_policy-null cell is test_bytes' PATCH target (AMP-ERR-07 judges only the create
    answers). Cells made are handed to the clean-up; nothing is judged here."""

    def make(a: Amp01Context) -> dict[str, Any]:
        marks = Marks(a)
        owner = a.owner()
        client = a.as_agent("a")
        bodies = (
            (
                "create with Unicode text",
                a.cell_body(content={"text": UNICODE_TEXT}, identity={"owner_id": owner}),
            ),
            (SCORING_NULL, a.cell_body(scoring=None, content={"text": UNNORMALISED})),
            (ACCESS_POLICY_NULL, a.cell_body(access_policy=None)),
            (EMPTY_METADATA, a.cell_body(content={"text": ORIGINAL_TEXT, "metadata": {}})),
        )
        made = []
        for label, body in bodies:
            reply = client.post("/memories", body)
            _remember_created(a, reply)
            made.append((label, marks(reply)))
        return {"owner": owner, "made": made}

    made, replies = shared_replies(amp, "errors:odd-creates", make)
    return made["owner"], [(label, replies[at]) for label, at in made["made"]]


def odd_cell(
    amp: Amp01Context, odd: tuple[str, list[tuple[str, Reply]]] | None, label: str, text: str | None = None
) -> dict[str, Any] | None:
    """The cell the odd create ``label`` made, when it answered 2xx with a cell (holding ``text``, when
    given); else (or with no odd creates: an answer of theirs was lost) None: the error probes then
    make their own."""
    if odd is None:
        return None
    cell = created_cell_of(dict(odd[1])[label])
    if cell is None:
        return None
    content = cell.get("content")
    identity = cell.get("identity")
    if not (isinstance(content, dict) and isinstance(identity, dict)):
        return None
    if text is not None and content.get("text") != text:
        return None
    return cell


# one create carrying every member the server must ignore (AMP-CRE-03, -04, -05, -07, -08) ----------

#: What AMP-CRE-04 sends for the server to ignore: a version and a lifecycle of the client's own.
CLIENT_LIFECYCLE: dict[str, Any] = {
    "amp_version": "9.9",
    "lifecycle": {
        "status": "archived",
        "created_at": "2000-01-01T00:00:00Z",
        "last_accessed_at": "2000-01-02T00:00:00Z",
        "last_updated_at": "2000-01-03T00:00:00Z",
    },
}

#: What AMP-CRE-08 sends for the server to ignore: an access count of the client's own.
CLIENT_COUNT: dict[str, Any] = {"scoring": {"access_count": 7}}

#: What AMP-CRE-05 sends for the server to ignore: members the protocol does not know.
UNKNOWN_MEMBERS: dict[str, Any] = {"ttl": 3600, "content": {"colour": "x"}}


def lifecycle_applied(
    cell: dict[str, Any], made: datetime | None, sent: datetime, received: datetime, reply: Reply
) -> list[str]:
    """How a created cell shows the client's lifecycle/amp_version applied (AMP-CRE-04), given its
    parsed created_at (``made``) and the create's send/receive bracket; empty when ignored."""
    problems = []
    if cell.get("amp_version") != "0.1.0":
        problems.append(f"amp_version is {shown(cell.get('amp_version'))}, not '0.1.0'")
    status = member(cell, "lifecycle.status")
    if status != "active":
        problems.append(f"status is {shown(status)}, not 'active'")
    if made is None or not server_now_near(made, sent, received, reply):
        problems.append(f"created_at is {shown(member(cell, 'lifecycle.created_at'))}, not the server's time")
    for name in ("last_accessed_at", "last_updated_at"):
        value = member(cell, f"lifecycle.{name}")
        if value is not None:
            problems.append(f"{name} is {shown(value)}, not null")
    return problems


def read_and_list(amp: Amp01Context, marks: Marks, reply: Reply, body: dict[str, Any]) -> dict[str, int]:
    """When ``reply`` made a cell, agent "a"'s read of it and list of its owner (Marks positions)."""
    cell = reply.json() if 200 <= reply.status < 300 and reply.text else None
    if not isinstance(cell, dict) or not isinstance(cell.get("id"), str):
        return {}
    client = amp.as_agent("a")
    read_reply = client.get(f"/memories/{cell['id']}")
    listed = client.get("/memories", params={"owner_id": body["identity"]["owner_id"]})
    return {"read": marks(read_reply), "listed": marks(listed)}


def _create_ignoring(amp: Amp01Context) -> dict[str, Any]:
    """One create carrying every member the server must ignore (AMP-CRE-03's id, -04's lifecycle and
    amp_version, -05's unknown ttl and content.colour, -07's created_by naming "b" when there is a
    "b", -08's access_count), timed for AMP-CRE-04's created_at, then, when it made a cell, agent
    "a"'s read of it and list of its owner at once (for AMP-CRE-05 and -09). Nothing is judged here."""
    marks = Marks(amp)
    sent_id, other = amp.unknown_id(), amp.optional_agent("b")
    body = amp.cell_body({**CLIENT_LIFECYCLE, **CLIENT_COUNT, **UNKNOWN_MEMBERS}, id=sent_id)
    if other is not None:
        body["identity"]["created_by"] = other.id
    sent = datetime.now(UTC)
    reply = post_cell(amp, body)
    received = datetime.now(UTC)
    made: dict[str, Any] = {"reply": marks(reply), "read": None, "listed": None, "id": sent_id}
    made |= {"agent": amp.agent_id("a"), "other": other.id if other is not None else None}
    made |= {"sent": sent.isoformat(), "received": received.isoformat()}
    return made | read_and_list(amp, marks, reply, body)


def create_bracket(made: dict[str, Any]) -> tuple[datetime, datetime]:
    """When the shared create of :func:`ignored_members` was sent and when it was answered."""
    return datetime.fromisoformat(made["sent"]), datetime.fromisoformat(made["received"])


def _traces(reply: Reply, made: dict[str, Any]) -> set[str] | None:
    """The probes of :func:`_create_ignoring` whose members the server applied or kept ("id",
    "lifecycle", "unknown", "creator", "count"), or None when its answer cannot serve at all (not a
    2xx with a cell that validates)."""
    try:
        cell = reply.json() if 200 <= reply.status < 300 else None
    except AssertionError:
        return None
    if not isinstance(cell, dict) or validate_cell(cell):
        return None
    try:
        created_at: datetime | None = parse_utc_timestamp(member(cell, "lifecycle.created_at"))
    except (TimestampError, TypeError):
        created_at = None
    sent, received = create_bracket(made)
    traces = {"id"} if cell.get("id") == made["id"] else set()
    if lifecycle_applied(cell, created_at, sent, received, reply):
        traces.add("lifecycle")
    if "ttl" in cell or "colour" in cell["content"]:
        traces.add("unknown")
    if member(cell, "identity.created_by") != made["agent"]:
        traces.add("creator")
    count = member(cell, "scoring.access_count")
    if count != 0 or isinstance(count, bool):
        traces.add("count")
    return traces


def ignored_members(amp: Amp01Context, probe: str) -> tuple[dict[str, Any], list[Reply]] | None:
    """The run's one create carrying every member the server must ignore (:func:`_create_ignoring`)
    and its replies, for the check of ``probe`` ("id", "lifecycle", "unknown", "creator" or "count"),
    when it made a valid cell on which no other probe left a trace: then nothing but the probe's own
    members can be behind what the check sees. None otherwise (or when the probe could not be sent):
    the check sends its own create, as alone."""
    take_roles(amp, reader=True)
    made, replies = shared_replies(amp, "create:ignored-members", _create_ignoring)
    traces = _traces(replies[made["reply"]], made)
    if traces is None or traces - {probe} or (probe == "creator" and made["other"] is None):
        return None
    return made, replies
