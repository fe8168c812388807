"""The decay formula against the worked examples A-H of requirements.md §3 (fixtures/decay/cases.json)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from amp_conformance.amp01.decay import (
    STALE_THRESHOLD,
    days_to_threshold,
    decay_score,
    is_below_threshold,
    status_at_pass,
)
from amp_conformance.engine.resources import load_fixture

CASES: list[dict[str, Any]] = load_fixture("decay", "cases.json")["cases"]
POINTS = [
    pytest.param(case, point, id=f"{case['id']}-{point['delta']}-{point['status_before']}")
    for case in CASES
    for point in case["points"]
]


def test_the_fixture_covers_examples_a_to_h() -> None:
    assert [case["id"] for case in CASES] == list("ABCDEFGH")
    assert load_fixture("decay", "cases.json")["stale_threshold"] == STALE_THRESHOLD == 0.3


@pytest.mark.parametrize(("case", "point"), POINTS)
def test_score_matches_the_worked_example(case: dict[str, Any], point: dict[str, Any]) -> None:
    score = decay_score(
        case["importance"], case["confidence"], case["decay_rate"], point["delta_seconds"] / 86400
    )
    assert round(score, 6) == pytest.approx(point["score"], abs=1e-9)


@pytest.mark.parametrize(("case", "point"), POINTS)
def test_status_at_a_pass_matches_the_worked_example(case: dict[str, Any], point: dict[str, Any]) -> None:
    score = decay_score(
        case["importance"], case["confidence"], case["decay_rate"], point["delta_seconds"] / 86400
    )
    assert status_at_pass(point["status_before"], score, point["days_since_update"]) == point["status_after"]


def test_equality_case_e_is_exact_and_not_below_the_threshold() -> None:
    for days in (0.0, 1.0, 36500.0):
        score = decay_score(0.3, 1.0, 0.0, days)
        assert score == 0.3
        assert not is_below_threshold(score)


def test_bounded_time_case_g_crosses_between_five_and_ten_seconds() -> None:
    assert days_to_threshold(1.0, 1.0, 20000) * 86400 == pytest.approx(5.20, abs=0.005)
    assert is_below_threshold(decay_score(1.0, 1.0, 20000, 10 / 86400))
    assert not is_below_threshold(decay_score(1.0, 1.0, 20000, 5 / 86400))


@pytest.mark.parametrize("case", [c for c in CASES if "days_to_threshold" in c], ids=lambda c: c["id"])
def test_time_to_threshold(case: dict[str, Any]) -> None:
    days = days_to_threshold(case["importance"], case["confidence"], case["decay_rate"])
    assert days == pytest.approx(case["days_to_threshold"], abs=0.005)


def test_never_decays_below_with_rate_zero() -> None:
    assert days_to_threshold(0.5, 1.0, 0.0) == math.inf


def test_archived_and_deleted_are_left_alone() -> None:
    assert status_at_pass("archived", 0.0, 999) == "archived"
    assert status_at_pass("deleted", 0.9, 0) == "deleted"


@pytest.mark.parametrize(
    "arguments",
    [
        (1.5, 1.0, 0.01, 0.0),
        (0.5, -0.1, 0.01, 0.0),
        (0.5, 1.0, -0.01, 0.0),
        (0.5, 1.0, 0.01, -1.0),
        (math.nan, 1.0, 0.01, 0.0),
        (0.5, 1.0, math.inf, 0.0),
    ],
)
def test_impossible_inputs_are_refused(arguments: tuple[float, float, float, float]) -> None:
    with pytest.raises(ValueError):
        decay_score(*arguments)


@pytest.mark.parametrize("round_trip", [0.0, 0.002, 0.1, 0.5])
def test_the_fast_decay_check_scales_its_wait_to_the_round_trip(round_trip: float) -> None:
    """AMP-LC-06's online check: stale (well below 0.3) after its wait, and still active two round
    trips after a read (the pass that follows it), however slowly the server answers."""
    from amp_conformance.amp01.checks._lifecycle_passes import MIN_CROSSING, WAIT_CROSSINGS, fast_decay

    rate, crossing = fast_decay(round_trip)
    wait = WAIT_CROSSINGS * crossing
    seconds = 1 / 86400
    assert decay_score(1.0, 1.0, rate, wait * seconds) < 0.1
    assert decay_score(1.0, 1.0, rate, 2 * round_trip * seconds) > 0.5
    assert math.isclose(decay_score(1.0, 1.0, rate, max(MIN_CROSSING, 5 * round_trip) * seconds), 0.3)
    assert wait <= 2.5 or round_trip > 0.2  # shorter than the fixed 2.5 s it replaced, near the server
    # a server counting whole days never decays within a run: the fast cell stays at 1.0
    assert decay_score(1.0, 1.0, rate, math.floor(wait * seconds)) == 1.0


@pytest.mark.parametrize("round_trip", [0.0, 0.002, 0.1, 0.2, 0.5])
def test_the_steady_cell_tells_fractional_days_from_hours(round_trip: float) -> None:
    """Issue 22: judged at least half a span after creation, the steady cell is stale when Δt is counted
    in hours; by fractional days it is still active at the check's longest measured time plus the slack
    (the pass after the read comes about four round trips after its creation, at 200 ms too)."""
    from amp_conformance.amp01.checks.test_decay import TIMING_SLACK, steady_decay

    rate, span = steady_decay(round_trip)
    seconds = 1 / 86400
    assert decay_score(1.0, 1.0, rate, 24 * (span / 2) * seconds) < 0.2  # hours: stale
    longest = max(span, 6 * round_trip) + TIMING_SLACK
    assert decay_score(1.0, 1.0, rate, longest * seconds) >= 0.3  # fractional days: active
