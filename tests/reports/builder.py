"""Valid reports from the few members a test cares about: the renderers read the report model, which
takes only documents ``contract/report.schema.json`` accepts, so a test's partial report is completed
with neutral defaults (its catalogue the packaged one of its protocol, its summary counted from its
checks) and checked against the schema here."""

from __future__ import annotations

import copy
from typing import Any

from amp_conformance.engine import registry
from amp_conformance.engine.report_model import OUTCOME_ORDER, Report
from amp_conformance.engine.vocabulary import LEVELS

RUN_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"


def _check(partial: dict[str, Any], index: int) -> dict[str, Any]:
    entry = copy.deepcopy(partial)
    requirements = entry.get("requirements") or ["AMP-READ-02"]
    name = entry.get("name") or str(entry.get("id") or f"test_{index}").rsplit("::", 1)[-1]
    defaults: dict[str, Any] = {
        "id": f"test_x.py::{name}",
        "name": name,
        "title": name,
        "requirements": requirements,
        "level": "MUST",
        "area": requirements[0].split("-")[1].lower(),
        "outcome": "pass",
        "message": "",
        "expected": None,
        "finding_requirements": [],
        "blocked_by": None,
        "expectation": None,
        "duration_seconds": 0.0,
        "requests": None,
        "warnings": [],
        "notes": [],
        "curl": None,
        "exchanges": [],
    }
    done = {**defaults, **entry}
    if isinstance(done["blocked_by"], dict):
        done["blocked_by"] = {"requirement": requirements[0], "step": "", "check": None, **done["blocked_by"]}
    if isinstance(done["expectation"], dict):
        done["expectation"] = {
            "outcome": "fail",
            "reason": "",
            "link": None,
            "met": False,
            **done["expectation"],
        }
    done["warnings"] = [
        {"message": "", "requirements": [], "level": "SHOULD", "curl": None, "exchange": None, **w}
        for w in done["warnings"]
    ]
    return done


def _counts(checks: list[dict[str, Any]]) -> dict[str, int]:
    return {o: sum(1 for c in checks if c["outcome"] == o) for o in OUTCOME_ORDER}


def complete(partial: dict[str, Any]) -> dict[str, Any]:
    """``partial`` as a valid report_version 2.0 document (what it gives is kept)."""
    data = copy.deepcopy(partial)
    protocol = data.get("protocol") or "amp-0.1"
    checks = [_check(c, n) for n, c in enumerate(data.get("checks") or [])]
    musts = sum(1 for c in checks if c["outcome"] == "fail" and c["level"] == "MUST")
    by_level = {lv: _counts([c for c in checks if c["level"] == lv]) for lv in LEVELS}
    summary = {
        "total": len(checks),
        "outcomes": _counts(checks),
        "must_failures": musts,
        "errors": sum(1 for c in checks if c["outcome"] == "error"),
        "by_area": {
            a: _counts([c for c in checks if c["area"] == a]) for a in sorted({c["area"] for c in checks})
        },
        "by_level": {lv: counts for lv, counts in by_level.items() if any(counts.values())},
        "requirements_cited": sorted({rid for c in checks for rid in c["requirements"]}),
        "verdict": "fail"
        if musts
        else "incomplete"
        if any(c["outcome"] == "error" for c in checks)
        else "pass",
        "expected_failures": 0,
        "unexpected_passes": 0,
    }
    run = {
        "id": RUN_ID,
        "started_at": "2026-01-01T00:00:00Z",
        "finished_at": "2026-01-01T00:00:01Z",
        "duration_seconds": 1.0,
        "options": {},
        "requests": {"checks": 0, "cleanup": 0, "total": 0},
        "workers": 1,
    }
    document = {
        "report_version": "2.0",
        "protocol": protocol,
        "tool": {"name": "amp-conformance", "version": "0.1.0"},
        "run": {**run, **(data.get("run") or {})},
        "server": {"unavailable": None, **(data.get("server") or {})},
        "conventions": data.get("conventions"),
        "catalogue": data.get("catalogue") or registry.get(protocol).catalogue.as_report(),
        "summary": {**summary, **{k: v for k, v in (data.get("summary") or {}).items() if k == "verdict"}},
        "checks": checks,
        "cleanup": data.get("cleanup") or {"attempted": 0, "deleted": 0, "problems": []},
        "expectations": data.get("expectations"),
    }
    for key in ("protocol_title", "protocol_label"):
        if key in data:
            document[key] = data[key]
    document["report_version"] = "2.0"
    Report.from_json(document)  # what the renderers will take: a builder mistake shows here
    return document
