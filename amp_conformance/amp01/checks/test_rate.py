"""The per-cell scoring-PATCH budget (AMP-RATE-01…13, AMP-ERR-06, AMP-CAP-08).

The budget is the one ``/spec`` advertises in ``scoring_patch_limit`` (AMP-CAP-04): ``{max_patches: N,
window_seconds: W}``, or ``null`` for no limit. A claim that is absent skips these checks with a
reason; one that behaviour contradicts fails. Checks that must wait for the window to pass run only
when W is at most 30 s (a P-FAST server); otherwise they skip and say so. Rate tests assume a single
server process (C-36). Every check spends fresh cells, so budgets never carry over between checks;
RATE-01/-02/-03/-08/-12 judge one spent cell, the answers recorded once (``amp.shared``) by whichever
of them runs first, so no judgement depends on how long ago that was (RATE-03 reads the recorded
clock).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from amp_conformance import Amp, check
from amp_conformance.amp01.checks._support import (
    about,
    expect_error,
    expect_refusal,
    expect_refused_as_invalid,
    expect_scoring_not_limited,
    expect_step,
    read_back_of,
    shown,
)
from amp_conformance.engine.client import Client, Reply

DEFAULT_BUDGET = 5
"""The documented default of scoring PATCHes per cell per window (used when the limit is off)."""
MAX_EXHAUSTED = 300
"""Budgets larger than this are not spent by the suite (too many requests for one check)."""
SHORT_WINDOW = 30
"""Window-expiry checks run only when window_seconds is at most this (AMP-RATE-10, C-36)."""


def _limit_claim(amp: Amp) -> dict[str, int] | None:
    """The advertised limit; skips when absent or unusable."""
    if "scoring_patch_limit" not in amp.spec:
        amp.skip("/spec makes no scoring_patch_limit claim")
    claim = amp.spec["scoring_patch_limit"]
    if claim is None:
        return None
    usable = isinstance(claim, dict) and all(
        isinstance(claim.get(k), int) and not isinstance(claim.get(k), bool) and claim[k] > 0
        for k in ("max_patches", "window_seconds")
    )
    if not usable:
        amp.skip(f"/spec scoring_patch_limit {shown(claim)} is not usable (AMP-CAP-02 reports it)")
    return {"max_patches": int(claim["max_patches"]), "window_seconds": int(claim["window_seconds"])}


def _limited(amp: Amp) -> tuple[int, int]:
    """(N, W) of an advertised limit; skips when the limit is off or too large to spend."""
    claim = _limit_claim(amp)
    if claim is None:
        amp.skip("/spec says scoring_patch_limit is null (no limit): AMP-RATE-11 checks that instead")
    budget, window = claim["max_patches"], claim["window_seconds"]
    if budget > MAX_EXHAUSTED:
        amp.skip(
            f"max_patches {budget} is more than the {MAX_EXHAUSTED} PATCHes this suite spends on one cell"
        )
    return budget, window


def _short_window(amp: Amp) -> tuple[int, int]:
    budget, window = _limited(amp)
    if window > SHORT_WINDOW:
        amp.skip(
            f"window_seconds is {window}: waiting for the window to pass needs a server with a window of at "
            f"most {SHORT_WINDOW} s (on the reference server, e.g. AMP_SCORING_PATCH_WINDOW_SECONDS=3)"
        )
    return budget, window


def _scoring(index: int) -> dict[str, Any]:
    """A valid, non-empty scoring change (a different importance each time, always >= 0.3)."""
    return {"scoring": {"importance": round(0.3 + (index % 60) / 100, 2)}}


def _spend(amp: Amp, client: Client, cell_id: str, count: int, start: int = 0) -> None:
    """``count`` scoring PATCHes, each of which must be accepted (a 429 is a broken step, see
    ``expect_scoring_not_limited``)."""
    for index in range(start, start + count):
        reply = client.patch(f"/memories/{cell_id}", _scoring(index))
        what = f"scoring PATCH {index + 1} (within the advertised budget of the cell)"
        expect_scoring_not_limited(amp, reply, what)
        amp.expect_status(reply, 200, what=what)


def _fresh_cell_takes(amp: Amp, budget: int) -> bool:
    """Whether a fresh cell accepts all ``budget`` scoring PATCHes (only asked once something is off)."""
    fresh = amp.create_cell()
    client = amp.as_agent("a")
    return all(client.patch(f"/memories/{fresh['id']}", _scoring(i)).status == 200 for i in range(budget))


def _exhausted(amp: Amp, reply: Reply, budget: int) -> None:
    """The scoring PATCH after the spent budget is refused with 429: a step for every check but the
    one asking whether the budget is enforced (AMP-RATE-01)."""
    expect_step(
        amp,
        reply.status == 429,
        f"scoring PATCH {budget + 1}, one over the advertised budget of {budget}, answered "
        f"{reply.status}, not 429",
        reply,
        step="exhausting the cell's scoring budget",
        requirement="AMP-RATE-01",
        expected="429",
    )
    with about("AMP-RATE-01"):
        expect_error(amp, reply, 429, "RATE_LIMITED")


def _retry_after(amp: Amp, reply: Reply, window: int, budget: int) -> int:
    """The refusal is 429 RATE_LIMITED whose Retry-After (1..W) equals details.retry_after_seconds.

    Retry-After is AMP-ERR-06's (present) and AMP-RATE-02's (its value); other checks that read it
    are blocked when it is broken."""
    _exhausted(amp, reply, budget)
    step = "reading the 429's Retry-After"
    header = reply.headers.get("retry-after")
    missing = "the 429 has no Retry-After header"
    expect_step(amp, header is not None, missing, reply, step=step, requirement="AMP-ERR-06")
    assert header is not None
    expect_step(
        amp,
        header.strip().isdigit(),
        f"Retry-After {shown(header)} is not a whole number of seconds",
        reply,
        step=step,
        requirement="AMP-RATE-02",
    )
    seconds = int(header.strip())
    expect_step(
        amp,
        1 <= seconds <= window,
        f"Retry-After {seconds} is outside 1..window_seconds ({window})",
        reply,
        step=step,
        requirement="AMP-RATE-02",
        expected=f"1..{window}",
    )
    details = reply.json_object()["error"].get("details")
    detail = details.get("retry_after_seconds") if isinstance(details, dict) else None
    expect_step(
        amp,
        detail == seconds,
        f"error.details.retry_after_seconds is {shown(detail)}, but the Retry-After header says {seconds}",
        reply,
        step=step,
        requirement="AMP-RATE-02",
    )
    return seconds


def _refused(amp: Amp, client: Client, cell_id: str, index: int, window: int, budget: int) -> int:
    reply = client.patch(f"/memories/{cell_id}", _scoring(index))
    return _retry_after(amp, reply, window, budget)


@dataclass
class _Spent:
    """One fresh cell's budget spent, then refused, as positions among the shared step's exchanges."""

    spent: list[int]
    """The scoring PATCHes within the budget, in order (the step stops at the first that is not 200)."""
    stranger: int | None = None
    """An agent without write access trying a scoring PATCH just before the budget's last (AMP-RATE-08)."""
    stranger_spent: int | None = None
    """The same agent trying again once the budget is spent (AMP-RATE-08)."""
    refused: int | None = None
    """The scoring PATCH one over the budget."""
    seconds: float = 0.0
    """From sending the first scoring PATCH to the refusal's answer (AMP-RATE-03's clock)."""
    before: int | None = None
    """A read of the cell after the refusal, before the next probe."""
    mixed: int | None = None
    """A scoring PATCH over the budget that also carries content (AMP-RATE-12)."""
    after: int | None = None
    """A read of the cell after the mixed PATCH."""


