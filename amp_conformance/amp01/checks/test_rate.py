"""The per-cell scoring-PATCH budget (AMP-RATE-01…13, AMP-ERR-06, AMP-CAP-08).

The budget is the one ``/spec`` advertises in ``scoring_patch_limit`` (AMP-CAP-04): ``{max_patches: N,
window_seconds: W}``, or ``null`` for no limit. A claim that is absent skips these checks with a
reason; one that behaviour contradicts fails. Checks that must wait for the window to pass run only
when W is at most 30 s (a P-FAST server); otherwise they skip and say so. Rate tests assume a single
server process (C-36). Budgets never carry over between checks: the checks that need no wait judge
two fresh cells spent one after the other, the answers recorded once (``amp.shared``: ``rate:cells``)
by whichever of them runs first, so no judgement depends on how long ago that was (RATE-03 reads the
recorded clock); the checks that wait for a window spend cells of their own. What is sent to a cell
before its budget must use none of it, each its own rule: on a 429 within a budget, fresh cells tell
which one was counted, so the finding is filed under that rule.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from amp_conformance import Amp01Context, check
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


def _limit_claim(amp: Amp01Context) -> dict[str, int] | None:
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


def _limited(amp: Amp01Context) -> tuple[int, int]:
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


def _short_window(amp: Amp01Context) -> tuple[int, int]:
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


def _spend(amp: Amp01Context, client: Client, cell_id: str, count: int, start: int = 0) -> None:
    """``count`` scoring PATCHes, each of which must be accepted (a 429 is a broken step, see
    ``expect_scoring_not_limited``)."""
    for index in range(start, start + count):
        reply = client.patch(f"/memories/{cell_id}", _scoring(index))
        what = f"scoring PATCH {index + 1} (within the advertised budget of the cell)"
        expect_scoring_not_limited(amp, reply, what)
        amp.expect_status(reply, 200, what=what)


def _fresh_cell_takes(amp: Amp01Context, budget: int) -> bool:
    """Whether a fresh cell accepts all ``budget`` scoring PATCHes (only asked once something is off)."""
    fresh = amp.create_cell()
    client = amp.as_agent("a")
    return all(client.patch(f"/memories/{fresh['id']}", _scoring(i)).status == 200 for i in range(budget))


def _exhausted(amp: Amp01Context, reply: Reply, budget: int) -> None:
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


def _retry_after(amp: Amp01Context, reply: Reply, window: int, budget: int) -> int:
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


def _refused(amp: Amp01Context, client: Client, cell_id: str, index: int, window: int, budget: int) -> int:
    reply = client.patch(f"/memories/{cell_id}", _scoring(index))
    return _retry_after(amp, reply, window, budget)


#: What was sent to a cell before its budget's PATCHes, each with the rule saying it uses no budget: a
#: 429 within the budget while a fresh cell takes the whole budget shows that one of them was counted.
NULL_SENT = ('a {"scoring": null} PATCH', "AMP-RATE-06")
STRANGER_SENT = ("a stranger's refused scoring PATCH", "AMP-RATE-08")
NON_SCORING_SENT = (
    "a PATCH of content, provenance, access_policy and lifecycle.expires_at (no scoring)",
    "AMP-RATE-05",
)
INVALID_SENT = ("a scoring PATCH refused with 422", "AMP-RATE-13")
MIXED = {"scoring": {"importance": 0.4}, "content": {"text": "must not be stored"}}


def _non_scoring(amp: Amp01Context, readers: list[str]) -> dict[str, Any]:
    """A PATCH of every section but scoring (``readers``: the readable_by it sets)."""
    return {
        "content": {"text": "changed text"},
        "provenance": {"source_type": "document"},
        "access_policy": {"readable_by": readers},
        "lifecycle": {"expires_at": "2030-01-01T00:00:00Z"},
    }


@dataclass
class _Cells:
    """Two fresh cells, their budgets spent one after the other, as positions among the shared step's
    exchanges (nothing is judged while they are sent).

    The first, a plain cell of agent "a": a {"scoring": null} PATCH (AMP-RATE-06), its budget, agent
    "o" (no access to it) trying a scoring PATCH just before the budget's last and once after it
    (AMP-RATE-08), the scoring PATCH one over the budget (the refusal AMP-RATE-01..03 judge), a read, a
    scoring PATCH over the budget that also carries content and a read (AMP-RATE-12), {"scoring": null}
    on the spent budget and, on a long window, refused retries (AMP-RATE-03, -04).

    The second, owned by agent "o", writable by "w", created by "a" (a plain cell of "a" when fewer
    agents are given): a PATCH without scoring (AMP-RATE-05) and a scoring PATCH refused with 422
    (AMP-RATE-13) by "a", its budget spent (half by the owner, the rest by the creator: AMP-RATE-09),
    the writer's scoring PATCH past it and the PATCH without scoring again. Its budget whole once the
    first's is spent is AMP-RATE-07's question.

    A 429 within a budget, while a fresh cell takes the whole budget, shows that something sent before
    was counted: which one is asked of fresh cells then (:func:`_counted`), so it is filed under the
    rule it breaks."""

    split: bool
    null_before: int = 0
    spent: list[int] = field(default_factory=list)
    """The first cell's scoring PATCHes within the budget, in order (stopped at the first not 200)."""
    stranger: int | None = None
    stranger_spent: int | None = None
    refused: int | None = None
    seconds: float = 0.0
    """From sending the first scoring PATCH to the refusal's answer (AMP-RATE-03's clock)."""
    before: int | None = None
    mixed: int | None = None
    after: int | None = None
    null_spent: int | None = None
    retries: list[int] = field(default_factory=list)
    """On a long window, refused retries of the first cell after everything else (AMP-RATE-03, -04)."""
    body_before: int = 0
    invalid: int = 0
    other: list[int] = field(default_factory=list)
    """The second cell's scoring PATCHes within the budget, in order (stopped at the first not 200)."""
    writer: int | None = None
    body_spent: int | None = None


