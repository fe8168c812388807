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
from amp_conformance.engine import registry
from amp_conformance.engine.protocol import AnyProtocol as Protocol
from amp_conformance.engine.report_model import Report
from amp_conformance.engine.vocabulary import Outcome
from amp_conformance.matrix.running import RunOptions, RunResult, log_tail
from amp_conformance.reports.html_model import UNCOVERED, Check, as_dict, read_checks, requirement_outcomes

MATRIX_VERSION = "1.0"
NOT_STARTED = "not-started"
_MESSAGE_CHARS = 600
#: A row is "mixed" when some cell passes and some falls short; "nobody passes" when no cell passes
#: and some cell reached a bad verdict (a candidate problem of the spec rather than of the servers).
PASSING = frozenset({Outcome.PASS})
SHORT = frozenset({Outcome.FAIL, Outcome.WARN})
BAD = frozenset({Outcome.FAIL, Outcome.WARN, Outcome.BLOCKED, Outcome.ERROR})


def _record(protocol: str) -> Protocol | None:
    """The installed protocol record called ``protocol`` (None when none is: the column's own
    report then says what it can)."""
    try:
        return registry.get(protocol)
    except (KeyError, ImportError, TypeError):
        return None


def protocol_title(protocol: str, report: Report | None = None) -> str:
    """The protocol's human name: its report's, else its installed record's, else its name."""
    if report is not None:
        return report.title
    record = _record(protocol)
    return record.title if record is not None else protocol


def packaged_catalogue(protocol: str) -> dict[str, Any]:
    """The installed suite's catalogue block for ``protocol`` (when no run of it wrote a report)."""
    record = _record(protocol)
    try:
        block: dict[str, Any] = record.catalogue.as_report() if record is not None else {}
    except (FileNotFoundError, KeyError, ValueError):
        block = {}
    return {
        "protocol": protocol,
        "title": protocol_title(protocol),
        "areas": block.get("areas", {}),
        "requirements": [
            {key: r[key] for key in ("id", "level", "title", "area")} for r in block.get("requirements", [])
        ],
    }


def claims_source(protocol: str) -> str | None:
    """Where the protocol's servers say what they are (its record's :attr:`Protocol.claims`)."""
    record = _record(protocol)
    return record.claims[0] if record is not None and record.claims else None


def claims_of(report: Report) -> tuple[str | None, dict[str, Any] | None]:
    """What the server claims about itself, as its protocol's record says where to read it."""
    record = _record(report.protocol)
    if record is None or record.claims is None:
        return None, None
    source, member = record.claims
    claims = report.server_object(member)
    return source, dict(claims) if claims is not None else None


def conventions_of(report: Report) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name, value in report.convention_values.items():
        found[str(name)] = value if isinstance(value, str) or value is None else str(value)
    declared = report.server.get("declared_level")
    if isinstance(declared, str):
        found["declared_level"] = declared
    return found


def _check_entry(check: Check) -> dict[str, Any]:
    entry = check.entry
    message = check.message
    return {
        "id": check.id,
        "name": check.name,
        "title": check.title,
        "level": check.level,
        "area": check.area,
        "outcome": check.outcome,
        "requirements": list(check.requirements),
        "finding_requirements": list(entry.finding_requirements),
        "cites": list(check.cites),
        "blocked_by": entry.blocked_by.requirement if entry.blocked_by is not None else None,
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
        "claims_source": claims_source(impl.protocol),
        "claims": None,
        "requirements": {},
        "checks": [],
    }
    report = result.report
    if report is None:
        entry["log_tail"] = log_tail(result) if impl.report is None else None  # a saved one has no log
        return entry
    checks = read_checks(report)
    passed, total = report.must_tally()
    source, claims = claims_of(report)
    entry.update(
        run_id=report.run.id,
        verdict=report.verdict,
        must={"passed": passed, "total": total},
        outcomes=dict(report.summary.outcomes),
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
        catalogue = result.report.catalogue
        protocols[protocol] = {
            "protocol": protocol,
            "title": protocol_title(protocol, result.report),
            "areas": dict(catalogue.areas),
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
