"""Summaries for people: the Markdown summary, the badge, GitHub Actions step summary and annotations."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.reports.badge import badge, write_badge
from amp_conformance.reports.github import annotation_lines, escape_data, escape_property, publish
from amp_conformance.reports.markdown import md_escape, must_tally, render_markdown_summary
from tests.ci.conftest import FAULT_REQUIREMENT
from tests.ci.helpers import validate

HOSTILE = (
    "<script>alert(1)</script> | **bold** [x](javascript:alert(1)) ![i](http://e/x.png) `code` "
    "<img src=x onerror=alert(2)> &amp; \n\n# heading\r\n</details></pre>"
)


def _hostile(report: dict[str, Any]) -> dict[str, Any]:
    evil = copy.deepcopy(report)
    failing = next(c for c in evil["checks"] if c["outcome"] == "fail")
    failing["message"] = HOSTILE
    failing["title"] = HOSTILE
    failing["curl"] = "curl http://x/" + HOSTILE
    evil["server"]["base_url"] = HOSTILE
    evil["server"]["unavailable"] = HOSTILE  # a report is validated when read: run ids are ULIDs
    return evil


def test_the_summary_has_verdict_tables_and_each_failure(fault_report: dict[str, Any]) -> None:
    text = render_markdown_summary(fault_report)
    failures = [c for c in fault_report["checks"] if c["outcome"] == "fail"]
    assert text.startswith("## AMP v0.1.0 conformance: FAIL")
    assert "### By area" in text and "### By level" in text and "| MUST |" in text
    about = {rid for c in failures for rid in c.get("finding_requirements") or c["requirements"]}
    assert FAULT_REQUIREMENT in about
    assert f"### Failing requirements ({len(about)})" in text
    for rid in about:  # every failing requirement is named in the table
        assert f"| {md_escape(rid)} | MUST |" in text
    assert text.count("<details><summary>FAIL ") == len(failures)
    for check in failures:
        assert f"<pre>{check['curl'].replace('&', '&amp;').replace(chr(39), '&#x27;')}" in text


def test_a_clean_summary_says_pass(clean_report: dict[str, Any]) -> None:
    text = render_markdown_summary(clean_report)
    passed, total = must_tally(clean_report)
    assert text.startswith("## AMP v0.1.0 conformance: PASS")
    assert f"**{passed}/{total}**" in text and passed == total > 0
    assert "<details>" not in text


def test_server_text_cannot_break_out_of_the_markdown(fault_report: dict[str, Any]) -> None:
    markdown_it = pytest.importorskip("markdown_it")
    text = render_markdown_summary(_hostile(fault_report))
    html = markdown_it.MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    assert "<script" not in html and "<img" not in html and "<a " not in html
    assert "<strong>bold" not in html and "<h1>" not in html and "<code>" not in html
    assert html.count("<details>") == html.count("</details>")
    # every table row keeps its columns: a server '|' is escaped
    for line in text.splitlines():
        if line.startswith("| ") and "Failing" not in line:
            cells = re.split(r"(?<!\\)\|", line)
            assert len(cells) in (5, 6, 9), line


def test_the_badge_is_valid_endpoint_json(
    clean_report: dict[str, Any], fault_report: dict[str, Any], tmp_path: Path
) -> None:
    for report, colour in ((clean_report, "brightgreen"), (fault_report, "red")):
        path = tmp_path / "badge.json"
        assert write_badge(report, path) is None
        document = json.loads(path.read_text())
        validate(document, "badge.schema.json")
        passed, total = must_tally(report)
        assert document == {
            "schemaVersion": 1,
            "label": "AMP 0.1.0",
            "message": f"MUST {passed}/{total}",
            "color": colour,
        }
    incomplete = copy.deepcopy(clean_report)
    incomplete["summary"]["verdict"] = "incomplete"
    assert badge(incomplete)["color"] == "orange"
    assert write_badge(clean_report, tmp_path / "badge.json" / "under-a-file") is not None


def test_workflow_command_escaping() -> None:
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("AMP-LIST-05: a, b") == "AMP-LIST-05%3A a%2C b"


def test_one_error_annotation_per_must_failure_that_cannot_inject_commands(
    fault_report: dict[str, Any],
) -> None:
    lines = list(annotation_lines(_hostile(fault_report)))
    failures = [c for c in fault_report["checks"] if c["outcome"] == "fail" and c["level"] == "MUST"]
    assert len(lines) == len(failures) > 0
    for line in lines:
        assert line.startswith(f"::error title={FAULT_REQUIREMENT} ")
        assert "\n" not in line and "\r" not in line
        title = line.split("::")[1]
        assert ":" not in title.removeprefix("error title=") and "," not in title


def test_publish_appends_the_step_summary_and_prints_annotations(
    fault_report: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    environ = {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"}
    assert publish(fault_report, environ) == []
    out = capsys.readouterr().out
    assert out.count("::error title=") == len([c for c in fault_report["checks"] if c["outcome"] == "fail"])
    text = summary.read_text()
    assert text.startswith("earlier step\n## AMP v0.1.0 conformance: FAIL")
    assert publish(fault_report, {}) == [] and capsys.readouterr().out == ""


def test_expectations_appear_in_the_summary(fault_report: dict[str, Any]) -> None:
    report = copy.deepcopy(fault_report)
    failing = next(c for c in report["checks"] if c["outcome"] == "fail")
    passing = next(c for c in report["checks"] if c["outcome"] == "pass")
    failing["expectation"] = {"outcome": "fail", "reason": "known *gap*", "link": None, "met": True}
    passing["expectation"] = {"outcome": "fail", "reason": "was broken", "link": None, "met": False}
    report["summary"]["expected_failures"], report["summary"]["unexpected_passes"] = 1, 1
    report["expectations"] = {"file": "e.toml", "stale": [{"target": "check test_gone", "line": 7}]}
    text = render_markdown_summary(report)
    assert "Expected failures: 1. Unexpected passes: 1." in text
    # issue 23 §2: a known gap is folded into a section of its own, after what needs attention
    folded = text.index("<details><summary>Expected failures (1), listed in the expectations file</summary>")
    assert "known \\*gap\\*" in text[folded:] and failing["message"] not in text[folded:]
    assert "### Expectations not met (1)" in text and "expected fail, got pass" in text
    assert "### Stale expectations (1)" in text and "- check test\\_gone (line 7)" in text
    assert not [line for line in annotation_lines(report) if passing["id"] in line and "::error" in line]
    assert any(line.startswith("::warning") for line in annotation_lines(report))
    musts = [c for c in report["checks"] if c["outcome"] == "fail" and c["level"] == "MUST"]
    errors = [line for line in annotation_lines(report) if line.startswith("::error")]
    assert len(errors) == len(musts) - 1  # the expected failure is no error annotation
