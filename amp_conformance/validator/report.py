"""What a validation run found, as data, as text lines and as JSON (validation-report.schema.json).

Exit codes are decided here, once, for both commands: 0 nothing found but warnings, 1 a problem
under a MUST requirement (or any problem with ``strict``), 2 some input could not be read (that
outranks problems: the verdict is incomplete). Every problem cites its requirement id and level.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from amp_conformance._version import __version__
from amp_conformance.validator.citations import cell_requirement, level_of

VALIDATION_VERSION: Final = "1.1"
EXIT_OK: Final = 0
EXIT_PROBLEMS: Final = 1
EXIT_UNREADABLE: Final = 2


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem of one cell: ``source:line: REQUIREMENT: json.path: message [LEVEL, code]``."""

    source: str
    line: int
    index: int
    path: str
    message: str
    code: str

    @property
    def requirement(self) -> str:
        return cell_requirement(self.path, self.code)

    @property
    def level(self) -> str:
        return level_of(self.requirement)

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}: {self.requirement}: {self.path}"
        return f"{where}: {self.message} [{self.level}, {self.code}]"


@dataclass(frozen=True, slots=True)
class InputError:
    """An input (or one JSONL line of it, when ``line`` is set) that could not be read."""

    source: str
    line: int | None
    message: str

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        return f"{where}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "message": self.message}


@dataclass(slots=True)
class SourceSummary:
    """Counts for one input (its invalid cells are counted from the findings, by level)."""

    source: str
    readable: bool = True
    cells: int = 0


@dataclass(slots=True)
class Report:
    """The outcome of ``validate_documents``: findings, unreadable inputs and per-input counts."""

    findings: list[Finding] = field(default_factory=list)
    input_errors: list[InputError] = field(default_factory=list)
    sources: list[SourceSummary] = field(default_factory=list)
    strict: bool = False

    @property
    def cells(self) -> int:
        return sum(s.cells for s in self.sources)

    def _counts(self, finding: Finding) -> bool:
        """Whether a finding makes its cell invalid: a MUST problem, or any problem when strict."""
        return self.strict or finding.level == "MUST"

    def invalid_in(self, source: str | None = None) -> int:
        """Cells (of one source, or all) with a problem that counts."""
        return len(
            {(f.source, f.index) for f in self.findings if self._counts(f) and source in (None, f.source)}
        )

    @property
    def invalid_cells(self) -> int:
        return self.invalid_in()

    @property
    def warned_cells(self) -> int:
        """Valid cells that still have warnings (problems under SHOULD or MAY requirements)."""
        invalid = {(f.source, f.index) for f in self.findings if self._counts(f)}
        return len({(f.source, f.index) for f in self.findings} - invalid)

    @property
    def ok(self) -> bool:
        return not self.findings and not self.input_errors

    @property
    def exit_code(self) -> int:
        if self.input_errors:
            return EXIT_UNREADABLE
        return EXIT_PROBLEMS if self.invalid_cells else EXIT_OK

    def lines(self) -> list[str]:
        """Problem and unreadable-input lines, in input order (by source, then line)."""
        position = {s.source: i for i, s in enumerate(self.sources)}
        items: list[Finding | InputError] = [*self.findings, *self.input_errors]
        items.sort(key=lambda item: (position.get(item.source, len(position)), item.line or 0))
        return [str(item) for item in items]

    def summary_line(self) -> str:
        files = len(self.sources)
        text = (
            f"{self.cells} cell(s) in {files} input(s): {self.cells - self.invalid_cells} valid, "
            f"{self.invalid_cells} invalid, {self.warned_cells} valid with warnings, "
            f"{len(self.findings)} problem(s)"
        )
        if self.input_errors:
            text += f"; {len(self.input_errors)} unreadable input(s) or line(s)"
        return text

    def as_dict(self) -> dict[str, Any]:
        """The ``cells`` form of validation-report.schema.json."""
        return {
            **header("cells", self.exit_code),
            "summary": {
                "sources": len(self.sources),
                "cells": self.cells,
                "valid_cells": self.cells - self.invalid_cells,
                "invalid_cells": self.invalid_cells,
                "cells_with_warnings": self.warned_cells,
                "problems": len(self.findings),
                "warnings": sum(1 for f in self.findings if f.level != "MUST"),
                "input_errors": len(self.input_errors),
            },
            "sources": [
                {
                    "source": s.source,
                    "readable": s.readable,
                    "cells": s.cells,
                    "invalid_cells": self.invalid_in(s.source),
                }
                for s in self.sources
            ],
            "problems": [
                {
                    "source": f.source,
                    "line": f.line,
                    "index": f.index,
                    "path": f.path,
                    "requirement": f.requirement,
                    "level": f.level,
                    "code": f.code,
                    "message": f.message,
                }
                for f in self.findings
            ],
            "input_errors": [e.as_dict() for e in self.input_errors],
        }


def header(kind: str, exit_code: int) -> dict[str, Any]:
    return {
        "validation_version": VALIDATION_VERSION,
        "kind": kind,
        "tool": {"name": "amp-conformance", "version": __version__},
        "valid": exit_code == EXIT_OK,
        "exit_code": exit_code,
    }


def contract_report_dict(
    document: str,
    differences: list[dict[str, Any]],
    input_errors: list[InputError],
    conventions: list[dict[str, Any]] | None = None,
    *,
    strict: bool = False,
) -> dict[str, Any]:
    """The ``contract`` form of validation-report.schema.json; differences carry requirement and level."""
    counted = [d for d in differences if strict or d.get("level") == "MUST"]
    exit_code = EXIT_UNREADABLE if input_errors else EXIT_PROBLEMS if counted else EXIT_OK
    by_code: dict[str, int] = {}
    for difference in differences:
        by_code[difference["code"]] = by_code.get(difference["code"], 0) + 1
    return {
        **header("contract", exit_code),
        "document": document,
        "summary": {"differences": len(differences), "counted": len(counted), "by_code": by_code},
        "differences": differences,
        "conventions": conventions or [],
        "input_errors": [e.as_dict() for e in input_errors],
    }
