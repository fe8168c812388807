"""What a GitHub Actions job shows of a run: ``::error`` annotations and the step summary.

Workflow commands are parsed from the job's output, so server text in them is escaped by GitHub's
rules (data: ``%``, CR, LF; properties also ``:`` and ``,``) and cannot end the command early or
start another one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from amp_conformance.engine.report_model import Report, as_report
from amp_conformance.engine.vocabulary import Outcome
from amp_conformance.reports.markdown import write_markdown


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation_lines(report: Report | Mapping[str, Any]) -> Iterator[str]:
    """One ``::error`` line per MUST failure not listed as expected, one ``::warning`` per SHOULD (or
    MAY) finding and per expectation not met (an unexpected pass, for one)."""
    model = as_report(report)
    for check in model.checks:
        ids = " ".join(check.about) or model.protocol
        title = f"{ids} {check.title}".strip()
        if check.counts_as_must_failure:
            message = check.message
            if check.curl:
                message += f"\nreproduce: {check.curl}"
            yield f"::error title={escape_property(title)}::{escape_data(message)}"
        elif check.expectation is not None and not check.expectation.met:
            message = f"expected {check.expectation.outcome}, got {check.outcome}: {check.id}"
            yield f"::warning title={escape_property(title)}::{escape_data(message)}"
        elif check.outcome == Outcome.WARN and not check.expected_gap:
            message = f"{check.level}: {check.message}"
            if check.curl:
                message += f"\nreproduce: {check.curl}"
            yield f"::warning title={escape_property(title)}::{escape_data(message)}"


def _print_line(line: str) -> None:
    print(line, flush=True)


def publish(
    report: Report | Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    emit: Callable[[str], None] = _print_line,
) -> list[str]:
    """Under GitHub Actions: append the summary to ``$GITHUB_STEP_SUMMARY`` and ``emit`` the
    annotations, one whole line each (a workflow command is read only at the start of a line: the
    plugin emits them after pytest's own output). Returns problems (one line each) instead of raising."""
    report = as_report(report)
    env = os.environ if environ is None else environ
    problems: list[str] = []
    summary_path = env.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        problem = write_markdown(report, Path(summary_path), append=True)
        if problem:
            problems.append(problem)
    if env.get("GITHUB_ACTIONS") == "true":
        for line in annotation_lines(report):
            emit(line)
    return problems
