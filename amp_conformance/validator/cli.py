"""``amp-conformance validate`` and ``amp-conformance validate-contract``: argument parsing and output.

Both return an exit code instead of exiting, so ``amp_conformance.cli`` can dispatch to them and
tests can call them directly. Problems go to stdout (one per line, or one JSON document); the
summary goes to stderr so that stdout stays machine-readable.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from amp_conformance.validator.contract import compare_contract
from amp_conformance.validator.documents import validate_documents
from amp_conformance.validator.openapi import DocumentError, load_document
from amp_conformance.validator.report import EXIT_UNREADABLE, InputError, contract_report_dict


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace | int:
    """argparse exits on ``--help`` and usage errors; turn that into a return code."""
    try:
        return parser.parse_args(list(argv))
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_UNREADABLE


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: one line per problem (default); json: one document (validation-report.schema.json)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no summary line on stderr")


def _emit_json(document: dict[str, Any]) -> None:
    _emit([json.dumps(document, indent=2, ensure_ascii=False)])


def _emit(lines: Iterable[str]) -> None:
    """Write lines to stdout; a reader that went away (``| head``) is not an error."""
    try:
        for line in lines:
            sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush stays quiet


def validate_main(argv: Sequence[str]) -> int:
    """Validate memory cells in files or stdin; exit 0 all valid, 1 problems, 2 unreadable input."""
    parser = argparse.ArgumentParser(
        prog="amp-conformance validate",
        description="Check AMP memory cells offline: a JSON object, a JSON array of cells, or JSONL.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="input file, or - for stdin")
    _add_format(parser)
    args = _parse(parser, argv)
    if isinstance(args, int):
        return args
    report = validate_documents(args.paths)
    if args.format == "json":
        _emit_json(report.as_dict())
    else:
        _emit(report.lines())
    if not args.quiet:
        sys.stderr.write(report.summary_line() + "\n")
    return report.exit_code


def validate_contract_main(argv: Sequence[str]) -> int:
    """Compare an OpenAPI document with our contract; exit 0 same, 1 differences, 2 unreadable."""
    parser = argparse.ArgumentParser(
        prog="amp-conformance validate-contract",
        description="Compare an OpenAPI document (file or http(s) URL, JSON) with the bundled AMP contract.",
    )
    parser.add_argument("location", metavar="PATH|URL", help="the OpenAPI document to check")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for a URL (default 10)")
    _add_format(parser)
    args = _parse(parser, argv)
    if isinstance(args, int):
        return args
    try:
        differences = compare_contract(load_document(args.location, timeout=args.timeout))
    except DocumentError as exc:
        error = InputError(args.location, None, str(exc))
        if args.format == "json":
            _emit_json(contract_report_dict(args.location, [], [error]))
        else:
            _emit([str(error)])
        return EXIT_UNREADABLE
    report = contract_report_dict(args.location, [d.as_dict() for d in differences], [])
    if args.format == "json":
        _emit_json(report)
    else:
        _emit(f"{args.location}: {difference}" for difference in differences)
    if not args.quiet:
        sys.stderr.write(f"{len(differences)} difference(s) from the bundled AMP contract\n")
    return int(report["exit_code"])
