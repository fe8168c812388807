"""Issue 38 item 19: failures are listed root causes first (by how many checks the requirement blocks),
then by level, then in catalogue order, in the Markdown summary and the HTML report."""

from __future__ import annotations

import copy
from typing import Any

from amp_conformance.reports.html import render_html
from amp_conformance.reports.markdown import md_escape, render_markdown_summary

ROOT = "AMP-CRE-01"


def _with_a_root_cause(report: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The fault report with, listed last, a failing check about AMP-CRE-01 that blocked two checks."""
    document = copy.deepcopy(report)
    failing = next(c for c in document["checks"] if c["outcome"] == "fail")
    passing = [c for c in document["checks"] if c["outcome"] == "pass"][:2]
    reporter = {**copy.deepcopy(failing), "id": failing["id"] + "[root]", "name": "the_root_cause"}
    reporter["title"] = "The root cause reporter"
    reporter["finding_requirements"] = [ROOT]
    for check in passing:
        check["outcome"] = "blocked"
        check["blocked_by"] = {"requirement": ROOT, "step": "create a cell", "check": reporter["id"]}
    document["checks"].append(reporter)
    return document, failing["finding_requirements"][0]


def test_the_markdown_lists_the_root_cause_first(fault_report: dict[str, Any]) -> None:
    document, other = _with_a_root_cause(fault_report)
    text = render_markdown_summary(document)
    table = text.split("### Failing requirements", 1)[1].split("###", 1)[0]
    assert table.index(f"| {md_escape(ROOT)} |") < table.index(f"| {md_escape(other)} |")
    details = text.split("### Failures and errors", 1)[1]
    assert details.index(f"FAIL {ROOT} ") < details.index(f"FAIL {other} ")


def test_the_html_lists_the_root_cause_first(fault_report: dict[str, Any]) -> None:
    document, _ = _with_a_root_cause(fault_report)
    attention = render_html(document).split('id="h-attention"', 1)[1].split("</section>", 1)[0]
    failing = [c for c in document["checks"] if c["outcome"] == "fail" and c["name"] != "the_root_cause"]
    assert attention.index("The root cause reporter") < min(attention.index(c["title"]) for c in failing)
