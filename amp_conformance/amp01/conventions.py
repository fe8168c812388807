"""Detect which documented convention the server follows where the sources disagree.

requirements.md §2: the suite accepts every behaviour a source documents and reports which one the
server chose. Detection runs once, early, with its own throwaway cell; later checks then hold the
server to the convention it showed (the same answer on GET, PATCH and DELETE), and accept any
documented answer when detection could not decide.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ulid import ULID

from amp_conformance.engine.outcomes import ToolError

if TYPE_CHECKING:
    from amp_conformance.engine.client import Reply

NOT_FOUND = (404, "NOT_FOUND")
DOCUMENTED_UNKNOWN = (NOT_FOUND, (403, "ACCESS_DENIED"), (403, "FORBIDDEN"))
REFUSAL_CODES = ("FORBIDDEN", "ACCESS_DENIED")

SOURCES = {
    "404 NOT_FOUND": "API reference (S1 error tables)",
    "403 ACCESS_DENIED": "upstream contract (C-01)",
    "403 FORBIDDEN": "403 as upstream, code as the API reference",
    "FORBIDDEN": "API reference (S1 tables)",
    "ACCESS_DENIED": "upstream contract (C-02)",
    "prefixed": "mem_ + ULID, as the API reference example and the upstream schema (C-03)",
    "bare": "bare ULID, as the prose of both primary documents (C-03)",
    "readable": "deleted cells readable by id with status 'deleted' (S1, C-05)",
    "hidden": "deleted cells answer like unknown ids (S0, upstream, C-05)",
}


def answer_of(reply: Reply) -> tuple[int, str | None]:
    """(status, error code) of a reply, tolerating bodies that are not envelopes."""
    code = None
    try:
        body = reply.json()
    except AssertionError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        value = body["error"].get("code")
        code = value if isinstance(value, str) else None
    return reply.status, code


def label(answer: tuple[int, str | None]) -> str:
    """``404 NOT_FOUND``; ``200`` alone when the reply carries no error code."""
    return f"{answer[0]} {answer[1]}" if answer[1] else str(answer[0])


@dataclass
class Conventions:
    unknown_id: tuple[int, str | None] | None = None
    refusal_code: str | None = None
    id_form: str | None = None
    deleted_read: str | None = None
    problems: list[str] = field(default_factory=list)

    def unknown_id_answers(self) -> tuple[tuple[int, str | None], ...]:
        """Answers accepted for an unknown id: the detected one when documented, else all documented."""
        if self.unknown_id in DOCUMENTED_UNKNOWN:
            return (self.unknown_id,)
        return DOCUMENTED_UNKNOWN

    def refusal_codes(self) -> tuple[str, ...]:
        return (self.refusal_code,) if self.refusal_code in REFUSAL_CODES else REFUSAL_CODES

    def as_wire(self) -> dict[str, Any]:
        """Plain data for a parallel run's workers (see :meth:`from_wire`)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> Conventions:
        unknown = data.get("unknown_id")
        return cls(
            unknown_id=(int(unknown[0]), unknown[1]) if isinstance(unknown, list | tuple) else None,
            refusal_code=data.get("refusal_code"),
            id_form=data.get("id_form"),
            deleted_read=data.get("deleted_read"),
            problems=[str(p) for p in data.get("problems", [])],
        )

    def as_report(self) -> dict[str, Any]:
        def entry(value: str | None) -> dict[str, Any]:
            return {"value": value, "source": SOURCES.get(value or "", "undetermined")}

        return {
            "unknown_id": entry(label(self.unknown_id) if self.unknown_id else None),
            "refusal_code": entry(self.refusal_code),
            "id_form": entry(self.id_form),
            "deleted_read": entry(self.deleted_read),
            "problems": list(self.problems),
        }


def detect_conventions(run: Any) -> Conventions:
    """Probe the server once with a throwaway cell; never raises."""
    found = Conventions()
    try:
        _detect(run, found)
    except (ToolError, AssertionError) as exc:
        found.problems.append(f"detection stopped: {exc}")
    return found


def _detect(run: Any, found: Conventions) -> None:
    owner = run.agent("a")
    creator = run.client(owner)
    stranger = run.client(run.agent("b"))
    probe = {
        "type": "semantic",
        "content": {"text": "amp-conformance convention probe"},
        "identity": {"owner_id": run.new_owner(), "owner_type": "user"},
    }
    # the unknown-id read depends on nothing else: it goes while the probe cell is made
    unknown, created = run.at_once(
        lambda: creator.get(f"/memories/mem_{ULID()}"), lambda: creator.post("/memories", probe)
    )
    found.unknown_id = answer_of(unknown)
    if found.unknown_id not in DOCUMENTED_UNKNOWN:
        found.problems.append(f"unknown id answered {label(found.unknown_id)}, which no source documents")
    if not 200 <= created.status < 300:
        found.problems.append(f"could not create a probe cell (status {created.status})")
        return
    cell = created.json_object()
    cell_id = str(cell.get("id", ""))
    run.remember(cell_id, owner)
    found.id_form = "prefixed" if cell_id.startswith("mem_") else "bare"
    refused = answer_of(stranger.get(f"/memories/{cell_id}"))
    if refused[0] == 403 and refused[1] in REFUSAL_CODES:
        found.refusal_code = refused[1]
    else:
        found.problems.append(f"a stranger's read answered {label(refused)}, not 403")
    creator.patch(f"/memories/{cell_id}", {"lifecycle": {"status": "archived"}})
    if creator.delete(f"/memories/{cell_id}").status != 204:
        found.problems.append("could not delete the probe cell")
        return
    after = creator.get(f"/memories/{cell_id}")
    if after.status == 200 and after.json_object().get("lifecycle", {}).get("status") == "deleted":
        found.deleted_read = "readable"
    elif answer_of(after) in DOCUMENTED_UNKNOWN:
        found.deleted_read = "hidden"
    else:
        found.problems.append(f"reading a deleted cell answered {label(answer_of(after))}")
