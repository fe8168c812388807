"""The cell size limit at its exact boundary (AMP-SIZE-01…06, AMP-CAP-07).

The size of a cell is the length in bytes of the compact UTF-8 JSON serialisation of the cell as the
server returns it: ``json.dumps(cell, separators=(",", ":"), ensure_ascii=False)``. Each check first
creates a small probe cell, measures it, and predicts the size of a changed cell by applying the change
to the probe (the server-assigned parts, id and timestamps, keep their width). The limit is the one the
server advertises in ``/spec`` (AMP-CAP-04): a cell of exactly that many bytes must be accepted, one
byte more refused with 413 ``CELL_TOO_LARGE``, on create and on PATCH, and a refusal writes nothing.
The create checks share one probe cell, and the two that judge the one-byte-over create share it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from itertools import islice
from typing import Any

from amp_conformance import Amp, check
from amp_conformance.amp01.checks._support import (
    Marks,
    about,
    expect_accepted,
    expect_error,
    expect_refusal,
    expect_step,
    listings_by_status,
    read_back,
    shared_replies,
    shown,
)
from amp_conformance.amp01.context import deep_merge
from amp_conformance.engine.client import Reply

MAX_PROBED_BYTES = 1_500_000
"""Above this the cells would not fit the client's response cap; the boundary checks skip."""
ATTEMPTS = 3
"""How often a boundary cell is rebuilt when the server's cell came back a different size."""


