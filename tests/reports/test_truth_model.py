"""Issue 38 items 7, 8, 19: the report model decides requirement outcomes, the level a run applies and
the order of failures once, for every renderer."""

from __future__ import annotations

from amp_conformance.engine.report_model import (
    BlockedBy,
    Catalogue,
    Check,
    Requirement,
    applied_levels,
    blocked_counts,
    requirement_outcomes,
    root_causes_first,
)
from amp_conformance.engine.vocabulary import Level, Outcome


def _check(
    name: str,
    requirements: tuple[str, ...],
    outcome: Outcome,
    *,
    level: Level = Level.MUST,
    finding: tuple[str, ...] = (),
    blocked_by: str | None = None,
) -> Check:
    return Check(
        id=f"checks.py::{name}",
        name=name,
        title=name,
        requirements=requirements,
        level=level,
        area="x",
        outcome=outcome,
        message="",
        expected=None,
        finding_requirements=finding,
        blocked_by=BlockedBy(blocked_by, "step", None) if blocked_by else None,
        expectation=None,
        duration_seconds=0.0,
        requests=None,
        warnings=(),
        notes=(),
        curl=None,
        exchanges=(),
    )


def test_a_failing_check_fails_only_the_ids_its_finding_names() -> None:
    """limit-clamped: a check citing CAP-04 and LIST-05 whose finding is LIST-05 fails LIST-05 alone."""
    checks = [
        _check("ceiling", ("AMP-CAP-04", "AMP-LIST-05"), Outcome.FAIL, finding=("AMP-LIST-05",)),
        _check("caps", ("AMP-CAP-06",), Outcome.PASS),
        _check("ceiling2", ("AMP-CAP-06", "AMP-LIST-05"), Outcome.FAIL, finding=("AMP-LIST-05",)),
    ]
    found = requirement_outcomes(checks)
    assert found["AMP-LIST-05"][0] == Outcome.FAIL
    assert found["AMP-CAP-06"][0] == Outcome.PASS  # its passing check decides it
    assert found["AMP-CAP-04"][0] != Outcome.FAIL  # no check's finding is about it
    assert [c.name for c in found["AMP-CAP-04"][1]] == ["ceiling"]  # still listed among its checks


def test_a_root_cause_reporter_fails_the_root_cause_not_its_own_requirement() -> None:
    checks = [
        _check("reporter", ("AMP-ERR-03",), Outcome.FAIL, finding=("AMP-CRE-01",)),
        _check("blocked", ("AMP-READ-01",), Outcome.BLOCKED, blocked_by="AMP-CRE-01"),
    ]
    found = requirement_outcomes(checks)
    assert found["AMP-CRE-01"][0] == Outcome.FAIL
    assert found["AMP-ERR-03"][0] != Outcome.FAIL
    assert found["AMP-READ-01"][0] == Outcome.BLOCKED


def test_a_requirement_every_check_softens_is_reported_at_the_checks_level() -> None:
    catalogue = Catalogue(
        "p",
        {"x": "X"},
        (
            Requirement("AMP-OAS-02", Level.MUST, "split", "x"),
            Requirement("AMP-LIST-05", Level.MUST, "partly softened", "x"),
            Requirement("AMP-ACL-03", Level.SHOULD, "cited by a MUST check", "x"),
        ),
    )
    checks = [
        _check("oas", ("AMP-OAS-02",), Outcome.PASS, level=Level.SHOULD),
        _check("default", ("AMP-LIST-05",), Outcome.PASS, level=Level.SHOULD),
        _check("bounds", ("AMP-LIST-05",), Outcome.PASS),
        _check("both", ("AMP-ACL-03", "AMP-LIST-05"), Outcome.PASS),
    ]
    levels = {r.id: r.level for r in applied_levels(catalogue, checks).requirements}
    assert levels == {"AMP-OAS-02": Level.SHOULD, "AMP-LIST-05": Level.MUST, "AMP-ACL-03": Level.SHOULD}


def test_failures_are_ordered_by_what_they_block_then_level_then_catalogue() -> None:
    """The 500 server: AMP-CRE-01 blocked 186 checks; the 46 AMP-ERR-03 failures come after it."""
    checks = [_check(f"b{i}", ("AMP-READ-01",), Outcome.BLOCKED, blocked_by="AMP-CRE-01") for i in range(3)]
    checks.append(_check("b", ("AMP-READ-02",), Outcome.BLOCKED, blocked_by="AMP-LIST-01"))
    levels = {"AMP-ERR-03": "MUST", "AMP-CRE-01": "MUST", "AMP-LIST-01": "MUST", "AMP-X-1": "SHOULD"}
    order = {"AMP-X-1": 0, "AMP-ERR-03": 1, "AMP-LIST-01": 2, "AMP-CRE-01": 3, "AMP-ERR-09": 4}
    ids = ["AMP-X-1", "AMP-ERR-09", "AMP-ERR-03", "AMP-LIST-01", "AMP-CRE-01"]
    assert blocked_counts(checks) == {"AMP-CRE-01": 3, "AMP-LIST-01": 1}
    assert root_causes_first(ids, blocked_counts(checks), levels, order) == [
        "AMP-CRE-01",
        "AMP-LIST-01",
        "AMP-ERR-03",
        "AMP-X-1",  # SHOULD after MUST
        "AMP-ERR-09",  # not levelled: last
    ]


def test_the_terminal_lists_failures_root_causes_first() -> None:
    """The summary's failure lines follow the reports' order: AMP-CRE-01 (blocking) before AMP-ERR-03."""
    from types import SimpleNamespace

    from amp_conformance.engine.report import _root_causes_first
    from amp_conformance.engine.verdict import CheckResult

    def result(name: str, rid: str, outcome: Outcome, **more: object) -> CheckResult:
        return CheckResult(f"t.py::{name}", name, name, (rid,), Level.MUST, "x", outcome, **more)  # type: ignore[arg-type]

    errors = [result(f"err{i}", "AMP-ERR-03", Outcome.FAIL) for i in range(3)]
    root = result("root", "AMP-READ-01", Outcome.FAIL, finding_requirements=("AMP-CRE-01",))
    blocked = result("b", "AMP-READ-02", Outcome.BLOCKED, blocked_by={"requirement": "AMP-CRE-01"})
    entries = [{"id": rid, "level": "MUST"} for rid in ("AMP-ERR-03", "AMP-CRE-01", "AMP-READ-01")]
    run = SimpleNamespace(
        protocol=SimpleNamespace(catalogue=SimpleNamespace(as_report=lambda: {"requirements": entries})),
        results={r.nodeid: r for r in (*errors, root, blocked)},
    )
    ordered = _root_causes_first(run, [*errors, root])  # type: ignore[arg-type]
    assert [r.name for r in ordered] == ["root", "err0", "err1", "err2"]
