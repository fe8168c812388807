"""``amp-conformance validate`` and ``amp-conformance validate-contract``: argument parsing and output.

Both return an exit code instead of exiting, so ``amp_conformance.cli`` can dispatch to them and
tests can call them directly. Problems go to stdout (one per line, or one JSON document); the
summary goes to stderr so that stdout stays machine-readable. ``validate --profile`` picks the
format: AMP cells (default), AMR-lite memory files, or MemoryCloud Memory Suite archives.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from amp_conformance.validator.citations import cite_contract
from amp_conformance.validator.contract import compare_contract
from amp_conformance.validator.documents import validate_documents
from amp_conformance.validator.openapi import DocumentError, load_document
from amp_conformance.validator.profile_report import ProfileReport
from amp_conformance.validator.report import EXIT_UNREADABLE, InputError, Report, contract_report_dict

PROFILES = ("cells", "amr-lite", "memorycloud")


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
    parser.add_argument(
        "--strict",
        action="store_true",
        help="problems under SHOULD requirements fail too (exit 1); by default only MUST problems do",
    )


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
    """Validate files or stdin under a profile; exit 0 valid (warnings allowed), 1 problems, 2 unreadable."""
    parser = argparse.ArgumentParser(
        prog="amp-conformance validate",
        description=(
            "Check memory offline. --profile cells (default): AMP cells as a JSON object, a JSON array or "
            "JSONL; amr-lite: Markdown/text memory files in the AMR-lite line format; memorycloud: Memory "
            "Suite archives (.zip or folder). Every problem names its requirement or rule id and level."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="input file or folder, or - for stdin")
    parser.add_argument(
        "--profile", choices=PROFILES, default="cells", help="the input format (default: cells)"
    )
    parser.add_argument(
        "--max-size",
        type=int,
        metavar="MIB",
        help="memorycloud: refuse archives larger than this uncompressed (default 64)",
    )
    _add_format(parser)
    args = _parse(parser, argv)
    if isinstance(args, int):
        return args
    if args.max_size is not None and (args.profile != "memorycloud" or args.max_size < 1):
        sys.stderr.write(
            "amp-conformance validate: --max-size is a positive number of MiB, for --profile memorycloud\n"
        )
        return EXIT_UNREADABLE
    report: Report | ProfileReport
    if args.profile == "cells":
        report = validate_documents(args.paths)
        report.strict = args.strict
    elif args.profile == "amr-lite":
        from amp_conformance.validator.amr_lite import validate_amr_lite

        report = validate_amr_lite(args.paths)
        report.strict = args.strict
    else:
        from amp_conformance.validator.memorycloud import validate_memorycloud

        limit = {} if args.max_size is None else {"max_total": args.max_size * 1024 * 1024}
        report = validate_memorycloud(args.paths, **limit)
        report.strict = args.strict
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
        document = load_document(args.location, timeout=args.timeout)
        differences, conventions = cite_contract(compare_contract(document), document)
    except DocumentError as exc:
        error = InputError(args.location, None, str(exc))
        if args.format == "json":
            _emit_json(contract_report_dict(args.location, [], [error]))
        else:
            _emit([str(error)])
        return EXIT_UNREADABLE
    report = contract_report_dict(args.location, differences, [], conventions, strict=args.strict)
    if args.format == "json":
        _emit_json(report)
    else:
        _emit(
            [
                *(_difference_line(args.location, d) for d in differences),
                *(_convention_line(args.location, c) for c in conventions),
            ]
        )
    if not args.quiet:
        counted = report["summary"]["counted"]
        sys.stderr.write(
            f"{len(differences)} difference(s) from the bundled AMP contract, {counted} counted "
            f"({'SHOULD and MUST' if args.strict else 'MUST only'}); {len(conventions)} convention(s)\n"
        )
    return int(report["exit_code"])


def _difference_line(location: str, difference: dict[str, Any]) -> str:
    """``document: REQUIREMENT: METHOD /route: message [LEVEL, code]``."""
    return (
        f"{location}: {difference['requirement']}: {difference['method']} {difference['route']}: "
        f"{difference['message']} [{difference['level']}, {difference['code']}]"
    )


def _convention_line(location: str, convention: dict[str, Any]) -> str:
    """``document: C-01: convention: message (operations)``: a documented choice, not a problem."""
    operations = ", ".join(convention["operations"])
    return f"{location}: {convention['id']}: convention: {convention['message']} ({operations})"
