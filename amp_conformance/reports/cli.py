"""``amp-conformance report REPORT.json [NEW.json] [--html H] [--junit J] [--markdown M] [--badge B]``:
render a saved JSON report in every format the live run writes (the same bytes it wrote).

With one report the page of that run; with two the HTML page of what changed between them. Bad input
(unreadable or malformed JSON, a path that cannot be written) is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from amp_conformance.engine.options import OneLineParser
from amp_conformance.engine.report_model import Report, ReportError
from amp_conformance.reports.html import render_diff_html, render_html

EXIT_OK, EXIT_USAGE = 0, 2
PROG = "amp-conformance report"


class ReportInputError(Exception):
    """A report that cannot be read, or a page that cannot be written."""


def _parser() -> OneLineParser:
    parser = OneLineParser(
        prog=PROG,
        description="Render a saved JSON report as a self-contained HTML page; with two reports "
        "(OLD NEW), the page of what changed between the runs, regressions first.",
    )
    parser.add_argument("reports", nargs="+", metavar="REPORT.json", help="one report, or OLD.json NEW.json")
    parser.add_argument("--html", metavar="PATH", help="write the HTML page to this path")
    parser.add_argument("--junit", metavar="PATH", help="write the JUnit XML report (one report only)")
    parser.add_argument("--markdown", metavar="PATH", help="write the Markdown summary (one report only)")
    parser.add_argument("--badge", metavar="PATH", help="write the shields.io badge JSON (one report only)")
    return parser


def load_report(path: str) -> Report:
    """A JSON report from ``path`` ('-' reads stdin), validated once; ReportInputError says why it
    cannot be used."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportInputError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise ReportInputError(f"{path} is not JSON: {exc}") from None
    try:
        return Report.from_json(document)
    except ReportError as exc:
        raise ReportInputError(f"{path} {exc}") from None


def _comparable(old: Report, new: Report, old_path: str, new_path: str) -> None:
    """Two reports are one page of what changed only when ``diff`` would compare them."""
    from amp_conformance.reports.diff import DiffInputError, comparable, complete_new_side

    try:
        comparable(old.to_json(), new.to_json(), old_path, new_path)
        complete_new_side(new, new_path)
    except DiffInputError as exc:
        raise ReportInputError(str(exc)) from None


def write_page(page: str, path: Path) -> None:
    """Write a page; an unwritable path becomes a ReportInputError."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ReportInputError(f"cannot write {path}: {exc.strerror or exc}") from None


def report_main(argv: Sequence[str]) -> int:
    """Entry point of the ``report`` subcommand; returns the exit code."""
    parser = _parser()
    namespace = parser.parse_args(list(argv))
    paths: list[str] = namespace.reports
    if len(paths) > 2:
        parser.error("give one report, or two (OLD.json NEW.json)")
    others = {"--junit": namespace.junit, "--markdown": namespace.markdown, "--badge": namespace.badge}
    if not namespace.html and not any(others.values()):
        parser.error("give at least one of --html, --junit, --markdown, --badge")
    if len(paths) == 2 and any(others.values()):
        parser.error("--junit, --markdown and --badge render one report; two make only the --html diff page")
    try:
        reports = [load_report(path) for path in paths]
        if len(reports) == 2:
            _comparable(reports[0], reports[1], paths[0], paths[1])
        if namespace.html:
            page = render_html(reports[0]) if len(reports) == 1 else render_diff_html(reports[0], reports[1])
            write_page(page, Path(namespace.html))
            print(f"HTML report: {namespace.html}")
        problems = _other_formats(reports[0], namespace)
    except ReportInputError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    for problem in problems:
        print(f"{PROG}: {problem}", file=sys.stderr)
    return EXIT_USAGE if problems else EXIT_OK


def _other_formats(report: Report, namespace: argparse.Namespace) -> list[str]:
    from amp_conformance.reports.badge import write_badge
    from amp_conformance.reports.junit import write_junit
    from amp_conformance.reports.markdown import write_markdown

    problems: list[str] = []
    for path, writer in ((namespace.junit, write_junit), (namespace.markdown, write_markdown)):
        if path and (problem := writer(report, Path(path))):
            problems.append(problem)
    if namespace.badge and (problem := write_badge(report, Path(namespace.badge))):
        problems.append(problem)
    return problems