def _cells_once(amp: Amp01Context) -> _Cells:
    budget, window = _limited(amp)
    base = len(amp.evidence.exchanges)
    client = amp.as_agent("a")
    # "o" is a stranger to the first cell and the owner of the second; without a second agent (keys
    # mode, one key) RATE-08 skips, without a third RATE-09, as they always have
    owner, writer = amp.optional_agent("o"), amp.optional_agent("w")
    made = _Cells(split=owner is not None and writer is not None)
    overrides: dict[str, Any] = {}
    readers = [amp.agent_id("a")]
    if owner is not None and writer is not None:
        overrides = {
            "identity": {"owner_id": owner.id, "owner_type": "agent"},
            "access_policy": {"writable_by": [writer.id], "readable_by": [writer.id]},
        }
        readers = [amp.agent_id("a"), writer.id]
    first, second = amp.create_cell(), amp.create_cell(overrides)
    one, two = f"/memories/{first['id']}", f"/memories/{second['id']}"
    stranger = amp.as_agent("o") if owner is not None else None

    def position(reply: Reply) -> int:
        mine = amp.evidence.exchanges[base:]
        return next(i for i, exchange in enumerate(mine) if exchange is reply.exchange)

    made.null_before = position(client.patch(one, {"scoring": None}))
    started = time.monotonic()
    for index in range(budget):
        if index == budget - 1 and stranger is not None:
            made.stranger = position(stranger.patch(one, _scoring(0)))
        reply = client.patch(one, _scoring(index))
        made.spent.append(position(reply))
        if reply.status != 200:
            break
    else:
        if stranger is not None:
            made.stranger_spent = position(stranger.patch(one, _scoring(0)))
        made.refused = position(client.patch(one, _scoring(budget)))
        made.seconds = time.monotonic() - started
        made.before = position(client.get(one))
        made.mixed = position(client.patch(one, MIXED))
        made.after = position(client.get(one))
        made.null_spent = position(client.patch(one, {"scoring": None}))
        if window > SHORT_WINDOW:  # a short window's checks retry on cells of their own
            for attempt in range(RETRIES):
                time.sleep(RETRY_GAP)
                made.retries.append(position(client.patch(one, _scoring(budget + 1 + attempt))))
    body = _non_scoring(amp, readers)
    made.body_before = position(client.patch(two, body))
    made.invalid = position(client.patch(two, {"scoring": {"importance": 2}}))
    share = budget // 2 if made.split else 0
    for index in range(budget):
        spender = amp.as_agent("o") if index < share else client
        reply = spender.patch(two, _scoring(index))
        made.other.append(position(reply))
        if reply.status != 200:
            break
    else:
        if made.split:
            made.writer = position(amp.as_agent("w").patch(two, _scoring(budget)))
        made.body_spent = position(client.patch(two, body))
    return made


def _cells(amp: Amp01Context) -> tuple[int, int, _Cells, list[Reply]]:
    """(N, W), the shared cells (made once per run) and the replies of the step."""
    budget, window = _limited(amp)
    start = len(amp.evidence.exchanges)
    made = amp.shared("rate:cells", _cells_once)
    return budget, window, made, [Reply(exchange) for exchange in amp.evidence.exchanges[start:]]


