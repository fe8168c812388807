"""The verdict in one place: what a check's evidence and ending make of it, and a run's root causes.

:func:`judge` is a pure function from a check's spec, evidence and raised outcome (with the run-level
facts it needs) to a frozen :class:`CheckResult` and the root-cause bookkeeping the caller applies;
:func:`resolve` is the one run-level pass that points blocked checks at their root cause's reporter,
lets a broken step be reported once, and folds a parallel run's workers' root steps. Nothing here
mutates a result: every change is a new one (``dataclasses.replace``), so a result a report or a
worker's wire holds never changes under it. The plugin only translates the result to pytest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.outcomes import (
    CheckFailure,
    Evidence,
    NotApplicable,
    PreconditionFailed,
    ToolError,
)
from amp_conformance.engine.spec import CheckSpec
from amp_conformance.engine.vocabulary import Level, Outcome

#: A catalogue lookup: the strongest level of some ids, ``default`` when none is known
#: (``registry.level_of``).
LevelOf = Callable[[Iterable[str], Level], Level | str]


@dataclass(frozen=True)
class Finding:
    """One thing a check found: a failure, a SHOULD/MAY not met, a server error. ``level`` is the
    level it counts at (the check's own for its own ids, else the ids' own)."""

    message: str
    requirements: tuple[str, ...]
    level: Level
    expected: str | None = None
    exchange: Exchange | None = None
    shown: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    """``{"curl", "exchange"}`` as the report shows them, for a finding that arrived rendered from
    another process (a parallel run's worker), whose exchange object stayed there."""

    def curl(self) -> str | None:
        """The line that replays the finding's exchange, if it has one."""
        if self.exchange is not None:
            return self.exchange.curl()
        return self.shown.get("curl") if self.shown is not None else None

    def as_report(self) -> dict[str, Any]:
        """The finding as a check's ``warnings`` entry of the JSON report (and of the worker wire)."""
        if self.exchange is not None:
            exchange: Any = self.exchange.as_dict()
        else:
            exchange = self.shown.get("exchange") if self.shown is not None else None
        return {
            "message": self.message,
            "requirements": list(self.requirements),
            "level": str(self.level),
            "curl": self.curl(),
            "exchange": exchange,
        }

    @classmethod
    def from_report(cls, entry: Mapping[str, Any]) -> Finding:
        """The finding :meth:`as_report` gave (rendered: its exchange is kept as shown)."""
        return cls(
            message=str(entry.get("message", "")),
            requirements=tuple(entry.get("requirements") or ()),
            level=Level(entry["level"]),
            shown={"curl": entry.get("curl"), "exchange": entry.get("exchange")},
        )


@dataclass(frozen=True)
class RootStep:
    """A broken step a check reported as its own failure because no selected check asks about it;
    ``level``: the reporting check's own (what it counts at once blocked under another reporter)."""

    requirement: str
    step: str
    level: Level

    def as_wire(self) -> dict[str, str]:
        return {"requirement": self.requirement, "step": self.step, "level": str(self.level)}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> RootStep:
        return cls(str(data["requirement"]), str(data["step"]), Level(data["level"]))


def _tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    return value if isinstance(value, tuple) else tuple(value)


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome, as the report and the terminal summary show it (frozen: a change is a
    new result, ``dataclasses.replace``)."""

    nodeid: str
    name: str
    title: str
    requirements: tuple[str, ...]
    level: Level
    area: str
    outcome: Outcome
    message: str = ""
    duration: float = 0.0
    warnings: tuple[Finding, ...] = ()
    notes: tuple[str, ...] = ()
    exchanges: tuple[Exchange, ...] = ()
    failing_exchange: Exchange | None = None
    finding_requirements: tuple[str, ...] = ()
    """The ids the fail or warn is about (the check's own unless the finding named others)."""
    expected: str | None = None
    """What the check expected, when a failure said so."""
    requests: int | None = None
    """Requests the check sent itself (None when its protocol does not count them)."""
    blocked_by: Mapping[str, Any] | None = None
    """For ``blocked``: ``{"requirement", "step", "check"}``, the root cause and the check reporting it."""
    expectation: Mapping[str, Any] | None = None
    """Set when an expectations file named this check: ``{"outcome", "reason", "link", "met"}``."""
    uses: tuple[str, ...] = ()
    """The shared steps the check declares it reads (its ``@check(uses=...)``), for the report."""

    def __post_init__(self) -> None:
        # the typed words and immutable sequences whatever a caller passed (plain strings, lists)
        set_ = object.__setattr__
        set_(self, "outcome", Outcome(self.outcome))
        set_(self, "level", Level(self.level))
        for name in ("requirements", "warnings", "notes", "exchanges", "finding_requirements", "uses"):
            set_(self, name, _tuple(getattr(self, name)))


@dataclass(frozen=True)
class RunFacts:
    """What of the run one check's verdict depends on."""

    selected_requirements: frozenset[str] = frozenset()
    """Every id the selected checks cite (a broken step no selected check asks about is reported by
    the first check it blocks)."""
    root_causes: Mapping[str, str] = field(default_factory=dict)
    """Root-cause requirement -> the check that reported it so far."""
    server_error_requirement: str | None = None
    server_errors: Callable[[Sequence[Exchange]], Sequence[Exchange]] = lambda exchanges: ()
    """The protocol's server errors among a check's exchanges (``Protocol.server_errors``)."""
    level_of: LevelOf = lambda ids, default: default


@dataclass(frozen=True)
class Skipped:
    """pytest skipped the check without the check raising (a skip marker): its reason."""

    reason: str


@dataclass(frozen=True)
class Verdict:
    """A check's result and the root-cause bookkeeping it implies, which the caller applies to its run
    (``Run.record``)."""

    result: CheckResult
    reports: tuple[str, ...] = ()
    """Root-cause ids this check now reports (each kept for the first check reporting it)."""
    root_step: RootStep | None = None


def finding_level(spec: CheckSpec, finding: tuple[str, ...], level_of: LevelOf) -> Level:
    """A finding about the check's own ids has the check's level (the catalogue's, or the stance it
    names); a finding about other ids has theirs."""
    if set(finding) <= set(spec.requirements):
        return Level(spec.level)
    return Level(level_of(finding, spec.level))


def _server_error_finding(spec: CheckSpec, exchanges: Sequence[Exchange], facts: RunFacts) -> Finding | None:
    """Every server error a check saw is a warning under the protocol's server-error requirement,
    whatever the check asserts (an HTTP 5xx; a protocol may count more)."""
    requirement = facts.server_error_requirement
    if requirement is None:
        return None
    errors = facts.server_errors(exchanges)
    if not errors:
        return None
    first = errors[0]
    message = (
        f"{first.method} {first.url} answered {first.status}, a server error ({len(errors)} in this check)"
    )
    return Finding(
        message, (requirement,), finding_level(spec, (requirement,), facts.level_of), exchange=first
    )


def judge(
    spec: CheckSpec,
    evidence: Evidence | None,
    raised: BaseException | Skipped | None,
    facts: RunFacts,
    *,
    nodeid: str,
    name: str,
    duration: float = 0.0,
    requests: int | None = None,
    in_call: bool = True,
) -> Verdict:
    """Turn what happened into one outcome: pass, fail, warn, skip, error or blocked.

    ``evidence``: what the check saw and said (None when it never got its context); ``raised``: what
    it ended with (already reattributed by its context); ``in_call``: it ended in the check's own body
    (a bare ``AssertionError`` elsewhere is no finding). ``nodeid``, ``name``, ``duration`` and
    ``requests`` are carried into the result as they are."""
    evidence = evidence or Evidence()
    found = [
        Finding(
            w.message,
            w.requirements,
            finding_level(spec, w.requirements, facts.level_of),
            exchange=w.exchange,
        )
        for w in evidence.warnings
    ]
    result = CheckResult(
        nodeid=nodeid,
        name=name,
        title=spec.title,
        requirements=spec.requirements,
        level=spec.level,
        area=spec.area,
        outcome=Outcome.PASS,
        duration=duration,
        notes=tuple(evidence.notes),
        exchanges=tuple(evidence.exchanges),
        requests=requests,
        uses=spec.uses,
    )
    server_error = _server_error_finding(spec, result.exchanges, facts)
    if server_error is not None:
        found.append(server_error)
    result = dataclasses.replace(result, warnings=tuple(found))
    last = result.exchanges[-1] if result.exchanges else None
    if isinstance(raised, NotApplicable):
        return Verdict(dataclasses.replace(result, outcome=Outcome.SKIP, message=str(raised)))
    if isinstance(raised, Skipped):
        return Verdict(dataclasses.replace(result, outcome=Outcome.SKIP, message=raised.reason))
    if isinstance(raised, pytest.skip.Exception):
        return Verdict(dataclasses.replace(result, outcome=Outcome.SKIP, message=str(raised.msg)))
    if raised is None:
        if not found:
            return Verdict(result)
        first = found[0]
        return Verdict(
            dataclasses.replace(
                result,
                outcome=Outcome.WARN,
                message=first.message,
                finding_requirements=first.requirements,
                level=first.level,
            )
        )
    root_step = None
    if isinstance(raised, PreconditionFailed) and raised.requirement not in spec.requirements:
        reporter = facts.root_causes.get(raised.requirement)
        if reporter is not None or raised.requirement in facts.selected_requirements:
            blocked = {"requirement": raised.requirement, "step": raised.step, "check": reporter}
            return Verdict(
                dataclasses.replace(
                    result,
                    outcome=Outcome.BLOCKED,
                    blocked_by=blocked,
                    message=raised.message,
                    failing_exchange=raised.exchange or last,
                )
            )
        # no selected check asks about the broken step: this check reports the root cause, once
        root_step = RootStep(raised.requirement, raised.step, Level(spec.level))
    if isinstance(raised, CheckFailure) or (type(raised) is AssertionError and in_call):
        failure = raised if isinstance(raised, CheckFailure) else None
        message = failure.message if failure is not None else str(raised)
        expected = failure.expected if failure is not None else None
        exchange = (failure.exchange if failure is not None else None) or last
        about = (failure.requirements if failure is not None else ()) or spec.requirements
        level = finding_level(spec, about, facts.level_of)
        result = dataclasses.replace(
            result,
            failing_exchange=exchange,
            message=message,
            expected=expected,
            finding_requirements=about,
            level=level,
            outcome=Outcome.FAIL if level == Level.MUST else Outcome.WARN,
        )
        if result.outcome == Outcome.WARN:
            finding = Finding(message, about, level, expected=expected, exchange=exchange)
            result = dataclasses.replace(result, warnings=(finding, *result.warnings))
        return Verdict(result, reports=about, root_step=root_step)
    kind = "" if isinstance(raised, ToolError) else f"{type(raised).__name__} in the check: "
    return Verdict(
        dataclasses.replace(result, outcome=Outcome.ERROR, message=f"{kind}{raised}", failing_exchange=last)
    )


@dataclass(frozen=True)
class Resolution:
    """The run's results once every root cause is settled, and who reports each."""

    results: dict[str, CheckResult]
    root_causes: dict[str, str]


def resolve(
    results: Mapping[str, CheckResult],
    level_of: LevelOf,
    *,
    root_causes: Mapping[str, str] | None = None,
    root_steps: Mapping[str, RootStep] | None = None,
    order: Sequence[str] | None = None,
) -> Resolution:
    """The one run-level resolution of root causes, returning new results (the given ones unchanged).

    First (``root_steps``, a parallel run's): workers decide alone whether a broken step nobody asks
    about is theirs to report; as in a serial run only the first check in ``order`` reports it and the
    others are blocked under it. Then every blocked check is pointed at the check that reports its root
    cause; a root cause that no check reported (the check asking about it passed, or was not run) is
    reported by its first blocked check, so a broken step is never silent and never counted twice."""
    resolved = dict(results)
    if root_steps:
        first_of: dict[str, str] = {}
        for nodeid in order if order is not None else list(resolved):
            step, result = root_steps.get(nodeid), resolved.get(nodeid)
            if step is None or result is None:
                continue
            first = first_of.setdefault(step.requirement, nodeid)
            if first == nodeid:
                continue
            warnings = result.warnings
            if result.outcome == Outcome.WARN and warnings:
                warnings = warnings[1:]  # the finding it reported, now its root cause's
            resolved[nodeid] = dataclasses.replace(
                result,
                outcome=Outcome.BLOCKED,
                warnings=warnings,
                blocked_by={"requirement": step.requirement, "step": step.step, "check": first},
                finding_requirements=(),
                level=step.level,
                expected=None,
            )
    reporters = dict(root_causes or {})
    for result in resolved.values():
        if result.outcome in (Outcome.FAIL, Outcome.WARN):
            for rid in result.finding_requirements:
                reporters.setdefault(rid, result.nodeid)
    for nodeid, result in list(resolved.items()):
        if result.outcome != Outcome.BLOCKED or result.blocked_by is None:
            continue
        rid = result.blocked_by["requirement"]
        reporter = reporters.get(rid)
        if reporter is not None and resolved.get(reporter, result).outcome in (Outcome.FAIL, Outcome.WARN):
            resolved[nodeid] = dataclasses.replace(
                result, blocked_by={**result.blocked_by, "check": reporter}
            )
            continue
        # nothing else reports it: this check does
        level = Level(level_of((rid,), Level.MAY))
        resolved[nodeid] = dataclasses.replace(
            result,
            outcome=Outcome.FAIL if level == Level.MUST else Outcome.WARN,
            finding_requirements=(rid,),
            level=level,
            blocked_by=None,
        )
        reporters[rid] = nodeid
    return Resolution(resolved, reporters)