def cell_size(cell: Mapping[str, Any]) -> int:
    """Bytes of the compact UTF-8 JSON serialisation of ``cell`` (the size rule of the limit)."""
    return len(json.dumps(cell, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def _size_claim(amp: Amp) -> int:
    value = amp.spec.get("max_cell_size_bytes")
    if value is None:
        amp.skip("/spec makes no max_cell_size_bytes claim")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        amp.skip(f"/spec max_cell_size_bytes {shown(value)} is not a usable number (AMP-CAP-02 reports it)")
    if value > MAX_PROBED_BYTES:
        amp.skip(f"max_cell_size_bytes {value} is above the {MAX_PROBED_BYTES} bytes this suite probes")
    return value


def _probe(amp: Amp, owner: str | None = None) -> dict[str, Any]:
    """A small cell as the server stores it, the reference for size predictions."""
    return amp.create_cell({"identity": {"owner_id": owner or amp.owner()}, "content": {"text": "x"}})


def _shared_probe(amp: Amp) -> dict[str, Any]:
    """The module's probe cell, made once per run (per worker): its create answer is the reference the
    create checks predict sizes from. No check reads it back; only a stranger's PATCH, which must be
    refused, is ever sent to it."""
    return amp.shared("size:probe", _probe)


def _over_create(amp: Amp) -> tuple[str, Reply]:
    """(owner, reply) of one create whose cell would be max_cell_size_bytes + 1 bytes, sent once per run
    (per worker) for the two checks that judge it: AMP-SIZE-01 (the 413) and AMP-SIZE-02 (nothing stored)."""

    def make(a: Amp) -> dict[str, Any]:
        marks = Marks(a)
        limit = _size_claim(a)
        probe = _shared_probe(a)
        owner = a.owner()
        length = _padding(a, probe, limit + 1, {"identity": {"owner_id": owner}})
        reply = a.as_agent("a").post("/memories", _create_body(probe, owner, "x" * length))
        if reply.status == 201:
            _created(a, reply)
        return {"owner": owner, "reply": marks(reply)}

    made, replies = shared_replies(amp, "size:over-create", make)
    return made["owner"], replies[made["reply"]]


def _padding(amp: Amp, reference: Mapping[str, Any], target: int, changes: Mapping[str, Any]) -> int:
    """How many ASCII characters of ``content.text`` make ``reference`` + ``changes`` exactly ``target``."""
    empty = deep_merge(dict(reference), deep_merge(dict(changes), {"content": {"text": ""}}))
    count = target - cell_size(empty)
    if count < 1:
        amp.skip(
            f"a cell of {target} bytes cannot be built: the smallest cell is {cell_size(empty) + 1} bytes"
        )
    return count


def _create_body(cell: Mapping[str, Any], owner: str, text: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": cell.get("type", "semantic"),
        "content": {"text": text},
        "identity": {"owner_id": owner, "owner_type": "user"},
    }
    return deep_merge(body, extra)


def _created(amp: Amp, reply: Reply) -> dict[str, Any]:
    cell = reply.json_object()
    if isinstance(cell.get("id"), str):
        amp.remember(cell["id"], as_agent="a")
    return cell


def _retire(amp: Amp, cell_id: str) -> None:
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


def _owner_cells(amp: Amp, owner: str) -> list[str]:
    """Ids of the owner's cells in any visible status, through list and search (never a by-id read): a
    cell written anyway would be new, so active, which the default list shows; the search asks every
    visible status."""
    found: list[str] = []
    for _status, reply in islice(listings_by_status(amp, owner), 1):
        found += _ids_of(reply, owner)
    search = amp.as_agent("a").post(
        "/memories/search", {"query": "x", "owner_id": owner, "status": ["active", "stale", "archived"]}
    )
    amp.expect_status(search, 200, what="searching the owner's cells")
    found += _ids_of(search, owner)
    return found


def _expect_within_limit(amp: Amp, reply: Reply, limit: int, what: str) -> None:
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


@check("AMP-SIZE-03", "AMP-CAP-07", "AMP-CAP-04")
def test_cell_of_exactly_the_advertised_size_is_accepted(amp: Amp) -> None:
    """A create whose stored cell is exactly max_cell_size_bytes bytes is accepted (201)."""
    limit = _size_claim(amp)
    probe = _shared_probe(amp)
    owner = amp.owner()
    changes: dict[str, Any] = {"identity": {"owner_id": owner}}
    length = _padding(amp, probe, limit, changes)
    for _ in range(ATTEMPTS):
        reply = amp.as_agent("a").post("/memories", _create_body(probe, owner, "x" * length))
        what = f"creating a cell of exactly {limit} bytes (the advertised limit)"
        _expect_within_limit(amp, reply, limit, what)
        with about("AMP-SIZE-03"):
            expect_accepted(amp, reply, what)
        created = _created(amp, reply)
        _retire(amp, created["id"])
        size = cell_size(created)
        if size == limit:
            return
        length += limit - size
    amp.skip(
        f"could not build a cell of exactly {limit} bytes: the server's cells change size between creates"
    )


@check("AMP-SIZE-01", "AMP-CAP-07")
def test_create_one_byte_over_the_limit_is_refused_with_413(amp: Amp) -> None:
    """A create whose cell would be max_cell_size_bytes + 1 bytes is refused: 413 CELL_TOO_LARGE."""
    _size_claim(amp)
    _owner, reply = _over_create(amp)
    with about("AMP-SIZE-01"):
        expect_error(amp, reply, 413, "CELL_TOO_LARGE")


@check("AMP-SIZE-02")
def test_refused_create_writes_nothing(amp: Amp) -> None:
    """After a 413 on create, nothing of the refused cell is stored (the owner has no cells)."""
    _size_claim(amp)
    owner, reply = _over_create(amp)
    if reply.status != 413:
        amp.skip(f"the oversized create was not refused with 413 (got {reply.status}); SIZE-01 reports it")
    stored = _owner_cells(amp, owner)
    amp.expect(
        not stored,
        f"the refused cell was written anyway: the fresh owner now has {sorted(set(stored))}",
        expected="no cell for the owner",
    )


@check("AMP-SIZE-04", "AMP-CAP-07")
def test_patch_is_held_to_the_same_limit(amp: Amp) -> None:
    """A PATCH to exactly the limit is accepted; one byte more is 413 CELL_TOO_LARGE and changes nothing."""
    limit = _size_claim(amp)
    client = amp.as_agent("a")
    cell = _probe(amp)
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
    length = _padding(amp, current, limit, {})
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
    _retire(amp, cell["id"])
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
def test_limit_counts_bytes_of_the_whole_cell(amp: Amp) -> None:
    """The limit counts UTF-8 bytes of the whole cell: multi-byte text and bulky metadata count too."""
    limit = _size_claim(amp)
    probe = _shared_probe(amp)
    owner = amp.owner()
    changes: dict[str, Any] = {"identity": {"owner_id": owner}}
    base = cell_size(deep_merge(probe, deep_merge(changes, {"content": {"text": ""}})))
    count = max(1, -(-(limit + 1 - base) // 2))  # "é" is 2 bytes in UTF-8
    reply = amp.as_agent("a").post("/memories", _create_body(probe, owner, "é" * count))
    if reply.status == 201:
        _created(amp, reply)
    expect_error(amp, reply, 413, "CELL_TOO_LARGE")
    reference = deep_merge(probe, {"content": {"text": "x", "metadata": {"pad": ""}}, **changes})
    pad = limit + 1 - cell_size(reference)
    if pad < 1:
        return
    body = _create_body(probe, owner, "x", content={"metadata": {"pad": "m" * pad}})
    reply = amp.as_agent("a").post("/memories", body)
    if reply.status == 201:
        _created(amp, reply)
    expect_error(amp, reply, 413, "CELL_TOO_LARGE")


@check("AMP-SIZE-06")
def test_oversized_patch_by_a_stranger_is_403_not_413(amp: Amp) -> None:
    """A caller without write access gets 403 (not 413) for an oversized PATCH."""
    limit = _size_claim(amp)
    cell = _shared_probe(amp)
    reply = amp.as_agent("b").patch(f"/memories/{cell['id']}", {"content": {"text": "x" * (limit + 1)}})
    expect_refusal(amp, reply, "an oversized PATCH by an agent without write access")