def _counted(amp: Amp01Context, budget: int, body: dict[str, Any]) -> bool:
    """Whether ``body`` sent to a fresh cell is counted against its budget (only asked once something
    is off): its budget's last scoring PATCH is then refused."""
    fresh = amp.create_cell()
    client = amp.as_agent("a")
    client.patch(f"/memories/{fresh['id']}", body)
    return not all(client.patch(f"/memories/{fresh['id']}", _scoring(i)).status == 200 for i in range(budget))


def _counted_before(amp: Amp01Context, what: str, reply: Reply, counted: tuple[str, str]) -> None:
    expect_step(
        amp,
        False,
        f"{what} answered 429 after {counted[0]}, though a fresh cell takes the whole budget: it was "
        "counted against the scoring budget",
        reply,
        step=f"spending the cell's budget after {counted[0]}",
        requirement=counted[1],
        expected="200",
    )


def _first_counted(amp: Amp01Context, budget: int, index: int, made: _Cells) -> tuple[str, str]:
    """What the first cell was sent before its budget's PATCH ``index`` that was counted: the stranger's
    attempt can only have taken the last one, and then only if the {"scoring": null} PATCH was not."""
    if index == budget - 1 and made.stranger is not None and not _counted(amp, budget, {"scoring": None}):
        return STRANGER_SENT
    return NULL_SENT


def _second_counted(amp: Amp01Context, budget: int) -> tuple[str, str]:
    """What the second cell was sent before its budget that was counted: the PATCH without scoring, or
    else the scoring PATCH refused with 422."""
    if _counted(amp, budget, _non_scoring(amp, [amp.agent_id("a")])):
        return NON_SCORING_SENT
    return INVALID_SENT


def _judge_first(
    amp: Amp01Context,
    budget: int,
    made: _Cells,
    replies: list[Reply],
    stranger: Callable[[Reply], None] | None = None,
) -> None:
    """The first cell's budget judged as :func:`_spend` does (``stranger`` judges the stranger's
    attempt, where it was sent: before the budget's last PATCH); every PATCH of it was then 200."""
    for index, at in enumerate(made.spent):
        reply = replies[at]
        what = f"scoring PATCH {index + 1} (within the advertised budget of the cell)"
        if made.stranger is not None and index == budget - 1 and stranger is not None:
            stranger(replies[made.stranger])
        if reply.status == 429 and _fresh_cell_takes(amp, budget):
            _counted_before(amp, what, reply, _first_counted(amp, budget, index, made))
        expect_scoring_not_limited(amp, reply, what)
        amp.expect_status(reply, 200, what=what)
    assert None not in (made.refused, made.before, made.mixed, made.after, made.null_spent)


