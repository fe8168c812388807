"""The JSON report as one typed model: what the writer builds and every renderer, diff and matrix reads.

A saved report is read once, by :meth:`Report.from_json`, which validates it against
``contract/report.schema.json`` (so no reader re-checks types); :meth:`Report.to_json` gives back the
document the writer writes, key for key, so a report re-rendered from its file is byte for byte what the
live run wrote. It lives in the engine because the writer does; the renderers import it from here.

Blocks whose members are the protocol's own (``server``, ``conventions``, ``run.options``,
``expectations``) stay JSON objects, with typed accessors for the members the renderers read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Any

from amp_conformance.engine.vocabulary import LEVELS, OUTCOMES, Level, Outcome

REPORT_VERSION = "2.0"
#: The outcomes of a report, in the order every table lists them (the engine's own order).
OUTCOME_ORDER: tuple[Outcome, ...] = OUTCOMES
#: Requirement levels, strongest first.
LEVEL_ORDER: tuple[Level, ...] = LEVELS
#: The outcome a requirement no check cited has in a grid.
UNCOVERED = "uncovered"
#: How bad an outcome is for a requirement: the worst outcome of the checks citing it wins.
SEVERITY: Mapping[str, int] = {
    UNCOVERED: 0,
    "skip": 1,
    "pass": 2,
    "warn": 3,
    "blocked": 4,
    "error": 5,
    "fail": 6,
}
#: Outcomes that pass a check (a warning is a pass with a SHOULD/MAY finding).
PASSED = frozenset({Outcome.PASS, Outcome.WARN})
#: Outcomes that fall short of a verdict or fail it.
BAD = frozenset({Outcome.FAIL, Outcome.ERROR, Outcome.BLOCKED})

Json = dict[str, Any]


class ReportError(ValueError):
    """A document that is not a report this version of the suite reads: one line saying why, to
    follow the document's name (``r.json is not ...``)."""


@cache
def _validator() -> Any:
    import jsonschema_rs

    from amp_conformance.engine.resources import load_contract

    return jsonschema_rs.validator_for(load_contract("report.schema.json"))


def _optional(document: Json, key: str, value: object) -> None:
    if value is not None:
        document[key] = value


@dataclass(frozen=True)
class Exchange:
    """One request and its response as the report records it (secrets masked, bodies bounded)."""

    method: str
    url: str
    request_headers: Mapping[str, str]
    request_body: str | None
    status: int | None
    response_headers: Mapping[str, str]
    response_body: str
    elapsed_ms: float
    error: str | None
    curl: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Exchange:
        return cls(**{name: data[name] for name in _EXCHANGE_FIELDS})

    def to_json(self) -> Json:
        return {name: getattr(self, name) for name in _EXCHANGE_FIELDS}


_EXCHANGE_FIELDS = tuple(Exchange.__dataclass_fields__)


@dataclass(frozen=True)
class Finding:
    """A SHOULD/MAY finding of a check (its ``warnings``): what, about which ids, at which level."""

    message: str
    requirements: tuple[str, ...]
    level: Level
    curl: str | None
    exchange: Exchange | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        exchange = data["exchange"]
        return cls(
            data["message"],
            tuple(data["requirements"]),
            Level(data["level"]),
            data["curl"],
            Exchange.from_json(exchange) if exchange is not None else None,
        )

    def to_json(self) -> Json:
        return {
            "message": self.message,
            "requirements": list(self.requirements),
            "level": self.level,
            "curl": self.curl,
            "exchange": self.exchange.to_json() if self.exchange is not None else None,
        }


@dataclass(frozen=True)
class BlockedBy:
    """The broken step a blocked check depends on, and the check that reports its root cause."""

    requirement: str
    step: str
    check: str | None

    def to_json(self) -> Json:
        return {"requirement": self.requirement, "step": self.step, "check": self.check}


@dataclass(frozen=True)
class Expectation:
    """The outcome an expectations file held a check to, and whether it was met."""

    outcome: str
    reason: str
    link: str | None
    met: bool

    def to_json(self) -> Json:
        return {"outcome": self.outcome, "reason": self.reason, "link": self.link, "met": self.met}


