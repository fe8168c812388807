"""What a run tells people and machines: failure texts, the terminal summary, the JSON report.

The JSON report is versioned and described by ``contract/report.schema.json``; a project test
validates every report the suite writes against it.
"""

from __future__ import annotations

import json
import secrets
import shlex
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amp_conformance._version import __version__
from amp_conformance.engine.expectations import unexpected_passes
from amp_conformance.engine.long_lines import terminal_line
from amp_conformance.engine.outcomes import BLOCKED, ERROR, FAIL, OUTCOMES, SKIP, WARN
from amp_conformance.engine.registry import level_of, requirement
from amp_conformance.engine.report_model import (
    REPORT_VERSION,
    BlockedBy,
    Catalogue,
    Check,
    Cleanup,
    Expectation,
    Finding,
    Report,
    Requests,
    RunInfo,
    Summary,
    applied_levels,
    root_causes_first,
)
from amp_conformance.engine.report_model import (
    Exchange as ExchangeEntry,
)
from amp_conformance.engine.verdict import resolve
from amp_conformance.engine.vocabulary import LEVELS, Level, Outcome

MUST = Level.MUST

if TYPE_CHECKING:
    from amp_conformance.engine.exchange import Exchange
    from amp_conformance.engine.run import CheckResult, Run


def _requirement_line(rid: str, level: str | None = None) -> str:
    entry = requirement(rid)
    title = entry.title if entry else "(not in catalogue)"
    shown = level or (entry.level if entry else "?")
    return f"{rid} ({shown}): {title}"


def render_failure(result: CheckResult, *, expected: str | None = None) -> str:
    """The text shown for a failed or errored check: requirement, finding, exchange, curl."""
    lines = [f"{result.outcome.upper()}: {result.title}"]
    for rid in result.finding_requirements or result.requirements:
        lines.append("  " + _requirement_line(rid, result.level if rid in result.requirements else None))
    lines.append(f"  found:    {result.message}")
    if expected:
        lines.append(f"  expected: {expected}")
    exchange = result.failing_exchange
    if exchange is not None:
        lines.append("  exchange:")
        lines += ["    " + line for line in exchange.describe().splitlines()]
        lines.append(f"  reproduce: {exchange.curl()}")
    if result.outcome == ERROR:
        lines.append("  (an error is about the tool or the network, not a verdict on the server)")
    return "\n".join(lines)


def resolve_blocked(run: Run) -> None:
    """Point every blocked check at the check that reports its root cause. A root cause that no check
    reported (the check asking about it passed, or was not run) is reported by its first blocked check,
    so a broken step is never silent and never counted twice (``verdict.resolve``)."""
    resolution = resolve(run.results, level_of, root_causes=run.root_causes)
    run.results, run.root_causes = resolution.results, resolution.root_causes


def summarise(run: Run) -> dict[str, Any]:
    results = list(run.results.values())
    outcomes = Counter(r.outcome for r in results)
    by_area: dict[str, dict[str, int]] = {}
    by_level: dict[str, dict[str, int]] = {}
    for result in results:
        by_area.setdefault(result.area, dict.fromkeys(OUTCOMES, 0))[result.outcome] += 1
        by_level.setdefault(result.level, dict.fromkeys(OUTCOMES, 0))[result.outcome] += 1
    cited = sorted({rid for r in results if r.outcome not in (SKIP, BLOCKED) for rid in r.requirements})
    expected = [r for r in results if r.expectation is not None]
    return {
        "total": len(results),
        "outcomes": {outcome: outcomes.get(outcome, 0) for outcome in OUTCOMES},
        "must_failures": sum(1 for r in results if _counts_as_must_failure(r)),
        "errors": sum(1 for r in results if r.outcome == ERROR and not _expected(r)),
        "by_area": dict(sorted(by_area.items())),
        "by_level": {level: by_level[level] for level in LEVELS if level in by_level},
        "requirements_cited": cited,
        "verdict": verdict(run),
        "expected_failures": sum(1 for r in expected if r.expectation and r.expectation.get("met")),
        "unexpected_passes": sum(
            1
            for r in expected
            if r.expectation and not r.expectation.get("met") and r.outcome == Outcome.PASS
        ),
    }