def _spend_once(amp: Amp) -> _Spent:
    """Spend a fresh cell's advertised budget, an agent without write access trying once just before
    its last PATCH and once after it (AMP-RATE-08), then probe past it: once with a scoring-only PATCH
    (the refusal AMP-RATE-01..03 judge) and once with scoring and content, between two reads
    (AMP-RATE-12). Nothing is judged here: each check judges the answers it is about."""
    budget, _ = _limited(amp)
    base = len(amp.evidence.exchanges)
    cell = amp.create_cell()
    client = amp.as_agent("a")
    # without a second agent (keys mode, one key) RATE-08 skips, as it always has; the others judge on
    stranger = amp.as_agent("b") if amp.optional_agent("b") is not None else None
    path = f"/memories/{cell['id']}"

    def position(reply: Reply) -> int:
        mine = amp.evidence.exchanges[base:]
        return next(i for i, exchange in enumerate(mine) if exchange is reply.exchange)

    made = _Spent(spent=[])
    first = time.monotonic()
    for index in range(budget):
        if index == budget - 1 and stranger is not None:
            made.stranger = position(stranger.patch(path, _scoring(0)))
        reply = client.patch(path, _scoring(index))
        made.spent.append(position(reply))
        if reply.status != 200:
            return made
    if stranger is not None:
        made.stranger_spent = position(stranger.patch(path, _scoring(0)))
    made.refused = position(client.patch(path, _scoring(budget)))
    made.seconds = time.monotonic() - first
    made.before = position(client.get(path))
    mixed = {"scoring": {"importance": 0.4}, "content": {"text": "must not be stored"}}
    made.mixed = position(client.patch(path, mixed))
    made.after = position(client.get(path))
    return made


