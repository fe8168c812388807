"""The JUnit XML report, written from the JSON report (so ``amp-conformance report R.json --junit J``
gives the file the live run wrote).

What GitLab, Jenkins and junitparser read, in the structure ``contract/junit.xsd`` states: one
``<testsuite>`` named after the protocol and target; one ``<testcase>`` per check, classname its area,
with properties for its requirement ids, level and outcome. A MUST failure (a promoted root cause too)
is ``<failure>``; a check that reached no verdict ``<error>``; a skip, a blocked check and an expected
failure ``<skipped>`` with the reason; warnings
(SHOULD/MAY findings) are properties and ``<system-out>`` text, so they show without failing.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amp_conformance.reports.output import write_report_file


def _text(value: Any) -> str:
    text = "" if value is None else str(value)
    # XML 1.0 cannot carry most control characters: a server's bytes are shown, not passed through
    return "".join(c if c in "\t\n\r" or ord(c) >= 0x20 else f"\\x{ord(c):02x}" for c in text)


def _ids(check: Mapping[str, Any], key: str) -> list[str]:
    value = check.get(key)
    return [str(v) for v in value] if isinstance(value, list) else []


def _met(check: Mapping[str, Any]) -> bool:
    expectation = check.get("expectation")
    return isinstance(expectation, dict) and bool(expectation.get("met"))


def suite_name(report: Mapping[str, Any]) -> str:
    server = report.get("server") if isinstance(report.get("server"), dict) else {}
    target = (server or {}).get("base_url") or (server or {}).get("target") or "the bundled server"
    return f"amp-conformance {report.get('protocol') or ''} {target}".replace("  ", " ")


def _testcase(check: Mapping[str, Any]) -> tuple[ET.Element, str]:
    outcome = str(check.get("outcome") or "")
    name = str(check.get("name") or check.get("id") or "")
    case = ET.Element(
        "testcase",
        {
            "classname": f"amp.{check.get('area') or 'check'}",
            "name": name,
            "file": str(check.get("id") or "").split("::", 1)[0],
            "time": f"{float(check.get('duration_seconds') or 0):.3f}",
        },
    )
    properties = ET.SubElement(case, "properties")
    pairs = [
        ("amp_requirements", ",".join(_ids(check, "requirements"))),
        ("amp_level", str(check.get("level") or "")),
        ("amp_outcome", outcome),
        ("amp_title", _text(check.get("title"))),
    ]
    if _ids(check, "finding_requirements"):
        pairs.append(("amp_finding_requirements", ",".join(_ids(check, "finding_requirements"))))
    warnings = [w for w in check.get("warnings") or [] if isinstance(w, dict)]
    for warning in warnings:
        ids = ",".join(str(r) for r in warning.get("requirements") or [])
        pairs.append(("amp_warning", _text(f"{ids} ({warning.get('level')}): {warning.get('message')}")))
    for key, value in pairs:
        ET.SubElement(properties, "property", {"name": key, "value": value})
    message = _text(check.get("message"))
    detail = [message]
    if check.get("expected") is not None:
        detail.append(f"expected: {_text(check.get('expected'))}")
    if check.get("curl"):
        detail.append(f"reproduce: {_text(check.get('curl'))}")
    kind = "pass"
    if outcome == "fail" and not _met(check):
        kind = "failure"
        element = ET.SubElement(
            case, "failure", {"message": message, "type": str(check.get("level") or "MUST")}
        )
        element.text = "\n".join(detail)
    elif outcome == "error" and not _met(check):
        kind = "error"
        element = ET.SubElement(case, "error", {"message": message, "type": "no verdict"})
        element.text = "\n".join(detail)
    elif outcome in ("fail", "error"):  # expected by the expectations file: a known gap
        kind = "skipped"
        reason = (check.get("expectation") or {}).get("reason") or ""
        ET.SubElement(case, "skipped", {"message": _text(f"expected {outcome}: {reason}".rstrip(": "))})
    elif outcome == "blocked":
        kind = "skipped"
        blocked = check.get("blocked_by") if isinstance(check.get("blocked_by"), dict) else {}
        why = f"blocked by {(blocked or {}).get('requirement')} ({(blocked or {}).get('step')})"
        ET.SubElement(case, "skipped", {"message": _text(why)})
    elif outcome == "skip":
        kind = "skipped"
        ET.SubElement(case, "skipped", {"message": message or "skipped"})
    if warnings:
        out = ET.SubElement(case, "system-out")
        lines = []
        for warning in warnings:
            ids = ",".join(str(r) for r in warning.get("requirements") or [])
            lines.append(f"WARN {ids} ({warning.get('level')}): {warning.get('message')}")
            if warning.get("curl"):
                lines.append(f"  reproduce: {warning.get('curl')}")
        out.text = _text("\n".join(lines))
    return case, kind


def render_junit(report: Mapping[str, Any]) -> str:
    checks = [c for c in report.get("checks") or [] if isinstance(c, dict)]
    run = report.get("run") if isinstance(report.get("run"), dict) else {}
    summary = report.get("summary") if isinstance(report.get("summary"), dict) else {}
    cases = [_testcase(c) for c in checks]
    counts = {k: sum(1 for _, kind in cases if kind == k) for k in ("failure", "error", "skipped")}
    attributes = {
        "name": suite_name(report),
        "tests": str(len(cases)),
        "failures": str(counts["failure"]),
        "errors": str(counts["error"]),
        "skipped": str(counts["skipped"]),
        "time": f"{float((run or {}).get('duration_seconds') or 0):.3f}",
        "timestamp": str((run or {}).get("started_at") or ""),
    }
    # <testsuites> carries only what Jenkins' schema allows there (contract/junit.xsd)
    root = ET.Element(
        "testsuites", {k: v for k, v in attributes.items() if k not in ("skipped", "timestamp")}
    )
    suite = ET.SubElement(root, "testsuite", attributes)
    properties = ET.SubElement(suite, "properties")
    for key, value in (
        ("amp_protocol", report.get("protocol")),
        ("amp_run_id", (run or {}).get("id")),
        ("amp_verdict", (summary or {}).get("verdict")),
    ):
        ET.SubElement(properties, "property", {"name": key, "value": _text(value)})
    for case, _ in cases:
        suite.append(case)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(report: Mapping[str, Any], path: Path) -> str | None:
    """Write the JUnit file; a one-line reason when the path cannot be written."""
    return write_report_file(path, render_junit(report), "the JUnit report")
