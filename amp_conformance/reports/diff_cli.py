"""``amp-conformance diff OLD.json NEW.json [--format text|markdown|json] [--output P] [--html P]``.

Exit 1 when there is a regression, 0 otherwise, 2 when a report cannot be read or the two cannot be
compared (one line on stderr, never a traceback).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from amp_conformance.engine.options import OneLineParser
from amp_conformance.reports.diff import DiffInputError, diff_reports, load_report, read_reports, render
from amp_conformance.reports.html import render_diff_html

PROG = "amp-conformance diff"


def _parser() -> OneLineParser:
    parser = OneLineParser(
        prog=PROG,
        description="Compare two JSON reports: regressions (passed, now fails or errors), fixes, new and "
        "removed checks, requirements whose outcome changed, changed conventions and /spec claims. "
        "Exit 1 when there is a regression (a removed check is one, unless --allow-removed), 0 "
        "otherwise, 2 when a report cannot be read or compared (NEW an INCOMPLETE run among them).",
    )
    parser.add_argument("old", metavar="OLD.json")
    parser.add_argument("new", metavar="NEW.json")
    parser.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    parser.add_argument("--output", metavar="PATH", help="write there instead of standard output")
    parser.add_argument("--html", metavar="PATH", help="also write the diff as a self-contained HTML page")
    parser.add_argument(
        "--allow-removed",
        action="store_true",
        help="checks of OLD that NEW did not run are no regression (a narrower run on purpose)",
    )
    return parser


def _write(text: str, path: str) -> None:
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DiffInputError(f"cannot write {path}: {exc.strerror or exc}") from None


def diff_main(argv: Sequence[str]) -> int:
    """Entry point of the ``diff`` subcommand; returns the exit code."""
    namespace = _parser().parse_args(list(argv))
    try:
        old, new = read_reports(
            load_report(namespace.old), load_report(namespace.new), namespace.old, namespace.new
        )
        diff = diff_reports(old, new, allow_removed=namespace.allow_removed)
        text = render(diff, namespace.format)
        if namespace.output:
            _write(text, namespace.output)
        else:
            sys.stdout.write(text)
        if namespace.html:
            _write(render_diff_html(old, new, diff), namespace.html)
    except DiffInputError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    return 1 if diff["regressed"] else 0
