"""Tiers (issue 37 items 2 and 4): ``--tier smoke`` for every pull request, ``full`` nightly (the
default), ``stress`` opt-in. The smoke bars are computed from two self-tests, never written down: the
MUST ids a smoke run cites against those a full run cites, and the requests it sent."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.amp01.selfserve import BundledServer
from amp_conformance.cli import list_checks, main
from amp_conformance.reports.diff import diff_reports, render_text
from tests.suite.inprocess import run_against_reference

STRESS_CHECK = "test_search_finds_every_match_as_the_store_grows"
INDEX_FAULT = {"AMP_REFERENCE_FAULTS": "search-index-drops-beyond-n"}


def _self_test(tmp: Path, *args: str) -> dict[str, Any]:
    path = tmp / "report.json"
    assert main(["--no-fuzz", "-q", "--json", str(path), *args]) == 0
    return dict(json.loads(path.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """A serial self-test of each tier (the full one without fuzzing, as the smoke tier has none)."""
    return {
        "full": _self_test(tmp_path_factory.mktemp("full")),
        "smoke": _self_test(tmp_path_factory.mktemp("smoke"), "--tier", "smoke"),
    }


def _must_cited(report: dict[str, Any]) -> set[str]:
    levels = {r["id"]: r["level"] for r in report["catalogue"]["requirements"]}
    return {rid for rid in report["summary"]["requirements_cited"] if levels[rid] == "MUST"}


def test_smoke_cites_95_percent_of_the_must_ids_a_full_run_cites(reports: dict[str, dict[str, Any]]) -> None:
    full, smoke = _must_cited(reports["full"]), _must_cited(reports["smoke"])
    assert smoke <= full
    assert len(smoke) >= math.ceil(0.95 * len(full)), f"left out: {sorted(full - smoke)}"


def test_smoke_sends_fewer_requests_than_full(reports: dict[str, dict[str, Any]]) -> None:
    assert reports["smoke"]["run"]["requests"]["total"] < 0.85 * reports["full"]["run"]["requests"]["total"]


def test_a_smoke_report_says_its_tier_and_runs_only_smoke_checks(reports: dict[str, dict[str, Any]]) -> None:
    smoke, full = reports["smoke"], reports["full"]
    assert smoke["run"]["options"]["tier"] == "smoke" and full["run"]["options"]["tier"] == "full"
    marked = {c["id"] for c in list_checks() if "smoke" in c.get("tiers", ())}
    assert {c["id"] for c in smoke["checks"]} == marked
    assert not any(c["area"] == "fuzz" for c in smoke["checks"])
    assert not any(c["id"].endswith(STRESS_CHECK) for c in full["checks"])


def test_the_verdict_line_names_a_tier_other_than_full(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["--tier", "smoke", "--only", "health", "-q"]) == 0
    out = capsys.readouterr().out
    assert "verdict: PASS (smoke tier): every MUST check passed" in out


def test_a_diff_of_smoke_against_full_says_the_left_out_checks_were_not_run(
    reports: dict[str, dict[str, Any]],
) -> None:
    diff = diff_reports(reports["full"], reports["smoke"])
    assert diff["regressed"] and diff["counts"]["removed"] > 0
    assert diff["runs"]["new"]["tier"] == "smoke"
    accepted = render_text(diff_reports(reports["full"], reports["smoke"], allow_removed=True))
    assert "NEW is a smoke-tier run and OLD a full-tier one" in accepted.splitlines()[0]
    assert "were not run, not passed" in accepted.splitlines()[0]


def test_a_bad_tier_is_a_usage_error_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--tier", "quick"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == "amp-conformance: --tier: quick is not one of smoke, full, stress; see --help"


def test_list_shows_the_tiers_and_the_stress_bound(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--tier", "stress", "--only", "srch", "--list"]) == 0
    out = capsys.readouterr().out
    assert "tier: stress" in out and "≤ 440 requests + 800 cleanup, ≤ 300 s" in out
    assert main(["--tier", "full", "--only", "srch", "--list"]) == 0
    assert STRESS_CHECK not in capsys.readouterr().out
    assert main(["--only", "srch", "--list"]) == 0  # without --tier: every tier, each marked
    assert f"{STRESS_CHECK}   tier: stress" in capsys.readouterr().out


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with BundledServer({"AMP_LIFECYCLE_ENABLED": "false"}) as server:
        yield server.url


def test_minus_m_smoke_selects_the_smoke_checks_in_plugin_mode(server_url: str, tmp_path: Path) -> None:
    report = tmp_path / "plugin.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "amp_conformance.amp01.checks",
        "-p",
        "no:cacheprovider",
    ]
    args = [
        "--amp-base-url",
        server_url,
        "--amp-only",
        "cap",
        "-m",
        "smoke",
        f"--amp-json={report}",
        "-n",
        "0",
    ]
    result = subprocess.run(
        [*command, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    ran = {c["id"] for c in json.loads(report.read_text(encoding="utf-8"))["checks"]}
    cap = [c for c in list_checks() if c["area"] == "cap"]
    assert ran == {c["id"] for c in cap if "smoke" in c.get("tiers", ())}
    assert 0 < len(ran) < len(cap)


def _stress(env: dict[str, str] | None = None) -> Any:
    return run_against_reference(env, admin=False, extra={"amp_tier": "stress", "amp_check": [STRESS_CHECK]})


def test_the_stress_check_passes_on_a_correct_server_and_cleans_up() -> None:
    outcome = _stress()
    assert outcome.exit_code == 0
    assert outcome.run is not None
    [result] = outcome.run.results.values()
    assert result.outcome == "pass"
    assert outcome.run.cleanup_requests >= 2 * 400  # every cell it made archived and deleted


def test_the_stress_tier_catches_the_index_fault_the_full_tier_misses() -> None:
    full = run_against_reference(INDEX_FAULT)
    assert full.exit_code == 0, "the full tier's stores never grow past the index's 100 cells of an owner"
    stress = _stress(INDEX_FAULT)
    assert stress.exit_code == 1
    assert stress.run is not None
    [result] = stress.run.results.values()
    assert result.outcome == "fail" and "AMP-SRCH-01" in result.finding_requirements
    assert "first lost at a store of 200 cells" in result.message