@dataclass
class _SpentReplies:
    stranger_spent: Reply
    refused: Reply
    seconds: float
    before: Reply
    mixed: Reply
    after: Reply


def _spent_cell(amp: Amp, stranger: Callable[[Reply], None] | None = None) -> tuple[int, int, _SpentReplies]:
    """(N, W) and the shared spent cell's answers, its budget's PATCHes judged as :func:`_spend` does
    (``stranger`` judges the stranger's attempt, where it was sent: before the budget's last PATCH)."""
    budget, window = _limited(amp)
    start = len(amp.evidence.exchanges)
    made = amp.shared("rate:spent-cell", _spend_once)
    if stranger is not None:
        amp.agent("b")  # the stranger's attempts need a second agent: skip without one
    replies = [Reply(exchange) for exchange in amp.evidence.exchanges[start:]]
    for index, at in enumerate(made.spent):
        reply = replies[at]
        what = f"scoring PATCH {index + 1} (within the advertised budget of the cell)"
        if made.stranger is not None and index == budget - 1:
            if stranger is not None:
                stranger(replies[made.stranger])
            if reply.status == 429 and _fresh_cell_takes(amp, budget):
                expect_step(
                    amp,
                    False,
                    f"{what} answered 429 after a stranger's refused scoring PATCH, though a fresh cell "
                    f"takes all {budget}: the refused attempt was counted against the budget",
                    reply,
                    step="spending the cell's budget after a stranger's refused attempt",
                    requirement="AMP-RATE-08",
                    expected="200",
                )
        expect_scoring_not_limited(amp, reply, what)
        amp.expect_status(reply, 200, what=what)
    assert None not in (made.refused, made.before, made.mixed, made.after)  # every spending PATCH was 200
    return (
        budget,
        window,
        _SpentReplies(
            stranger_spent=replies[made.stranger_spent or 0],
            refused=replies[made.refused or 0],
            seconds=made.seconds,
            before=replies[made.before or 0],
            mixed=replies[made.mixed or 0],
            after=replies[made.after or 0],
        ),
    )


@check("AMP-RATE-01", "AMP-CAP-08", "AMP-CAP-04")
def test_exactly_max_patches_scoring_patches_are_accepted(amp: Amp) -> None:
    """Exactly max_patches scoring PATCHes of one cell are accepted; the next is 429 RATE_LIMITED."""
    budget, _, spent = _spent_cell(amp)
    _exhausted(amp, spent.refused, budget)


@check("AMP-RATE-02", "AMP-ERR-06")
def test_429_carries_a_matching_retry_after(amp: Amp) -> None:
    """A 429 has Retry-After in 1..window_seconds, equal to error.details.retry_after_seconds."""
    budget, window, spent = _spent_cell(amp)
    _retry_after(amp, spent.refused, window, budget)


@check("AMP-RATE-03")
def test_retry_after_is_the_time_until_the_oldest_edit_leaves(amp: Amp) -> None:
    """Retry-After is about window_seconds minus the age of the oldest counted edit (2 s tolerance)."""
    budget, window, spent = _spent_cell(amp)
    seconds = _retry_after(amp, spent.refused, window, budget)
    expected = window - spent.seconds
    amp.expect(
        abs(seconds - expected) <= 2.0,
        f"Retry-After {seconds} is within 2 s of the time left for the oldest edit ({expected:.1f} s)",
        spent.refused,
        expected=f"{expected:.1f} ± 2",
    )


