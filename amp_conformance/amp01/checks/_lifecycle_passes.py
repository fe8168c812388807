"""Two lifecycle passes over one owner's cells, made once per run (per worker) through ``amp.shared``
and judged by the lifecycle, admin and decay checks.

A pass is store-wide, so a check never judges the store, only its own cells: every cell here has
``decay_rate: 0``, so its score (importance x confidence) and therefore what a correct pass does to it
cannot depend on timing or on how many passes other checks run:

* ``x`` 0.2, ``y`` 0.5 x 0.5, ``z`` 0.29, ``w`` 0.2: below 0.3, stale after the first pass;
* ``high`` 0.9 and ``equal`` exactly 0.3: active after any pass (AMP-LC-04: the threshold is strict);
* ``archived`` 1.0, archived before the first pass; ``deleted`` 1.0, deleted before it.

Beside them, in other owners, the cells of the checks that need a pass or a running decay clock are
made in the same requests, so they cost no pass and no round trip of their own:

* the search twins (``TWINS``, one owner, the same text): importance 0.2 and 0.9, decay_rate 0, stale
  and active after the first pass, for the search status checks (AMP-SRCH-05…07);
* the ranking check's older cell (``RANKED_RATE``, its own owner), and with the second pass's lifts its
  newer one: their clocks run from here, so AMP-SRCH-14's check, later, waits for nothing
  (``ranked_cells``);
* the fast-decaying cell (``Fast``, its own owner), created with the archive and delete: its rate
  makes it cross 0.3 a few round trips later, so its clock runs while the other checks work and the
  decay check (AMP-LC-06, AMP-LC-01) waits only for what is left, usually nothing.

The first pass: create (all at once), archive and delete, one pass, then the owner's lists by status
(at once). The second pass (after the first): scoring PATCHes (at once) lift ``x`` to exactly 0.3 and
``y`` to 0.9 (a list of the stale cells follows while no scheduled pass is likely), one pass, the
owner's lists again. Requests sent at once are independent of each other, so a server answering
slowly costs a round trip for each group, not for each request.

Making them only sends and records: the create, the pass and the lists are steps every check needs
(a failure there blocks them all); the archive, delete and lifts are recorded, and each check that
needs one judges it, so a verdict never depends on which check made the passes. Statuses are seen
through ``GET /memories?owner_id=…&status=…``, never a by-id read (an access). The cells a check
changes afterwards are its own: ``archived`` is PATCHed by AMP-LC-08's check, ``z`` by the stale
PATCH/DELETE probes (``stale_probes``: sent once, judged by that check and AMP-DEL-03's stale one),
``w`` is read by id by AMP-READ-07's, ``high`` is lowered by AMP-PATCH-16's (which
also judges the lift of ``y``) once both passes were made; the others are only listed and searched.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from amp_conformance import Amp01Context
from amp_conformance.amp01.checks._support import (
    LISTED_STATUSES,
    Marks,
    expect_scoring_not_limited,
    expect_step,
    run_pass_reply,
    scheduler_quiet,
    shared_replies,
    shown,
    step_failed,
)
from amp_conformance.amp01.decay import SECONDS_PER_DAY, STALE_THRESHOLD
from amp_conformance.engine.client import Client, Reply

T = TypeVar("T")

#: name -> (importance, confidence), all with decay_rate 0.
CELLS: dict[str, tuple[float, float]] = {
    "x": (0.2, 1.0),
    "y": (0.5, 0.5),
    "z": (0.29, 1.0),
    "w": (0.2, 1.0),
    "high": (0.9, 1.0),
    "equal": (0.3, 1.0),
    "archived": (1.0, 1.0),
    "deleted": (1.0, 1.0),
}
LOW = ("x", "y", "z", "w")
"""The cells the first pass must make stale."""
LIFTS = {"x": 0.3, "y": 0.9}
"""Importance the second pass's scoring PATCHes give (confidence 1.0): x exactly 0.3, y clearly above."""
TWIN_TEXT = "The user prefers Python for backend development"
#: the search twins: name -> importance (confidence 1.0, decay_rate 0), one owner, the same text.
TWINS: dict[str, float] = {"stale": 0.2, "active": 0.9}

