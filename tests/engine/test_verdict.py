"""The verdict function and the run-level resolution of root causes (``engine/verdict.py``), by hand:
no server, no pytest run, a catalogue lookup of the test's own."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import pytest

from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.outcomes import (
    CheckFailure,
    Evidence,
    NotApplicable,
    PreconditionFailed,
    ServerUnavailable,
    Warn,
)
from amp_conformance.engine.parallel import result_from_wire, result_to_wire
from amp_conformance.engine.spec import CheckSpec
from amp_conformance.engine.verdict import (
    CheckResult,
    Finding,
    RootStep,
    RunFacts,
    Skipped,
    Verdict,
    judge,
    resolve,
)
from amp_conformance.engine.vocabulary import Level, Outcome

#: The test's catalogue: one id per level, and the server-error requirement.
CATALOGUE = {"T-MUST": Level.MUST, "T-SHOULD": Level.SHOULD, "T-MAY": Level.MAY, "T-ERR": Level.SHOULD}


def level_of(ids: Iterable[str], default: Level | str) -> Level | str:
    found = [CATALOGUE[rid] for rid in ids if rid in CATALOGUE]
    return min(found, key=list(Level).index) if found else default


def five_hundreds(exchanges: Sequence[Exchange]) -> Sequence[Exchange]:
    return [e for e in exchanges if e.status is not None and e.status >= 500]


FACTS = RunFacts(server_error_requirement="T-ERR", server_errors=five_hundreds, level_of=level_of)


def spec(*requirements: str, level: Level = Level.MUST) -> CheckSpec:
    return CheckSpec(requirements=requirements or ("T-MUST",), level=level, area="t", title="a check")


def record(name: str, check: CheckSpec, exchanges: Sequence[Exchange] = ()) -> CheckResult:
    return CheckResult(
        nodeid=f"test_t.py::{name}",
        name=name,
        title=check.title,
        requirements=check.requirements,
        level=check.level,
        area=check.area,
        outcome=Outcome.PASS,
        exchanges=tuple(exchanges),
    )


def exchange(status: int) -> Exchange:
    return Exchange("GET", "http://h/x", {}, None, status=status)


def verdict_of(
    raised: BaseException | Skipped | None,
    check: CheckSpec | None = None,
    *,
    warnings: Sequence[Warn] = (),
    exchanges: Sequence[Exchange] = (),
    facts: RunFacts = FACTS,
    name: str = "test_a",
    in_call: bool = True,
) -> Verdict:
    evidence = Evidence(exchanges=list(exchanges), warnings=list(warnings), notes=["a note"])
    return judge(
        check or spec(),
        evidence,
        raised,
        facts,
        nodeid=f"test_t.py::{name}",
        name=name,
        duration=0.5,
        requests=len(exchanges),
        in_call=in_call,
    )


def test_a_check_result_is_frozen() -> None:
    result = record("test_a", spec())
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.outcome = Outcome.FAIL  # type: ignore[misc]
    assert isinstance(result.exchanges, tuple) and isinstance(result.warnings, tuple)


def test_a_plain_ending_passes_with_what_the_check_saw() -> None:
    verdict = verdict_of(None, exchanges=[exchange(200)])
    assert verdict.result.outcome is Outcome.PASS and verdict.reports == () and verdict.root_step is None
    result = verdict.result
    assert (result.nodeid, result.title, result.level, result.duration, result.requests) == (
        "test_t.py::test_a",
        "a check",
        Level.MUST,
        0.5,
        1,
    )
    assert result.notes == ("a note",) and len(result.exchanges) == 1


def test_a_failure_of_a_must_check_fails_with_its_evidence() -> None:
    sent = exchange(400)
    failure = CheckFailure("found 400", expected="201", exchange=sent)
    verdict = verdict_of(failure, exchanges=[exchange(200), sent])
    result = verdict.result
    assert (result.outcome, result.level, result.message, result.expected) == (
        Outcome.FAIL,
        Level.MUST,
        "found 400",
        "201",
    )
    assert result.failing_exchange is sent and result.finding_requirements == ("T-MUST",)
    assert verdict.reports == ("T-MUST",)


def test_a_failure_of_a_should_check_is_a_warning_finding_first() -> None:
    verdict = verdict_of(CheckFailure("not so"), spec("T-SHOULD", level=Level.SHOULD), warnings=[Warn("w")])
    result = verdict.result
    assert result.outcome is Outcome.WARN and result.level is Level.SHOULD
    assert [f.message for f in result.warnings] == ["not so", "w"]
    assert isinstance(result.warnings[0], Finding) and result.warnings[0].level is Level.SHOULD


def test_a_recorded_warning_alone_warns() -> None:
    result = verdict_of(None, warnings=[Warn("a convention", ("T-MUST",))]).result
    assert (result.outcome, result.message, result.finding_requirements) == (
        Outcome.WARN,
        "a convention",
        ("T-MUST",),
    )


def test_a_finding_under_another_id_counts_at_that_ids_level() -> None:
    """A MUST check whose failure names a SHOULD id warns; a SHOULD check's finding under a MUST id fails."""
    named_should = verdict_of(CheckFailure("x", requirements=("T-SHOULD",))).result
    assert (named_should.outcome, named_should.level) == (Outcome.WARN, Level.SHOULD)
    named_must = verdict_of(CheckFailure("x", requirements=("T-MUST",)), spec("T-SHOULD", level=Level.SHOULD))
    assert (named_must.result.outcome, named_must.result.level) == (Outcome.FAIL, Level.MUST)
    warned = verdict_of(None, spec("T-MUST"), warnings=[Warn("y", ("T-MAY",))]).result
    assert warned.warnings[0].level is Level.MAY and warned.level is Level.MAY


