"""What the HTML page needs from a JSON report, read defensively.

A saved report may be v1.0 or v2.0, hand-edited or truncated: every reader here checks types and
falls back instead of raising, so a strange report still renders (with what it has).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Known outcomes, in the order the page lists them.
OUTCOME_ORDER = ("pass", "fail", "warn", "skip", "error", "blocked")
UNCOVERED = "uncovered"
#: How bad an outcome is for the requirement grid: the worst outcome of the citing checks wins.
SEVERITY = {UNCOVERED: 0, "skip": 1, "pass": 2, "warn": 3, "blocked": 4, "error": 5, "fail": 6}
LEVEL_ORDER = ("MUST", "SHOULD", "MAY")
#: Outcomes shown expanded by default.
OPEN_OUTCOMES = frozenset({"fail", "warn", "error", "blocked"})


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_text(value: object, default: str = "") -> str:
    """A report field as text: strings as they are, other scalars through str(), None as default."""
    if value is None:
        return default
    return value if isinstance(value, str) else str(value)


def as_number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def texts(value: object) -> list[str]:
    """A list of ids or lines, keeping only its strings."""
    return [item for item in as_list(value) if isinstance(item, str)]


@dataclass(frozen=True)
class Requirement:
    id: str
    level: str
    title: str
    area: str


@dataclass
class Catalogue:
    areas: dict[str, str]
    requirements: list[Requirement]

    def by_id(self) -> dict[str, Requirement]:
        return {r.id: r for r in self.requirements}


def area_of(requirement_id: str) -> str:
    """``AMP-READ-02`` and ``AMP11-READ-02`` -> ``read``."""
    parts = requirement_id.split("-")
    return parts[1].lower() if len(parts) >= 3 else "other"


def _packaged_catalogue(protocol: str | None = None) -> Catalogue:
    """The catalogue the installed suite ships (for v1.0 reports, which do not carry one)."""
    try:
        from amp_conformance.engine import registry

        packaged = registry.get(protocol or registry.DEFAULT_PROTOCOL).catalogue
        entries = packaged.requirements.values()
        return Catalogue(
            dict(packaged.areas), [Requirement(r.id, str(r.level), r.title, area_of(r.id)) for r in entries]
        )
    except (ImportError, OSError, ValueError, KeyError):  # a broken install still renders the checks
        return Catalogue({}, [])


def read_catalogue(report: Mapping[str, Any]) -> Catalogue:
    """The report's own catalogue (v2.0), else the packaged one."""
    embedded = as_dict(report.get("catalogue"))
    entries = as_list(embedded.get("requirements"))
    if not entries:
        protocol = report.get("protocol")
        return _packaged_catalogue(protocol if isinstance(protocol, str) else None)
    areas = {str(k): as_text(v) for k, v in as_dict(embedded.get("areas")).items()}
    requirements = []
    seen: set[str] = set()
    for entry in entries:
        item = as_dict(entry)
        rid = as_text(item.get("id"))
        if not rid or rid in seen:
            continue
        seen.add(rid)
        area = as_text(item.get("area")) or area_of(rid)
        requirements.append(
            Requirement(rid, as_text(item.get("level"), "?"), as_text(item.get("title")), area)
        )
    return Catalogue(areas, requirements)


@dataclass
class Check:
    """One check entry of the report, with the fields the page shows."""

    index: int
    raw: dict[str, Any]
    id: str
    name: str
    title: str
    requirements: list[str]
    level: str
    area: str
    outcome: str
    message: str
    cites: list[str] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return f"c-{self.index}"


def read_checks(report: Mapping[str, Any]) -> list[Check]:
    checks = []
    for index, entry in enumerate(as_list(report.get("checks"))):
        raw = as_dict(entry)
        requirements = texts(raw.get("requirements"))
        cites = list(dict.fromkeys([*requirements, *texts(raw.get("finding_requirements"))]))
        for warning in as_list(raw.get("warnings")):
            cites += [rid for rid in texts(as_dict(warning).get("requirements")) if rid not in cites]
        check_id = as_text(raw.get("id")) or as_text(raw.get("name")) or f"check {index + 1}"
        checks.append(
            Check(
                index=index,
                raw=raw,
                id=check_id,
                name=as_text(raw.get("name")) or check_id.rsplit("::", 1)[-1],
                title=as_text(raw.get("title")) or check_id,
                requirements=requirements,
                level=as_text(raw.get("level"), "?"),
                area=as_text(raw.get("area")) or (area_of(requirements[0]) if requirements else "other"),
                outcome=as_text(raw.get("outcome"), "error").lower(),
                message=as_text(raw.get("message")),
                cites=cites,
            )
        )
    return checks


def warned_requirements(check: Check) -> set[str]:
    """Ids a check's warnings are about (a passing check may still warn about another requirement)."""
    found: set[str] = set()
    for warning in as_list(check.raw.get("warnings")):
        found.update(texts(as_dict(warning).get("requirements")))
    return found


def requirement_outcomes(checks: Iterable[Check]) -> dict[str, tuple[str, list[Check]]]:
    """For each cited id: the worst outcome among the checks citing it, and those checks."""
    result: dict[str, tuple[str, list[Check]]] = {}
    for check in checks:
        warned = warned_requirements(check)
        own = {*check.requirements, *texts(check.raw.get("finding_requirements"))}
        for rid in check.cites:
            outcome = check.outcome if rid in own else "warn"
            if rid in warned and SEVERITY.get(outcome, 5) < SEVERITY["warn"]:
                outcome = "warn"
            current, citing = result.get(rid, (UNCOVERED, []))
            worst = outcome if SEVERITY.get(outcome, 5) > SEVERITY.get(current, 5) else current
            result[rid] = (worst, [*citing, check])
    return result


def outcome_counts(checks: Iterable[Check]) -> dict[str, int]:
    counts = dict.fromkeys(OUTCOME_ORDER, 0)
    for check in checks:
        counts[check.outcome] = counts.get(check.outcome, 0) + 1
    return counts


def level_counts(checks: Iterable[Check]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for check in checks:
        row = table.setdefault(check.level, dict.fromkeys(OUTCOME_ORDER, 0))
        row[check.outcome] = row.get(check.outcome, 0) + 1
    ordered = {level: table[level] for level in LEVEL_ORDER if level in table}
    ordered.update({level: row for level, row in table.items() if level not in ordered})
    return ordered


def summary_counts(report: Mapping[str, Any], checks: list[Check]) -> dict[str, int]:
    """Counts by outcome as the report states them (computed from the checks when absent)."""
    stated = as_dict(as_dict(report.get("summary")).get("outcomes"))
    computed = outcome_counts(checks)
    if not stated:
        return computed
    counts = {k: int(v) for k, v in stated.items() if isinstance(v, int) and not isinstance(v, bool)}
    for outcome, number in computed.items():
        counts.setdefault(outcome, number)
    return counts


def verdict_of(report: Mapping[str, Any], checks: list[Check]) -> str:
    stated = as_text(as_dict(report.get("summary")).get("verdict"))
    if stated:
        return stated
    if any(c.outcome == "fail" and c.level == "MUST" for c in checks):
        return "fail"
    if any(c.outcome == "error" for c in checks):
        return "incomplete"
    return "pass"
