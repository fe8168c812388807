"""``--markdown PATH``: a Markdown summary of a JSON report, for people reading a CI job.

Verdict, a table by area and by level, the failing requirements, and each failure with its finding
and the curl line that reproduces it inside ``<details>``. Everything that can come from the server
(messages, URLs, curl lines, ids of odd reports) goes through :func:`md_escape` or :func:`html_escape`,
so it reads as text: it cannot open a link, an image, HTML or break a table.
"""

from __future__ import annotations

import html
import re
import string
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amp_conformance.engine.report_model import (
    BAD,
    OUTCOME_ORDER,
    Check,
    Counts,
    DefectGroup,
    Report,
    as_report,
    defect_groups,
    left_count_line,
)
from amp_conformance.engine.vocabulary import Level, Outcome
from amp_conformance.reports.output import write_report_file

MAX_DETAILS = 100
_PUNCTUATION = frozenset(string.punctuation) - frozenset("&<>\"'")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def html_escape(value: object) -> str:
    """Text for inside raw HTML (``<summary>``, ``<pre>``): entities, control characters shown."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return html.escape(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text), quote=True)


def md_escape(value: object, *, keep: str = "") -> str:
    """Inline Markdown text that renders as exactly these characters: HTML specials as entities,
    every other ASCII punctuation mark backslash-escaped (so no emphasis, link, code span or table
    cell border can start), line breaks as spaces. ``keep``: punctuation left as it is (for text
    inside a line, where it starts nothing: ``.`` and ``-`` in a heading)."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text.replace("\r\n", " ").replace("\n", " "))
    out: list[str] = []
    for char in text:
        if char in "&<>\"'":
            out.append(html.escape(char, quote=True))
        elif char in _PUNCTUATION and char not in keep:
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def md_cell(value: object, absent: str = "(absent)") -> str:
    """A table cell: escaped text, or ``absent`` for None."""
    return absent if value is None else md_escape(value)


def must_tally(report: Report | Mapping[str, Any]) -> tuple[int, int]:
    """(MUST checks that passed, MUST checks that ran to a verdict or errored); skips do not count."""
    return as_report(report).must_tally()


def _table(
    title: str, rows: Mapping[str, Counts] | Mapping[Level, Counts], names: Mapping[str, str] | None = None
) -> list[str]:
    header = " | ".join(OUTCOME_ORDER)
    lines = [
        f"### {title}",
        "",
        f"| {title.split()[-1]} | {header} |",
        "|---" * (len(OUTCOME_ORDER) + 1) + "|",
    ]
    for key, counts in rows.items():
        label = md_escape(f"{key} ({names[key]})" if names and key in names else str(key))
        lines.append(f"| {label} | " + " | ".join(str(counts[o]) for o in OUTCOME_ORDER) + " |")
    return [*lines, ""]


def _failing_requirements(report: Report, failures: list[Check]) -> list[str]:
    """The requirements the model says fail (the grid's FAIL cells), root causes first."""
    titles = {r.id: (str(r.level), r.title) for r in report.catalogue.requirements}
    failing = report.failing_requirements(failures)
    if not failing:
        return []
    lines = [
        f"### Failing requirements ({len(failing)})",
        "",
        "| requirement | level | title | checks |",
        "|---|---|---|---|",
    ]
    for rid in failing:
        level, title = titles.get(rid, ("", "(not in the catalogue)"))
        names = ", ".join(sorted({c.name for c in failures if c.outcome == Outcome.FAIL and rid in c.about}))
        lines.append(f"| {md_escape(rid)} | {md_escape(level)} | {md_escape(title)} | {md_escape(names)} |")
    return [*lines, ""]


def _details(check: Check) -> list[str]:
    summary = f"{check.outcome.upper()} {', '.join(check.about)} ({check.level}): {check.title}"
    # One line: a blank line would end the HTML block and let the rest be read as Markdown.
    lines = [f"<details><summary>{html_escape(' '.join(summary.split()))}</summary>", ""]
    lines.append(f"**check** {md_escape(check.id)}  ")
    lines.append(f"**found** {md_escape(check.message)}")
    if check.expectation is not None:
        lines += [
            "",
            f"**expected** {md_escape(check.expectation.outcome)}: {md_escape(check.expectation.reason)}",
        ]
    if check.curl:
        lines += ["", f"<pre>{html_escape(check.curl)}</pre>"]
    return [*lines, "", "</details>", ""]


def _entries(failures: list[Check]) -> list[Check | DefectGroup]:
    """The failures as listed: a defect several checks share once, where its first check stands."""
    grouped = {c.id: g for g in defect_groups(failures) if len(g.checks) > 1 for c in g.checks}
    entries: list[Check | DefectGroup] = []
    for check in failures:
        group = grouped.get(check.id)
        if group is None:
            entries.append(check)
        elif group.checks[0] is check:
            entries.append(group)
    return entries


def _group_details(group: DefectGroup) -> list[str]:
    """One defect of several checks: its line, its places, the first check's finding and curl line."""
    first = group.checks[0]
    summary = f"{group.outcome.upper()} {group.line()}"
    lines = [f"<details><summary>{html_escape(' '.join(summary.split()))}</summary>", ""]
    lines.append(f"**where** {md_escape(group.where_line(2000))}  ")
    lines.append(f"**first** {md_escape(first.id)}: {md_escape(first.message)}")
    if first.curl:
        lines += ["", f"<pre>{html_escape(first.curl)}</pre>"]
    return [*lines, "", "</details>", ""]