def test_skips() -> None:
    assert verdict_of(Skipped("marker reason")).result.message == "marker reason"
    with pytest.raises(pytest.skip.Exception) as raised:
        pytest.skip("no channel")
    skipped = verdict_of(raised.value).result
    assert (skipped.outcome, skipped.message) == (Outcome.SKIP, "no channel")


def test_not_applicable_is_a_skip_never_a_verdict() -> None:
    result = verdict_of(NotApplicable("one API key only")).result
    assert (result.outcome, result.message) == (Outcome.SKIP, "one API key only")


def broken_step(message: str = "create broke") -> PreconditionFailed:
    return PreconditionFailed(message, step="create", requirement="T-SHOULD")


def test_a_broken_step_asked_about_blocks_under_its_reporter() -> None:
    facts = dataclasses.replace(FACTS, root_causes={"T-SHOULD": "test_t.py::test_create"})
    result = verdict_of(broken_step(), facts=facts).result
    assert result.outcome is Outcome.BLOCKED
    assert result.blocked_by == {
        "requirement": "T-SHOULD",
        "step": "create",
        "check": "test_t.py::test_create",
    }


def test_a_broken_step_of_the_checks_own_requirement_is_its_failure() -> None:
    result = verdict_of(broken_step(), spec("T-SHOULD", level=Level.SHOULD)).result
    assert result.outcome is Outcome.WARN and result.blocked_by is None


def test_a_broken_step_no_check_asks_about_is_reported_once_by_the_first() -> None:
    first = verdict_of(broken_step(), name="test_a")
    assert first.result.outcome is Outcome.WARN and first.result.finding_requirements == ("T-SHOULD",)
    assert first.root_step == RootStep("T-SHOULD", "create", Level.MUST)
    # serial: the next check sees the reporter and is blocked under it
    facts = dataclasses.replace(FACTS, root_causes={"T-SHOULD": first.result.nodeid})
    second = verdict_of(broken_step(), name="test_b", facts=facts)
    assert second.result.outcome is Outcome.BLOCKED and second.root_step is None
    # parallel: two workers each reported it; the fold keeps the first in collection order
    alone = verdict_of(broken_step(), name="test_b")
    results = {v.result.nodeid: v.result for v in (alone, first)}
    steps = {v.result.nodeid: v.root_step for v in (alone, first) if v.root_step is not None}
    order = [first.result.nodeid, alone.result.nodeid]
    resolved = resolve(results, level_of, root_steps=steps, order=order)
    folded = resolved.results[alone.result.nodeid]
    assert folded.outcome is Outcome.BLOCKED and folded.level is Level.MUST and folded.warnings == ()
    assert folded.blocked_by == {"requirement": "T-SHOULD", "step": "create", "check": first.result.nodeid}
    assert resolved.results[first.result.nodeid] is first.result
    assert results[alone.result.nodeid].outcome is Outcome.WARN  # the given results stay as they were
    assert resolved.root_causes["T-SHOULD"] == first.result.nodeid


