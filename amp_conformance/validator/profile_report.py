"""What a profile run (``--profile amr-lite`` / ``memorycloud``) found: rule problems as text and JSON.

Text: ``file:line:column: ID: message [LEVEL]`` (line and column when known; a file inside an archive
is written ``archive/member``). Exit code: 2 when an input could not be read, else 1 when a MUST
rule is broken, else 0 (SHOULD and MAY problems are warnings and notes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from amp_conformance.validator.report import EXIT_OK, EXIT_PROBLEMS, EXIT_UNREADABLE, InputError, header
from amp_conformance.validator.rules import SEVERITY, rule_catalogue


def printable(text: str) -> str:
    """Input-controlled text made safe for a terminal: control and format characters escaped."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


@dataclass(frozen=True, slots=True)
class RuleProblem:
    """One broken rule at one place; ``member`` is the file inside an archive or folder, if any."""

    source: str
    rule: str
    level: str
    message: str
    line: int | None = None
    column: int | None = None
    member: str | None = None

    @property
    def where(self) -> str:
        place = self.source if self.member is None else f"{self.source.rstrip('/')}/{self.member}"
        if self.line is not None:
            place += f":{self.line}"
            if self.column is not None:
                place += f":{self.column}"
        return place

    def __str__(self) -> str:
        return printable(f"{self.where}: {self.rule}: {self.message} [{self.level}]")

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "member": self.member,
            "line": self.line,
            "column": self.column,
            "requirement": self.rule,
            "level": self.level,
            "severity": SEVERITY[self.level],
            "message": self.message,
        }


@dataclass(slots=True)
class ProfileReport:
    """Problems, unreadable inputs, per-source summaries and the profile's own extras (entries, files).

    An extra may be a function, called only when the JSON form is built (the normalized entries of a
    100,000-line file cost time a text run need not pay).
    """

    profile: str
    problems: list[RuleProblem] = field(default_factory=list)
    input_errors: list[InputError] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)
    strict: bool = False

    def add(self, source: str, rule: str, message: str, **where: Any) -> None:
        """Record a problem under ``rule``, at the level the catalogue gives it."""
        level = rule_catalogue(self.profile).level(rule)
        self.problems.append(RuleProblem(source, rule, level, message, **where))

    def count(self, level: str) -> int:
        return sum(1 for p in self.problems if p.level == level)

    @property
    def exit_code(self) -> int:
        if self.input_errors:
            return EXIT_UNREADABLE
        counted = self.count("MUST") + (self.count("SHOULD") if self.strict else 0)
        return EXIT_PROBLEMS if counted else EXIT_OK

    def lines(self) -> list[str]:
        """Problem and unreadable-input lines: by source (input order), then member, line, column."""
        order = {s["source"]: i for i, s in enumerate(self.sources)}
        problems = sorted(
            self.problems,
            key=lambda p: (order.get(p.source, len(order)), p.member or "", p.line or 0, p.column or 0),
        )
        return [str(p) for p in problems] + [str(e) for e in self.input_errors]

    def summary_line(self) -> str:
        text = (
            f"{self.profile}: {len(self.sources)} input(s), {self.count('MUST')} error(s), "
            f"{self.count('SHOULD')} warning(s), {self.count('MAY')} note(s)"
        )
        if self.input_errors:
            text += f"; {len(self.input_errors)} unreadable input(s)"
        return text

    def as_dict(self) -> dict[str, Any]:
        """The ``amr-lite`` / ``memorycloud`` forms of validation-report.schema.json."""
        return {
            **header(self.profile, self.exit_code),
            "summary": {
                "sources": len(self.sources),
                "problems": len(self.problems),
                "errors": self.count("MUST"),
                "warnings": self.count("SHOULD"),
                "notes": self.count("MAY"),
                "input_errors": len(self.input_errors),
            },
            "sources": self.sources,
            "problems": [p.as_dict() for p in self.problems],
            "input_errors": [e.as_dict() for e in self.input_errors],
            **{key: value() if callable(value) else value for key, value in self.extras.items()},
        }