RANKED_RATE = 200_000.0
"""decay_rate of the ranking check's cells (per day: about 2.3 per second)."""
FIRST_PASS, BOTH_PASSES = "lifecycle:first-pass", "lifecycle:both-passes"

MIN_CROSSING = 0.6
"""Seconds: the earliest the fast cell (importance x confidence = 1) may cross 0.3 (a margin for a
busy machine between the decay check's read and the pass after it)."""
ROUND_TRIPS = 5
"""The fast cell crosses at least this many of the server's round trips (the slowest of the first
pass's creates) after creation, and after a read: the pass after the read takes about two."""
WAIT_CROSSINGS = 2.4
"""The least time from the fast cell's creation to the decay check's first pass, in crossings: its
score is then exp(-ln(1/0.3) x 2.4) ≈ 0.056, far below 0.3."""


def fast_decay(round_trip: float) -> tuple[float, float]:
    """(decay rate per day, crossing in seconds) for a server answering in ``round_trip`` seconds."""
    crossing = max(MIN_CROSSING, ROUND_TRIPS * round_trip)
    return math.log(1 / STALE_THRESHOLD) * SECONDS_PER_DAY / crossing, crossing


@dataclass(frozen=True)
class Fast:
    """The fast-decaying cell: importance and confidence 1.0, crossing 0.3 ``crossing`` s after it was
    made (``sent``..``made``: the create's request and answer, ``time.monotonic()``)."""

    owner: str
    id: str
    rate: float
    crossing: float
    sent: float
    made: float

    @property
    def ready(self) -> float:
        """When (monotonic) a pass certainly finds it far below 0.3."""
        return self.made + WAIT_CROSSINGS * self.crossing


class Pass:
    """One recorded pass: its reply and the owner's lists by status right after it."""

    def __init__(self, record: dict[str, Any], replies: list[Reply]):
        self.reply = replies[record["pass"]]
        self.lists = {status: replies[at] for status, at in record["lists"].items()}

    @property
    def transitions(self) -> dict[str, Any]:
        transitions: dict[str, Any] = self.reply.json_object()["transitions"]
        return transitions

    def status(self, cell_id: str) -> str | None:
        """The status under which the lists show the cell (None: in none of them)."""
        for status, reply in self.lists.items():
            for cell in reply.json_object().get("results", []):
                if isinstance(cell, dict) and cell.get("id") == cell_id:
                    return str(status)
        return None

    def shown_as(self, cell_id: str) -> str:
        found = self.status(cell_id)
        return (
            f"listed as {shown(found)}" if found else f"in none of the owner's {'/'.join(self.lists)} lists"
        )


