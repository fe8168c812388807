"""The cell size limit at its exact boundary (AMP-SIZE-01…06, AMP-CAP-07).

The size of a cell is the length in bytes of the compact UTF-8 JSON serialisation of the cell as the
server returns it: ``json.dumps(cell, separators=(",", ":"), ensure_ascii=False)``. Each check first
creates a small probe cell, measures it, and predicts the size of a changed cell by applying the change
to the probe (the server-assigned parts, id and timestamps, keep their width). The limit is the one the
server advertises in ``/spec`` (AMP-CAP-04): a cell of exactly that many bytes must be accepted, one
byte more refused with 413 ``CELL_TOO_LARGE``, on create and on PATCH, and a refusal writes nothing.
The create checks share one probe cell, and the two that judge the one-byte-over create share it
(``_size_cells``, with test_create's AMP-CRE-11); the PATCH check patches that probe cell (the create
answer the others measure is a recorded one) and gives it its small text back.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from amp_conformance import Amp01Context, check
from amp_conformance.amp01.checks._size_cells import (
    cell_size,
    over_create,
    padding,
    remember_cell,
    shared_probe,
    size_claim,
)
from amp_conformance.amp01.checks._size_cells import create_body as _create_body
from amp_conformance.amp01.checks._support import (
    about,
    expect_accepted,
    expect_error,
    expect_refusal,
    expect_step,
    read_back,
    shown,
    step_failed,
)
from amp_conformance.amp01.context import deep_merge
from amp_conformance.engine.client import Reply

ATTEMPTS = 3
"""How often a boundary cell is rebuilt when the server's cell came back a different size."""


def _retire(amp: Amp01Context, cell_id: str) -> None:
    """Archive (shrinking the text, or the archive PATCH itself would be too large) and delete a cell.

    A cell at the exact limit cannot be archived as it is: the PATCH stamps ``last_updated_at`` and the
    merged cell grows past the limit. Best effort; the run's cleanup reports what is left.
    """
    client = amp.as_agent("a")
    reply = client.patch(
        f"/memories/{cell_id}", {"content": {"text": "x"}, "lifecycle": {"status": "archived"}}
    )
    if reply.status == 200:
        client.delete(f"/memories/{cell_id}")


def _shrink(amp: Amp01Context, cell_id: str) -> None:
    """Give the shared probe cell its one-character text back after the PATCHes to the limit: the
    run's cleanup archives it, a PATCH that would take a cell at the limit past it. Best effort."""
    amp.as_agent("a").patch(f"/memories/{cell_id}", {"content": {"text": "x"}})


def _owner_cells(amp: Amp01Context, owner: str, listed: Reply) -> list[str]:
    """Ids of the owner's cells in any visible status, through list and search (never a by-id read): a
    cell written anyway would be new, so active, which ``listed`` (the shared list of the owner's active
    cells, sent right after the refusal) shows; the search asks every visible status."""
    if listed.status != 200:
        step_failed(amp, listed, "listing the owner's active cells", "AMP-LIST-03", "200")
    found = _ids_of(listed, owner)
    search = amp.as_agent("a").post(
        "/memories/search", {"query": "x", "owner_id": owner, "status": ["active", "stale", "archived"]}
    )
    amp.expect_status(search, 200, what="searching the owner's cells")
    found += _ids_of(search, owner)
    return found


def _expect_within_limit(amp: Amp01Context, reply: Reply, limit: int, what: str) -> None:
    """A 413 for a cell of exactly the advertised size means the server's limit is not the number /spec
    advertises (AMP-CAP-07); any other refusal is the check's own finding."""
    amp.expect(
        reply.status != 413,
        f"{what} answered 413: the limit enforced is below the {limit} bytes /spec advertises",
        reply,
        expected="accepted",
        requirement="AMP-CAP-07",
    )


def _ids_of(reply: Reply, owner: str) -> list[str]:
    """Ids of the owner's cells in a page (cells of other owners are another check's business)."""
    cells = [c for c in reply.json_object().get("results", []) if isinstance(c, dict)]
    return [str(c.get("id")) for c in cells if c.get("identity", {}).get("owner_id") == owner]


@pytest.mark.smoke
@check("AMP-SIZE-03", "AMP-CAP-07", "AMP-CAP-04")
def test_cell_of_exactly_the_advertised_size_is_accepted(amp: Amp01Context) -> None:
    """A create whose stored cell is exactly max_cell_size_bytes bytes is accepted (201)."""
    limit = size_claim(amp)
    probe = shared_probe(amp)
    owner = amp.owner()
    changes: dict[str, Any] = {"identity": {"owner_id": owner}}
    length = padding(amp, probe, limit, changes)
    for _ in range(ATTEMPTS):
        reply = amp.as_agent("a").post("/memories", _create_body(probe, owner, "x" * length))
        what = f"creating a cell of exactly {limit} bytes (the advertised limit)"
        _expect_within_limit(amp, reply, limit, what)
        with about("AMP-SIZE-03"):
            expect_accepted(amp, reply, what)
        created = remember_cell(amp, reply)
        _retire(amp, created["id"])
        size = cell_size(created)
        if size == limit:
            return
        length += limit - size
    amp.skip(
        f"could not build a cell of exactly {limit} bytes: the server's cells change size between creates"
    )


