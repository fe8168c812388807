"""``amp-conformance diff OLD.json NEW.json``: regressions, fixes and the rest, with exit codes."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.cli import main
from amp_conformance.reports.diff import diff_reports, render_markdown
from tests.ci.conftest import FAULT_REQUIREMENT
from tests.ci.helpers import validate


def _failed_ids(report: dict[str, Any]) -> list[str]:
    return [c["id"] for c in report["checks"] if c["outcome"] == "fail"]


def test_clean_to_fault_is_a_regression_exit_1(
    report_paths: dict[str, Path], fault_report: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    regressed = _failed_ids(fault_report)
    assert regressed  # the fault is caught
    code = main(["diff", str(report_paths["clean"]), str(report_paths["fault"])])
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("REGRESSED")
    for check_id in regressed:
        assert check_id in out
    assert FAULT_REQUIREMENT in out
    assert "pass -> fail" in out


def test_fault_to_clean_is_a_fix_exit_0(
    report_paths: dict[str, Path], fault_report: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["diff", str(report_paths["fault"]), str(report_paths["clean"]), "--format", "json"])
    diff = json.loads(capsys.readouterr().out)
    validate(diff, "diff.schema.json")
    assert code == 0
    assert diff["regressed"] is False and diff["regressions"] == []
    assert {entry["id"] for entry in diff["fixes"]} == set(_failed_ids(fault_report))
    assert {"id": FAULT_REQUIREMENT, "old": "fail", "new": "pass"} in diff["requirements"]


def test_the_json_diff_of_a_regression_validates_and_names_the_requirement(
    clean_report: dict[str, Any], fault_report: dict[str, Any]
) -> None:
    diff = diff_reports(clean_report, fault_report)
    validate(diff, "diff.schema.json")
    assert diff["counts"]["regressions"] == len(diff["regressions"]) > 0
    assert all(FAULT_REQUIREMENT in entry["requirements"] for entry in diff["regressions"])
    assert all(entry["message"] for entry in diff["regressions"])
    assert {"id": FAULT_REQUIREMENT, "old": "pass", "new": "fail"} in diff["requirements"]


def test_new_removed_checks_conventions_and_spec_claims(clean_report: dict[str, Any]) -> None:
    old = copy.deepcopy(clean_report)
    new = copy.deepcopy(clean_report)
    dropped = new["checks"].pop(0)
    added = copy.deepcopy(dropped) | {"id": "test_list.py::test_brand_new", "outcome": "warn"}
    new["checks"].append(added)
    new["server"]["spec"]["max_page_size"] = 7
    old["conventions"] = {"unknown_id": {"value": "404", "source": "detected"}, "problems": []}
    new["conventions"] = {"unknown_id": {"value": "403", "source": "detected"}, "problems": ["x"]}
    diff = diff_reports(old, new)
    validate(diff, "diff.schema.json")
    assert [e["id"] for e in diff["removed"]] == [dropped["id"]]
    assert [(e["id"], e["old"], e["new"]) for e in diff["new"]] == [
        ("test_list.py::test_brand_new", None, "warn")
    ]
    assert [e["id"] for e in diff["spec"]] == ["max_page_size"] and diff["spec"][0]["new"] == "7"
    assert [e["id"] for e in diff["conventions"]] == ["unknown_id"]
    assert diff["regressions"] == [] and diff["regressed"] is True  # the removed check (issue 38)
    assert diff_reports(old, new, allow_removed=True)["regressed"] is False


def test_other_outcome_changes_are_listed_apart(clean_report: dict[str, Any]) -> None:
    new = copy.deepcopy(clean_report)
    new["checks"][0]["outcome"] = "skip"
    diff = diff_reports(clean_report, new)
    assert [(e["old"], e["new"]) for e in diff["changed"]] == [("pass", "skip")]
    assert not diff["regressed"]


def test_markdown_and_html_renderings(
    report_paths: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "diff.html"
    code = main(
        [
            "diff",
            str(report_paths["clean"]),
            str(report_paths["fault"]),
            "--format",
            "markdown",
            "--html",
            str(page),
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "### Regressions (" in out and "| check | requirements | before | after |" in out
    assert FAULT_REQUIREMENT.replace("-", "\\-") in out
    assert "<!DOCTYPE html>" in page.read_text() and "Regressions" in page.read_text()


def test_markdown_escapes_what_the_reports_carry(clean_report: dict[str, Any]) -> None:
    new = copy.deepcopy(clean_report)
    new["server"]["spec"]["evil"] = "<script>alert(1)</script> | [x](javascript:alert(1))"
    text = render_markdown(diff_reports(clean_report, new))
    assert "<script>" not in text and "](javascript" not in text


def _write(path: Path, document: object) -> str:
    path.write_text(json.dumps(document) if not isinstance(document, str) else document)
    return str(path)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("missing", None, "cannot read"),
        ("{not json", None, "is not JSON"),
        ({"checks": "no"}, None, "not an amp-conformance JSON report"),
        ({"report_version": "3.0", "checks": []}, None, "report_version '3.0'"),
        (
            {"report_version": "1.0", "checks": []},
            {"report_version": "2.0", "checks": []},
            "one major version",
        ),
        (
            {"report_version": "2.0", "protocol": "amp-0.1", "checks": []},
            {"report_version": "2.0", "protocol": "amp-1.1", "checks": []},
            "nothing to compare",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, old: object, new: object, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    good = {"report_version": "2.0", "checks": []}
    old_path = str(tmp_path / "absent.json") if old == "missing" else _write(tmp_path / "old.json", old)
    new_path = _write(tmp_path / "new.json", new if new is not None else good)
    assert main(["diff", old_path, new_path]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