def _owner_refused(amp: Amp01Context, budget: int, made: _Cells, index: int, reply: Reply, what: str) -> None:
    """The second cell's owner (an agent, ``owner_type`` agent) refused a PATCH of its own cell: that is
    AMP-ACL-07's finding (the owner bypasses the policy), a step for the rate checks."""
    expect_step(
        amp,
        not (made.split and index < budget // 2 and reply.status in (401, 403)),
        f"{what}, sent by the cell's owner (an agent, owner_type agent), answered {reply.status}",
        reply,
        step="the owner of type agent writing its own cell",
        requirement="AMP-ACL-07",
        expected="200",
    )


def _judge_second(amp: Amp01Context, budget: int, made: _Cells, replies: list[Reply]) -> None:
    """The second cell's budget judged as :func:`_spend` does; every PATCH of it was then 200."""
    for index, at in enumerate(made.other):
        reply = replies[at]
        what = f"scoring PATCH {index + 1} (within the advertised budget of the cell)"
        _owner_refused(amp, budget, made, index, reply, what)
        if reply.status == 429 and _fresh_cell_takes(amp, budget):
            _counted_before(amp, what, reply, _second_counted(amp, budget))
        expect_scoring_not_limited(amp, reply, what)
        amp.expect_status(reply, 200, what=what)
    assert made.body_spent is not None


def _spent(
    amp: Amp01Context, stranger: Callable[[Reply], None] | None = None
) -> tuple[int, int, _Cells, list[Reply]]:
    """(N, W), the shared cells and their replies, the first cell's budget judged."""
    budget, window, made, replies = _cells(amp)
    if stranger is not None:
        amp.agent("o")  # the stranger's attempts need a second agent: skip without one
    _judge_first(amp, budget, made, replies, stranger)
    return budget, window, made, replies


@pytest.mark.smoke
@check("AMP-RATE-01", "AMP-CAP-08", "AMP-CAP-04")
def test_exactly_max_patches_scoring_patches_are_accepted(amp: Amp01Context) -> None:
    """Exactly max_patches scoring PATCHes of one cell are accepted; the next is 429 RATE_LIMITED."""
    budget, _, made, replies = _spent(amp)
    _exhausted(amp, replies[made.refused or 0], budget)


@pytest.mark.smoke
@check("AMP-RATE-02", "AMP-ERR-06")
def test_429_carries_a_matching_retry_after(amp: Amp01Context) -> None:
    """A 429 has Retry-After in 1..window_seconds, equal to error.details.retry_after_seconds."""
    budget, window, made, replies = _spent(amp)
    _retry_after(amp, replies[made.refused or 0], window, budget)


@check("AMP-RATE-03")
def test_retry_after_is_the_time_until_the_oldest_edit_leaves(amp: Amp01Context) -> None:
    """Retry-After is about window_seconds minus the age of the oldest counted edit (2 s tolerance)."""
    budget, window, made, replies = _spent(amp)
    refused = replies[made.refused or 0]
    seconds = _retry_after(amp, refused, window, budget)
    expected = window - made.seconds
    amp.expect(
        abs(seconds - expected) <= 2.0,
        f"Retry-After {seconds} is within 2 s of the time left for the oldest edit ({expected:.1f} s)",
        refused,
        expected=f"{expected:.1f} ± 2",
    )


RETRIES = 4
RETRY_GAP = 0.3
"""Refused retries after a 429, this many seconds apart (AMP-RATE-04); the first refusal and the last
retry are more than a second apart, so a wait that counts down announces less on the last (AMP-RATE-03)."""


def _expect_no_growth(amp: Amp01Context, previous: int, seconds: int) -> None:
    amp.expect(
        seconds <= previous,
        f"Retry-After grew from {previous} to {seconds} after a refused retry: refused attempts count",
        expected=f"<= {previous}",
    )


@pytest.mark.smoke
@check("AMP-RATE-03")
def test_retry_after_counts_down(amp: Amp01Context) -> None:
    """Retry-After shrinks between two refusals over a second apart: it is the time left, not a fixed wait."""
    budget, window = _limited(amp)
    if window <= SHORT_WINDOW:
        amp.skip(
            f"window_seconds is {window}: the refused retries this check compares are sent on windows "
            f"over {SHORT_WINDOW} s (on short ones AMP-RATE-04 and -10 follow the window to its end)"
        )
    budget, window, made, replies = _spent(amp)
    assert made.retries  # every PATCH of the budget was 200
    first = _retry_after(amp, replies[made.refused or 0], window, budget)
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


@pytest.mark.smoke
@check("AMP-RATE-04", deadline=SHORT_WINDOW + 30)
def test_refused_attempts_are_not_recorded(amp: Amp01Context) -> None:
    """Retrying after a 429 never pushes the deadline back; on a short window the announced wait suffices."""
    budget, window = _limited(amp)
    if window > SHORT_WINDOW:
        # long windows: only the retries' Retry-After is judged, on the shared first cell's retries
        budget, window, made, replies = _spent(amp)
        previous = _retry_after(amp, replies[made.refused or 0], window, budget)
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


@pytest.mark.smoke
@check("AMP-RATE-05")
def test_non_scoring_patches_cost_nothing(amp: Amp01Context) -> None:
    """PATCHes without scoring use no budget and succeed on a cell whose budget is spent."""
    budget, _, made, replies = _cells(amp)
    # every non-scoring section in one body: were any of them counted, the last PATCH of the budget
    # would be refused; were any refused on a spent budget, the PATCH after it would be
    what = NON_SCORING_SENT[0]
    amp.expect_status(replies[made.body_before], 200, what=what)
    _judge_second(amp, budget, made, replies)
    reply = replies[made.body_spent or 0]
    amp.expect_status(reply, 200, what=f"{what} on a cell whose scoring budget is spent")


@pytest.mark.smoke
@check("AMP-RATE-06")
def test_scoring_null_costs_nothing(amp: Amp01Context) -> None:
    """{"scoring": null} uses no budget and succeeds on a cell whose budget is spent."""
    budget, _, made, replies = _cells(amp)
    # one is enough: were it counted, the last PATCH of the budget would be refused
    amp.expect_status(replies[made.null_before], 200, what='a {"scoring": null} PATCH')
    _judge_first(amp, budget, made, replies)
    reply = replies[made.null_spent or 0]
    amp.expect_status(reply, 200, what='{"scoring": null} on a cell whose scoring budget is spent')


@pytest.mark.smoke
@check("AMP-RATE-07")
def test_budget_belongs_to_one_cell(amp: Amp01Context) -> None:
    """Spending one cell's budget leaves another cell's budget whole."""
    budget, _, made, replies = _spent(amp)
    _exhausted(amp, replies[made.refused or 0], budget)
    for index, at in enumerate(made.other):
        reply = replies[at]
        what = f"scoring PATCH {index + 1} of another cell"
        _owner_refused(amp, budget, made, index, reply, what)
        if reply.status == 429 and index >= budget - 2 and _fresh_cell_takes(amp, budget):
            # only the last two can be the PATCHes sent before, counted
            _counted_before(amp, what, reply, _second_counted(amp, budget))
        amp.expect(
            reply.status == 200,
            f"scoring PATCH {index + 1} of another cell answered {reply.status} once the first cell's "
            "budget was spent: the budget is not the cell's own",
            reply,
            expected="200",
        )


@pytest.mark.smoke
@check("AMP-RATE-08", "AMP-PATCH-20")
def test_access_is_checked_before_the_budget(amp: Amp01Context) -> None:
    """A caller without write access gets 403 (never 429) and its attempts use no budget."""

    def refused(reply: Reply) -> None:
        with about("AMP-RATE-08"):  # were it counted, the writer's last PATCH of the budget would be refused
            expect_refusal(amp, reply, "a scoring PATCH by an agent without write access")

    _, _, made, replies = _spent(amp, stranger=refused)
    with about("AMP-RATE-08"):
        what = "a stranger's scoring PATCH on a cell whose budget is spent"
        expect_refusal(amp, replies[made.stranger_spent or 0], what)


@check("AMP-RATE-09")
def test_authorised_agents_share_one_budget(amp: Amp01Context) -> None:
    """Owner, creator and a writable_by agent editing one cell share its single budget."""
    budget, _, made, replies = _cells(amp)
    for role in ("o", "w"):
        amp.agent(role)  # skips without three agents, as it always has
    _judge_second(amp, budget, made, replies)
    assert made.writer is not None  # three agents, every PATCH of the budget 200
    expect_error(amp, replies[made.writer], 429, "RATE_LIMITED")


@pytest.mark.smoke
@check("AMP-RATE-10", "AMP-CAP-08", deadline=SHORT_WINDOW + 30)
def test_scoring_patches_are_accepted_again_after_the_window(amp: Amp01Context) -> None:
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


@pytest.mark.smoke
@check("AMP-RATE-11", "AMP-CAP-08")
def test_no_scoring_patch_is_refused_when_the_limit_is_off(amp: Amp01Context) -> None:
    """With scoring_patch_limit null, three times the default budget of scoring PATCHes all succeed."""
    if _limit_claim(amp) is not None:
        amp.skip(
            "/spec advertises a scoring_patch_limit: this check needs a server with the limit off "
            "(on the reference server: AMP_SCORING_PATCH_LIMIT=0)"
        )
    cell = amp.create_cell()
    _spend(amp, amp.as_agent("a"), cell["id"], 3 * DEFAULT_BUDGET)


@pytest.mark.smoke
@check("AMP-RATE-12")
def test_a_429_changes_nothing(amp: Amp01Context) -> None:
    """A 429 applies nothing, not even the non-scoring members of the same body."""
    budget, _, made, replies = _spent(amp)
    before, after = replies[made.before or 0], replies[made.after or 0]
    stored = read_back_of(amp, before)
    _exhausted(amp, replies[made.mixed or 0], budget)
    now = read_back_of(amp, after)
    for section, key in (("content", "text"), ("lifecycle", "last_updated_at"), ("scoring", "importance")):
        amp.expect(
            now[section][key] == stored[section][key],
            f"the refused PATCH changed {section}.{key} from {shown(stored[section][key])} "
            f"to {shown(now[section][key])}",
            after,
        )


@check("AMP-RATE-13")
def test_a_scoring_patch_refused_by_validation_uses_no_budget(amp: Amp01Context) -> None:
    """Scoring PATCHes refused with 422 use no budget: max_patches valid ones still succeed afterwards."""
    budget, _, made, replies = _cells(amp)
    # one is enough: were it counted, the last valid PATCH of the budget would be refused
    expect_refused_as_invalid(amp, replies[made.invalid])
    _judge_second(amp, budget, made, replies)