@pytest.mark.smoke
@check("AMP-SIZE-01", "AMP-CAP-07")
def test_create_one_byte_over_the_limit_is_refused_with_413(amp: Amp01Context) -> None:
    """A create whose cell would be max_cell_size_bytes + 1 bytes is refused: 413 CELL_TOO_LARGE."""
    size_claim(amp)
    _owner, reply, _ = over_create(amp)
    with about("AMP-SIZE-01"):
        expect_error(amp, reply, 413, "CELL_TOO_LARGE")


@pytest.mark.smoke
@check("AMP-SIZE-02")
def test_refused_create_writes_nothing(amp: Amp01Context) -> None:
    """After a 413 on create, nothing of the refused cell is stored (the owner has no cells)."""
    size_claim(amp)
    owner, reply, listed = over_create(amp)
    if reply.status != 413 or listed is None:
        amp.skip(f"the oversized create was not refused with 413 (got {reply.status}); SIZE-01 reports it")
    stored = _owner_cells(amp, owner, listed)
    amp.expect(
        not stored,
        f"the refused cell was written anyway: the fresh owner now has {sorted(set(stored))}",
        expected="no cell for the owner",
    )


@pytest.mark.smoke
@check("AMP-SIZE-04", "AMP-CAP-07")
def test_patch_is_held_to_the_same_limit(amp: Amp01Context) -> None:
    """A PATCH to exactly the limit is accepted; one byte more is 413 CELL_TOO_LARGE and changes nothing."""
    limit = size_claim(amp)
    # the run's probe cell: its create answer is the size reference of the create checks (a recorded
    # answer, which no PATCH changes), and the PATCHes below start from a small one of their own, so
    # nothing sent to the cell before (a stranger's refused PATCH, AMP-SIZE-06) changes what they see;
    # taken before acting as "a", who is then its creator (amp.shared hands over the maker's roles)
    cell = shared_probe(amp)
    client = amp.as_agent("a")
    path = f"/memories/{cell['id']}"
    first = client.patch(path, {"content": {"text": "y"}})
    expect_step(
        amp,
        first.status == 200,
        f"a small content PATCH answered {first.status}, not 200",
        first,
        step="a small content PATCH",
        requirement="AMP-PATCH-01",
    )
    current = first.json_object()
    length = padding(amp, current, limit, {})
    for _ in range(ATTEMPTS):
        at_limit = client.patch(path, {"content": {"text": "y" * length}})
        what = f"a PATCH making the cell exactly {limit} bytes (the limit)"
        _expect_within_limit(amp, at_limit, limit, what)
        amp.expect_status(at_limit, 200, what=what, requirement="AMP-SIZE-04")
        current = at_limit.json_object()
        size = cell_size(current)
        if size == limit:
            break
        length += limit - size
    else:
        amp.skip(
            f"could not build a cell of exactly {limit} bytes: the server's cells change size between PATCHes"
        )
    over = client.patch(path, {"content": {"text": "z" * (length + 1)}})
    with about("AMP-SIZE-04"):
        expect_error(amp, over, 413, "CELL_TOO_LARGE")
    stored, after = read_back(amp, cell["id"])
    _shrink(amp, cell["id"])
    amp.expect(
        stored.get("content", {}).get("text") == current["content"]["text"],
        "the refused PATCH changed content.text",
        after,
        requirement="AMP-SIZE-04",
    )
    amp.expect(
        stored.get("lifecycle", {}).get("last_updated_at") == current["lifecycle"]["last_updated_at"],
        "the refused PATCH changed lifecycle.last_updated_at from "
        f"{shown(current['lifecycle']['last_updated_at'])} "
        f"to {shown(stored.get('lifecycle', {}).get('last_updated_at'))}",
        after,
        requirement="AMP-SIZE-04",
    )


@check("AMP-SIZE-05")
def test_limit_counts_bytes_of_the_whole_cell(amp: Amp01Context) -> None:
    """The limit counts UTF-8 bytes of the whole cell: multi-byte text and bulky metadata count too."""
    limit = size_claim(amp)
    probe = shared_probe(amp)
    owner = amp.owner()
    changes: dict[str, Any] = {"identity": {"owner_id": owner}}
    base = cell_size(deep_merge(probe, deep_merge(changes, {"content": {"text": ""}})))
    count = max(1, -(-(limit + 1 - base) // 2))  # "é" is 2 bytes in UTF-8
    bodies = [_create_body(probe, owner, "é" * count)]
    reference = deep_merge(probe, {"content": {"text": "x", "metadata": {"pad": ""}}, **changes})
    pad = limit + 1 - cell_size(reference)
    if pad >= 1:
        bodies.append(_create_body(probe, owner, "x", content={"metadata": {"pad": "m" * pad}}))
    client = amp.as_agent("a")
    # sent at once (amp.at_once): both must be refused, neither meets what the other did
    replies = amp.at_once(*(partial(client.post, "/memories", body) for body in bodies))
    for reply in replies:
        if reply.status == 201:
            remember_cell(amp, reply)
    for reply in replies:
        expect_error(amp, reply, 413, "CELL_TOO_LARGE")


@check("AMP-SIZE-06")
def test_oversized_patch_by_a_stranger_is_403_not_413(amp: Amp01Context) -> None:
    """A caller without write access gets 403 (not 413) for an oversized PATCH."""
    limit = size_claim(amp)
    cell = shared_probe(amp)
    reply = amp.as_agent("b").patch(f"/memories/{cell['id']}", {"content": {"text": "x" * (limit + 1)}})
    expect_refusal(amp, reply, "an oversized PATCH by an agent without write access")
