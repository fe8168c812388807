"""Columns from saved JSON reports (``matrix --reports``, ``report = "path.json"``): runs made elsewhere.

A saved report is read once (:meth:`Report.from_json`) into the :class:`RunResult` a live run of it
would have given, so the matrix report, page, badges and site are built by the same code either way.
A file that cannot be used (not JSON, another schema version, not a report, another protocol than its
entry says) is a column that says why (``started`` false, exit 2), never a crash and never a pass.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from amp_conformance.engine import registry
from amp_conformance.engine.report_model import Report
from amp_conformance.matrix.config import REPORT_KIND, ConfigError, Implementation, slugify
from amp_conformance.matrix.running import RunOptions, RunResult

#: The exit code an ordinary run gives for each verdict (``amp_conformance.cli``): what the column shows.
VERDICT_EXIT = {"pass": 0, "fail": 1}
UNREADABLE_EXIT = 2


def report_files(arguments: Sequence[str]) -> tuple[list[Path], list[Path]]:
    """(the report files ``--reports`` names, the files of its folders left out). Each argument is a
    file, or a folder whose ``*.json`` files at any depth, sorted, are reports (a CI job's downloaded
    artifacts: ``reports/<job>/<name>.json``), except JSON documents that do not claim to be one (no
    ``report_version``: a matrix report, a badge from an earlier join)."""
    files: list[Path] = []
    left_out: list[Path] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.json") if p.is_file())
            kept = [p for p in found if not _other_document(p)]
            if not kept:
                raise ConfigError(f"--reports {argument}: the folder holds no JSON report")
            files += kept
            left_out += [p for p in found if p not in kept]
        elif path.exists():
            files.append(path)
        else:
            raise ConfigError(f"--reports {argument}: no such file or folder")
    return files, left_out


def _other_document(path: Path) -> bool:
    """A JSON object with no ``report_version``: some other document, not a report gone wrong."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # unreadable: a column that says so
    return isinstance(document, dict) and "report_version" not in document


def read_saved(path: Path) -> tuple[Report | None, str | None, str | None]:
    """The report ``path`` holds, or None and why (one line naming the file); and the protocol the
    document names when it is one this suite has (so an unusable report still sits in its grid)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}", None
    try:
        document = json.loads(text)
    except ValueError as exc:
        return None, f"{path.name} is not JSON: {exc}", None
    named = document.get("protocol") if isinstance(document, dict) else None
    hint = named if isinstance(named, str) and named in registry.names() else None
    try:
        return Report.from_json(document), None, hint
    except ValueError as exc:  # ReportError is one
        return None, f"{path.name} {exc}", hint


def saved_implementation(path: Path) -> Implementation:
    """The column of ``path`` given to ``--reports`` (named by :func:`name_columns`)."""
    return Implementation(name="", protocol="", targets={REPORT_KIND: str(path)}, slug="", report=str(path))


def _name_of(impl: Implementation, report: Report | None) -> str:
    """The entry's name, else the report's file stem (a CI job names its report after the
    implementation), else the target the report says it checked."""
    if impl.name:
        return impl.name
    stem = Path(impl.targets[REPORT_KIND]).stem
    if stem:
        return stem
    return (report.target if report is not None else None) or "report"


def saved_result(impl: Implementation) -> RunResult:
    """The column of one saved report, as the live run that wrote it would be."""
    path = Path(impl.report or impl.targets[REPORT_KIND])
    report, problem, hint = read_saved(path)
    protocol = impl.protocol or hint or ""
    if report is not None:
        if impl.protocol and report.protocol != impl.protocol:
            problem = f"{path.name} is a report of protocol {report.protocol}, not {impl.protocol}"
            report = None
        else:
            protocol = report.protocol
    exit_code = VERDICT_EXIT.get(report.verdict, UNREADABLE_EXIT) if report is not None else UNREADABLE_EXIT
    return RunResult(
        implementation=replace(impl, name=_name_of(impl, report), protocol=protocol or "unknown"),
        command=f"amp-conformance report {shlex.quote(impl.targets[REPORT_KIND])}",
        exit_code=exit_code,
        duration_seconds=report.run.duration_seconds if report is not None else 0.0,
        report_path=path,
        log_path=path.with_suffix(".log"),
        report=report,
        problem=problem,
    )


def name_columns(results: list[RunResult]) -> list[RunResult]:
    """Unique names and slugs over the whole matrix, in its order (a name taken from a report may
    repeat another: it gets a number)."""
    names: set[str] = set()
    slugs: set[str] = set()
    for result in results:  # the file's own names first: they are unique already
        if result.implementation.slug:
            names.add(result.implementation.name)
            slugs.add(result.implementation.slug)
    named = []
    for result in results:
        impl = result.implementation
        if not impl.slug:
            name, number = impl.name, 2
            while name in names:
                name, number = f"{impl.name} ({number})", number + 1
            names.add(name)
            impl = replace(impl, name=name, slug=slugify(name, slugs))
            result = replace(result, implementation=impl)
        named.append(result)
    return named


def saved_options(results: Sequence[RunResult]) -> RunOptions:
    """What applied to the runs (saved, or live beside saved ones), as a live matrix's options would
    say it: the areas of every run joined in order (none named when one run had no area list), the
    level when every run had the same one, fuzzing when any run fuzzed."""
    reports = [r.report for r in results if r.report is not None]
    areas: list[str] = []
    every_area = False  # a run given no --only (or requirement ids) covered more than any area list says
    levels: set[str | None] = set()
    fuzz = False
    for report in reports:
        options = report.run.options
        given = options.get("areas")
        if isinstance(given, list) and not options.get("requirements"):
            areas += [a for a in given if isinstance(a, str) and a not in areas]
        else:
            every_area = True
        chosen = options.get("levels")
        levels.add(_level(chosen))
        fuzz = fuzz or bool(options.get("fuzz"))
    level = levels.pop() if len(levels) == 1 else None
    only = None if every_area else ",".join(areas) or None
    return RunOptions(only=only, level=level, no_fuzz=not fuzz)


def _level(levels: object) -> str | None:
    """The ``--level`` a run's list of levels came from (``MUST`` -> MUST, all three -> none given)."""
    if not isinstance(levels, list) or len(levels) == 3 or not levels:
        return None
    return str(levels[-1])
