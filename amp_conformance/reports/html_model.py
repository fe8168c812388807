"""What the HTML pages need of a report: its checks numbered for anchors, grid outcomes, counts.

The report itself is the typed model (``engine.report_model``, validated once when read); this module
only adds what a page shows beyond it. The outcome and level orders are the engine's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from amp_conformance.engine import report_model
from amp_conformance.engine.report_model import (
    LEVEL_ORDER,
    OUTCOME_ORDER,
    SEVERITY,
    UNCOVERED,
    Catalogue,
    Report,
    as_report,
    count,
)
from amp_conformance.engine.vocabulary import Level, Outcome

__all__ = [
    "LEVEL_ORDER",
    "OPEN_OUTCOMES",
    "OUTCOME_ORDER",
    "SEVERITY",
    "UNCOVERED",
    "Catalogue",
    "Check",
    "as_dict",
    "as_list",
    "as_text",
    "level_counts",
    "read_catalogue",
    "read_checks",
    "requirement_outcomes",
    "texts",
]

#: Outcomes shown expanded by default.
OPEN_OUTCOMES = frozenset({Outcome.FAIL, Outcome.WARN, Outcome.ERROR, Outcome.BLOCKED})


def as_dict(value: object) -> dict[str, Any]:
    """A protocol's free-form JSON member (``server``, ``spec``, ``conventions``) as an object."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_text(value: object, default: str = "") -> str:
    """A free-form value as text: strings as they are, other scalars through str(), None as default."""
    if value is None:
        return default
    return value if isinstance(value, str) else str(value)


def texts(value: object) -> list[str]:
    """A free-form list of ids or lines, keeping only its strings."""
    return [item for item in as_list(value) if isinstance(item, str)]


def read_catalogue(report: Report | Mapping[str, Any]) -> Catalogue:
    """The catalogue the report carries."""
    return as_report(report).catalogue


@dataclass(frozen=True)
class Check:
    """One check of the report as a page shows it: the model's entry and its place (its anchor)."""

    index: int
    entry: report_model.Check

    @property
    def anchor(self) -> str:
        return f"c-{self.index}"

    @property
    def id(self) -> str:
        return self.entry.id

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def title(self) -> str:
        return self.entry.title

    @property
    def requirements(self) -> tuple[str, ...]:
        return self.entry.requirements

    @property
    def level(self) -> Level:
        return self.entry.level

    @property
    def area(self) -> str:
        return self.entry.area

    @property
    def outcome(self) -> Outcome:
        return self.entry.outcome

    @property
    def message(self) -> str:
        return self.entry.message

    @property
    def cites(self) -> tuple[str, ...]:
        return self.entry.cites


def read_checks(report: Report | Mapping[str, Any]) -> list[Check]:
    return [Check(index, entry) for index, entry in enumerate(as_report(report).checks)]


def requirement_outcomes(checks: Iterable[Check]) -> dict[str, tuple[str, list[Check]]]:
    """For each cited id: the worst outcome among the checks citing it, and those checks
    (:func:`engine.report_model.requirement_outcomes`, the single-run page's and the matrix's rule)."""
    shown = {id(c.entry): c for c in checks}
    found = report_model.requirement_outcomes(c.entry for c in shown.values())
    return {rid: (outcome, [shown[id(e)] for e in citing]) for rid, (outcome, citing) in found.items()}


def level_counts(checks: Iterable[Check]) -> dict[Level, dict[Outcome, int]]:
    by_level: dict[Level, list[Outcome]] = {}
    for check in checks:
        by_level.setdefault(check.level, []).append(check.outcome)
    return {level: count(by_level[level]) for level in LEVEL_ORDER if level in by_level}
