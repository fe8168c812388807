"""``amp-conformance validate`` and ``amp-conformance validate-contract``: argument parsing and output.

Both return an exit code instead of exiting, so ``amp_conformance.cli`` can dispatch to them and
tests can call them directly. Problems go to stdout (one per line, or one JSON document); the
summary goes to stderr so that stdout stays machine-readable. ``validate --profile`` picks the
format: AMP cells (default), AMR-lite memory files, or MemoryCloud Memory Suite archives.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from amp_conformance.validator.archive import (
    MAX_ENTRIES,
    MAX_RATIO,
    MAX_TOTAL_BYTES,
    MIB,
    RATIO_FLOOR_BYTES,
    Limits,
)
from amp_conformance.validator.citations import cite_contract
from amp_conformance.validator.contract import compare_contract
from amp_conformance.validator.documents import validate_documents
from amp_conformance.validator.openapi import DocumentError, load_document
from amp_conformance.validator.profile_report import ProfileReport
from amp_conformance.validator.report import EXIT_UNREADABLE, InputError, Report, contract_report_dict

PROFILES = ("cells", "amr-lite", "memorycloud")
_ARCHIVE_LIMITS = (
    "Archive safety (--profile memorycloud): an archive is refused, without extracting anything, when "
    "it has more than --max-entries entries or more than --max-size MiB uncompressed in all (MCS-21), "
    "or when an entry or the whole archive is a zip bomb (MCS-22): it expands more than --max-ratio "
    "times its compressed size AND to more than --ratio-floor MiB. Both halves are needed: a log of "
    "one repeated line compresses ~340 times and is still text; zeros compress ~1,000 times."
)


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
        epilog=_ARCHIVE_LIMITS,
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="input file or folder, or - for stdin")
    parser.add_argument(
        "--profile", choices=PROFILES, default="cells", help="the input format (default: cells)"
    )
    limits = parser.add_argument_group("archive-safety limits (--profile memorycloud only)")
    limits.add_argument(
        "--max-entries",
        metavar="N",
        help=f"refuse archives of more than N entries (MCS-21; default {MAX_ENTRIES})",
    )
    limits.add_argument(
        "--max-size",
        metavar="MIB",
        help=f"refuse archives larger than this uncompressed in all (MCS-21; default "
        f"{MAX_TOTAL_BYTES // MIB})",
    )
    limits.add_argument(
        "--max-ratio",
        metavar="RATIO",
        help=f"zip bomb: an entry or the archive expands more than RATIO times its compressed size "
        f"(MCS-22; default {MAX_RATIO}; judged only above --ratio-floor)",
    )
    limits.add_argument(
        "--ratio-floor",
        metavar="MIB",
        help=f"zip bomb: ... and to more than this many MiB (MCS-22; default {RATIO_FLOOR_BYTES // MIB}; "
        "fractions allowed)",
    )
    _add_format(parser)
    args = _parse(parser, argv)
    if isinstance(args, int):
        return args
    archive_limits = _archive_limits(args)
    if isinstance(archive_limits, str):
        sys.stderr.write(f"amp-conformance validate: {archive_limits}\n")
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

        report = validate_memorycloud(args.paths, limits=archive_limits)
        report.strict = args.strict
    if args.format == "json":
        _emit_json(report.as_dict())
    else:
        _emit(report.lines())
    if not args.quiet:
        sys.stderr.write(report.summary_line() + "\n")
    return report.exit_code


def _archive_limits(args: argparse.Namespace) -> Limits | str:
    """The archive-safety limits from the options, or a one-line reason they are not usable."""
    given = {
        option: value
        for option, value in (
            ("--max-entries", args.max_entries),
            ("--max-size", args.max_size),
            ("--max-ratio", args.max_ratio),
            ("--ratio-floor", args.ratio_floor),
        )
        if value is not None
    }
    if given and args.profile != "memorycloud":
        return f"{', '.join(given)}: archive-safety limits are for --profile memorycloud only"
    defaults = Limits()

    def number(option: str, kind: str, low: float, *, above: bool) -> float | str:
        text = given[option]
        try:
            value = int(text) if kind == "int" else float(text)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and (value > low if above else value >= low):
            return value
        bound = f"{'above' if above else 'at least'} {low:g}"
        what = "a whole number" if kind == "int" else "a number"
        return f"{option} {text!r}: {what} {bound} is expected"

    values: dict[str, float] = {}
    for option, kind, low, above in (
        ("--max-entries", "int", 1, False),
        ("--max-size", "int", 1, False),
        ("--max-ratio", "float", 1, True),
        ("--ratio-floor", "float", 0, False),
    ):
        if option in given:
            value = number(option, kind, low, above=above)
            if isinstance(value, str):
                return value
            values[option] = value
    return Limits(
        max_entries=int(values.get("--max-entries", defaults.max_entries)),
        max_total=int(values["--max-size"] * MIB) if "--max-size" in values else defaults.max_total,
        max_ratio=values.get("--max-ratio", defaults.max_ratio),
        ratio_floor=int(values["--ratio-floor"] * MIB) if "--ratio-floor" in values else defaults.ratio_floor,
    )


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
