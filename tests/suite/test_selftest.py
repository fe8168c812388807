"""The main job: the suite against the bundled reference server, in every documented convention."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import jsonschema
import pytest

from amp_conformance.engine.resources import load_contract
from tests.suite.inprocess import run_against_reference

CORE_AREAS = {"health", "cap", "cell", "cre", "read", "patch", "del", "list", "err"}


def _ids_in(report: dict[str, Any], areas: set[str]) -> set[str]:
    return {rid for rid in report["summary"]["requirements_cited"] if rid.split("-")[1].lower() in areas}


@pytest.fixture(scope="module")
def selftest_report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """``amp-conformance`` with no URL, as a user runs it on a fresh machine (loopback, with fuzzing)."""
    folder = tmp_path_factory.mktemp("selftest")
    path = folder / "report.json"
    result = subprocess.run(
        [sys.executable, "-m", "amp_conformance", "--json", str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=folder,
    )
    leftovers = sorted(p.name for p in folder.iterdir() if p != path)
    assert not leftovers, f"the command left files in the folder it ran in: {leftovers}"
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    report: dict[str, Any] = json.loads(path.read_text())
    report["_stdout"] = result.stdout
    return report


def test_selftest_passes_with_zero_fails(selftest_report: dict[str, Any]) -> None:
    summary = selftest_report["summary"]
    assert summary["verdict"] == "pass"
    assert summary["outcomes"]["fail"] == 0 and summary["outcomes"]["error"] == 0
    assert "verdict: PASS" in selftest_report["_stdout"]


def test_selftest_report_validates_against_its_schema(selftest_report: dict[str, Any]) -> None:
    report = {k: v for k, v in selftest_report.items() if not k.startswith("_")}
    validator = jsonschema.Draft202012Validator(
        load_contract("report.schema.json"), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    validator.validate(report)
    assert report["conventions"]["unknown_id"]["value"] == "404 NOT_FOUND"


def test_selftest_cites_enough_requirements(selftest_report: dict[str, Any]) -> None:
    assert len(_ids_in(selftest_report, CORE_AREAS)) >= 60
    assert len(_ids_in(selftest_report, {"acl", "auth", "admin"})) >= 30
    assert len(_ids_in(selftest_report, {"cap", "lc", "srch", "size", "rate", "list"})) >= 45


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"AMP_REFERENCE_CONVENTION": "upstream"},
        {"AMP_REFERENCE_ID_FORM": "bare"},
        {"AMP_REFERENCE_CONVENTION": "upstream", "AMP_REFERENCE_ID_FORM": "bare"},
    ],
    ids=["reference", "upstream", "bare-ids", "upstream-bare-ids"],
)
def test_every_convention_passes_with_zero_fails(env: dict[str, str]) -> None:
    outcome = run_against_reference(env)
    assert outcome.run is not None
    failed = [
        f"{r.name}: {r.message}" for r in outcome.run.results.values() if r.outcome in ("fail", "error")
    ]
    assert not failed
    assert outcome.exit_code == 0
    conventions = outcome.run.session.conventions
    expected = "403 ACCESS_DENIED" if env.get("AMP_REFERENCE_CONVENTION") == "upstream" else "404 NOT_FOUND"
    assert conventions is not None and conventions.as_report()["unknown_id"]["value"] == expected
    assert conventions.id_form == ("bare" if env.get("AMP_REFERENCE_ID_FORM") else "prefixed")
