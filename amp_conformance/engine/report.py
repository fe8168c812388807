"""What a run tells people and machines: failure texts, the terminal summary, the JSON report.

The JSON report is versioned and described by ``contract/report.schema.json``; a project test
validates every report the suite writes against it.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amp_conformance._version import __version__
from amp_conformance.engine.catalogue import AREAS, LEVELS, MUST, catalogue
from amp_conformance.engine.outcomes import ERROR, FAIL, OUTCOMES, SKIP, WARN

if TYPE_CHECKING:
    from amp_conformance.engine.run import CheckResult, Run

REPORT_VERSION = "1.0"


def render_failure(result: CheckResult, *, expected: str | None = None) -> str:
    """The text shown for a failed or errored check: requirement, finding, exchange, curl."""
    known = catalogue()
    lines = [f"{result.outcome.upper()}: {result.title}"]
    for rid in result.requirements:
        requirement = known.get(rid)
        lines.append(
            f"  {rid} ({result.level}): {requirement.title if requirement else '(not in catalogue)'}"
        )
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


def summarise(run: Run) -> dict[str, Any]:
    results = list(run.results.values())
    outcomes = Counter(r.outcome for r in results)
    by_area: dict[str, dict[str, int]] = {}
    by_level: dict[str, dict[str, int]] = {}
    for result in results:
        by_area.setdefault(result.area, dict.fromkeys(OUTCOMES, 0))[result.outcome] += 1
        by_level.setdefault(result.level, dict.fromkeys(OUTCOMES, 0))[result.outcome] += 1
    cited = sorted({rid for r in results if r.outcome != SKIP for rid in r.requirements})
    return {
        "total": len(results),
        "outcomes": {outcome: outcomes.get(outcome, 0) for outcome in OUTCOMES},
        "must_failures": sum(1 for r in results if r.outcome == FAIL and r.level == MUST),
        "errors": outcomes.get(ERROR, 0),
        "by_area": dict(sorted(by_area.items())),
        "by_level": {level: by_level[level] for level in LEVELS if level in by_level},
        "requirements_cited": cited,
        "verdict": verdict(run),
    }


def verdict(run: Run) -> str:
    """``fail`` when a MUST check failed, ``incomplete`` when checks errored, else ``pass``."""
    results = run.results.values()
    if any(r.outcome == FAIL and r.level == MUST for r in results):
        return "fail"
    if any(r.outcome == ERROR for r in results):
        return "incomplete"
    return "pass"


def _check_entry(result: CheckResult) -> dict[str, Any]:
    failing = result.failing_exchange
    return {
        "id": result.nodeid,
        "name": result.name,
        "title": result.title,
        "requirements": list(result.requirements),
        "level": result.level,
        "area": result.area,
        "outcome": result.outcome,
        "message": result.message,
        "duration_seconds": round(result.duration, 4),
        "warnings": result.warnings,
        "notes": result.notes,
        "curl": failing.curl() if failing is not None and result.outcome in (FAIL, ERROR) else None,
        "exchanges": [exchange.as_dict() for exchange in result.exchanges],
    }


def build_report(run: Run) -> dict[str, Any]:
    finished = run.finished_monotonic or time.monotonic()
    conventions = run.conventions_if_detected()
    spec = run.fetch_spec() if run.connection.broken_reason is None else None
    return {
        "report_version": REPORT_VERSION,
        "tool": {"name": "amp-conformance", "version": __version__},
        "run": {
            "id": str(run.id),
            "started_at": run.started_at.isoformat().replace("+00:00", "Z"),
            "finished_at": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "duration_seconds": round(finished - run.started_monotonic, 3),
            "options": run.options.public_view(),
        },
        "server": {
            "base_url": run.connection.api_base,
            "spec": spec,
            "spec_error": run.spec_error,
            "unavailable": run.connection.broken_reason,
        },
        "conventions": conventions.as_report() if conventions is not None else None,
        "summary": summarise(run),
        "checks": [_check_entry(result) for result in run.results.values()],
        "cleanup": dict(run.cleanup),
    }


def write_json_report(run: Run, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(build_report(run), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _row(name: str, counts: dict[str, Any]) -> str:
    cells = "".join(f"{counts[outcome]:>7}" for outcome in OUTCOMES)
    return f"  {name:<30}{cells}"


def render_summary(run: Run) -> str:
    """The terminal summary: conventions, a table by area, the failures, the verdict."""
    summary = summarise(run)
    lines = ["", f"AMP conformance of {run.connection.api_base} (run {run.id})"]
    conventions = run.conventions_if_detected()
    if conventions is not None:
        lines.append("conventions:")
        for name, entry in conventions.as_report().items():
            if name != "problems":
                lines.append(f"  {name:<13} {entry['value'] or '-'}  ({entry['source']})")
        lines += [f"  note: {problem}" for problem in conventions.problems]
    lines += ["", _row("area", dict(zip(OUTCOMES, OUTCOMES, strict=True)))]
    for area, counts in summary["by_area"].items():
        lines.append(_row(f"{area} ({AREAS.get(area, area)})", counts))
    lines.append(_row("total", summary["outcomes"]))
    for level, counts in summary["by_level"].items():
        lines.append(_row(level, counts))
    failures = [r for r in run.results.values() if r.outcome in (FAIL, ERROR)]
    if failures:
        lines += ["", "failures and errors:"]
        for result in failures:
            ids = ",".join(result.requirements)
            lines.append(f"  {result.outcome.upper():<5} {ids} ({result.level}) {result.title}")
            lines.append(f"        {result.message}")
    warned = [r for r in run.results.values() if r.outcome == WARN]
    if warned:
        lines += ["", "warnings:"]
        for result in warned:
            first = result.warnings[0] if result.warnings else {}
            ids = ",".join(first.get("requirements") or result.requirements)
            lines.append(f"  WARN  {ids} ({result.level}) {first.get('message', result.message)}")
    if run.cleanup["problems"]:
        lines += ["", "cleanup (not counted against the server):"]
        lines += [f"  {problem}" for problem in run.cleanup["problems"][:10]]
    if run.connection.broken_reason:
        lines += ["", f"server unavailable: {run.connection.broken_reason}"]
    lines += ["", f"requirements cited: {len(summary['requirements_cited'])}"]
    verdict_text = {
        "pass": "PASS: every MUST check passed",
        "fail": f"FAIL: {summary['must_failures']} MUST check(s) failed",
        "incomplete": f"INCOMPLETE: {summary['errors']} check(s) could not reach a verdict",
    }[summary["verdict"]]
    lines.append(f"verdict: {verdict_text}")
    if run.options.json_path is not None:
        lines.append(f"JSON report: {run.options.json_path}")
    return "\n".join(lines)