RETRIES = 4
RETRY_GAP = 0.3
"""Refused retries after a 429, this many seconds apart (AMP-RATE-04); the first refusal and the last
retry are more than a second apart, so a wait that counts down announces less on the last (AMP-RATE-03)."""


def _expect_no_growth(amp: Amp, previous: int, seconds: int) -> None:
    amp.expect(
        seconds <= previous,
        f"Retry-After grew from {previous} to {seconds} after a refused retry: refused attempts count",
        expected=f"<= {previous}",
    )


@check("AMP-RATE-03")
def test_retry_after_counts_down(amp: Amp) -> None:
    """Retry-After shrinks between two refusals over a second apart: it is the time left, not a fixed wait."""
    budget, window = _limited(amp)
    if window <= SHORT_WINDOW:
        amp.skip(
            f"window_seconds is {window}: the refused retries this check compares are sent on windows "
            f"over {SHORT_WINDOW} s (on short ones AMP-RATE-04 and -10 follow the window to its end)"
        )
    budget, made, replies = _two_cells(amp)
    _judge_spend(amp, [replies[at] for at in made.spent], budget, NULL_SENT)
    assert made.over is not None and made.retries  # every PATCH of the budget was 200
    first = _retry_after(amp, replies[made.over], window, budget)
    last_reply = replies[made.retries[-1]]
    last = _retry_after(amp, last_reply, window, budget)
    gap = RETRIES * RETRY_GAP
    amp.expect(
        last < first,
        f"Retry-After was {first} on the first refusal and still {last} on a retry at least {gap:.1f} s "
        "later: the wait announced does not count down to the oldest edit leaving the window",
        last_reply,
        expected=f"< {first}",
    )


@check("AMP-RATE-04", deadline=SHORT_WINDOW + 30)
def test_refused_attempts_are_not_recorded(amp: Amp) -> None:
    """Retrying after a 429 never pushes the deadline back; on a short window the announced wait suffices."""
    budget, window = _limited(amp)
    if window > SHORT_WINDOW:
        # long windows: only the retries' Retry-After is judged, on the shared first cell's retries
        budget, made, replies = _two_cells(amp)
        _judge_spend(amp, [replies[at] for at in made.spent], budget, NULL_SENT)
        assert made.over is not None  # every PATCH of the budget was 200
        previous = _retry_after(amp, replies[made.over], window, budget)
        for at in made.retries:
            seconds = _retry_after(amp, replies[at], window, budget)
            _expect_no_growth(amp, previous, seconds)
            previous = seconds
        amp.note(f"window_seconds is {window}: the recovery after hammering is checked only on short windows")
        return
    cell = amp.create_cell()
    # a control cell, spent at the same time and never hammered, tells a window that never frees
    # (AMP-RATE-10) from refused retries that count (this check's question)
    control = amp.create_cell()
    client = amp.as_agent("a")
    _spend(amp, client, cell["id"], budget)
    _spend(amp, client, control["id"], budget)
    announced = _refused(amp, client, cell["id"], budget, window, budget)
    free_at = time.monotonic() + announced
    previous = announced
    for attempt in range(RETRIES):
        time.sleep(RETRY_GAP)
        seconds = _refused(amp, client, cell["id"], budget + 1 + attempt, window, budget)
        _expect_no_growth(amp, previous, seconds)
        previous = seconds
    # Hammer again just before the announced time, then the announced wait must be enough.
    hammer_at = free_at - min(1.0, window / 2)
    time.sleep(max(0.0, hammer_at - time.monotonic()))
    for attempt in range(budget + 1):
        reply = client.patch(f"/memories/{cell['id']}", _scoring(attempt))
        if reply.status == 200:
            return  # the oldest edit already left: nothing more to show
        _retry_after(amp, reply, window, budget)
    time.sleep(max(0.0, free_at - time.monotonic()) + 0.3)
    freed = client.patch(f"/memories/{control['id']}", _scoring(budget))
    expect_step(
        amp,
        freed.status == 200,
        f"a scoring PATCH on a cell never hammered answered {freed.status} after the announced "
        f"{announced} s: the window does not free the budget",
        freed,
        step="the window freeing a spent budget",
        requirement="AMP-RATE-10",
        expected="200",
    )
    reply = client.patch(f"/memories/{cell['id']}", _scoring(0))
    amp.expect_status(
        reply,
        200,
        what=f"a scoring PATCH after the announced {announced} s, despite refused retries meanwhile",
    )