class Passes:
    """What the shared passes did, rebuilt from the check's evidence."""

    def __init__(self, value: dict[str, Any], replies: list[Reply]):
        first = value["first"]
        self.owner: str = first["owner"]
        self.ids: dict[str, str] = first["ids"]
        self.quiet: bool = first["quiet"]
        self.first = Pass(first, replies)
        self.archive = replies[first["archive"]]
        archive_at, delete_at = first["delete"]
        self.delete = (replies[archive_at], replies[delete_at] if delete_at is not None else None)
        self.twins_owner: str = first["twins"]["owner"]
        self.twins: dict[str, str] = first["twins"]["ids"]
        self.twin_lists = {status: replies[at] for status, at in first["twins"]["lists"].items()}
        self.fast = Fast(**first["fast"])
        second = value.get("second")
        self.second = Pass(second, replies) if second else None
        self.lifts: dict[str, Reply] = {
            name: replies[at] for name, at in (second or {}).get("lifts", {}).items()
        }
        between = (second or {}).get("between")
        self.between = replies[between] if between is not None else None

    def after_second(self) -> Pass:
        assert self.second is not None, "the check asked for the second pass"
        return self.second

    # steps a check needs ---------------------------------------------------------------------

    def step_stale_after_first(self, amp: Amp01Context, name: str) -> None:
        """The cell is stale after the first pass (AMP-LC-03's rule: a step for everyone else)."""
        cell_id = self.ids[name]
        importance, confidence = CELLS[name]
        expect_step(
            amp,
            self.first.status(cell_id) == "stale",
            f"after one pass the cell with importance {importance} x confidence {confidence} is "
            f"{self.first.shown_as(cell_id)}, not stale",
            self.first.lists["stale"],
            step="a low-score cell stale after one pass",
            requirement="AMP-LC-03",
            expected="stale",
        )

    def step_stale_after_second(self, amp: Amp01Context, name: str) -> None:
        """The cell is still stale after the second pass (AMP-LC-07/LC-11: a step for everyone else)."""
        second = self.after_second()
        cell_id = self.ids[name]
        expect_step(
            amp,
            second.status(cell_id) == "stale",
            f"a cell stale for seconds is {second.shown_as(cell_id)} after a second pass, not stale",
            second.lists["stale"],
            step="a stale cell still stale at the next pass",
            requirement="AMP-LC-07",
            expected="stale",
        )

    def step_lifted(self, amp: Amp01Context, name: str, *, stays_stale: bool = True) -> Reply:
        """The second pass's scoring PATCH of ``name`` was accepted (AMP-PATCH-01) and, with
        ``stays_stale``, left the status alone (AMP-PATCH-16): steps for the checks that lift."""
        self.step_stale_after_first(amp, name)
        reply = self.lifts[name]
        what = f"raising the stale cell's importance to {LIFTS[name]}"
        expect_scoring_not_limited(amp, reply, what)
        expect_step(
            amp,
            reply.status == 200,
            f"{what} answered {reply.status}, not 200",
            reply,
            step=what,
            requirement="AMP-PATCH-01",
            expected="200",
        )
        if stays_stale:
            status = (reply.json_object().get("lifecycle") or {}).get("status")
            expect_step(
                amp,
                status == "stale",
                f"{what} flipped the status at once: the PATCH response says {shown(status)}",
                reply,
                step=what,
                requirement="AMP-PATCH-16",
                expected="stale",
            )
        return reply

    def step_recovered(self, amp: Amp01Context, name: str) -> None:
        """A lifted cell is active after the second pass (AMP-LC-05's rule: a step for everyone else)."""
        second = self.after_second()
        cell_id = self.ids[name]
        expect_step(
            amp,
            second.status(cell_id) == "active",
            f"a stale cell lifted to importance {LIFTS[name]} is {second.shown_as(cell_id)} after the next "
            "pass, not active: stale cells do not recover",
            second.lists["active"],
            step="a stale cell with a high score recovering at a pass",
            requirement="AMP-LC-05",
            expected="active",
        )

    def step_twins(self, amp: Amp01Context) -> tuple[str, str, str]:
        """(owner, active id, stale id) of the search twins, after the first pass listed the 0.2 one
        stale and the 0.9 one active (AMP-LC-03's rule: a step)."""
        listed = {
            status: [c.get("id") for c in reply.json_object().get("results", []) if isinstance(c, dict)]
            for status, reply in self.twin_lists.items()
        }
        active, stale = self.twins["active"], self.twins["stale"]
        expect_step(
            amp,
            stale in listed["stale"] and active in listed["active"],
            "after a pass the cell with importance 0.2 is not listed as stale, or the 0.9 one not as active",
            self.twin_lists["stale"],
            step="a pass making the low-score cell stale",
            requirement="AMP-LC-03",
        )
        return self.twins_owner, active, stale

    def step_deleted(self, amp: Amp01Context) -> str:
        """The deleted cell's archive and DELETE worked (steps under AMP-PATCH-10 and AMP-DEL-01)."""
        archive, delete = self.delete
        if archive.status != 200 or delete is None:
            step_failed(amp, archive, "archiving a cell", "AMP-PATCH-10", "200")
        if delete.status != 204:
            step_failed(amp, delete, "deleting an archived cell", "AMP-DEL-01", "204")
        return self.ids["deleted"]


