"""Decay: the worked examples of requirements.md §3 offline, and decay in bounded time online.

The offline checks hold the suite's own formula (``amp_conformance.amp01.decay``) to the vectors in
``fixtures/decay/cases.json`` (examples A–H, including the 0.3 equality case E). They need no server
but run as checks of the lifecycle area, so a report shows which numbers every verdict rests on.

The online check (AMP-LC-06) gives a cell a very high decay rate so that it crosses the threshold
soon after creation: one pass makes it stale, a by-id read restarts its clock, and the next pass makes
it active again (§3 example G, scaled). How soon follows the server's round trip (the slowest of the
shared passes' POSTs): the crossing comes ``max(MIN_CROSSING, ROUND_TRIPS x round trip)`` after
creation (and after the read), so the pass after the read lands well before the restarted clock
crosses again, and the wait is ``WAIT_CROSSINGS`` crossings (about 1.4 s against a near server, not a
fixed 2.5 s). The lifecycle checks' shared passes (``_lifecycle_passes``) show that a stale cell
whose score is lifted recovers at all.
"""

from __future__ import annotations

import math
import time
from typing import Any

from amp_conformance import Amp, check, load_fixture
from amp_conformance.amp01.checks._lifecycle_passes import both_passes, listed_status
from amp_conformance.amp01.checks._support import (
    expect_at_least,
    run_pass,
    scheduler_quiet,
    shown,
)
from amp_conformance.amp01.decay import (
    SECONDS_PER_DAY,
    STALE_THRESHOLD,
    days_to_threshold,
    decay_score,
    is_below_threshold,
    status_at_pass,
)

MIN_CROSSING = 0.6
"""Seconds: the earliest a fresh cell with importance x confidence = 1 may cross 0.3 (a margin for a
busy machine between the read and the pass after it)."""
ROUND_TRIPS = 5
"""The crossing comes at least this many of the server's round trips after creation (and after the
read): the pass after the read takes about two, leaving the score near exp(-1.2 x 2/5) ≈ 0.6."""
WAIT_CROSSINGS = 2.4
"""The wait in crossings: the score after it is exp(-ln(1/0.3) x 2.4) ≈ 0.056, far below 0.3."""


def fast_decay(round_trip: float) -> tuple[float, float]:
    """(decay rate per day, wait in seconds) for a server answering in ``round_trip`` seconds."""
    crossing = max(MIN_CROSSING, ROUND_TRIPS * round_trip)
    return math.log(1 / STALE_THRESHOLD) * SECONDS_PER_DAY / crossing, WAIT_CROSSINGS * crossing


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
def test_decay_formula_matches_the_worked_examples(amp: Amp) -> None:
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


@check("AMP-LC-04", "AMP-LC-01")
def test_the_equality_case_is_not_below_the_threshold(amp: Amp) -> None:
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


@check("AMP-LC-06", "AMP-LC-02", "AMP-LC-01", "AMP-LC-10", deadline=30, global_effects=True)
def test_fast_decay_goes_stale_and_a_read_brings_it_back(amp: Amp) -> None:
    """Fast decay: a cell turns stale at a pass; a by-id read restarts its clock, the next pass revives it."""
    # the lifecycle checks' shared passes: a stale cell lifted to 0.9 recovered at the second, which
    # tells a server whose stale cells never recover (AMP-LC-05) from one whose reads do not restart
    # the clock
    passes = both_passes(amp)
    owner = amp.owner()
    # the server's round trip: the slowest of the shared passes' own POSTs (each sent alone, unlike
    # the cells they prepared, sent at once)
    round_trip = max(
        (e.elapsed for e in amp.evidence.exchanges if e.url.endswith("/lifecycle/run")), default=0.0
    )
    rate, wait = fast_decay(round_trip)
    cell = amp.create_cell(
        {
            "identity": {"owner_id": owner},
            "scoring": {"importance": 1.0, "confidence": 1.0, "decay_rate": rate},
        }
    )
    created = time.monotonic()
    cell_id = str(cell["id"])
    time.sleep(max(0.0, created + wait - time.monotonic()))
    expected = decay_score(1.0, 1.0, rate, wait / SECONDS_PER_DAY)
    before = listed_status(amp, owner, cell_id, "active")
    if before != "active" and scheduler_quiet(amp):
        amp.warn(
            f"with no pass run, the decayed cell is already {before} (AMP-LC-10, SHOULD: status changes "
            "only at passes)"
        )
    transitions = run_pass(amp)
    stale = listed_status(amp, owner, cell_id, "stale")
    amp.expect(
        stale == "stale",
        f"{wait:.2f} s after creation (score ≈ {expected:.3f} < 0.3) a pass left the cell "
        f"{shown(stale) if stale else 'unlisted'}, not stale",
        expected="stale",
        requirement="AMP-LC-01",
    )
    passes.step_lifted(amp, "y", stays_stale=False)
    passes.step_recovered(amp, "y")
    if before == "active":
        expect_at_least(amp, transitions, "active_to_stale", 1)
    read = amp.as_agent("a").get(f"/memories/{cell_id}")
    read_at = time.monotonic()
    amp.expect_status(read, 200, what="reading the stale cell by id (restarts its decay clock)")
    transitions = run_pass(amp)
    elapsed = time.monotonic() - read_at
    score = decay_score(1.0, 1.0, rate, elapsed / SECONDS_PER_DAY)
    if score < STALE_THRESHOLD:
        amp.skip(
            f"the pass came {elapsed:.2f} s after the read, too late to show the reset (score {score:.3f})"
        )
    after = listed_status(amp, owner, cell_id, "active")
    amp.expect(
        after == "active",
        f"a pass {elapsed:.2f} s after the read (score ≈ {score:.3f} had the clock restarted) left the cell "
        f"{shown(after) if after else 'unlisted'}, not active: the read did not restart its clock (without "
        f"the reset its score is ≈ "
        f"{math.exp(-rate * (time.monotonic() - created) / SECONDS_PER_DAY):.3f})",
        expected="active",
        requirement="AMP-LC-06",
    )
    expect_at_least(amp, transitions, "stale_to_active", 1)