def _judge_spend(amp: Amp, replies: list[Reply], budget: int, counted: tuple[str, str]) -> None:
    """Recorded spending PATCHes judged as :func:`_spend` does. ``counted`` is (what was sent to the cell
    before, the rule saying it uses no budget): a 429 while a fresh cell takes the whole budget shows
    that it was counted, that rule's finding (a step for a check about something else)."""
    for index, reply in enumerate(replies):
        what = f"scoring PATCH {index + 1} (within the advertised budget of the cell)"
        if reply.status == 429 and _fresh_cell_takes(amp, budget):
            expect_step(
                amp,
                False,
                f"{what} answered 429 after {counted[0]}, though a fresh cell takes all {budget}: it was "
                "counted against the scoring budget",
                reply,
                step=f"spending the cell's budget after {counted[0]}",
                requirement=counted[1],
                expected="200",
            )
        expect_scoring_not_limited(amp, reply, what)
        amp.expect_status(reply, 200, what=what)


NULL_SENT = ('a {"scoring": null} PATCH', "AMP-RATE-06")
NON_SCORING_SENT = (
    "a PATCH of content, provenance, access_policy and lifecycle.expires_at (no scoring)",
    "AMP-RATE-05",
)


@dataclass
class _TwoCells:
    """Two fresh cells, as positions among the shared step's exchanges: the first's budget spent after
    a {"scoring": null} PATCH, refused, then sent {"scoring": null} again; then the second sent a PATCH
    without scoring, its whole budget, and the same PATCH again."""

    null_before: int = 0
    spent: list[int] = field(default_factory=list)
    over: int | None = None
    null_spent: int | None = None
    body_before: int = 0
    other: list[int] = field(default_factory=list)
    body_spent: int | None = None
    retries: list[int] = field(default_factory=list)
    """On a long window, refused retries of the first cell after its refusal (AMP-RATE-04)."""


def _two_cells_once(amp: Amp) -> _TwoCells:
    """One cell per budget (AMP-RATE-07 needs both; -06 asks its question of the first, -05 of the
    second, each with one probe before and one after the spend; on a long window -04 retries the first
    once refused). Nothing is judged here."""
    budget, window = _limited(amp)
    base = len(amp.evidence.exchanges)
    first, second = amp.create_cell(), amp.create_cell()
    client = amp.as_agent("a")
    one, two = f"/memories/{first['id']}", f"/memories/{second['id']}"

    def position(reply: Reply) -> int:
        mine = amp.evidence.exchanges[base:]
        return next(i for i, exchange in enumerate(mine) if exchange is reply.exchange)

    made = _TwoCells(null_before=position(client.patch(one, {"scoring": None})))
    for index in range(budget):
        reply = client.patch(one, _scoring(index))
        made.spent.append(position(reply))
        if reply.status != 200:
            break
    else:
        made.over = position(client.patch(one, _scoring(budget)))
        made.null_spent = position(client.patch(one, {"scoring": None}))
        if window > SHORT_WINDOW:  # a short window's check retries on cells of its own
            for attempt in range(RETRIES):
                time.sleep(RETRY_GAP)
                made.retries.append(position(client.patch(one, _scoring(budget + 1 + attempt))))
    body: dict[str, Any] = {
        "content": {"text": "changed text"},
        "provenance": {"source_type": "document"},
        "access_policy": {"readable_by": [amp.agent_id("a")]},
        "lifecycle": {"expires_at": "2030-01-01T00:00:00Z"},
    }
    made.body_before = position(client.patch(two, body))
    for index in range(budget):
        reply = client.patch(two, _scoring(index))
        made.other.append(position(reply))
        if reply.status != 200:
            break
    else:
        made.body_spent = position(client.patch(two, body))
    return made


def _two_cells(amp: Amp) -> tuple[int, _TwoCells, list[Reply]]:
    budget, _ = _limited(amp)
    start = len(amp.evidence.exchanges)
    made = amp.shared("rate:two-cells", _two_cells_once)
    return budget, made, [Reply(exchange) for exchange in amp.evidence.exchanges[start:]]


