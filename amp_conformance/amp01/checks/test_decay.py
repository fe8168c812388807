"""Decay: the worked examples of requirements.md §3 offline, and decay in bounded time online.

The offline checks hold the suite's own formula (``amp_conformance.amp01.decay``) to the vectors in
``fixtures/decay/cases.json`` (examples A–H, including the 0.3 equality case E). They need no server
but run as checks of the lifecycle area, so a report shows which numbers every verdict rests on.

The online check (AMP-LC-06, AMP-LC-01) judges two cells of one owner whose decay depends on time:

* the fast cell (``_lifecycle_passes.Fast``), made with the lifecycle checks' shared first pass, whose
  rate makes it cross 0.3 ``max(MIN_CROSSING, ROUND_TRIPS x round trip)`` after creation: its clock
  runs while the other checks work, and the check waits only for what is left of ``WAIT_CROSSINGS``
  crossings (usually nothing). A pass makes it stale; a by-id read restarts its clock, and the next
  pass makes it active again (§3 example G, scaled). A server counting Δt in whole days never decays
  within a run: the fast cell stays active (AMP-LC-01).
* the steady cell, made by the check itself, whose rate makes it cross 0.3 only ``STEADY_SPANS``
  spans after creation (the span: ``max(MIN_SPAN, SPAN_TRIPS x round trip)``, about the time to the
  pass after the read), judged at that pass: still active by fractional days, already stale when Δt
  is counted in hours (24x faster; at least half a span has passed, 0.3^1.5 ≈ 0.16). The bound on
  the time the server saw is the check's own measurement plus ``TIMING_SLACK`` (latency, timestamps
  to the second), so a correct server is never failed.

Beside them a low cell (importance 0.2, decay_rate 0), made with the steady one, is listed before the
check's first pass: below 0.3 from its creation, it is still active, since no pass ran (AMP-LC-10).

The lifecycle checks' shared passes (``_lifecycle_passes``) show that a stale cell whose score is lifted
recovers at all.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import pytest

from amp_conformance import Amp01Context, check, load_fixture
from amp_conformance.amp01.checks._lifecycle_passes import (
    both_passes,
    listed_status,
    together,
)
from amp_conformance.amp01.checks._support import (
    expect_at_least,
    run_pass,
    scheduler_quiet,
    shown,
    step_failed,
)
from amp_conformance.amp01.decay import (
    SECONDS_PER_DAY,
    STALE_THRESHOLD,
    days_to_threshold,
    decay_score,
    is_below_threshold,
    status_at_pass,
)
from amp_conformance.engine.client import Reply

MIN_SPAN = 0.4
"""Seconds: the least span of the steady cell (the time from its creation to the pass that judges it)."""
SPAN_TRIPS = 5
"""The span in the server's round trips: the steady cell is judged about five after its creation."""
STEADY_SPANS = 8
"""The steady cell crosses 0.3 this many spans after creation by fractional days (by hours, after a
third of a span)."""
LOW_IMPORTANCE = 0.2
"""A cell below 0.3 from its creation (decay_rate 0): active until a pass, stale after it."""
TIMING_SLACK = 1.0
"""Seconds added to the longest time the server can have seen between two requests (its timestamps
may be to the second)."""


def steady_decay(round_trip: float) -> tuple[float, float]:
    """(decay rate per day, span in seconds) of the steady cell for a server answering in
    ``round_trip`` seconds."""
    span = max(MIN_SPAN, SPAN_TRIPS * round_trip)
    return math.log(1 / STALE_THRESHOLD) * SECONDS_PER_DAY / (STEADY_SPANS * span), span


def _cases() -> list[dict[str, Any]]:
    document = load_fixture("decay", "cases.json")
    cases: list[dict[str, Any]] = document["cases"]
    return cases


def _point_problems(case: dict[str, Any], point: dict[str, Any]) -> list[str]:
    where = f"example {case['id']} at {point['delta']} ({point['status_before']})"
    problems: list[str] = []
    score = decay_score(
        case["importance"], case["confidence"], case["decay_rate"], point["delta_seconds"] / SECONDS_PER_DAY
    )
    if round(score, 6) != point["score"]:
        problems.append(f"{where}: the formula gives {score:.6f}, the vector says {point['score']:.6f}")
    after = status_at_pass(point["status_before"], score, point["days_since_update"])
    if after != point["status_after"]:
        problems.append(f"{where}: a pass gives {after}, the vector says {point['status_after']}")
    return problems


