"""A ``requirement = ...`` entry is about the requirement (issue 38 item 20), and
``--write-expectations`` says what it wrote."""

from __future__ import annotations

from pathlib import Path

from amp_conformance.engine.expectations import unexpected_passes
from tests.ci.conftest import FAULT, FAULT_REQUIREMENT
from tests.ci.helpers import run_command
from tests.suite.inprocess import run_against_reference


def _entry(tmp_path: Path) -> Path:
    path = tmp_path / "e.toml"
    path.write_text(f'[[expect]]\nrequirement = "{FAULT_REQUIREMENT}"\noutcome = "fail"\nreason = "known"\n')
    return path


def test_a_requirement_entry_does_not_make_unrelated_passing_checks_unexpected(tmp_path: Path) -> None:
    extra = {"amp_expectations": str(_entry(tmp_path)), "amp_strict_expectations": True}
    outcome = run_against_reference(
        {"AMP_REFERENCE_FAULTS": FAULT}, areas="list,cap", admin=False, extra=extra
    )
    assert outcome.run is not None
    results = list(outcome.run.results.values())
    citing = [r for r in results if FAULT_REQUIREMENT in r.requirements]
    assert any(r.outcome == "pass" for r in citing), "no passing check cites the requirement"
    assert [r.name for r in unexpected_passes(results)] == []
    found = [r for r in results if FAULT_REQUIREMENT in r.finding_requirements and r.outcome == "fail"]
    assert found and all(r.expectation and r.expectation["met"] for r in found)
    assert outcome.exit_code == 0


def test_a_requirement_no_finding_names_any_more_is_an_unexpected_pass(tmp_path: Path) -> None:
    extra = {"amp_expectations": str(_entry(tmp_path)), "amp_strict_expectations": True}
    outcome = run_against_reference({}, areas="list,cap", admin=False, extra=extra)
    assert outcome.run is not None
    surprises = unexpected_passes(list(outcome.run.results.values()))
    assert surprises and all(FAULT_REQUIREMENT in r.requirements for r in surprises)
    assert outcome.exit_code == 1


def test_write_expectations_says_what_it_wrote(tmp_path: Path) -> None:
    path = tmp_path / "baseline.toml"
    app = ["--app", "reference_server.amp01.app:default_app", "--only", "list"]
    result = run_command(
        [*app, "--server-env", f"AMP_REFERENCE_FAULTS={FAULT}", "--write-expectations", str(path)]
    )
    entries = path.read_text(encoding="utf-8").count("[[expect]]")
    assert entries >= 1
    said = [line for line in (result.stdout + result.stderr).splitlines() if str(path) in line]
    assert said == [f"amp-conformance: --write-expectations: {entries} entries to {path}"], said