@check("AMP-RATE-05")
def test_non_scoring_patches_cost_nothing(amp: Amp) -> None:
    """PATCHes without scoring use no budget and succeed on a cell whose budget is spent."""
    budget, made, replies = _two_cells(amp)
    # every non-scoring section in one body: were any of them counted, the last PATCH of the budget
    # would be refused; were any refused on a spent budget, the PATCH after it would be
    what = NON_SCORING_SENT[0]
    amp.expect_status(replies[made.body_before], 200, what=what)
    _judge_spend(amp, [replies[at] for at in made.other], budget, NON_SCORING_SENT)
    assert made.body_spent is not None  # every PATCH of the budget was 200
    reply = replies[made.body_spent]
    amp.expect_status(reply, 200, what=f"{what} on a cell whose scoring budget is spent")


@check("AMP-RATE-06")
def test_scoring_null_costs_nothing(amp: Amp) -> None:
    """{"scoring": null} uses no budget and succeeds on a cell whose budget is spent."""
    budget, made, replies = _two_cells(amp)
    # one is enough: were it counted, the last PATCH of the budget would be refused
    amp.expect_status(replies[made.null_before], 200, what='a {"scoring": null} PATCH')
    _judge_spend(amp, [replies[at] for at in made.spent], budget, NULL_SENT)
    assert made.null_spent is not None  # every PATCH of the budget was 200
    reply = replies[made.null_spent]
    amp.expect_status(reply, 200, what='{"scoring": null} on a cell whose scoring budget is spent')


@check("AMP-RATE-07")
def test_budget_belongs_to_one_cell(amp: Amp) -> None:
    """Spending one cell's budget leaves another cell's budget whole."""
    budget, made, replies = _two_cells(amp)
    _judge_spend(amp, [replies[at] for at in made.spent], budget, NULL_SENT)
    assert made.over is not None  # every PATCH of the budget was 200
    _exhausted(amp, replies[made.over], budget)
    for index, at in enumerate(made.other):
        reply = replies[at]
        if reply.status == 429 and index == budget - 1 and _fresh_cell_takes(amp, budget):
            expect_step(  # only the last can be the PATCH without scoring sent before, counted
                amp,
                False,
                f"scoring PATCH {budget} of another cell answered 429 after {NON_SCORING_SENT[0]}, though a "
                f"fresh cell takes all {budget}: it was counted against the scoring budget",
                reply,
                step=f"spending another cell's budget after {NON_SCORING_SENT[0]}",
                requirement=NON_SCORING_SENT[1],
                expected="200",
            )
        amp.expect(
            reply.status == 200,
            f"scoring PATCH {index + 1} of another cell answered {reply.status} once the first cell's "
            "budget was spent: the budget is not the cell's own",
            reply,
            expected="200",
        )


@check("AMP-RATE-08", "AMP-PATCH-20")
def test_access_is_checked_before_the_budget(amp: Amp) -> None:
    """A caller without write access gets 403 (never 429) and its attempts use no budget."""

    def refused(reply: Reply) -> None:
        with about("AMP-RATE-08"):  # were it counted, the writer's last PATCH of the budget would be refused
            expect_refusal(amp, reply, "a scoring PATCH by an agent without write access")

    _, _, spent = _spent_cell(amp, stranger=refused)
    with about("AMP-RATE-08"):
        expect_refusal(
            amp, spent.stranger_spent, "a stranger's scoring PATCH on a cell whose budget is spent"
        )


@dataclass
class _Agents:
    """A fresh cell owned by agent "o", writable by "w", created by "a" (a plain cell of "a" when fewer
    agents are given), as positions: a scoring PATCH refused with 422, the budget spent (half by the
    owner, the rest by the creator), and the writer's scoring PATCH past it."""

    split: bool
    invalid: int = 0
    spent: list[int] = field(default_factory=list)
    writer: int | None = None


INVALID_SENT = ("a scoring PATCH refused with 422", "AMP-RATE-13")