@check("AMP-LC-01")
def test_decay_formula_matches_the_worked_examples(amp: Amp01Context) -> None:
    """importance x confidence x exp(-decay_rate x Δt_days) and the pass rules reproduce §3 examples A–H."""
    cases = _cases()
    amp.expect(
        {c["id"] for c in cases} >= set("ABCDEFGH"),
        f"the vectors hold examples A-H (got {[c['id'] for c in cases]})",
    )
    problems: list[str] = []
    for case in cases:
        for point in case["points"]:
            problems += _point_problems(case, point)
        rate_days = days_to_threshold(case["importance"], case["confidence"], case["decay_rate"])
        if "days_to_threshold" in case and round(rate_days, 2) != case["days_to_threshold"]:
            problems.append(
                f"example {case['id']}: t* is {rate_days:.2f} d, the vector says {case['days_to_threshold']}"
            )
        if (
            "seconds_to_threshold" in case
            and round(rate_days * SECONDS_PER_DAY, 2) != case["seconds_to_threshold"]
        ):
            problems.append(
                f"example {case['id']}: t* is {rate_days * SECONDS_PER_DAY:.2f} s, "
                f"the vector says {case['seconds_to_threshold']}"
            )
    amp.expect(not problems, "decay vectors: " + "; ".join(problems))


@pytest.mark.smoke
@check("AMP-LC-04", "AMP-LC-01")
def test_the_equality_case_is_not_below_the_threshold(amp: Amp01Context) -> None:
    """Example E: 0.3 x 1.0 x exp(0) is exactly 0.3, not below the threshold: active after a pass."""
    equal = [c for c in _cases() if c.get("exact_threshold")]
    amp.expect(equal, "the vectors include the exact-threshold example E (C-27)")
    for case in equal:
        for point in case["points"]:
            score = decay_score(
                case["importance"],
                case["confidence"],
                case["decay_rate"],
                point["delta_seconds"] / SECONDS_PER_DAY,
            )
            amp.expect(
                score == STALE_THRESHOLD,
                f"example {case['id']}: the score is exactly 0.3 (got {shown(score)})",
            )
            amp.expect(not is_below_threshold(score), f"example {case['id']}: 0.3 is not below the threshold")
            amp.expect(
                status_at_pass(point["status_before"], score, point["days_since_update"]) == "active",
                f"example {case['id']}: a {point['status_before']} cell at exactly 0.3 ends active",
            )


def _active_ids(amp: Amp01Context, owner: str) -> tuple[set[str], Reply]:
    """The ids the owner's list of active cells shows (a broken step when it fails: AMP-LIST-03)."""
    reply = amp.as_agent("a").get("/memories", params={"owner_id": owner, "status": "active"})
    if reply.status != 200:
        step_failed(amp, reply, "listing the owner's active cells", "AMP-LIST-03", "200")
    results = reply.json_object().get("results", [])
    return {str(c.get("id")) for c in results if isinstance(c, dict)}, reply


