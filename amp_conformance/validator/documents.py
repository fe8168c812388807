"""Validate every cell of some inputs (files or ``-``) and collect the findings in a ``Report``."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from os import PathLike
from typing import IO

from amp_conformance.amp01.cells import validate_cell
from amp_conformance.validator.inputs import LineError, Unreadable, read_entries, source_name
from amp_conformance.validator.report import Finding, InputError, Report, SourceSummary


def validate_documents(
    paths: Iterable[str | PathLike[str]], *, stdin: IO[str] | None = None, now: datetime | None = None
) -> Report:
    """Check every cell of every input with ``validate_cell``; ``-`` reads ``stdin`` (default ``sys.stdin``).

    An unreadable input or JSONL line is recorded, not raised, so one bad file never hides the
    problems of the others. ``now`` is passed on to ``validate_cell`` (decay score moment).
    """
    report = Report()
    for path in paths:
        name = source_name(str(path))
        summary = SourceSummary(name)
        report.sources.append(summary)
        try:
            for entry in read_entries(str(path), stdin):
                if isinstance(entry, LineError):
                    report.input_errors.append(InputError(name, entry.line, entry.message))
                    continue
                summary.cells += 1
                report.findings.extend(
                    Finding(name, entry.line, entry.index, p.path, p.message, p.code)
                    for p in validate_cell(entry.value, now=now)
                )
        except Unreadable as exc:
            summary.readable = False
            report.input_errors.append(InputError(name, None, str(exc)))
    return report
