"""``amp-conformance matrix diff OLD.json NEW.json [--format text|markdown|json|html] [--output PATH]``.

Exit 1 when some implementation regressed, 0 otherwise, 2 when a matrix report cannot be read.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from amp_conformance.matrix.diff import MatrixDiffError, diff_matrices, load_matrix, render

PROG = "amp-conformance matrix diff"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Compare two matrix reports: per implementation, regressions (passed, now fails, errors "
        "or is blocked; or ran, now cannot start) and fixes. Exit 1 on a regression, 0 otherwise, 2 when a "
        "report cannot be read.",
    )
    parser.add_argument("old", metavar="OLD.json")
    parser.add_argument("new", metavar="NEW.json")
    parser.add_argument("--format", choices=["text", "markdown", "json", "html"], default="text")
    parser.add_argument("--output", metavar="PATH", help="write there instead of standard output")
    return parser


def matrix_diff_main(argv: Sequence[str]) -> int:
    namespace = _parser().parse_args(list(argv))
    try:
        old, new = load_matrix(namespace.old), load_matrix(namespace.new)
        diff = diff_matrices(old, new)
        if namespace.format == "html":
            from amp_conformance.matrix.html_diff import render_matrix_diff_html

            text = render_matrix_diff_html(diff)
        else:
            text = render(diff, namespace.format)
        if namespace.output:
            try:
                Path(namespace.output).parent.mkdir(parents=True, exist_ok=True)
                Path(namespace.output).write_text(text, encoding="utf-8")
            except OSError as exc:
                raise MatrixDiffError(f"cannot write {namespace.output}: {exc.strerror or exc}") from None
        else:
            sys.stdout.write(text)
    except MatrixDiffError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    return 1 if diff["regressed"] else 0