def _expected(result: CheckResult) -> bool:
    return bool(result.expectation and result.expectation.get("met"))


def _counts_as_must_failure(result: CheckResult) -> bool:
    return result.outcome == FAIL and result.level == MUST and not _expected(result)


def verdict(run: Run) -> str:
    """``fail`` when a MUST check failed, ``incomplete`` when checks errored, else ``pass``.

    Blocked checks never count (their root cause does); failures an expectations file expects don't;
    under ``--strict-expectations`` an unexpected pass fails the run."""
    results = list(run.results.values())
    if not results:
        return "incomplete"  # an empty selection says nothing about the server
    if run.interrupted:
        # the checks that did not run might have failed, and a check cut short proves nothing: an
        # interrupted run is never a verdict (exit 2), whatever its failures so far
        return "incomplete"
    if any(_counts_as_must_failure(r) for r in results):
        return "fail"
    if run.options.strict_expectations and unexpected_passes(results):
        return "fail"
    if any(r.outcome == ERROR and not _expected(r) for r in results):
        return "incomplete"
    return "pass"


class _ExchangeRenderer:
    """Each exchange as the report shows it, rendered once: a shared step's requests are in the evidence
    of every check that used it, and in a parallel run each check's copies arrive as objects of their
    own, so equal exchanges are found by their recorded fields."""

    def __init__(self, seen: dict[tuple[Any, ...], dict[str, Any]] | None = None) -> None:
        self._seen = {} if seen is None else seen

    def __call__(self, exchange: Exchange) -> dict[str, Any]:
        key = (
            exchange.method,
            exchange.url,
            tuple(exchange.request_headers.items()),
            exchange.request_body,
            exchange.status,
            tuple(exchange.response_headers.items()),
            exchange.response_body,
            exchange.truncated,
            exchange.elapsed,
            exchange.error,
            id(exchange.replay),
        )
        entry = self._seen.get(key)
        if entry is None:
            entry = self._seen[key] = exchange.as_dict()
        return entry


#: Request bodies up to this size have curl lines that are one plain word (4 bytes of line a byte at
#: most, within ``replay.GENERATOR_CHARS``): never a body file, so they may be rendered early.
PRERENDERED_BODY_BYTES = 1000


def prerender(run: Run, result: CheckResult) -> None:
    """Render a check's exchanges for the report now (``build_report`` then finds them rendered): a
    parallel run's controller does it as each result arrives, while it would wait for the workers."""
    render = _ExchangeRenderer(run.rendered_exchanges)
    for exchange in result.exchanges:
        # a large body's curl line may write the body beside the JSON report: that waits for the report
        if exchange.request_body is None or len(exchange.request_body) <= PRERENDERED_BODY_BYTES:
            render(exchange)


def _check_entry(result: CheckResult, render: Callable[[Exchange], ExchangeEntry]) -> Check:
    failing = result.failing_exchange
    shows_curl = result.outcome in (FAIL, ERROR, BLOCKED, WARN)
    blocked, expectation = result.blocked_by, result.expectation
    return Check(
        id=result.nodeid,
        name=result.name,
        title=result.title,
        requirements=tuple(result.requirements),
        level=Level(result.level),
        area=result.area,
        outcome=Outcome(result.outcome),
        message=result.message,
        expected=result.expected,
        finding_requirements=tuple(result.finding_requirements),
        blocked_by=BlockedBy(blocked["requirement"], blocked["step"], blocked["check"])
        if blocked is not None
        else None,
        expectation=Expectation(
            expectation["outcome"], expectation["reason"], expectation.get("link"), expectation["met"]
        )
        if expectation is not None
        else None,
        duration_seconds=round(result.duration, 4),
        requests=result.requests,
        warnings=tuple(Finding.from_json(warning.as_report()) for warning in result.warnings),
        notes=tuple(result.notes),
        curl=failing.curl() if failing is not None and shows_curl else None,
        exchanges=tuple(render(exchange) for exchange in result.exchanges),
        uses=result.uses,
    )