def test_a_blocked_check_whose_root_cause_nobody_reported_reports_it() -> None:
    """The check citing the step's requirement passed (or was not run): the first blocked check reports
    it, at the requirement's level, and the others point at it."""
    facts = dataclasses.replace(FACTS, selected_requirements=frozenset({"T-SHOULD"}))
    a = verdict_of(broken_step(), facts=facts, name="test_a").result
    b = verdict_of(broken_step(), facts=facts, name="test_b").result
    assert a.outcome is b.outcome is Outcome.BLOCKED and a.blocked_by and a.blocked_by["check"] is None
    resolved = resolve({a.nodeid: a, b.nodeid: b}, level_of).results
    assert (resolved[a.nodeid].outcome, resolved[a.nodeid].level) == (Outcome.WARN, Level.SHOULD)
    assert resolved[a.nodeid].blocked_by is None
    assert resolved[b.nodeid].blocked_by == {"requirement": "T-SHOULD", "step": "create", "check": a.nodeid}


def test_a_blocked_check_points_at_the_check_that_failed_on_its_root_cause() -> None:
    facts = dataclasses.replace(FACTS, selected_requirements=frozenset({"T-SHOULD"}))
    blocked = verdict_of(broken_step(), facts=facts, name="test_a").result
    reporter = verdict_of(CheckFailure("no"), spec("T-SHOULD", level=Level.SHOULD), name="test_z").result
    resolved = resolve({blocked.nodeid: blocked, reporter.nodeid: reporter}, level_of).results
    assert resolved[blocked.nodeid].outcome is Outcome.BLOCKED
    assert resolved[blocked.nodeid].blocked_by == {
        "requirement": "T-SHOULD",
        "step": "create",
        "check": reporter.nodeid,
    }


def test_errors_are_about_the_tool_and_name_an_unexpected_exception() -> None:
    tool = verdict_of(ServerUnavailable("the server is gone"), exchanges=[exchange(200)]).result
    assert (tool.outcome, tool.message) == (Outcome.ERROR, "the server is gone")
    assert tool.failing_exchange is not None
    bug = verdict_of(KeyError("x")).result
    assert (bug.outcome, bug.message) == (Outcome.ERROR, "KeyError in the check: 'x'")
    setup = verdict_of(AssertionError("fixture"), in_call=False).result
    assert setup.outcome is Outcome.ERROR
    assert verdict_of(AssertionError("plain assert")).result.outcome is Outcome.FAIL


def test_a_server_error_is_a_warning_under_the_protocols_requirement() -> None:
    crashed = exchange(500)
    result = verdict_of(None, exchanges=[exchange(200), crashed, exchange(503)]).result
    assert result.outcome is Outcome.WARN and result.finding_requirements == ("T-ERR",)
    finding = result.warnings[-1]
    assert finding.exchange is crashed and finding.level is Level.SHOULD
    assert finding.message == "GET http://h/x answered 500, a server error (2 in this check)"
    failed = verdict_of(CheckFailure("no"), exchanges=[crashed]).result
    assert failed.outcome is Outcome.FAIL and failed.warnings[-1].requirements == ("T-ERR",)
    without = dataclasses.replace(FACTS, server_error_requirement=None)
    assert verdict_of(None, exchanges=[crashed], facts=without).result.outcome is Outcome.PASS


def test_a_finding_crosses_processes_as_its_report_entry() -> None:
    finding = Finding("m", ("T-MUST",), Level.MUST, exchange=exchange(500))
    entry = finding.as_report()
    back = Finding.from_report(entry)
    assert back.as_report() == entry and back.curl() == entry["curl"] and back.level is Level.MUST


def test_a_result_with_findings_and_a_root_step_crosses_from_worker_to_controller() -> None:
    """The wire keeps its shape (warnings as their report entries, the root step as a dict) and the
    controller gets typed, frozen records back."""
    sent = verdict_of(broken_step(), exchanges=[exchange(500)])
    wire = result_to_wire(sent.result, sent.root_step)
    assert wire["root_step"] == {"requirement": "T-SHOULD", "step": "create", "level": "MUST"}
    # plain strings: execnet cannot send an enum member (a narrowed parallel run once died on it)
    assert all(type(value) is str for value in wire["root_step"].values())
    assert wire["warnings"] == [finding.as_report() for finding in sent.result.warnings]
    assert type(wire["outcome"]) is str and type(wire["warnings"][0]["level"]) is str
    back, root_step = result_from_wire(wire, None)
    assert root_step == sent.root_step and back.outcome is Outcome.WARN and back.level is Level.SHOULD
    assert [f.as_report() for f in back.warnings] == wire["warnings"]
    assert back.warnings[0].curl() == sent.result.warnings[0].curl()
