"""Declared shared steps in a run (engine.steps): the policy-change cell the identity checks take over
from the access policy check, and its fallback when that check is not run."""

from __future__ import annotations

from typing import Any

from tests.suite.inprocess import run_against_reference

IDENTITY = ("test_a_case_variant_of_the_owner_or_creator_is_a_stranger", "test_the_creator_keeps_its_rights")
POLICY = "test_policy_changes_take_effect_at_once"


def _run(keyword: str) -> dict[str, Any]:
    outcome = run_against_reference(areas="acl", admin=False, extra={"keyword": keyword})
    assert outcome.run is not None
    return {result.name: result for result in outcome.run.results.values()}


def _uses(result: Any, step: str) -> bool:
    return any(note.startswith(f"uses {step!r}") for note in result.notes)


def test_the_identity_checks_take_over_the_policy_checks_cell_after_it() -> None:
    results = _run(f"{POLICY} or {' or '.join(IDENTITY)}")
    identity = [r for name, r in results.items() if name.startswith(IDENTITY)]
    assert len(identity) == 2 and results[POLICY].outcome == "pass"
    for result in identity:
        assert result.outcome == "pass", (result.name, result.message)
        assert _uses(result, "acl:policy-change-cell"), result.notes


def test_without_the_policy_check_the_identity_checks_share_a_cell_of_their_own() -> None:
    """The share's fallback: the policy check not run, its cell is never made, and the two identity
    checks still reach their verdicts on a cell they make (the second using the first's)."""
    results = _run(" or ".join(IDENTITY))
    assert POLICY not in results and len(results) == 2
    assert all(r.outcome == "pass" for r in results.values()), {n: r.message for n, r in results.items()}
    assert not any(_uses(r, "acl:policy-change-cell") for r in results.values())
    assert sum(_uses(r, "identity:creators-cell") for r in results.values()) == 1