def together(amp: Amp01Context, calls: list[Callable[[], T]]) -> list[T]:
    """Run independent requests at once (``amp.at_once``: their answers and exchanges in the order
    given): the cells of a pass are prepared, and its lists read, in about one round trip instead of
    one per request. What a call raises (a broken step) is raised here, the first in order."""
    return amp.at_once(*calls)


def _lists(client: Client, owner: str, statuses: tuple[str, ...]) -> list[Callable[[], Reply]]:
    return [partial(client.get, "/memories", params={"owner_id": owner, "status": s}) for s in statuses]


def _checked_lists(amp: Amp01Context, statuses: tuple[str, ...], replies: list[Reply]) -> dict[str, Reply]:
    """The owner's lists by status, each a 200 or a broken step (AMP-LIST-03)."""
    for status, reply in zip(statuses, replies, strict=True):
        if reply.status != 200:
            step_failed(amp, reply, f"listing the owner's {status} cells", "AMP-LIST-03", "200")
    return dict(zip(statuses, replies, strict=True))


def _owner_lists(amp: Amp01Context, owner: str, statuses: tuple[str, ...]) -> dict[str, Reply]:
    """The owner's lists by status (all sent at once), each a 200 or a broken step (AMP-LIST-03)."""
    return _checked_lists(amp, statuses, together(amp, _lists(amp.as_agent("a"), owner, statuses)))


def _archive_then_delete(amp: Amp01Context, cell_id: str) -> tuple[Reply, Reply | None]:
    archived = amp.send_archive(cell_id)
    return archived, amp.as_agent("a").delete(f"/memories/{cell_id}") if archived.status == 200 else None


def _create(
    amp: Amp01Context, owner: str, label: str, importance: float, confidence: float, rate: float
) -> str:
    scoring = {"importance": importance, "confidence": confidence, "decay_rate": rate}
    # each cell its own text (still close to the search query): a search is judged on cells an
    # index can tell apart, not on many exact duplicates an approximate index may merge
    text = TWIN_TEXT if label.startswith("twin") else f"{TWIN_TEXT} ({label} cell)"
    body = {"identity": {"owner_id": owner}, "scoring": scoring, "content": {"text": text}}
    return str(amp.create_cell(body)["id"])


def _create_fast(amp: Amp01Context, owner: str, round_trip: float) -> dict[str, Any]:
    rate, crossing = fast_decay(round_trip)
    sent = time.monotonic()
    cell_id = _create(amp, owner, "fast-decaying", 1.0, 1.0, rate)
    made = time.monotonic()
    return {"owner": owner, "id": cell_id, "rate": rate, "crossing": crossing, "sent": sent, "made": made}


