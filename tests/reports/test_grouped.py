"""Issue 37 §3: one line per defect. Findings with the same requirement and the same observed behaviour
(status, media type, error code, the shape of the input) across parametrized checks are one line in the
terminal, the Markdown, the HTML page and the matrix; the JSON report keeps every check, and its
``groups`` follow from the checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.cli import main
from amp_conformance.engine.report import report_text
from amp_conformance.engine.report_model import Report, ReportError, defect_groups
from amp_conformance.reports.html import render_html
from amp_conformance.reports.markdown import render_markdown_summary
from tests.reports.builder import complete


def _exchange(
    body: str, status: int = 500, media: str = "text/plain; charset=utf-8", answer: str = ""
) -> Any:
    return {
        "method": "POST",
        "url": "http://server/memories",
        "request_headers": {"Content-Type": "application/json"},
        "request_body": body,
        "status": status,
        "response_headers": {"content-type": media},
        "response_body": answer or "Internal Server Error",
        "elapsed_ms": 1.0,
        "error": None,
        "curl": f"curl -X POST http://server/memories --data {len(body)}",
    }


def _failing(name: str, exchange: dict[str, Any], rid: str = "AMP-ERR-03") -> dict[str, Any]:
    return {
        "id": f"test_bytes.py::{name}",
        "name": name,
        "requirements": [rid, "AMP-ERR-01"],
        "finding_requirements": [rid],
        "area": "bytes",
        "outcome": "fail",
        "message": f"{name} answered {exchange['status']}",
        "curl": exchange["curl"],
        "exchanges": [exchange],
    }


LATIN1 = '{"text":"caf\\xe9"}'  # how the report shows a body that is not UTF-8
LINE = "AMP-ERR-03 (MUST): bodies not UTF-8 answered 500 text/plain in 5 places, 2 checks"
RAW_SURROGATE = '{"text":"probe\\xed\\xa0\\x80"}'
ESCAPED_SURROGATE = '{"text":"probe\\ud800"}'


def _report() -> dict[str, Any]:
    checks = [
        _failing(f"test_not_utf8[{route}]", _exchange(LATIN1)) for route in ("create", "patch", "search")
    ]
    checks += [
        _failing(f"test_surrogate_bytes[{member}]", _exchange(RAW_SURROGATE)) for member in ("type", "text")
    ]
    # the same check and requirement, but another status: another defect
    checks.append(_failing("test_not_utf8[other]", _exchange(LATIN1, status=502)))
    checks += [
        _failing(f"test_escaped[{m}]", _exchange(ESCAPED_SURROGATE, status=500)) for m in ("type", "text")
    ]
    checks.append({"name": "test_fine", "outcome": "pass"})
    return complete({"checks": checks})


def test_same_requirement_and_behaviour_is_one_group_and_another_status_is_not() -> None:
    report = Report.from_json(_report())
    groups = defect_groups(report.checks)
    lines = [g.line() for g in groups]
    assert lines == [
        LINE,
        "AMP-ERR-03 (MUST): bodies not UTF-8 answered 502 text/plain in 1 place",
        "AMP-ERR-03 (MUST): lone surrogates answered 500 text/plain in 2 places",
    ]
    assert [len(g.checks) for g in groups] == [5, 1, 2]
    assert groups[0].where_line() == "test_not_utf8[create, patch, search]; test_surrogate_bytes[type, text]"


def test_a_different_error_code_or_check_on_plain_json_is_another_defect() -> None:
    envelope = '{"error":{"code":"%s","message":"x"}}'
    checks = [
        _failing("test_a[1]", _exchange('{"a":1}', media="application/json", answer=envelope % "BOOM")),
        _failing("test_a[2]", _exchange('{"a":2}', media="application/json", answer=envelope % "BOOM")),
        _failing("test_a[3]", _exchange('{"a":3}', media="application/json", answer=envelope % "OTHER")),
        _failing("test_b[1]", _exchange('{"a":1}', media="application/json", answer=envelope % "BOOM")),
    ]
    groups = defect_groups(Report.from_json(complete({"checks": checks})).checks)
    assert [[c.name for c in g.checks] for g in groups] == [
        ["test_a[1]", "test_a[2]"],
        ["test_a[3]"],
        ["test_b[1]"],
    ]
    assert "answered 500 application/json BOOM in 2 places" in groups[0].line()


def test_findings_drawn_from_no_exchange_group_by_check_and_claim_no_answer() -> None:
    checks = [{**_failing(f"test_c[{n}]", _exchange("{}")), "exchanges": [], "curl": None} for n in (1, 2)]
    groups = defect_groups(Report.from_json(complete({"checks": checks})).checks)
    assert [g.line() for g in groups] == ["AMP-ERR-03 (MUST): test_c[1] in 2 places"]


def test_the_json_keeps_every_check_and_its_groups_follow_from_them() -> None:
    document = _report()
    report = Report.from_json(document)
    written = report.to_json()
    assert [c["outcome"] for c in written["checks"]] == [c["outcome"] for c in document["checks"]]
    assert [c["exchanges"] for c in written["checks"]] == [c["exchanges"] for c in document["checks"]]
    assert report.summary.total == len(document["checks"]) and report.summary.must_failures == 8
    groups = written["groups"]
    assert [len(g["checks"]) for g in groups] == [5, 2]  # the groups of one are no group
    assert groups[0]["checks"][:3] == [
        f"test_bytes.py::test_not_utf8[{r}]" for r in ("create", "patch", "search")
    ]
    again = Report.from_json(json.loads(report_text(report)))  # written, read back: the same bytes
    assert report_text(again) == report_text(report)
    # a saved report's groups are recomputed, never believed
    forged = {**written, "groups": [{**groups[0], "line": "nothing to see", "checks": ["a", "b"]}]}
    assert Report.from_json(forged).to_json()["groups"] == groups
    assert "groups" not in Report.from_json(complete({"checks": [{"name": "test_fine"}]})).to_json()


def test_a_groups_entry_the_schema_does_not_describe_is_refused() -> None:
    written = Report.from_json(_report()).to_json()
    bad = {**written, "groups": [{**written["groups"][0], "checks": ["only one"]}]}
    with pytest.raises(ReportError, match="groups"):
        Report.from_json(bad)


def test_markdown_html_and_matrix_show_one_line_per_defect() -> None:
    report = Report.from_json(_report())
    line = LINE
    markdown = render_markdown_summary(report)
    assert markdown.count(f"<summary>FAIL {line}</summary>") == 1
    assert "### Failures and errors (8)" in markdown  # the counts are still per check
    assert markdown.count("<details><summary>FAIL ") == 3  # 5 + 2 grouped, the 502 on its own
    assert "test\\_not\\_utf8\\[other\\]" in markdown
    page = render_html(report)
    assert page.count(f'<li class="defect"><span class="oc o-fail">fail</span> {line}') == 1
    assert page.count('<li class="defect">') == 2


def test_the_matrix_shows_one_line_per_defect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved, page = tmp_path / "impl.json", tmp_path / "matrix.html"
    saved.write_text(json.dumps(_report()), encoding="utf-8")
    main(["matrix", "--reports", str(saved), "--html", str(page)])
    said = capsys.readouterr().out.splitlines()
    assert f"  {LINE}" in said
    assert sum(1 for text in said if "bodies not UTF-8" in text) == 1  # the 502 is a check of its own
    assert page.read_text(encoding="utf-8").count(f"<li>{LINE}<details>") == 1


@pytest.mark.parametrize(
    ("fault", "line"),
    [
        (
            "bytes-non-utf8-500",
            "AMP-ERR-03 (MUST): bodies not UTF-8 answered 500 text/plain in 17 places, 2 checks",
        ),
        (
            "bytes-lone-surrogate-500",
            "AMP-ERR-03 (MUST): lone surrogates answered 500 text/plain in 14 places",
        ),
    ],
)
def test_a_fault_that_answers_one_malformed_body_with_500_is_one_line(
    tmp_path: Path, fault: str, line: str
) -> None:
    path = tmp_path / "r.json"
    command = [sys.executable, "-m", "amp_conformance", "--no-fuzz", "--only", "bytes", "--json", str(path)]
    env = {**os.environ, "AMP_REFERENCE_FAULTS": fault, "AMP_CONFORMANCE_FORK_SERVER": "0"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    report = Report.from_json(json.loads(path.read_text(encoding="utf-8")))
    failed = [c for c in report.checks if c.outcome == "fail"]
    lines = done.stdout.splitlines()
    assert sum(1 for text in lines if text.strip().startswith("FAIL ")) == 1
    assert f"  FAIL  {line}" in lines
    assert f"verdict: FAIL: {len(failed)} MUST check(s) failed" in lines  # still per check
    assert [g.line() for g in report.shared_defects] == [line]
    assert len(report.shared_defects[0].checks) == len(failed)  # every failing check is in it, kept whole
    assert all(c.exchanges and c.curl for c in failed)