class _Entries:
    """Each rendered exchange as the model's entry, made once (a shared step's exchanges are in the
    evidence of every check that used it)."""

    def __init__(self, render: _ExchangeRenderer) -> None:
        self._render = render
        self._made: dict[int, tuple[dict[str, Any], ExchangeEntry]] = {}

    def __call__(self, exchange: Exchange) -> ExchangeEntry:
        rendered = self._render(exchange)
        found = self._made.get(id(rendered))
        if found is None or found[0] is not rendered:
            found = self._made[id(rendered)] = (rendered, ExchangeEntry.from_json(rendered))
        return found[1]


def replay_note(app: str, base_url: str | None) -> str:
    """How to replay an ``--app`` run's curl lines: they name the in-process origin, which no socket
    serves, so the same app must be served on a real port and that origin put in place of it."""
    origin = base_url or "http://testserver"
    return (
        f"the checks reached --app {app} in-process at {origin}, which no socket serves: to replay a "
        f"curl line, serve the same app on a real port (uvicorn {app} --port 8080, with --factory "
        f"for a factory) and put http://127.0.0.1:8080 in place of {origin}"
    )


def build_report(run: Run) -> Report:
    """The run's report, as the model (:meth:`Report.to_json` is the JSON written)."""
    finished = run.finished_monotonic or time.monotonic()
    blocks = run.active_session.report_blocks()
    total = run.requests_sent or sum(len(r.exchanges) for r in run.results.values())
    server = dict(blocks.get("server") or {})
    # a preflight problem is why the suite sent no check's request (the report of a run it stopped)
    server["unavailable"] = server.get("unavailable") or run.broken_reason or run.preflight_problem
    if run.options.app:
        server["replay_note"] = replay_note(run.options.app, run.options.base_url)
    render = _Entries(_ExchangeRenderer(run.rendered_exchanges))
    cleanup = dict(blocks.get("cleanup") or {"attempted": 0, "deleted": 0, "problems": []})
    protocol = run.protocol
    checks = tuple(_check_entry(result, render) for result in run.results.values())
    return Report(
        report_version=REPORT_VERSION,
        protocol=protocol.name,
        protocol_title=protocol.title,
        protocol_label=protocol.label or protocol.title,
        tool_version=__version__,
        run=RunInfo(
            id=str(run.id),
            started_at=run.started_at.isoformat().replace("+00:00", "Z"),
            finished_at=datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            duration_seconds=round(finished - run.started_monotonic, 3),
            options=run.options.public_view(),
            requests=Requests(total - run.cleanup_requests, run.cleanup_requests, total),
            workers=run.workers,
        ),
        server=server,
        conventions=blocks.get("conventions"),
        catalogue=applied_levels(Catalogue.from_json(protocol.catalogue.as_report()), checks),
        summary=Summary.from_json(summarise(run)),
        checks=checks,
        cleanup=Cleanup.from_json(cleanup),
        expectations=run.expectations_report,
    )


def report_text(report: Report | dict[str, Any]) -> str:
    """The JSON report as written: indented, with each check's entry on one line of its own (the
    checks are most of the document, and ``json`` indents only in pure Python, several times slower
    than its compact C encoder; a check per line also diffs well)."""
    document = report.to_json() if isinstance(report, Report) else report
    checks = document.get("checks")
    if not isinstance(checks, list) or not checks:
        return json.dumps(document, indent=1, ensure_ascii=False) + "\n"
    marker = f"amp-checks-{secrets.token_hex(16)}"  # unguessable: no server text can contain it
    head = json.dumps({**document, "checks": marker}, indent=1, ensure_ascii=False)
    lines = ",\n  ".join(json.dumps(entry, ensure_ascii=False) for entry in checks)
    return head.replace(f'"{marker}"', f"[\n  {lines}\n ]", 1) + "\n"


def write_json_report(run: Run, path: Path, document: Report | None = None) -> None:
    """Write the JSON report (``-`` is standard output); ``document``: the one already built."""
    text = report_text(document if document is not None else build_report(run))
    if str(path) == "-":
        stream = sys.__stdout__ or sys.stdout  # the real one, even while output is redirected
        stream.write(text)
        stream.flush()
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _row(name: str, counts: dict[str, Any]) -> str:
    cells = "".join(f"{counts[outcome]:>8}" for outcome in OUTCOMES)
    return f"  {name:<30}{cells}"