@dataclass(frozen=True)
class Check:
    """One check's entry."""

    id: str
    name: str
    title: str
    requirements: tuple[str, ...]
    level: Level
    area: str
    outcome: Outcome
    message: str
    expected: str | None
    finding_requirements: tuple[str, ...]
    blocked_by: BlockedBy | None
    expectation: Expectation | None
    duration_seconds: float
    requests: int | None
    warnings: tuple[Finding, ...]
    notes: tuple[str, ...]
    curl: str | None
    exchanges: tuple[Exchange, ...]
    tier: str | None = None
    uses: tuple[str, ...] = ()
    """The shared steps the check declares it reads (absent from the JSON when none)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Check:
        blocked, expectation = data["blocked_by"], data["expectation"]
        return cls(
            id=data["id"],
            name=data["name"],
            title=data["title"],
            requirements=tuple(data["requirements"]),
            level=Level(data["level"]),
            area=data["area"],
            outcome=Outcome(data["outcome"]),
            message=data["message"],
            expected=data["expected"],
            finding_requirements=tuple(data["finding_requirements"]),
            blocked_by=BlockedBy(**blocked) if blocked is not None else None,
            expectation=Expectation(
                expectation["outcome"], expectation["reason"], expectation.get("link"), expectation["met"]
            )
            if expectation is not None
            else None,
            duration_seconds=data["duration_seconds"],
            requests=data.get("requests"),
            warnings=tuple(Finding.from_json(w) for w in data["warnings"]),
            notes=tuple(data["notes"]),
            curl=data["curl"],
            exchanges=tuple(Exchange.from_json(e) for e in data["exchanges"]),
            tier=data.get("tier"),
            uses=tuple(data.get("uses", ())),
        )

    def to_json(self) -> Json:
        document: Json = {
            "id": self.id,
            "name": self.name,
            "title": self.title,
            "requirements": list(self.requirements),
            "level": self.level,
            "area": self.area,
            "outcome": self.outcome,
            "message": self.message,
            "expected": self.expected,
            "finding_requirements": list(self.finding_requirements),
            "blocked_by": self.blocked_by.to_json() if self.blocked_by is not None else None,
            "expectation": self.expectation.to_json() if self.expectation is not None else None,
            "duration_seconds": self.duration_seconds,
            "requests": self.requests,
            "warnings": [w.to_json() for w in self.warnings],
            "notes": list(self.notes),
            "curl": self.curl,
            "exchanges": [e.to_json() for e in self.exchanges],
        }
        _optional(document, "tier", self.tier)
        _optional(document, "uses", list(self.uses) or None)
        return document

    @property
    def expected_gap(self) -> bool:
        """The expectations file foresaw this outcome (a known gap)."""
        return self.expectation is not None and self.expectation.met

    @property
    def unmet_expectation(self) -> bool:
        """The expectations file foresaw another outcome (an unexpected pass, a different failure)."""
        return self.expectation is not None and not self.expectation.met

    @property
    def about(self) -> tuple[str, ...]:
        """The ids a finding of this check is about: its finding's, else its own."""
        return self.finding_requirements or self.requirements

    @property
    def cites(self) -> tuple[str, ...]:
        """Every id the check names: its own, its finding's and its warnings'."""
        ids = [*self.requirements, *self.finding_requirements]
        ids += [rid for warning in self.warnings for rid in warning.requirements]
        return tuple(dict.fromkeys(ids))

    @property
    def counts_as_must_failure(self) -> bool:
        return self.outcome == Outcome.FAIL and self.level == Level.MUST and not self.expected_gap


#: Outcome -> number of checks, in :data:`OUTCOME_ORDER`.
Counts = Mapping[Outcome, int]


def counts_of(data: Mapping[str, int]) -> dict[Outcome, int]:
    return {outcome: data[outcome] for outcome in OUTCOME_ORDER}


def count(outcomes: Iterable[Outcome]) -> dict[Outcome, int]:
    """The counts of these outcomes (every outcome present, in order)."""
    counts = dict.fromkeys(OUTCOME_ORDER, 0)
    for outcome in outcomes:
        counts[outcome] += 1
    return counts