def _make_first(amp: Amp01Context) -> dict[str, Any]:
    marks = Marks(amp)
    owner, twins_owner, fast_owner = amp.owner(), amp.owner(), amp.owner()
    client = amp.as_agent("a")  # the role taken before any request runs beside another
    quiet = scheduler_quiet(amp)
    creates: list[Callable[[], str]] = [
        partial(_create, amp, owner, label, i, c, 0) for label, (i, c) in CELLS.items()
    ]
    creates += [partial(_create, amp, twins_owner, f"twin {n}", i, 1.0, 0) for n, i in TWINS.items()]
    ranked_owner = amp.owner()
    creates.append(partial(_create, amp, ranked_owner, "twin older", 1.0, 1.0, RANKED_RATE))
    made_at, start = time.monotonic(), len(amp.evidence.exchanges)
    made = together(amp, creates)
    ids = dict(zip(CELLS, made[: len(CELLS)], strict=True))
    twins = dict(zip(TWINS, made[len(CELLS) : len(CELLS) + len(TWINS)], strict=True))
    ranked = {"owner": ranked_owner, "id": made[-1], "sent": made_at}
    # the server's round trip for the fast cell's rate: the slowest of the creates (sent at once)
    round_trip = max((e.elapsed for e in amp.evidence.exchanges[start:]), default=0.0)
    steps: list[Callable[[], Any]] = [
        lambda: (amp.send_archive(ids["archived"]), None),
        lambda: _archive_then_delete(amp, ids["deleted"]),
        partial(_create_fast, amp, fast_owner, round_trip),
    ]
    archive, (before_delete, deleted), fast = together(amp, steps)
    reply = run_pass_reply(amp)
    # the lists after the pass, at once
    twin_statuses = LISTED_STATUSES[:2]
    calls = [*_lists(client, owner, LISTED_STATUSES), *_lists(client, twins_owner, twin_statuses)]
    listed = together(amp, calls)
    lists = _checked_lists(amp, LISTED_STATUSES, listed[: len(LISTED_STATUSES)])
    twin_lists = _checked_lists(amp, twin_statuses, listed[len(LISTED_STATUSES) :])
    return {
        "owner": owner,
        "ids": ids,
        "quiet": quiet,
        "archive": marks(archive[0]),
        "delete": [marks(before_delete), None if deleted is None else marks(deleted)],
        "pass": marks(reply),
        "lists": {status: marks(r) for status, r in lists.items()},
        "twins": {
            "owner": twins_owner,
            "ids": twins,
            "lists": {status: marks(r) for status, r in twin_lists.items()},
        },
        "fast": fast,
        "ranked": ranked,
    }


def _make_both(amp: Amp01Context) -> dict[str, Any]:
    marks = Marks(amp)
    first, _ = shared_replies(amp, FIRST_PASS, _make_first)  # its requests come first
    ids, owner = first["ids"], first["owner"]
    client = amp.as_agent("a")

    def lift(name: str, importance: float) -> Reply:
        scoring = {"importance": importance, "confidence": 1.0, "decay_rate": 0}
        return client.patch(f"/memories/{ids[name]}", {"scoring": scoring})

    def newer() -> dict[str, Any]:
        sent = time.monotonic()
        cell_id = _create(amp, first["ranked"]["owner"], "twin newer", 1.0, 1.0, RANKED_RATE)
        return {"id": cell_id, "made": time.monotonic(), "sent": sent}

    calls: list[Callable[[], Any]] = [partial(lift, n, i) for n, i in LIFTS.items()]
    *lifted, ranked_newer = together(amp, [*calls, newer])
    lifts = {name: marks(reply) for name, reply in zip(LIFTS, lifted, strict=True)}
    between = None
    if first["quiet"]:
        between = marks(client.get("/memories", params={"owner_id": owner, "status": "stale"}))
    reply = run_pass_reply(amp)
    # after the second pass only the lists its cells should be in (x, y active; z, w stale)
    shown_lists = _owner_lists(amp, owner, LISTED_STATUSES[:2])  # the archived list is never sent
    lists = {status: marks(listed) for status, listed in shown_lists.items()}
    second = {"pass": marks(reply), "lists": lists, "lifts": lifts, "between": between}
    return {"first": first, "second": second, "ranked_newer": ranked_newer}


def first_pass(amp: Amp01Context) -> Passes:
    """The shared first pass (skips, before anything is sent, when passes are not allowed)."""
    amp.admin()
    value, replies = shared_replies(amp, FIRST_PASS, _make_first)
    return Passes({"first": value}, replies)


def both_passes(amp: Amp01Context) -> Passes:
    """The shared first and second passes (skips, before anything is sent, when not allowed)."""
    amp.admin()
    value, replies = shared_replies(amp, BOTH_PASSES, _make_both)
    return Passes(value, replies)


@dataclass(frozen=True)
class Ranked:
    """The ranking check's cells (importance 1.0, ``RANKED_RATE``, one owner, the same text) as far as
    the shared passes made them: the older one with the first pass, the newer with the second."""

    owner: str
    older: str
    older_sent: float
    newer: str | None = None
    newer_made: float | None = None