@pytest.mark.smoke
@check("AMP-LC-06", "AMP-LC-02", "AMP-LC-01", "AMP-LC-10", deadline=30, global_effects=True)
def test_fast_decay_goes_stale_and_a_read_brings_it_back(amp: Amp01Context) -> None:
    """Fast decay: a cell turns stale at a pass; a by-id read restarts its clock, the next pass revives it.

    A slower cell of the same owner, judged at that pass, is still active (Δt in fractional days, not
    hours); the fast cell going stale at all tells Δt from whole days."""
    # the lifecycle checks' shared passes: a stale cell lifted to 0.9 recovered at the second, which
    # tells a server whose stale cells never recover (AMP-LC-05) from one whose reads do not restart
    # the clock; the fast cell was made with the first pass (its clock has been running since)
    passes = both_passes(amp)
    fast = passes.fast
    owner, cell_id, rate = fast.owner, fast.id, fast.rate
    # the server's round trip: the slowest of the shared passes' own POSTs (each sent alone)
    round_trip = max(
        (e.elapsed for e in amp.evidence.exchanges if e.url.endswith("/lifecycle/run")), default=0.0
    )
    steady_rate, span = steady_decay(round_trip)

    def make_steady() -> tuple[str, float, float]:
        sent = time.monotonic()
        scoring = {"importance": 1.0, "confidence": 1.0, "decay_rate": steady_rate}
        made = amp.create_cell({"identity": {"owner_id": owner}, "scoring": scoring})
        return str(made["id"]), sent, time.monotonic()

    def make_low() -> str:
        scoring = {"importance": LOW_IMPORTANCE, "confidence": 1.0, "decay_rate": 0}
        return str(amp.create_cell({"identity": {"owner_id": owner}, "scoring": scoring})["id"])

    calls: list[Callable[[], Any]] = [make_steady, make_low]
    (steady, steady_sent, steady_made), low = together(amp, calls)
    # the low cell is below 0.3 from its creation: no pass ran since, so it is still active (AMP-LC-10)
    before, before_list = _active_ids(amp, owner)
    early = low not in before and scheduler_quiet(amp)
    time.sleep(max(0.0, fast.ready - time.monotonic()))  # what is left of the wait (usually nothing)
    waited = time.monotonic() - fast.made
    expected = decay_score(1.0, 1.0, rate, waited / SECONDS_PER_DAY)
    transitions = run_pass(amp)
    stale = listed_status(amp, owner, cell_id, "stale")
    amp.expect(
        stale == "stale",
        f"{waited:.2f} s after creation (score ≈ {expected:.3f} < 0.3, with Δt in fractional days) a pass "
        f"left the cell {shown(stale) if stale else 'unlisted'}, not stale (a server counting Δt in whole "
        "days never decays within a day)",
        expected="stale",
        requirement="AMP-LC-01",
    )
    passes.step_lifted(amp, "y", stays_stale=False)
    passes.step_recovered(amp, "y")
    if low in before:
        expect_at_least(amp, transitions, "active_to_stale", 1 + (cell_id in before))
    # at least half a span between the steady cell's creation and the pass that judges it
    time.sleep(max(0.0, steady_made + span / 2 - round_trip - time.monotonic()))
    read = amp.as_agent("a").get(f"/memories/{cell_id}")
    read_at = time.monotonic()
    amp.expect_status(read, 200, what="reading the stale cell by id (restarts its decay clock)")
    pass_sent = time.monotonic()
    transitions = run_pass(amp)
    pass_done = time.monotonic()
    active, listed = _active_ids(amp, owner)
    # the steady cell first: a server decaying too fast would also look like one whose read does not
    # restart the clock
    seen = (pass_sent - steady_made, pass_done - steady_sent + TIMING_SLACK)
    least = decay_score(1.0, 1.0, steady_rate, seen[1] / SECONDS_PER_DAY)
    if least < STALE_THRESHOLD:
        amp.note(
            f"the steady cell was judged {seen[1]:.2f} s after creation, too late for its score to be "
            f"surely at or above 0.3 ({least:.3f}): not judged"
        )
    else:
        status = "active" if steady in active else listed_status(amp, owner, steady, "stale")
        amp.expect(
            status == "active",
            f"a pass {seen[0]:.2f}-{seen[1] - TIMING_SLACK:.2f} s after creation left a cell with decay_rate "
            f"{steady_rate:.0f}/day {shown(status) if status else 'unlisted'}, not active: its score is "
            f"at least {least:.3f} with Δt in fractional days (it crosses 0.3 only "
            f"{STEADY_SPANS * span:.1f} s after creation), but "
            f"{decay_score(1.0, 1.0, steady_rate, 24 * seen[0] / SECONDS_PER_DAY):.3f} or less if Δt "
            "were counted in hours",
            listed,
            expected="active",
            requirement="AMP-LC-01",
        )
    elapsed = pass_done - read_at
    score = decay_score(1.0, 1.0, rate, elapsed / SECONDS_PER_DAY)
    if score < STALE_THRESHOLD:
        amp.skip(
            f"the pass came {elapsed:.2f} s after the read, too late to show the reset (score {score:.3f})"
        )
    after = "active" if cell_id in active else listed_status(amp, owner, cell_id, "stale")
    amp.expect(
        after == "active",
        f"a pass {elapsed:.2f} s after the read (score ≈ {score:.3f} had the clock restarted) left the cell "
        f"{shown(after) if after else 'unlisted'}, not active: the read did not restart its clock (without "
        f"the reset its score is ≈ "
        f"{math.exp(-rate * (time.monotonic() - fast.made) / SECONDS_PER_DAY):.3f})",
        listed,
        expected="active",
        requirement="AMP-LC-06",
    )
    expect_at_least(amp, transitions, "stale_to_active", 1)
    if early:
        amp.warn(
            f"with no pass run since its creation, a cell with importance {LOW_IMPORTANCE} (decay_rate 0) is "
            "not among the owner's active cells (AMP-LC-10, SHOULD: status changes only at passes)",
            before_list,
            requirement="AMP-LC-10",
        )
