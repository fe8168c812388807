"""Issue 23 §3: run one requirement, one check, a -k expression, or the failures of a saved report."""

from __future__ import annotations

from pathlib import Path

import pytest

from amp_conformance.cli import list_checks, main
from tests.ci.helpers import read_json, validate

SELF_TEST = ["--no-fuzz", "-q"]


def _ran(report: Path) -> list[str]:
    document = read_json(report)
    validate(document, "report.schema.json")
    return sorted(c["id"] for c in document["checks"])


@pytest.mark.parametrize("requirement", ["AMP-CRE-01", "AMP-READ-02", "amp-acl-01"])
def test_only_a_requirement_id_runs_exactly_the_checks_citing_it(
    requirement: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "r.json"
    assert main([*SELF_TEST, "--only", requirement, "--json", str(report)]) == 0, capsys.readouterr()
    citing = sorted(c["id"] for c in list_checks() if requirement.upper() in c["requirements"])
    assert citing and _ran(report) == citing


def test_check_and_k_select_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = "test_create_returns_201_with_the_stored_cell"
    report = tmp_path / "r.json"
    assert main([*SELF_TEST, "--check", name, "--json", str(report)]) == 0
    assert _ran(report) == [f"test_create.py::{name}"]
    assert main([*SELF_TEST, "--only", "cre", "-k", "201", "--json", str(report)]) == 0
    assert _ran(report) and all("201" in i for i in _ran(report))
    capsys.readouterr()
    assert main(["--check", "no_such_check"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "amp-conformance: --check no_such_check: no check of amp-0.1 has that name (--list shows them)"
    ]


def test_rerun_failed_runs_exactly_the_failed_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "first.json", tmp_path / "second.json"
    monkeypatch.setenv("AMP_REFERENCE_FAULTS", "get-no-access-count")
    assert main([*SELF_TEST, "--only", "read,cre", "--json", str(first)]) == 1
    failed = sorted(
        c["id"] for c in read_json(first)["checks"] if c["outcome"] in ("fail", "error", "blocked")
    )
    assert failed
    assert main([*SELF_TEST, "--rerun-failed", str(first), "--json", str(second)]) == 1
    assert _ran(second) == failed
    monkeypatch.delenv("AMP_REFERENCE_FAULTS")
    assert main([*SELF_TEST, "--rerun-failed", str(first), "--json", str(second)]) == 0  # fixed
    capsys.readouterr()
    assert main(["--rerun-failed", str(tmp_path / "missing.json")]) == 2
    assert "--rerun-failed" in capsys.readouterr().err


def test_expectations_on_a_missing_file_hints_at_write_expectations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "expectations.toml"
    assert main(["--expectations", str(missing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--write-expectations {missing}" in err[0], err
