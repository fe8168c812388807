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

from amp_conformance.reports.markdown import write_markdown


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _ids(check: Mapping[str, Any]) -> list[str]:
    for key in ("finding_requirements", "requirements"):
        value = check.get(key)
        ids = [r for r in value if isinstance(r, str)] if isinstance(value, list) else []
        if ids:
            return ids
    return []


def _expected(check: Mapping[str, Any]) -> bool:
    expectation = check.get("expectation")
    return isinstance(expectation, dict) and bool(expectation.get("met"))


def annotation_lines(report: Mapping[str, Any]) -> Iterator[str]:
    """One ``::error`` line per MUST failure not listed as expected, one ``::warning`` per SHOULD (or
    MAY) finding and per expectation not met (an unexpected pass, for one)."""
    checks = report.get("checks")
    for check in checks if isinstance(checks, list) else []:
        if not isinstance(check, dict):
            continue
        ids = " ".join(_ids(check)) or "AMP"
        title = f"{ids} {check.get('title') or check.get('id') or ''}".strip()
        expectation = check.get("expectation")
        if check.get("outcome") == "fail" and check.get("level") == "MUST" and not _expected(check):
            message = str(check.get("message") or "")
            if check.get("curl"):
                message += f"\nreproduce: {check['curl']}"
            yield f"::error title={escape_property(title)}::{escape_data(message)}"
        elif isinstance(expectation, dict) and not expectation.get("met"):
            message = f"expected {expectation.get('outcome')}, got {check.get('outcome')}: {check.get('id')}"
            yield f"::warning title={escape_property(title)}::{escape_data(message)}"
        elif check.get("outcome") == "warn" and not _expected(check):
            level = check.get("level") or "SHOULD"
            message = f"{level}: {check.get('message') or ''}"
            if check.get("curl"):
                message += f"\nreproduce: {check['curl']}"
            yield f"::warning title={escape_property(title)}::{escape_data(message)}"


def _print_line(line: str) -> None:
    print(line, flush=True)


def publish(
    report: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    emit: Callable[[str], None] = _print_line,
) -> list[str]:
    """Under GitHub Actions: append the summary to ``$GITHUB_STEP_SUMMARY`` and ``emit`` the
    annotations, one whole line each (a workflow command is read only at the start of a line: the
    plugin emits them after pytest's own output). Returns problems (one line each) instead of raising."""
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
