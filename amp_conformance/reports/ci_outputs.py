"""The outputs a CI job keeps besides the JSON report: Markdown summary, badge, GitHub Actions step
summary and annotations, and the expectations baseline. One call from the plugin at the end of a run."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from amp_conformance.engine.expectations import write_baseline
from amp_conformance.engine.report_model import Report, as_report
from amp_conformance.reports.badge import write_badge
from amp_conformance.reports.github import publish
from amp_conformance.reports.markdown import write_markdown


def ci_outputs_wanted(
    markdown: Path | None, badge: Path | None, baseline: Path | None, environ: Mapping[str, str] | None = None
) -> bool:
    """Whether :func:`write_ci_outputs` has anything to do (the report is built only then)."""
    env = os.environ if environ is None else environ
    github = bool(env.get("GITHUB_STEP_SUMMARY")) or env.get("GITHUB_ACTIONS") == "true"
    return github or any(path is not None for path in (markdown, badge, baseline))


def write_ci_outputs(
    report: Report | Mapping[str, Any],
    markdown: Path | None = None,
    badge: Path | None = None,
    baseline: Path | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    emit: Callable[[str], None] | None = None,
) -> list[str]:
    """Write what was asked for; returns problems (one line each: the run then exits 2)."""
    report = as_report(report)
    problems: list[str] = []
    if markdown is not None and (problem := write_markdown(report, markdown)):
        problems.append(problem)
    if badge is not None and (problem := write_badge(report, badge)):
        problems.append(problem)
    if baseline is not None:
        # no run id in the file: a re-baseline diffs only on findings
        checks = [check.to_json() for check in report.checks]
        if problem := write_baseline(checks, baseline):
            problems.append(problem)
    problems += publish(report, environ) if emit is None else publish(report, environ, emit)
    return problems
