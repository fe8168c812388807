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

from amp_conformance.reports.output import write_report_file

OUTCOMES = ("pass", "fail", "warn", "skip", "error", "blocked")
BAD = ("fail", "error", "blocked")
LEVELS = ("MUST", "SHOULD", "MAY")
MAX_DETAILS = 100
_PUNCTUATION = frozenset(string.punctuation) - frozenset("&<>\"'")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


def html_escape(value: object) -> str:
    """Text for inside raw HTML (``<summary>``, ``<pre>``): entities, control characters shown."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return html.escape(_CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text), quote=True)


def md_escape(value: object) -> str:
    """Inline Markdown text that renders as exactly these characters: HTML specials as entities,
    every other ASCII punctuation mark backslash-escaped (so no emphasis, link, code span or table
    cell border can start), line breaks as spaces."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text.replace("\r\n", " ").replace("\n", " "))
    out: list[str] = []
    for char in text:
        if char in "&<>\"'":
            out.append(html.escape(char, quote=True))
        elif char in _PUNCTUATION:
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def md_cell(value: object, absent: str = "(absent)") -> str:
    """A table cell: escaped text, or ``absent`` for None."""
    return absent if value is None else md_escape(value)


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _titles(report: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Requirement id -> (level, title), from the report's catalogue or the packaged one."""
    found: dict[str, tuple[str, str]] = {}
    for entry in _list(_dict(report.get("catalogue")).get("requirements")):
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            found[entry["id"]] = (str(entry.get("level") or ""), str(entry.get("title") or ""))
    if not found:
        try:
            from amp_conformance.engine import registry

            packaged = registry.get(str(report.get("protocol") or registry.DEFAULT_PROTOCOL)).catalogue
            found = {rid: (str(r.level), r.title) for rid, r in packaged.requirements.items()}
        except (ImportError, OSError, ValueError, KeyError):
            pass
    return found


def _area_names(report: Mapping[str, Any]) -> dict[str, str]:
    """Area code -> name, from the report's catalogue or its protocol's packaged one."""
    names = _dict(_dict(report.get("catalogue")).get("areas"))
    if names:
        return {str(k): str(v) for k, v in names.items()}
    try:
        from amp_conformance.engine import registry

        return dict(registry.get(str(report.get("protocol") or registry.DEFAULT_PROTOCOL)).catalogue.areas)
    except (ImportError, OSError, ValueError, KeyError):
        return {}


def _about(check: Mapping[str, Any]) -> list[str]:
    """The requirement ids a failing check's finding is about."""
    ids = [r for r in _list(check.get("finding_requirements")) if isinstance(r, str)]
    return ids or [r for r in _list(check.get("requirements")) if isinstance(r, str)]


def _expected(check: Mapping[str, Any]) -> bool:
    expectation = check.get("expectation")
    return isinstance(expectation, dict) and bool(expectation.get("met"))


def must_tally(report: Mapping[str, Any]) -> tuple[int, int]:
    """(MUST checks that passed, MUST checks that ran to a verdict or errored); skips do not count."""
    musts = [
        c
        for c in _list(report.get("checks"))
        if isinstance(c, dict) and c.get("level") == "MUST" and c.get("outcome") != "skip"
    ]
    return sum(1 for c in musts if c.get("outcome") in ("pass", "warn")), len(musts)


def _table(title: str, rows: Mapping[str, Any], names: Mapping[str, str] | None = None) -> list[str]:
    lines = [f"### {title}", "", f"| {title.split()[-1]} | {' | '.join(OUTCOMES)} |", "|---" * 7 + "|"]
    for key, counts in rows.items():
        label = md_escape(f"{key} ({names[key]})" if names and key in names else key)
        lines.append(f"| {label} | " + " | ".join(str(_count(_dict(counts).get(o))) for o in OUTCOMES) + " |")
    return [*lines, ""]


def _failing_requirements(report: Mapping[str, Any], failures: list[dict[str, Any]]) -> list[str]:
    titles = _titles(report)
    by_requirement: dict[str, list[str]] = {}
    for check in failures:
        for rid in _about(check):
            by_requirement.setdefault(rid, []).append(str(check.get("name") or check.get("id") or "?"))
    if not by_requirement:
        return []
    lines = [
        f"### Failing requirements ({len(by_requirement)})",
        "",
        "| requirement | level | title | checks |",
        "|---|---|---|---|",
    ]
    for rid in sorted(by_requirement):
        level, title = titles.get(rid, ("", "(not in the catalogue)"))
        names = ", ".join(sorted(set(by_requirement[rid])))
        lines.append(f"| {md_escape(rid)} | {md_escape(level)} | {md_escape(title)} | {md_escape(names)} |")
    return [*lines, ""]


def _details(check: Mapping[str, Any]) -> list[str]:
    outcome = str(check.get("outcome") or "?").upper()
    ids = ", ".join(_about(check))
    summary = f"{outcome} {ids} ({check.get('level') or '?'}): {check.get('title') or check.get('id') or ''}"
    # One line: a blank line would end the HTML block and let the rest be read as Markdown.
    lines = [f"<details><summary>{html_escape(' '.join(summary.split()))}</summary>", ""]
    lines.append(f"**check** {md_escape(check.get('id'))}  ")
    lines.append(f"**found** {md_escape(check.get('message'))}")
    expectation = check.get("expectation")
    if isinstance(expectation, dict):
        lines += [
            "",
            f"**expected** {md_escape(expectation.get('outcome'))}: {md_escape(expectation.get('reason'))}",
        ]
    curl = check.get("curl")
    if isinstance(curl, str) and curl:
        lines += ["", f"<pre>{html_escape(curl)}</pre>"]
    return [*lines, "", "</details>", ""]


_VERDICTS = {
    "pass": "PASS: every MUST check passed",
    "fail": "FAIL: a MUST check failed",
    "incomplete": "INCOMPLETE: checks could not reach a verdict",
}


def render_markdown_summary(report: Mapping[str, Any]) -> str:
    """The Markdown summary of one JSON report (v1.0 or v2.0)."""
    summary = _dict(report.get("summary"))
    verdict = str(summary.get("verdict") or "incomplete")
    server = _dict(report.get("server"))
    run = _dict(report.get("run"))
    passed, musts = must_tally(report)
    lines = [
        f"## AMP conformance: {_VERDICTS.get(verdict) or md_escape(verdict)}",
        "",
        f"Server {md_escape(server.get('base_url'))}, run {md_escape(run.get('id'))}, "
        f"{md_escape(run.get('duration_seconds'))} s. MUST checks passed: **{passed}/{musts}**.",
        "",
    ]
    expected, unexpected = _count(summary.get("expected_failures")), _count(summary.get("unexpected_passes"))
    if expected or unexpected:
        lines += [f"Expected failures: {expected}. Unexpected passes: {unexpected}.", ""]
    if server.get("unavailable"):
        lines += [f"Server unavailable: {md_escape(server.get('unavailable'))}", ""]
    if server.get("replay_note"):
        lines += [f"Curl lines: {md_escape(server.get('replay_note'))}", ""]
    lines += _table("By area", _dict(summary.get("by_area")), _area_names(report))
    lines += _table("By level", _dict(summary.get("by_level")))
    checks = [c for c in _list(report.get("checks")) if isinstance(c, dict)]
    bad = [c for c in checks if c.get("outcome") in BAD]
    failures = [c for c in bad if not _expected(c)]  # new failures: what needs attention
    expected_failures = [c for c in bad if _expected(c)]
    lines += _failing_requirements(report, failures)
    if failures:
        heading = "New failures and errors" if expected_failures else "Failures and errors"
        lines += [f"### {heading} ({len(failures)})", ""]
        for check in failures[:MAX_DETAILS]:
            lines += _details(check)
        if len(failures) > MAX_DETAILS:
            lines += [f"... and {len(failures) - MAX_DETAILS} more: see the JSON report.", ""]
    unmet = [c for c in checks if isinstance(c.get("expectation"), dict) and not _expected(c)]
    if unmet:
        lines += [f"### Expectations not met ({len(unmet)})", ""]
        for check in unmet:
            wanted = md_escape(check["expectation"].get("outcome"))
            lines.append(
                f"- {md_escape(check.get('id'))}: expected {wanted}, got {md_escape(check.get('outcome'))}"
            )
        lines.append("")
    if expected_failures:  # known gaps: a section of their own, collapsed
        lines += [
            f"<details><summary>Expected failures ({len(expected_failures)}), "
            "listed in the expectations file</summary>",
            "",
        ]
        for check in expected_failures:
            reason = _dict(check.get("expectation")).get("reason")
            because = f": {md_escape(reason)}" if reason else ""
            title = md_escape(check.get("title") or check.get("id"))
            lines.append(f"- {md_escape(', '.join(_about(check)))} {title}{because}")
        lines += ["", "</details>", ""]
    stale = _list(_dict(report.get("expectations")).get("stale"))
    if stale:
        lines += [f"### Stale expectations ({len(stale)})", ""]
        lines += ["They match no check of the run: a typo, or a check that was renamed or removed.", ""]
        for entry in stale:
            item = _dict(entry)
            where = f" (line {md_escape(item.get('line'))})" if item.get("line") else ""
            lines.append(f"- {md_escape(item.get('target') or entry)}{where}")
        lines.append("")
    return "\n".join(lines)


def write_markdown(report: Mapping[str, Any], path: Path, *, append: bool = False) -> str | None:
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