@dataclass(frozen=True)
class Summary:
    total: int
    outcomes: Counts
    must_failures: int
    errors: int
    by_area: Mapping[str, Counts]
    by_level: Mapping[Level, Counts]
    requirements_cited: tuple[str, ...]
    verdict: str
    expected_failures: int
    unexpected_passes: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Summary:
        return cls(
            total=data["total"],
            outcomes=counts_of(data["outcomes"]),
            must_failures=data["must_failures"],
            errors=data["errors"],
            by_area={area: counts_of(c) for area, c in data["by_area"].items()},
            by_level={Level(level): counts_of(c) for level, c in data["by_level"].items()},
            requirements_cited=tuple(data["requirements_cited"]),
            verdict=data["verdict"],
            expected_failures=data["expected_failures"],
            unexpected_passes=data["unexpected_passes"],
        )

    def to_json(self) -> Json:
        return {
            "total": self.total,
            "outcomes": dict(self.outcomes),
            "must_failures": self.must_failures,
            "errors": self.errors,
            "by_area": {area: dict(c) for area, c in self.by_area.items()},
            "by_level": {level: dict(c) for level, c in self.by_level.items()},
            "requirements_cited": list(self.requirements_cited),
            "verdict": self.verdict,
            "expected_failures": self.expected_failures,
            "unexpected_passes": self.unexpected_passes,
        }


@dataclass(frozen=True)
class Requests:
    """Requests the suite sent: by the checks, by the cleanup, in all."""

    checks: int
    cleanup: int
    total: int

    def to_json(self) -> Json:
        return {"checks": self.checks, "cleanup": self.cleanup, "total": self.total}


@dataclass(frozen=True)
class RunInfo:
    id: str
    started_at: str
    finished_at: str
    duration_seconds: float
    options: Mapping[str, Any]
    requests: Requests
    workers: int

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunInfo:
        return cls(
            data["id"],
            data["started_at"],
            data["finished_at"],
            data["duration_seconds"],
            dict(data["options"]),
            Requests(**data["requests"]),
            data["workers"],
        )

    def to_json(self) -> Json:
        return {
            "id": self.id,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration_seconds": self.duration_seconds,
            "options": dict(self.options),
            "requests": self.requests.to_json(),
            "workers": self.workers,
        }


@dataclass(frozen=True)
class Requirement:
    """A catalogue entry as the report carries it."""

    id: str
    level: Level
    title: str
    area: str
    tier: str | None = None

    def to_json(self) -> Json:
        document: Json = {"id": self.id, "level": self.level, "title": self.title, "area": self.area}
        _optional(document, "tier", self.tier)
        return document


