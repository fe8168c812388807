"""The matrix report (``contract/matrix.schema.json``): N runs side by side, built from their JSON reports.

Each implementation's entry carries what its column shows (verdict, MUST score, conventions, claims)
and, per check, what the grid and ``matrix diff`` need (outcome, requirement ids, the finding's ids);
the evidence stays in each run's own report, which ``report`` names. A cell's outcome is the single-run
page's rule (:func:`amp_conformance.reports.html_model.requirement_outcomes`): the worst outcome of the
checks citing the requirement.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amp_conformance._version import __version__
from amp_conformance.matrix.running import RunOptions, RunResult, log_tail
from amp_conformance.reports.html_model import (
    UNCOVERED,
    as_dict,
    read_catalogue,
    read_checks,
    requirement_outcomes,
    summary_counts,
    texts,
    verdict_of,
)
from amp_conformance.reports.markdown import must_tally

MATRIX_VERSION = "1.0"
NOT_STARTED = "not-started"
_MESSAGE_CHARS = 600
#: A row is "mixed" when some cell passes and some falls short; "nobody passes" when no cell passes
#: and some cell reached a bad verdict (a candidate problem of the spec rather than of the servers).
PASSING = frozenset({"pass"})
SHORT = frozenset({"fail", "warn"})
BAD = frozenset({"fail", "warn", "blocked", "error"})


def packaged_catalogue(protocol: str) -> dict[str, Any]:
    """The installed suite's catalogue block for ``protocol`` (when no run of it wrote a report)."""
    from amp_conformance.engine import registry

    try:
        return registry.get(protocol).catalogue.as_report()
    except (FileNotFoundError, KeyError, ValueError):
        return {"protocol": protocol, "areas": {}, "requirements": []}


