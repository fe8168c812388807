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

from amp_conformance.engine.report_model import Check, Report, as_report
from amp_conformance.engine.vocabulary import Outcome
from amp_conformance.reports.output import write_report_file


def _text(value: Any) -> str:
    text = "" if value is None else str(value)
    # XML 1.0 cannot carry most control characters: a server's bytes are shown, not passed through
    return "".join(c if c in "\t\n\r" or ord(c) >= 0x20 else f"\\x{ord(c):02x}" for c in text)


def suite_name(report: Report) -> str:
    target = report.base_url or report.target or "the bundled server"
    return f"amp-conformance {report.protocol} {target}".replace("  ", " ")


def _testcase(check: Check) -> tuple[ET.Element, str]:
    outcome = check.outcome
    case = ET.Element(
        "testcase",
        {
            "classname": f"amp.{check.area or 'check'}",
            "name": check.name,
            "file": check.id.split("::", 1)[0],
            "time": f"{check.duration_seconds:.3f}",
        },
    )
    properties = ET.SubElement(case, "properties")
    pairs = [
        ("amp_requirements", ",".join(check.requirements)),
        ("amp_level", str(check.level)),
        ("amp_outcome", str(outcome)),
        ("amp_title", _text(check.title)),
    ]
    if check.finding_requirements:
        pairs.append(("amp_finding_requirements", ",".join(check.finding_requirements)))
    for warning in check.warnings:
        ids = ",".join(warning.requirements)
        pairs.append(("amp_warning", _text(f"{ids} ({warning.level}): {warning.message}")))
    for key, value in pairs:
        ET.SubElement(properties, "property", {"name": key, "value": value})
    message = _text(check.message)
    detail = [message]
    if check.expected is not None:
        detail.append(f"expected: {_text(check.expected)}")
    if check.curl:
        detail.append(f"reproduce: {_text(check.curl)}")
    kind = "pass"
    if outcome == Outcome.FAIL and not check.expected_gap:
        kind = "failure"
        element = ET.SubElement(case, "failure", {"message": message, "type": str(check.level)})
        element.text = "\n".join(detail)
    elif outcome == Outcome.ERROR and not check.expected_gap:
        kind = "error"
        element = ET.SubElement(case, "error", {"message": message, "type": "no verdict"})
        element.text = "\n".join(detail)
    elif outcome in (Outcome.FAIL, Outcome.ERROR):  # expected by the expectations file: a known gap
        kind = "skipped"
        reason = check.expectation.reason if check.expectation is not None else ""
        ET.SubElement(case, "skipped", {"message": _text(f"expected {outcome}: {reason}".rstrip(": "))})
    elif outcome == Outcome.BLOCKED:
        kind = "skipped"
        blocked = check.blocked_by
        why = f"blocked by {blocked.requirement if blocked else None} ({blocked.step if blocked else None})"
        ET.SubElement(case, "skipped", {"message": _text(why)})
    elif outcome == Outcome.SKIP:
        kind = "skipped"
        ET.SubElement(case, "skipped", {"message": message or "skipped"})
    if check.warnings:
        out = ET.SubElement(case, "system-out")
        lines = []
        for warning in check.warnings:
            ids = ",".join(warning.requirements)
            lines.append(f"WARN {ids} ({warning.level}): {warning.message}")
            if warning.curl:
                lines.append(f"  reproduce: {warning.curl}")
        out.text = _text("\n".join(lines))
    return case, kind


def render_junit(report: Report | Mapping[str, Any]) -> str:
    report = as_report(report)
    cases = [_testcase(c) for c in report.checks]
    counts = {k: sum(1 for _, kind in cases if kind == k) for k in ("failure", "error", "skipped")}
    attributes = {
        "name": suite_name(report),
        "tests": str(len(cases)),
        "failures": str(counts["failure"]),
        "errors": str(counts["error"]),
        "skipped": str(counts["skipped"]),
        "time": f"{report.run.duration_seconds:.3f}",
        "timestamp": report.run.started_at,
    }
    # <testsuites> carries only what Jenkins' schema allows there (contract/junit.xsd)
    root = ET.Element(
        "testsuites", {k: v for k, v in attributes.items() if k not in ("skipped", "timestamp")}
    )
    suite = ET.SubElement(root, "testsuite", attributes)
    properties = ET.SubElement(suite, "properties")
    for key, value in (
        ("amp_protocol", report.protocol),
        ("amp_run_id", report.run.id),
        ("amp_verdict", report.verdict),
    ):
        ET.SubElement(properties, "property", {"name": key, "value": _text(value)})
    for outcome, number in report.summary.outcomes.items():  # the six counts, as every output states them
        ET.SubElement(properties, "property", {"name": f"amp_{outcome}", "value": str(number)})
    for case, _ in cases:
        suite.append(case)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(report: Report | Mapping[str, Any], path: Path) -> str | None:
    """Write the JUnit file; a one-line reason when the path cannot be written."""
    return write_report_file(path, render_junit(report), "the JUnit report")