def ranked_cells(amp: Amp01Context) -> Ranked | None:
    """The ranking check's cells the shared passes made already (their clocks running since), or None
    when no first pass was made: that check needs no pass, so it never makes one. No other check
    uses these cells."""
    if amp.shared_made(BOTH_PASSES):
        value, _ = shared_replies(amp, BOTH_PASSES, _make_both)
        newer = value["ranked_newer"]
        first = value["first"]["ranked"]
        return Ranked(first["owner"], first["id"], first["sent"], newer["id"], newer["made"])
    if amp.shared_made(FIRST_PASS):
        value, _ = shared_replies(amp, FIRST_PASS, _make_first)
        return Ranked(value["ranked"]["owner"], value["ranked"]["id"], value["ranked"]["sent"])
    return None


STALE_PROBES = "lifecycle:stale-probes"


@dataclass(frozen=True)
class StaleProbes:
    """The refused ways to delete the stale ``z`` after both passes, sent once per run (per worker):
    a DELETE, the owner's stale list, a PATCH to deleted, the stale list again. The DELETE comes first
    and a list follows each probe, so each is judged on the cell as the answer just before it left it
    (a server granting the PATCH cannot disturb the DELETE's verdict)."""

    cell_id: str
    delete: Reply
    after_delete: Reply
    patch: Reply
    after_patch: Reply

    def listed_stale(self, amp: Amp01Context, reply: Reply) -> bool:
        """Whether the stale list ``reply`` shows the cell (anything but 200 is a broken step)."""
        if reply.status != 200:
            step_failed(amp, reply, "listing the owner's stale cells", "AMP-LIST-03", "200")
        results = reply.json_object().get("results", [])
        return any(isinstance(c, dict) and c.get("id") == self.cell_id for c in results)


def _send_stale_probes(amp: Amp01Context, owner: str, cell_id: str) -> dict[str, int]:
    marks = Marks(amp)
    client = amp.as_agent("a")
    path, stale = f"/memories/{cell_id}", {"owner_id": owner, "status": "stale"}
    made = {
        "delete": marks(client.delete(path)),
        "after delete": marks(client.get("/memories", params=stale)),
    }
    made["patch"] = marks(client.patch(path, {"lifecycle": {"status": "deleted"}}))
    made["after patch"] = marks(client.get("/memories", params=stale))
    return made


def stale_probes(amp: Amp01Context, passes: Passes) -> StaleProbes:
    """The shared refused DELETE and PATCH to deleted of ``z`` (the caller judged it stale after both
    passes): AMP-DEL-03's stale check and the lifecycle check of a stale cell judge the same answers."""
    cell_id = passes.ids["z"]
    made, replies = shared_replies(
        amp, STALE_PROBES, partial(_send_stale_probes, owner=passes.owner, cell_id=cell_id)
    )
    return StaleProbes(
        cell_id, *(replies[made[label]] for label in ("delete", "after delete", "patch", "after patch"))
    )


def stale_after_both(amp: Amp01Context) -> Passes | None:
    """The shared passes when they were made already (never made here) and left ``z`` stale after each:
    a check with a stale cell of its own to fall back on uses them instead (serial: no pass between)."""
    if not amp.shared_made(BOTH_PASSES):
        return None
    passes = both_passes(amp)
    cell_id = passes.ids["z"]
    if passes.first.status(cell_id) != "stale" or passes.after_second().status(cell_id) != "stale":
        return None
    return passes


def listed_status(amp: Amp01Context, owner: str, cell_id: str, expected: str) -> str | None:
    """The cell's status as the owner's lists show it, asking with ``status=expected`` first (one
    request when the cell is where it should be); None when no list shows it. Never a by-id read."""
    client = amp.as_agent("a")
    for status in (expected, *(s for s in LISTED_STATUSES if s != expected)):
        reply = client.get("/memories", params={"owner_id": owner, "status": status})
        if reply.status != 200:
            step_failed(amp, reply, f"listing the owner's {status} cells", "AMP-LIST-03", "200")
        results = reply.json_object().get("results", [])
        if any(isinstance(c, dict) and c.get("id") == cell_id for c in results):
            return status
    return None