def _one_line(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _finding_title(result: CheckResult) -> str:
    """The line's title: the check's own, or, for a finding about another requirement (a root cause
    a blocked check reports), that requirement's title and the check that found it."""
    about = [rid for rid in result.finding_requirements if rid not in result.requirements]
    entry = requirement(about[0]) if about else None
    if entry is None:
        return result.title
    return f"{entry.title} (found by: {result.title})"


def _root_causes_first(run: Run, results: list[CheckResult]) -> list[CheckResult]:
    """Failures in the reports' order (``report_model.root_causes_first``): by how many checks the
    requirement each is about blocks, then level, then catalogue order."""
    entries = run.protocol.catalogue.as_report()["requirements"]
    blocks: dict[str, int] = {}
    for result in run.results.values():
        if result.outcome == BLOCKED and result.blocked_by:
            cause = result.blocked_by["requirement"]
            blocks[cause] = blocks.get(cause, 0) + 1
    about = {id(r): tuple(r.finding_requirements or r.requirements) for r in results}
    order = root_causes_first(
        {rid for ids in about.values() for rid in ids},
        blocks,
        {e["id"]: e["level"] for e in entries},
        {e["id"]: index for index, e in enumerate(entries)},
    )
    position = {rid: index for index, rid in enumerate(order)}
    return sorted(results, key=lambda r: min((position[rid] for rid in about[id(r)]), default=len(position)))


def closing_counts(report: Report) -> str:
    """The suite's closing line, from the model (pytest's own counters call a blocked check skipped):
    ``307 checks: 250 passed, 2 failed, ...``, each outcome the tables show, then the failures an
    expectations file foresaw (``xfailed``: counted among them) and its unexpected passes."""
    outcomes = report.summary.outcomes
    words = {"pass": "passed", "fail": "failed", "warn": "warned", "skip": "skipped"}
    shown = ", ".join(f"{outcomes[o]} {words.get(o, o)}" for o in OUTCOMES)
    summary = report.summary
    known = [
        f"{number} {word}"
        for number, word in ((summary.expected_failures, "xfailed"), (summary.unexpected_passes, "xpassed"))
        if number
    ]
    return f"{summary.total} checks: {shown}" + (f" (expectations file: {', '.join(known)})" if known else "")


#: Expected failures the terminal names (the rest are counted: the reports list them all).
EXPECTED_SHOWN = 10


def render_summary(run: Run) -> str:
    """The terminal summary: conventions, a table by area, findings with evidence, blocked checks under
    their causes, skip reasons, the verdict."""
    summary = summarise(run)
    results = list(run.results.values())
    session = run.active_session
    lines = ["", f"{run.protocol.title} conformance of {session.target_label} (run {run.id})"]
    lines += session.summary_lines()
    lines += ["", _row("area", dict(zip(OUTCOMES, OUTCOMES, strict=True)))]
    names = run.protocol.catalogue.areas
    for area, counts in summary["by_area"].items():
        lines.append(_row(f"{area} ({names.get(area, area)})", counts))
    lines.append(_row("total", summary["outcomes"]))
    for level, counts in summary["by_level"].items():
        lines.append(_row(level, counts))
    failures = [r for r in results if r.outcome == FAIL]
    errors = [r for r in results if r.outcome == ERROR]
    if errors:
        lines += ["", "errors (the tool or the network failed; no verdict on the server):"]
        for message, count in Counter(_one_line(r.message) for r in errors).most_common():
            lines.append(f"  {count:>4} x {message}")
    expected_failures = [r for r in failures if _expected(r)]
    failures = _root_causes_first(run, [r for r in failures if not _expected(r)])  # new ones first
    surprises = [r for r in results if r in unexpected_passes(results)]
    if surprises:
        lines += ["", "unexpected passes (the expectations file says they fail; they passed):"]
        for result in surprises:
            ids = ",".join(result.requirements)
            lines.append(f"  XPASS {ids} ({result.level}) {result.title}")
    if failures:
        lines += ["", "new failures (not in the expectations file):" if expected_failures else "failures:"]
        for result in failures:
            ids = ",".join(result.finding_requirements or result.requirements)
            lines.append(f"  {result.outcome.upper():<5} {ids} ({result.level}) {_finding_title(result)}")
            lines.append(f"        {_one_line(result.message)}")
            lines.append(f"        check: --check {shlex.quote(result.name)}")  # as --check takes it
            if result.failing_exchange is not None:
                lines.append(f"        reproduce: {terminal_line(result.failing_exchange.curl())}")
    if expected_failures:  # known gaps, collapsed: one line each, the evidence is in the reports
        lines += ["", f"expected failures ({len(expected_failures)}, listed in the expectations file):"]
        for result in expected_failures[:EXPECTED_SHOWN]:
            ids = ",".join(result.finding_requirements or result.requirements)
            lines.append(f"  XFAIL {ids} ({result.level}) {result.title}")
        if len(expected_failures) > EXPECTED_SHOWN:
            more = len(expected_failures) - EXPECTED_SHOWN
            lines.append(f"        ... and {more} more (the JSON or HTML report lists them)")
    blocked = [r for r in results if r.outcome == BLOCKED and r.blocked_by]
    if blocked:
        lines += ["", "blocked (a step they depend on broke; reported once, by its own check):"]
        causes: dict[str, list[CheckResult]] = {}
        for result in blocked:
            assert result.blocked_by is not None
            causes.setdefault(result.blocked_by["requirement"], []).append(result)
        for rid, group in causes.items():
            reporter = run.results.get(group[0].blocked_by["check"] or "") if group[0].blocked_by else None
            by = f", reported by {reporter.name}" if reporter else ""
            lines.append(f"  {rid}{by}: {len(group)} check(s) blocked")
            for result in group[:8]:
                lines.append(f"        {result.name}: {result.blocked_by and result.blocked_by['step']}")
            if len(group) > 8:
                lines.append(f"        ... and {len(group) - 8} more")
    warned = [r for r in results if r.outcome == WARN]
    if warned:
        lines += ["", "warnings:"]
        for result in warned:
            for warning in result.warnings[:1]:
                ids = ",".join(warning.requirements or result.requirements)
                lines.append(f"  WARN  {ids} ({warning.level}) {_one_line(warning.message)}")
                curl = warning.curl()
                if curl:
                    lines.append(f"        reproduce: {terminal_line(curl)}")
    skipped = [r for r in results if r.outcome == SKIP]
    if skipped:
        lines += ["", "skipped:"]
        reasons = Counter(_one_line(r.message) for r in skipped)
        for reason, count in reasons.most_common():
            lines.append(f"  {count:>4} x {reason}")
    problems = (session.report_blocks().get("cleanup") or {}).get("problems") or []
    if problems:
        lines += ["", "cleanup (not counted against the server):"]
        lines += [f"  {problem}" for problem in problems[:10]]
    if run.broken_reason:
        lines += ["", f"server unavailable: {run.broken_reason}"]
    if run.options.app and any(r.outcome in (FAIL, WARN) for r in results):
        lines += ["", f"curl lines: {replay_note(run.options.app, run.options.base_url)}"]
    lines += [
        "",
        f"requirements cited: {len(summary['requirements_cited'])}"
        + (
            f"; requests sent: {run.requests_sent} ({run.cleanup_requests} for cleanup)"
            + (f"; {run.workers} workers" if run.workers > 1 else "")
            if run.requests_sent
            else ""
        ),
    ]
    known_gaps = sum(1 for r in results if r.outcome == FAIL and r.level == MUST and _expected(r))
    verdict_text = {
        "pass": f"PASS: every MUST check passed or failed as expected ({known_gaps} expected MUST failure(s))"
        if known_gaps
        else "PASS: every MUST check passed",
        "fail": f"FAIL: {summary['must_failures']} MUST check(s) failed"
        if summary["must_failures"]
        else f"FAIL: {summary['unexpected_passes']} unexpected pass(es) under --strict-expectations",
        "incomplete": "INCOMPLETE: the run was interrupted"
        if run.interrupted
        else f"INCOMPLETE: {summary['errors']} check(s) could not reach a verdict"
        if results
        else "INCOMPLETE: no check ran (the selection is empty)",
    }[summary["verdict"]]
    lines.append(f"verdict: {verdict_text}")
    if run.options.json_path is not None and str(run.options.json_path) != "-":
        lines.append(f"JSON report: {run.options.json_path}")
    return "\n".join(lines)