def _network_and_cleanup(report: Report) -> list[str]:
    """What the network did and what the cleanup left: apart from the verdict, never a finding."""
    lines: list[str] = []
    network = report.network
    if network is not None:
        lines += ["### Network", "", md_escape(network.summary, keep=".-:,"), ""]
        facts = network.facts()
        if facts:
            lines += ["| what | count |", "|---|---|"]
            lines += [f"| {md_escape(label)} | {md_escape(value)} |" for label, value in facts]
            lines.append("")
    left = report.cleanup.left
    if left:
        lines += [f"### {md_escape(left_count_line(report.cleanup), keep='.-:,')}", ""]
        lines += ["| id | reason |", "|---|---|"]
        lines += [f"| {md_escape(e['id'])} | {md_escape(e['reason'])} |" for e in left[:MAX_DETAILS]]
        if len(left) > MAX_DETAILS:
            lines.append(f"... and {len(left) - MAX_DETAILS} more: see the JSON report.")
        lines.append("")
    return lines


_VERDICTS = {
    "pass": "PASS: every MUST check passed",
    "fail": "FAIL: a MUST check failed",
    "incomplete": "INCOMPLETE: checks could not reach a verdict",
}


def render_markdown_summary(report: Report | Mapping[str, Any]) -> str:
    """The Markdown summary of one report."""
    report = as_report(report)
    summary = report.summary
    passed, musts = report.must_tally()
    verdict = _VERDICTS.get(summary.verdict) or md_escape(summary.verdict)
    lines = [
        f"## {md_escape(report.title, keep='.-')} conformance: {verdict}",
        "",
        f"Server {md_escape(report.target)}, run {md_escape(report.run.id)}, "
        f"{md_escape(report.run.duration_seconds)} s. MUST checks passed: **{passed}/{musts}**.",
        "",
    ]
    expected, unexpected = summary.expected_failures, summary.unexpected_passes
    if expected or unexpected:
        lines += [f"Expected failures: {expected}. Unexpected passes: {unexpected}.", ""]
    if unavailable := report.server_text("unavailable"):
        lines += [f"Server unavailable: {md_escape(unavailable)}", ""]
    if note := report.server_text("replay_note"):
        lines += [f"Curl lines: {md_escape(note)}", ""]
    lines += _table("By area", summary.by_area, report.catalogue.areas)
    lines += _table("By level", summary.by_level)
    bad = [c for c in report.checks if c.outcome in BAD]
    failures = report.ordered_failures(c for c in bad if not c.expected_gap)  # new ones: what needs attention
    expected_failures = [c for c in bad if c.expected_gap]
    lines += _failing_requirements(report, failures)
    if failures:
        heading = "New failures and errors" if expected_failures else "Failures and errors"
        lines += [f"### {heading} ({len(failures)})", ""]
        entries = _entries(failures)
        for entry in entries[:MAX_DETAILS]:
            lines += _group_details(entry) if isinstance(entry, DefectGroup) else _details(entry)
        if len(entries) > MAX_DETAILS:
            lines += [f"... and {len(entries) - MAX_DETAILS} more: see the JSON report.", ""]
    unmet = [c for c in report.checks if c.unmet_expectation]
    if unmet:
        lines += [f"### Expectations not met ({len(unmet)})", ""]
        for check in unmet:
            assert check.expectation is not None
            wanted = md_escape(check.expectation.outcome)
            lines.append(f"- {md_escape(check.id)}: expected {wanted}, got {md_escape(check.outcome)}")
        lines.append("")
    if expected_failures:  # known gaps: a section of their own, collapsed
        lines += [
            f"<details><summary>Expected failures ({len(expected_failures)}), "
            "listed in the expectations file</summary>",
            "",
        ]
        for check in expected_failures:
            reason = check.expectation.reason if check.expectation is not None else ""
            because = f": {md_escape(reason)}" if reason else ""
            lines.append(f"- {md_escape(', '.join(check.about))} {md_escape(check.title)}{because}")
        lines += ["", "</details>", ""]
    lines += _network_and_cleanup(report)
    stale = report.stale_expectations
    if stale:
        lines += [f"### Stale expectations ({len(stale)})", ""]
        lines += ["They match no check of the run: a typo, or a check that was renamed or removed.", ""]
        for entry in stale:
            item = entry if isinstance(entry, dict) else {}
            where = f" (line {md_escape(item.get('line'))})" if item.get("line") else ""
            lines.append(f"- {md_escape(item.get('target') or entry)}{where}")
        lines.append("")
    return "\n".join(lines)


def write_markdown(report: Report | Mapping[str, Any], path: Path, *, append: bool = False) -> str | None:
    """Write (or append) the summary (``-``: standard output); a one-line reason when the path cannot
    be written."""
    if str(path) == "-":
        import sys

        stream = sys.__stdout__ or sys.stdout  # the real one, even while output is redirected
        stream.write(render_markdown_summary(report) + "\n")
        stream.flush()
        return None
    return write_report_file(
        path, render_markdown_summary(report) + "\n", "the Markdown summary", append=append
    )
