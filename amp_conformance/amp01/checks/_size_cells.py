"""The size-limit probes the create and size checks share (AMP-SIZE-*, AMP-CRE-11), made once per run.

The size of a cell is the length in bytes of the compact UTF-8 JSON serialisation of the cell as the
server returns it. A small probe cell, created once, is the reference every size prediction starts
from; the one create whose cell would be ``max_cell_size_bytes`` + 1 bytes is sent once, with the
list of its owner right after a 413, for the checks that judge the refusal (AMP-SIZE-01, and AMP-CRE-11,
which restates it) and that nothing was stored (AMP-SIZE-02, AMP-CRE-11). Nothing is judged here.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from amp_conformance import Amp01Context
from amp_conformance.amp01.checks._support import Marks, shared_replies, shown
from amp_conformance.amp01.context import deep_merge
from amp_conformance.engine.client import Reply

MAX_PROBED_BYTES = 1_500_000
"""Above this the cells would not fit the client's response cap; the boundary checks skip."""


def cell_size(cell: Mapping[str, Any]) -> int:
    """Bytes of the compact UTF-8 JSON serialisation of ``cell`` (the size rule of the limit)."""
    return len(json.dumps(cell, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def size_claim(amp: Amp01Context) -> int:
    """The advertised ``max_cell_size_bytes``; skips when there is none this suite can probe."""
    value = amp.spec.get("max_cell_size_bytes")
    if value is None:
        amp.skip("/spec makes no max_cell_size_bytes claim")
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        amp.skip(f"/spec max_cell_size_bytes {shown(value)} is not a usable number (AMP-CAP-02 reports it)")
    if value > MAX_PROBED_BYTES:
        amp.skip(f"max_cell_size_bytes {value} is above the {MAX_PROBED_BYTES} bytes this suite probes")
    return value


def probe_cell(amp: Amp01Context, owner: str | None = None) -> dict[str, Any]:
    """A small cell as the server stores it, the reference for size predictions."""
    return amp.create_cell({"identity": {"owner_id": owner or amp.owner()}, "content": {"text": "x"}})


def shared_probe(amp: Amp01Context) -> dict[str, Any]:
    """The run's probe cell, made once per run (per worker): its create answer is the reference the
    create checks predict sizes from (the recorded answer, never the cell as it is later). Only the
    size checks send it anything: a stranger's PATCH, which must be refused (AMP-SIZE-06), and the
    PATCH check's content PATCHes (AMP-SIZE-04: from a small one of its own to the limit and one byte
    over, then its one-character text back), whose answers no other check judges."""
    return amp.shared("size:probe", probe_cell)


def padding(amp: Amp01Context, reference: Mapping[str, Any], target: int, changes: Mapping[str, Any]) -> int:
    """How many ASCII characters of ``content.text`` make ``reference`` + ``changes`` exactly ``target``."""
    empty = deep_merge(dict(reference), deep_merge(dict(changes), {"content": {"text": ""}}))
    count = target - cell_size(empty)
    if count < 1:
        amp.skip(
            f"a cell of {target} bytes cannot be built: the smallest cell is {cell_size(empty) + 1} bytes"
        )
    return count


def create_body(cell: Mapping[str, Any], owner: str, text: str, **extra: Any) -> dict[str, Any]:
    """A create body of ``cell``'s type for ``owner`` with ``text`` (and ``extra`` merged in)."""
    body: dict[str, Any] = {
        "type": cell.get("type", "semantic"),
        "content": {"text": text},
        "identity": {"owner_id": owner, "owner_type": "user"},
    }
    return deep_merge(body, extra)


def remember_cell(amp: Amp01Context, reply: Reply) -> dict[str, Any]:
    """The cell a create answered, handed to the clean-up when it has an id."""
    cell = reply.json_object()
    if isinstance(cell.get("id"), str):
        amp.remember(cell["id"], as_agent="a")
    return cell


def over_create(amp: Amp01Context) -> tuple[str, Reply, Reply | None]:
    """(owner, reply, listing) of one create whose cell would be max_cell_size_bytes + 1 bytes, and,
    when it answered 413, agent "a"'s list of the owner's active cells right after; sent once per run
    (per worker) for the checks that judge them: AMP-SIZE-01 (the 413), AMP-SIZE-02 (nothing stored)
    and AMP-CRE-11 (both). Skips as :func:`size_claim` does."""

    def make(a: Amp01Context) -> dict[str, Any]:
        marks = Marks(a)
        limit = size_claim(a)
        probe = shared_probe(a)
        owner = a.owner()
        length = padding(a, probe, limit + 1, {"identity": {"owner_id": owner}})
        client = a.as_agent("a")
        reply = client.post("/memories", create_body(probe, owner, "x" * length))
        if reply.status == 201:
            remember_cell(a, reply)
        listed = None
        if reply.status == 413:
            listed = marks(client.get("/memories", params={"owner_id": owner, "status": "active"}))
        return {"owner": owner, "reply": marks(reply), "listed": listed}

    made, replies = shared_replies(amp, "size:over-create", make)
    listing = replies[made["listed"]] if made["listed"] is not None else None
    return made["owner"], replies[made["reply"]], listing
