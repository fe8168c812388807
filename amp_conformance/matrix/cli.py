"""``amp-conformance matrix IMPLEMENTATIONS.toml``, ``matrix --reports A.json B.json DIR ...`` (runs made
elsewhere, joined) and ``amp-conformance matrix diff OLD.json NEW.json``.

Exit codes of a matrix: 0 every implementation passes; 1 some implementation fails a MUST; 2 a bad
implementations file (one line, nothing run), or no MUST failure but some implementation could not
start, reached no verdict or has an unusable saved report.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from amp_conformance.engine.text import printable
from amp_conformance.engine.vocabulary import LEVELS
from amp_conformance.matrix.config import REPORT_KIND, ConfigError, Implementation, MatrixConfig, load_config
from amp_conformance.matrix.report import build_matrix, exit_code, relative_ref
from amp_conformance.matrix.running import MatrixInterrupted, RunOptions, RunResult, run_matrix
from amp_conformance.matrix.saved import (
    name_columns,
    report_files,
    saved_implementation,
    saved_options,
    saved_result,
)

PROG = "amp-conformance matrix"
EXIT_USAGE = 2
_LEVELS = tuple(LEVELS)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Run the suite against every implementation an IMPLEMENTATIONS.toml names (each an "
        "ordinary amp-conformance run writing its JSON report, a few at a time) and show them side by "
        "side: a requirement x implementation grid. 'matrix diff OLD.json NEW.json' compares two "
        "matrices. See docs/matrix.md.",
    )
    parser.add_argument("file", metavar="IMPLEMENTATIONS.toml", nargs="?")
    parser.add_argument(
        "--reports",
        nargs="+",
        metavar="PATH",
        help="saved JSON reports of runs made elsewhere (files, or folders of them), each a column "
        "(after the file's implementations, if one is given)",
    )
    parser.add_argument("--title", help="the page's title (default: the file's, else 'Conformance matrix')")
    parser.add_argument("--jobs", type=int, default=2, metavar="N", help="runs at once (default 2)")
    parser.add_argument("--only", metavar="AREAS", help="areas for every run (as amp-conformance --only)")
    parser.add_argument("--level", type=str.upper, choices=_LEVELS, help="level for every run")
    parser.add_argument("--no-fuzz", action="store_true", help="no fuzz area in any run")
    parser.add_argument("--json", metavar="PATH", help="write the matrix report (JSON) to this path")
    parser.add_argument("--html", metavar="PATH", help="write the matrix page (self-contained HTML)")
    parser.add_argument(
        "--site", metavar="DIR", help="write a site: the matrix page, each run's page, badges"
    )
    parser.add_argument("--badges", metavar="DIR", help="write a shields.io endpoint JSON per implementation")
    parser.add_argument(
        "--reports-dir",
        metavar="DIR",
        help="where each run writes its JSON report and log (default: next to --json, in the --site, "
        "else a temporary folder)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="only the summary")
    return parser


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _reports_dir(namespace: argparse.Namespace) -> tuple[Path, bool]:
    """(folder for the runs' reports, whether it is temporary)."""
    if namespace.reports_dir:
        return Path(namespace.reports_dir), False
    if namespace.site:
        return Path(namespace.site) / "reports", False
    if namespace.json:
        path = Path(namespace.json)
        return path.with_name(path.stem + ".reports"), False
    return Path(tempfile.mkdtemp(prefix="amp-matrix-")), True


def _line(result: RunResult) -> str:
    impl = result.implementation
    if result.report is None and impl.report is not None:
        return f"{impl.name}: unusable report: {result.problem}"
    if result.report is None:
        return f"{impl.name}: could not start (exit {result.exit_code}): {result.problem}"
    passed, total = result.report.must_tally()
    verdict = result.report.verdict.upper()
    if impl.report is not None:
        return f"{impl.name}: {verdict} MUST {passed}/{total} (saved report {impl.targets[REPORT_KIND]})"
    timing = f"exit {result.exit_code}, {result.duration_seconds:.1f} s"
    return f"{impl.name}: {verdict} MUST {passed}/{total} ({timing})"


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None


def _outputs(namespace: argparse.Namespace, matrix: dict[str, Any], results: list[RunResult]) -> None:
    from amp_conformance.matrix.html import render_matrix_html
    from amp_conformance.matrix.site import write_badges, write_site

    reports = {r.implementation.slug: r.report for r in results if r.report is not None}
    if namespace.json:
        _write(Path(namespace.json), json.dumps(matrix, indent=1, ensure_ascii=False) + "\n")
        print(f"matrix report: {namespace.json}")
    if namespace.html:
        _write(Path(namespace.html), render_matrix_html(matrix, reports))
        print(f"matrix page: {namespace.html}")
    if namespace.badges:
        write_badges(matrix, reports, Path(namespace.badges))
        print(f"badges: {namespace.badges}")
    if namespace.site:
        write_site(matrix, results, Path(namespace.site))
        print(f"site: {Path(namespace.site) / 'index.html'}")


def _config(namespace: argparse.Namespace) -> MatrixConfig:
    """The implementations file's columns, then those of ``--reports`` (read when the matrix is built)."""
    if namespace.file is None and not namespace.reports:
        raise ConfigError("give an IMPLEMENTATIONS.toml, --reports PATH ..., or both")
    if namespace.file is not None:
        config = load_config(Path(namespace.file))
    else:
        config = MatrixConfig(Path(os.curdir) / "reports", "Conformance matrix", [])
    files, left_out = report_files(namespace.reports or [])
    for path in left_out:
        print(f"{PROG}: left out {path}: a JSON document that is no run report", file=sys.stderr)
    saved = [saved_implementation(path) for path in files]
    title = namespace.title if namespace.title is not None else config.title
    return MatrixConfig(config.path, title, [*config.implementations, *saved])


def _check_only(namespace: argparse.Namespace, live: list[Implementation]) -> None:
    if not live:
        given = [flag for flag, value in (("--only", namespace.only), ("--level", namespace.level)) if value]
        given += ["--no-fuzz"] if namespace.no_fuzz else []
        if given:  # a saved run chose its own; saying otherwise would misstate the page
            raise ConfigError(
                f"{given[0]} applies to the runs a matrix starts; these reports' runs chose their own"
            )
        return
    if namespace.only is None:
        return
    from amp_conformance.engine import registry

    known: set[str] = set()
    for protocol in {
        impl.protocol for impl in live
    }:  # a name no protocol of the matrix knows is a usage error
        catalogue = registry.get(protocol).catalogue
        known |= {*catalogue.areas, *catalogue.aliases}
    unknown = [n for n in namespace.only.split(",") if n.strip() and n.strip().lower() not in known]
    if unknown:
        raise ConfigError(f"unknown area {unknown[0]!r}; known areas: {', '.join(sorted(known))}")


def run_main(argv: Sequence[str]) -> int:
    namespace = _parser().parse_args(list(argv))
    try:
        if namespace.jobs < 1:
            raise ConfigError("--jobs must be 1 or more")
        config = _config(namespace)
        live = [impl for impl in config.implementations if impl.report is None]
        _check_only(namespace, live)
    except (ConfigError, ValueError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    options = RunOptions(only=namespace.only, level=namespace.level, no_fuzz=namespace.no_fuzz)
    reports, temporary = _reports_dir(namespace) if live else (Path(os.curdir), False)
    total = len(config.implementations)
    done: list[RunResult] = []

    def started(impl: Implementation, command: str) -> None:
        if not namespace.quiet:
            print(f"[{impl.name}] $ {command}", flush=True)

    def finished(result: RunResult) -> None:
        done.append(result)
        if not namespace.quiet:
            print(f"[{len(done)}/{total}] {_line(result)}", flush=True)

    saved_count = total - len(live)
    running = (
        f"{len(live)} to run, {namespace.jobs} at a time; reports in {reports}" if live else "none to run"
    )
    print(f"{PROG}: {total} implementation(s) ({running}; {saved_count} saved report(s))", flush=True)
    started_at, clock = _now(), time.monotonic()
    try:
        ran = iter(
            run_matrix(
                MatrixConfig(config.path, config.title, live),
                options,
                reports,
                jobs=namespace.jobs,
                on_start=started,
                on_done=finished,
            )
            if live
            else []
        )
        results = name_columns(
            [next(ran) if impl.report is None else saved_result(impl) for impl in config.implementations]
        )
        duration = time.monotonic() - clock
        base = Path(namespace.json).parent if namespace.json else Path(namespace.site or os.curdir)
        refs = {
            r.implementation.slug: (
                None if temporary and r.implementation.report is None else relative_ref(r.report_path, base)
            )
            for r in results
            if r.report is not None
        }
        matrix = build_matrix(
            config.title,
            results,
            options if not saved_count else saved_options(results),  # each run's own options
            started_at=started_at,
            finished_at=_now(),
            duration_seconds=duration,
            jobs=namespace.jobs if live else 1,
            report_refs=refs,
        )
        _outputs(namespace, matrix, results)
    except ConfigError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except MatrixInterrupted as exc:
        print(f"{PROG}: {exc}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    finally:
        if temporary:
            shutil.rmtree(reports, ignore_errors=True)
    print("")
    for result in results:
        print(_line(result))
        for group in result.report.shared_defects if result.report is not None else ():
            if not any(check.expected_gap for check in group.checks):  # one line per defect
                print(f"  {printable(group.line())}")
    code = exit_code(matrix)
    print(f"matrix: {total} implementation(s) in {duration:.1f} s; exit {code}")
    return code


def matrix_main(argv: list[str]) -> int:
    """Entry point of ``amp-conformance matrix``; returns the exit code."""
    if argv and argv[0] == "diff":
        from amp_conformance.matrix.diff_cli import matrix_diff_main

        return matrix_diff_main(argv[1:])
    return run_main(argv)