@dataclass(frozen=True)
class Catalogue:
    """The protocol's requirements the run was held to (its areas by code, its entries)."""

    protocol: str
    areas: Mapping[str, str]
    requirements: tuple[Requirement, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Catalogue:
        entries = tuple(
            Requirement(r["id"], Level(r["level"]), r["title"], r["area"], r.get("tier"))
            for r in data["requirements"]
        )
        return cls(data["protocol"], dict(data["areas"]), entries)

    def to_json(self) -> Json:
        return {
            "protocol": self.protocol,
            "areas": dict(self.areas),
            "requirements": [r.to_json() for r in self.requirements],
        }

    def by_id(self) -> dict[str, Requirement]:
        return {r.id: r for r in self.requirements}


@dataclass(frozen=True)
class Cleanup:
    attempted: int
    deleted: int
    problems: tuple[str, ...]
    left: tuple[Mapping[str, str], ...] = ()
    """What stays on the server, each ``{"id", "reason"}``."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Cleanup:
        left = tuple(dict(entry) for entry in data.get("left") or ())
        return cls(data["attempted"], data["deleted"], tuple(data["problems"]), left)

    def to_json(self) -> Json:
        return {
            "attempted": self.attempted,
            "deleted": self.deleted,
            "problems": list(self.problems),
            "left": [dict(entry) for entry in self.left],
        }


@dataclass(frozen=True)
class Report:
    """One run's report (``contract/report.schema.json``)."""

    report_version: str
    protocol: str
    protocol_title: str | None
    protocol_label: str | None
    tool_version: str
    run: RunInfo
    server: Mapping[str, Any]
    conventions: Mapping[str, Any] | None
    catalogue: Catalogue
    summary: Summary
    checks: tuple[Check, ...]
    cleanup: Cleanup
    expectations: Mapping[str, Any] | None

    @classmethod
    def from_json(cls, data: object) -> Report:
        """The report ``data`` holds; :class:`ReportError` (one line) for anything else."""
        if not isinstance(data, dict):
            raise ReportError("is not an amp-conformance JSON report (not a JSON object)")
        version = data.get("report_version")
        major = REPORT_VERSION.partition(".")[0]
        if not isinstance(version, str) or version.partition(".")[0] != major:
            raise ReportError(f"has report_version {version!r}; this tool reads report_version {major}.x")
        error = next(iter(_validator().iter_errors(data)), None)
        if error is not None:
            where = "/".join(str(p) for p in error.instance_path) or "the document"
            said = " ".join(f"at {where}: {error.message}".split())  # one line, whatever the keys hold
            raise ReportError(f"is not a valid report_version {version} report: {said[:300]}")
        return cls(
            report_version=version,
            protocol=data["protocol"],
            protocol_title=data.get("protocol_title"),
            protocol_label=data.get("protocol_label"),
            tool_version=data["tool"]["version"],
            run=RunInfo.from_json(data["run"]),
            server=dict(data["server"]),
            conventions=data["conventions"],
            catalogue=Catalogue.from_json(data["catalogue"]),
            summary=Summary.from_json(data["summary"]),
            checks=tuple(Check.from_json(c) for c in data["checks"]),
            cleanup=Cleanup.from_json(data["cleanup"]),
            expectations=data["expectations"],
        )

    def to_json(self) -> Json:
        document: Json = {"report_version": self.report_version, "protocol": self.protocol}
        _optional(document, "protocol_title", self.protocol_title)
        _optional(document, "protocol_label", self.protocol_label)
        document.update(
            {
                "tool": {"name": "amp-conformance", "version": self.tool_version},
                "run": self.run.to_json(),
                "server": dict(self.server),
                "conventions": self.conventions,
                "catalogue": self.catalogue.to_json(),
                "summary": self.summary.to_json(),
                "checks": [c.to_json() for c in self.checks],
                "cleanup": self.cleanup.to_json(),
                "expectations": self.expectations,
            }
        )
        return document

    # what the renderers ask of a report --------------------------------------------------------

    @property
    def title(self) -> str:
        """The protocol's human name: the run's record, else the installed registry's, else its name."""
        return self.protocol_title or _registered(self.protocol, "title") or self.protocol

    @property
    def label(self) -> str:
        """The protocol's short badge label, with the same fallbacks as :attr:`title`."""
        return self.protocol_label or _registered(self.protocol, "label") or self.title

    @property
    def verdict(self) -> str:
        return self.summary.verdict

    @property
    def target(self) -> str | None:
        """What the run checked, as the server block names it (a URL, a command)."""
        value = self.server.get("target") or self.server.get("base_url")
        return value if isinstance(value, str) else None

    @property
    def base_url(self) -> str | None:
        value = self.server.get("base_url")
        return value if isinstance(value, str) else None

    def server_text(self, member: str) -> str | None:
        """A text member of the server block (``unavailable``, ``replay_note``, ``spec_error``)."""
        value = self.server.get(member)
        return value if isinstance(value, str) and value else None

    def server_object(self, member: str) -> Mapping[str, Any] | None:
        """An object member of the server block (``spec``, ``server_info``)."""
        value = self.server.get(member)
        return value if isinstance(value, dict) else None

    @property
    def convention_values(self) -> dict[str, Any]:
        """Convention name -> detected value (the source text left out)."""
        return {
            name: entry.get("value") if isinstance(entry, dict) else entry
            for name, entry in (self.conventions or {}).items()
            if name != "problems"
        }

    @property
    def stale_expectations(self) -> list[Any]:
        stale = (self.expectations or {}).get("stale")
        return list(stale) if isinstance(stale, list) else []

    def must_tally(self) -> tuple[int, int]:
        """(MUST checks that passed, MUST checks that ran to a verdict or errored); skips do not count."""
        musts = [c for c in self.checks if c.level == Level.MUST and c.outcome != Outcome.SKIP]
        return sum(1 for c in musts if c.outcome in PASSED), len(musts)

    def requirement_outcomes(self) -> dict[str, tuple[str, list[Check]]]:
        """Each cited id's outcome and checks (:func:`requirement_outcomes`)."""
        return requirement_outcomes(self.checks)

    def failing_requirements(self, checks: Iterable[Check] | None = None) -> list[str]:
        """The ids whose requirement outcome is ``fail`` (among ``checks``, all by default), root
        causes first (:func:`root_causes_first`)."""
        found = requirement_outcomes(self.checks if checks is None else checks)
        return self.failure_order(rid for rid, (outcome, _) in found.items() if outcome == Outcome.FAIL)

    def failure_order(self, ids: Iterable[str]) -> list[str]:
        entries = self.catalogue.requirements
        return root_causes_first(
            ids,
            blocked_counts(self.checks),
            {r.id: r.level for r in entries},
            {r.id: index for index, r in enumerate(entries)},
        )

    def ordered_failures(self, checks: Iterable[Check]) -> list[Check]:
        """``checks`` ordered by the first id each is about, as :meth:`failure_order` orders ids."""
        listed = list(checks)
        order = self.failure_order({rid for check in listed for rid in check.about})
        position = {rid: index for index, rid in enumerate(order)}
        return sorted(listed, key=lambda c: min((position[r] for r in c.about), default=len(position)))


def _registered(protocol: str, member: str) -> str | None:
    """A member of the installed protocol record called ``protocol`` (None when none is installed)."""
    from amp_conformance.engine import registry

    try:
        value = getattr(registry.get(protocol), member, None)
    except (KeyError, ImportError, TypeError):
        return None
    return value if isinstance(value, str) and value else None


def requirement_outcomes(checks: Iterable[Check]) -> dict[str, tuple[str, list[Check]]]:
    """For each cited id: the worst outcome among the checks citing it, and those checks; the one rule
    every output reads (grid, Markdown, matrix). A check's outcome counts for the ids its finding is
    about (:attr:`Check.about`); a failing or erroring check whose finding names other ids does not
    fail its own (it is listed, without an outcome for them). An id only its warnings name is a
    ``warn``; a warning also raises its ids to at least ``warn``."""
    result: dict[str, tuple[str, list[Check]]] = {}
    for check in checks:
        warned = {rid for warning in check.warnings for rid in warning.requirements}
        about = set(check.about)
        redirected = check.outcome in (Outcome.FAIL, Outcome.ERROR)
        for rid in check.cites:
            outcome: str
            if rid in about or (rid in check.requirements and not redirected):
                outcome = check.outcome
            elif rid in check.requirements:
                outcome = UNCOVERED  # the finding is about another requirement: no verdict on this one
            else:
                outcome = Outcome.WARN
            if rid in warned and SEVERITY[outcome] < SEVERITY[Outcome.WARN]:
                outcome = Outcome.WARN
            current, citing = result.get(rid, (UNCOVERED, []))
            worst = outcome if SEVERITY[outcome] > SEVERITY[current] else current
            result[rid] = (worst, [*citing, check])
    return result


def applied_levels(catalogue: Catalogue, checks: Iterable[Check]) -> Catalogue:
    """The catalogue with each requirement at the level this run holds it to: a requirement every check
    of which softens it (a ``stance``, such as AMP-OAS-02's "SHOULD for servers other than ours") is
    reported at the strongest of those checks' levels, so the grid, the Markdown and the matrix say
    what the terminal and the checks say."""
    rank = {level: index for index, level in enumerate(LEVEL_ORDER)}
    own: dict[str, list[Level]] = {}
    for check in checks:
        for rid in check.requirements:
            own.setdefault(rid, []).append(check.level)
    entries = []
    for entry in catalogue.requirements:
        levels = own.get(entry.id)
        if levels and all(rank[level] > rank[entry.level] for level in levels):
            entry = replace(entry, level=min(levels, key=rank.__getitem__))
        entries.append(entry)
    return replace(catalogue, requirements=tuple(entries))


def blocked_counts(checks: Iterable[Check]) -> dict[str, int]:
    """Root-cause id -> how many checks it blocked."""
    counts: dict[str, int] = {}
    for check in checks:
        if check.outcome == Outcome.BLOCKED and check.blocked_by is not None:
            counts[check.blocked_by.requirement] = counts.get(check.blocked_by.requirement, 0) + 1
    return counts


def root_causes_first(
    ids: Iterable[str], blocks: Mapping[str, int], levels: Mapping[str, str], order: Mapping[str, int]
) -> list[str]:
    """Requirement ids ordered as failures are listed: by how many checks each blocks (root causes
    first), then by level (MUST first), then in catalogue order (ids not in it last, by id)."""
    rank: dict[str, int] = {level: index for index, level in enumerate(LEVEL_ORDER)}
    return sorted(
        ids,
        key=lambda rid: (
            -blocks.get(rid, 0),
            rank.get(levels.get(rid, ""), len(rank)),
            order.get(rid, len(order)),
            rid,
        ),
    )


def as_report(report: Report | Mapping[str, Any]) -> Report:
    """``report`` as the model: a :class:`Report` as it is, a parsed JSON document validated once."""
    return report if isinstance(report, Report) else Report.from_json(dict(report))