def claims_of(report: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """What the server claims about itself: ``/spec`` (AMP v0.1.0) or ``initialize``'s serverInfo."""
    server = as_dict(report.get("server"))
    if report.get("protocol") == "amp-1.1":
        info = server.get("server_info")
        return "initialize", info if isinstance(info, dict) else None
    spec = server.get("spec")
    return "/spec", spec if isinstance(spec, dict) else None


def conventions_of(report: Mapping[str, Any]) -> dict[str, str | None]:
    conventions = report.get("conventions")
    found: dict[str, str | None] = {}
    if isinstance(conventions, dict):
        for name, entry in conventions.items():
            if name == "problems":
                continue
            value = entry.get("value") if isinstance(entry, dict) else entry
            found[str(name)] = value if isinstance(value, str) or value is None else str(value)
    declared = as_dict(report.get("server")).get("declared_level")
    if isinstance(declared, str):
        found["declared_level"] = declared
    return found


def _check_entry(check: Any) -> dict[str, Any]:
    blocked = as_dict(check.raw.get("blocked_by"))
    message = check.message
    return {
        "id": check.id,
        "name": check.name,
        "title": check.title,
        "level": check.level,
        "area": check.area,
        "outcome": check.outcome,
        "requirements": check.requirements,
        "finding_requirements": texts(check.raw.get("finding_requirements")),
        "cites": check.cites,
        "blocked_by": blocked.get("requirement") if isinstance(blocked.get("requirement"), str) else None,
        "message": message if len(message) <= _MESSAGE_CHARS else message[:_MESSAGE_CHARS] + "...",
    }


def implementation_entry(result: RunResult, report_ref: str | None) -> dict[str, Any]:
    impl = result.implementation
    entry: dict[str, Any] = {
        "name": impl.name,
        "slug": impl.slug,
        "description": impl.description,
        "protocol": impl.protocol,
        "target": {"kind": impl.target_kind, "value": impl.targets[impl.target_kind]},
        "command": result.command,
        "exit_code": result.exit_code,
        "duration_seconds": result.duration_seconds,
        "started": result.started,
        "problem": result.problem,
        "log_tail": None,
        "report": report_ref,
        "run_id": None,
        "verdict": NOT_STARTED,
        "must": {"passed": 0, "total": 0},
        "outcomes": None,
        "conventions": {},
        "claims_source": "initialize" if impl.protocol == "amp-1.1" else "/spec",
        "claims": None,
        "requirements": {},
        "checks": [],
    }
    report = result.report
    if report is None:
        entry["log_tail"] = log_tail(result)
        return entry
    checks = read_checks(report)
    passed, total = must_tally(report)
    source, claims = claims_of(report)
    entry.update(
        run_id=as_dict(report.get("run")).get("id"),
        verdict=verdict_of(report, checks),
        must={"passed": passed, "total": total},
        outcomes=summary_counts(report, checks),
        conventions=conventions_of(report),
        claims_source=source,
        claims=claims,
        requirements={rid: outcome for rid, (outcome, _) in requirement_outcomes(checks).items()},
        checks=[_check_entry(c) for c in checks],
    )
    return entry


def row_pattern(outcomes: list[str]) -> str:
    """``mixed`` (some pass, some fall short), ``nobody`` (nobody passes, someone failed), ``all``
    (everyone who ran a check passes), or ``none`` (nothing to say: not covered, skipped)."""
    passing = any(o in PASSING for o in outcomes)
    if passing and any(o in SHORT for o in outcomes):
        return "mixed"
    if not passing and any(o in BAD for o in outcomes):
        return "nobody"
    return "all" if passing else "none"


def build_matrix(
    title: str,
    results: list[RunResult],
    options: RunOptions,
    *,
    started_at: str,
    finished_at: str,
    duration_seconds: float,
    jobs: int,
    report_refs: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """The matrix report of ``results`` (``report_refs``: slug -> how the matrix names its report)."""
    refs = dict(report_refs or {})
    implementations = [
        implementation_entry(r, refs.get(r.implementation.slug, str(r.report_path) if r.started else None))
        for r in results
    ]
    protocols: dict[str, Any] = {}
    for result in results:
        protocol = result.implementation.protocol
        if protocol in protocols or result.report is None:
            continue
        catalogue = read_catalogue(result.report)
        protocols[protocol] = {
            "protocol": protocol,
            "areas": catalogue.areas,
            "requirements": [
                {"id": r.id, "level": r.level, "title": r.title, "area": r.area}
                for r in catalogue.requirements
            ],
        }
    for result in results:
        protocols.setdefault(
            result.implementation.protocol, packaged_catalogue(result.implementation.protocol)
        )
    rows: dict[str, dict[str, str]] = {}
    for protocol, block in protocols.items():
        columns = [i for i in implementations if i["protocol"] == protocol and i["started"]]
        rows[protocol] = {
            r["id"]: row_pattern([c["requirements"].get(r["id"], UNCOVERED) for c in columns])
            for r in block["requirements"]
        }
    verdicts = [i["verdict"] for i in implementations]
    return {
        "matrix_version": MATRIX_VERSION,
        "tool": {"name": "amp-conformance", "version": __version__},
        "title": title,
        "started_at": started_at,
        "finished_at": finished_at,
        "duration_seconds": round(duration_seconds, 3),
        "jobs": jobs,
        "options": options.public(),
        "summary": {
            "implementations": len(implementations),
            "verdicts": {v: verdicts.count(v) for v in ("pass", "fail", "incomplete", NOT_STARTED)},
            "rows": {
                p: {k: list(r.values()).count(k) for k in ("all", "mixed", "nobody", "none")}
                for p, r in rows.items()
            },
        },
        "protocols": protocols,
        "rows": rows,
        "implementations": implementations,
    }


def exit_code(matrix: Mapping[str, Any]) -> int:
    """1 when some implementation fails a MUST; else 2 when one could not start or is incomplete; else 0."""
    verdicts = [as_dict(i).get("verdict") for i in matrix.get("implementations") or []]
    if "fail" in verdicts:
        return 1
    return 2 if any(v != "pass" for v in verdicts) else 0


def relative_ref(path: Path, base: Path) -> str:
    """``path`` as the matrix report names it: relative to ``base`` when inside it."""
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())