def _agents_once(amp: Amp) -> _Agents:
    budget, _ = _limited(amp)
    base = len(amp.evidence.exchanges)
    creator = amp.as_agent("a")
    owner, writer = amp.optional_agent("o"), amp.optional_agent("w")
    made = _Agents(split=owner is not None and writer is not None)
    overrides: dict[str, Any] = {}
    if owner is not None and writer is not None:
        overrides = {
            "identity": {"owner_id": owner.id, "owner_type": "agent"},
            "access_policy": {"writable_by": [writer.id], "readable_by": [writer.id]},
        }
    cell = amp.create_cell(overrides)
    path = f"/memories/{cell['id']}"

    def position(reply: Reply) -> int:
        mine = amp.evidence.exchanges[base:]
        return next(i for i, exchange in enumerate(mine) if exchange is reply.exchange)

    made.invalid = position(creator.patch(path, {"scoring": {"importance": 2}}))
    share = budget // 2 if made.split else 0
    for index in range(budget):
        client = amp.as_agent("o") if index < share else creator
        reply = client.patch(path, _scoring(index))
        made.spent.append(position(reply))
        if reply.status != 200:
            return made
    if made.split:
        made.writer = position(amp.as_agent("w").patch(path, _scoring(budget)))
    return made


def _agents(amp: Amp) -> tuple[int, _Agents, list[Reply]]:
    budget, _ = _limited(amp)
    start = len(amp.evidence.exchanges)
    made = amp.shared("rate:agents", _agents_once)
    return budget, made, [Reply(exchange) for exchange in amp.evidence.exchanges[start:]]


@check("AMP-RATE-09")
def test_authorised_agents_share_one_budget(amp: Amp) -> None:
    """Owner, creator and a writable_by agent editing one cell share its single budget."""
    budget, made, replies = _agents(amp)
    for role in ("o", "w"):
        amp.agent(role)  # skips without three agents, as it always has
    _judge_spend(amp, [replies[at] for at in made.spent], budget, INVALID_SENT)
    assert made.writer is not None  # three agents, every PATCH of the budget 200
    expect_error(amp, replies[made.writer], 429, "RATE_LIMITED")


@check("AMP-RATE-10", "AMP-CAP-08", deadline=SHORT_WINDOW + 30)
def test_scoring_patches_are_accepted_again_after_the_window(amp: Amp) -> None:
    """Once the announced Retry-After has passed, scoring PATCHes are accepted again (short windows only)."""
    budget, window = _short_window(amp)
    cell = amp.create_cell()
    client = amp.as_agent("a")
    _spend(amp, client, cell["id"], budget)
    seconds = _refused(amp, client, cell["id"], budget, window, budget)
    time.sleep(seconds + 0.3)
    reply = client.patch(f"/memories/{cell['id']}", _scoring(budget + 1))
    amp.expect_status(
        reply,
        200,
        what=f"a scoring PATCH {seconds} s after the 429 announced that wait",
        requirement="AMP-RATE-10",
    )


@check("AMP-RATE-11", "AMP-CAP-08")
def test_no_scoring_patch_is_refused_when_the_limit_is_off(amp: Amp) -> None:
    """With scoring_patch_limit null, three times the default budget of scoring PATCHes all succeed."""
    if _limit_claim(amp) is not None:
        amp.skip(
            "/spec advertises a scoring_patch_limit: this check needs a server with the limit off "
            "(on the reference server: AMP_SCORING_PATCH_LIMIT=0)"
        )
    cell = amp.create_cell()
    _spend(amp, amp.as_agent("a"), cell["id"], 3 * DEFAULT_BUDGET)


@check("AMP-RATE-12")
def test_a_429_changes_nothing(amp: Amp) -> None:
    """A 429 applies nothing, not even the non-scoring members of the same body."""
    budget, _, spent = _spent_cell(amp)
    before = read_back_of(amp, spent.before)
    _exhausted(amp, spent.mixed, budget)
    after = read_back_of(amp, spent.after)
    for section, key in (("content", "text"), ("lifecycle", "last_updated_at"), ("scoring", "importance")):
        amp.expect(
            after[section][key] == before[section][key],
            f"the refused PATCH changed {section}.{key} from {shown(before[section][key])} "
            f"to {shown(after[section][key])}",
            spent.after,
        )


@check("AMP-RATE-13")
def test_a_scoring_patch_refused_by_validation_uses_no_budget(amp: Amp) -> None:
    """Scoring PATCHes refused with 422 use no budget: max_patches valid ones still succeed afterwards."""
    budget, made, replies = _agents(amp)
    # one is enough: were it counted, the last valid PATCH of the budget would be refused
    expect_refused_as_invalid(amp, replies[made.invalid])
    _judge_spend(amp, [replies[at] for at in made.spent], budget, INVALID_SENT)
