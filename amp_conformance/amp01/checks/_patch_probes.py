"""The PATCH checks' shared probe sequences that checks of other modules judge as well.

``patch:transitions`` (one cell: refused PATCHes, made stale by hand, archived, asked back, PATCH to
deleted) is judged by test_patch's transition checks and by the lifecycle check of archived cells
(AMP-LC-08's refused archived -> active): a sequence is sent once per run, by whichever check needs it
first, and every check judges the answers to its own probes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from amp_conformance import Amp
from amp_conformance.engine.client import Reply


def patch(amp: Amp, cell_id: str, body: Any, *, role: str = "a") -> Reply:
    return amp.as_agent(role).patch(f"/memories/{cell_id}", body)


@dataclass
class Probes:
    """What a shared sequence sent: its cell (the 201 body) and each request's position, by label,
    among the sequence's exchanges (the replies are rebuilt from them in every check)."""

    cell: dict[str, Any]
    at: dict[str, int]


class Recorder:
    """Notes, by label, where each request of a sequence stands among the sequence's exchanges."""

    def __init__(self, amp: Amp):
        self.amp = amp
        self.base = len(amp.evidence.exchanges)
        self.at: dict[str, int] = {}

    def __call__(self, label: str, reply: Reply) -> Reply:
        mine = self.amp.evidence.exchanges[self.base :]
        self.at[label] = next(i for i, exchange in enumerate(mine) if exchange is reply.exchange)
        return reply


def probes(amp: Amp, name: str, make: Callable[[Amp], Probes]) -> tuple[dict[str, Any], dict[str, Reply]]:
    """The shared sequence ``name`` (sent once per run, shown as evidence in every check using it):
    its cell and its replies by label."""
    start = len(amp.evidence.exchanges)
    made = amp.shared(name, make)
    exchanges = amp.evidence.exchanges[start:]
    return made.cell, {label: Reply(exchanges[at]) for label, at in made.at.items()}


def get(amp: Amp, cell_id: str) -> Reply:
    return amp.as_agent("a").get(f"/memories/{cell_id}")


def make_stale(amp: Amp, cell_id: str) -> Reply:
    """Try the manual active -> stale write (AMP-PATCH-11, MAY); the caller decides what a refusal means."""
    return patch(amp, cell_id, {"lifecycle": {"status": "stale"}})


#: The valid member a refused PATCH carries beside the member that gets it refused: a server that
#: stores it broke AMP-PATCH-12 (a 409 leaves the cell unchanged) or AMP-PATCH-17 (a 422 changes nothing).
REFUSED_409_TEXT = "applied by the PATCH refused with 409"
REFUSED_422_TEXT = "applied by the PATCH refused with 422"
REFUSED_403_TEXT = "applied by the PATCH refused with 403"


def transition_probes(amp: Amp) -> Probes:
    """One cell, sent content with an invalid importance, then content by a stranger, read, made stale by
    hand, archived (a status-only body), asked back to active and to stale (one read after both), sent
    content with a return to active, read, and last sent PATCH to deleted and read. A wrongly allowed
    transition comes after the probes it could disturb; each refusal is judged against the answer just
    before it."""
    record = Recorder(amp)
    cell = amp.create_cell(content={"text": "original"})
    cell_id = cell["id"]
    invalid = {"content": {"text": REFUSED_422_TEXT}, "scoring": {"importance": 2}}
    record("refused 422", patch(amp, cell_id, invalid))
    edit = {"content": {"text": REFUSED_403_TEXT}}
    if amp.optional_agent("stranger") is not None:  # without a second agent, PATCH-13 skips
        record("refused 403", patch(amp, cell_id, edit, role="stranger"))
    record("read after 422 and 403", get(amp, cell_id))
    record("stale", make_stale(amp, cell_id))
    record("archive the stale cell", patch(amp, cell_id, {"lifecycle": {"status": "archived"}}))
    for target in ("active", "stale"):
        record(f"archived -> {target}", patch(amp, cell_id, {"lifecycle": {"status": target}}))
    # one read shows both: either transition applied leaves the cell out of 'archived'
    record("read after archived -> active and stale", get(amp, cell_id))
    returned = {"content": {"text": REFUSED_409_TEXT}, "lifecycle": {"status": "active"}}
    record("refused 409", patch(amp, cell_id, returned))
    record("read after 409", get(amp, cell_id))
    # last: a server that grants it deletes the cell (AMP-PATCH-12)
    record("archived -> deleted", patch(amp, cell_id, {"lifecycle": {"status": "deleted"}}))
    record("read after archived -> deleted", get(amp, cell_id))
    return Probes(cell, record.at)


def transitions(amp: Amp) -> tuple[dict[str, Any], dict[str, Reply]]:
    return probes(amp, "patch:transitions", transition_probes)
