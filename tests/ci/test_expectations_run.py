"""Known gaps end to end: write a baseline with a fault on, gate on it, catch the unexpected pass."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.ci.conftest import FAULT, FAULT_REQUIREMENT
from tests.ci.helpers import read_json, run_command, validate
from tests.suite.inprocess import run_against_reference

APP = ["--app", "reference_server.amp01.app:default_app", "--only", "list"]
FAULTY = ["--server-env", f"AMP_REFERENCE_FAULTS={FAULT}"]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("expectations") / "e.toml"
    result = run_command([*APP, *FAULTY, "--write-expectations", str(path)])
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr
    return path


def _failing(report_path: Path) -> list[str]:
    return [c["id"] for c in read_json(report_path)["checks"] if c["outcome"] == "fail"]


def test_the_baseline_lists_the_failures_and_a_rerun_passes(baseline: Path, tmp_path: Path) -> None:
    text = baseline.read_text()
    assert "[[expect]]" in text and 'outcome = "fail"' in text and FAULT_REQUIREMENT in text
    report = tmp_path / "r.json"
    result = run_command([*APP, *FAULTY, "--expectations", str(baseline), "--json", str(report)])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    document = read_json(report)
    validate(document, "report.schema.json")
    failing = [c for c in document["checks"] if c["outcome"] == "fail"]
    assert failing and all(c["expectation"]["met"] for c in failing)
    assert all(c["expectation"]["outcome"] == "fail" and c["expectation"]["reason"] for c in failing)
    assert document["summary"]["expected_failures"] == len(failing)
    assert document["summary"]["verdict"] == "pass"
    assert document["expectations"] == {"file": str(baseline), "stale": []}
    assert f"{len(failing)} of {len(failing)} matched checks as expected" in result.stdout
    assert "xfailed" in result.stdout  # pytest's own xfail


def test_without_the_fault_strict_expectations_names_each_unexpected_pass(baseline: Path) -> None:
    expected = [
        line.split('"')[1] for line in baseline.read_text().splitlines() if line.startswith("check = ")
    ]
    result = run_command([*APP, "--expectations", str(baseline), "--strict-expectations"])
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    for check_id in expected:
        assert f"UNEXPECTED PASS {check_id}" in result.stdout
    # each once, in the suite's summary (pytest's own XPASS(strict) list is not repeated: issue 23)
    assert "unexpected passes (the expectations file says they fail; they passed):" in result.stdout
    assert "XPASS(strict)" not in result.stdout
    lenient = run_command([*APP, "--expectations", str(baseline)])
    assert lenient.returncode == 0, lenient.stdout[-3000:] + lenient.stderr
    assert "UNEXPECTED PASS" in lenient.stdout and "a warning; --strict-expectations fails" in lenient.stdout


def test_entries_for_unknown_checks_are_reported_stale(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text(
        '[[expect]]\ncheck = "test_list.py::test_does_not_exist"\noutcome = "fail"\nreason = "typo"\n\n'
        '[[expect]]\nrequirement = "AMP-ZZZ-99"\noutcome = "warn"\nreason = "no such requirement"\n'
    )
    report = tmp_path / "r.json"
    result = run_command([*APP, "--expectations", str(path), "--json", str(report)])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    stale = read_json(report)["expectations"]["stale"]
    assert [(s["target"], s["line"]) for s in stale] == [
        ("check test_list.py::test_does_not_exist", 1),
        ("requirement AMP-ZZZ-99", 6),
    ]
    assert "stale entries (they match no check): 2" in result.stdout
    assert "line 1: check test_list.py::test_does_not_exist" in result.stdout


def test_a_malformed_file_stops_before_anything_starts(tmp_path: Path) -> None:
    path = tmp_path / "e.toml"
    path.write_text('[[expect]]\ncheck = "x"\noutcome = "failed"\nreason = "r"\n')
    started = time.monotonic()
    result = run_command(["--server-cmd", "sleep 60", "--expectations", str(path)], timeout=60)
    assert result.returncode == 2
    assert (
        result.stderr.count("\n") == 1
        and "(entry at line 1)" in result.stderr
        and "'failed'" in result.stderr
    )
    assert "Traceback" not in result.stderr and "started the server" not in result.stderr
    assert time.monotonic() - started < 20


def test_the_pytest_plugin_maps_expectations_onto_xfail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "e.toml"
    path.write_text(f'[[expect]]\nrequirement = "{FAULT_REQUIREMENT}"\noutcome = "fail"\nreason = "known"\n')
    outcome = run_against_reference(
        {"AMP_REFERENCE_FAULTS": FAULT}, areas="list", admin=False, extra={"amp_expectations": str(path)}
    )
    assert outcome.exit_code == 0
    assert outcome.run is not None
    expected = [r for r in outcome.run.results.values() if r.expectation is not None]
    assert expected and all(r.expectation and r.expectation["met"] for r in expected if r.outcome == "fail")


def test_the_step_summary_names_every_failing_requirement_and_the_badge_is_valid(tmp_path: Path) -> None:
    summary, badge, markdown, report = (tmp_path / n for n in ("summary.md", "badge.json", "m.md", "r.json"))
    result = run_command(
        [*APP, *FAULTY, "--badge", str(badge), "--markdown", str(markdown), "--json", str(report)],
        GITHUB_STEP_SUMMARY=str(summary),
        GITHUB_ACTIONS="true",
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    document = read_json(report)
    failing = {rid for c in document["checks"] if c["outcome"] == "fail" for rid in c["finding_requirements"]}
    assert FAULT_REQUIREMENT in failing
    text = summary.read_text()
    assert text == markdown.read_text() + "\n" or text.strip() == markdown.read_text().strip()
    assert "| requirement | level | title | checks |" in text
    for rid in failing:
        assert f"| {rid.replace('-', chr(92) + '-')} | MUST |" in text
    assert f"::error title={FAULT_REQUIREMENT}" in result.stdout
    badge_document = read_json(badge)
    validate(badge_document, "badge.schema.json")
    assert badge_document["color"] == "red" and badge_document["message"].startswith("MUST ")


def test_expected_failures_are_shown_as_such_and_new_failures_first(baseline: Path, tmp_path: Path) -> None:
    """Issue 23 §2: with --expectations, a known gap is not a plain FAIL line; a new failure is."""
    markdown, html = tmp_path / "s.md", tmp_path / "r.html"
    result = run_command(
        [
            "--app",
            "reference_server.amp01.app:default_app",
            "--only",
            "list,read",
            "--server-env",
            f"AMP_REFERENCE_FAULTS={FAULT},get-no-access-count",
            "--expectations",
            str(baseline),
            "--markdown",
            str(markdown),
            "--html",
            str(html),
        ]
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr  # the new fault fails
    out = result.stdout
    new, known = out.index("new failures (not in the expectations file):"), out.index("expected failures (")
    assert new < known
    assert "AMP-READ-02" in out[new:known] and FAULT_REQUIREMENT not in out[new:known]
    assert f"XFAIL {FAULT_REQUIREMENT}" in out[known:]
    text = markdown.read_text()
    assert text.index("### New failures and errors") < text.index("<details><summary>Expected failures (")
    page = html.read_text()
    assert '<details class="expected"><summary>' in page and "expected failure(s)" in page


def test_the_verdict_line_counts_the_expected_must_failures(baseline: Path, tmp_path: Path) -> None:
    """Issue 38 item 6: a pass with known MUST gaps says so on the verdict line; exit 0 still."""
    report = tmp_path / "r.json"
    result = run_command([*APP, *FAULTY, "--expectations", str(baseline), "--json", str(report)])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    checks = read_json(report)["checks"]
    expected = sum(1 for c in checks if c["outcome"] == "fail" and c["level"] == "MUST" and c["expectation"])
    assert expected
    line = next(line for line in result.stdout.splitlines() if line.startswith("verdict: "))
    assert line.startswith("verdict: PASS: every MUST check passed or failed as expected"), line
    assert f"({expected} expected MUST failure" in line, (line, baseline.read_text())
