"""Every reference-server fault that breaks a requirement the hand-written checks cover is caught:
the run exits 1 and a failing MUST check cites the broken requirement. The matrix is printed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reference_server import FAULTS
from tests.suite.inprocess import areas_citing, run_against_reference, write_keys_file

#: Faults only unusual input reaches: the fuzz area's business (tests/suite/test_fuzz_area.py).
FUZZ_ONLY = {"nonascii-session-500", "huge-integer-500", "deep-metadata-500"}

#: Server set-ups a fault needs to show (keys mode, no admin token, a short rate window).
PROFILES: dict[str, dict[str, Any]] = {
    "keys-body-created-by": {"keys": True},
    "keys-distinct-errors": {"keys": True},
    "keys-spec-closed": {"keys": True},
    "admin-open-when-disabled": {"admin": False},
    "rate-never-forgets": {"env": {"AMP_SCORING_PATCH_WINDOW_SECONDS": "3"}},
    "rate-counts-refused": {"env": {"AMP_SCORING_PATCH_WINDOW_SECONDS": "3"}},
}


@pytest.mark.parametrize("name", sorted(set(FAULTS) - FUZZ_ONLY))
def test_fault_is_caught_by_a_check_citing_its_requirement(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fault = FAULTS[name]
    profile = PROFILES.get(name, {})
    env = {"AMP_REFERENCE_FAULTS": name, **profile.get("env", {})}
    if profile.get("keys"):
        env["AMP_API_KEYS_FILE"] = str(write_keys_file(tmp_path))
    areas = areas_citing(fault.requirement)
    assert areas, f"no check cites {fault.requirement}, so nothing can catch {name}"
    outcome = run_against_reference(
        env, areas=areas, admin=profile.get("admin", True), keys=bool(profile.get("keys"))
    )
    assert outcome.run is not None
    failing = [r for r in outcome.run.results.values() if r.outcome == "fail" and r.level == "MUST"]
    citing = sorted(r.name for r in failing if fault.requirement in r.requirements)
    with capsys.disabled():
        caught = citing or "-"
        print(f"\n  fault {name:<30} {fault.requirement:<14} exit {outcome.exit_code}  caught by {caught}")
    assert outcome.exit_code == 1, f"{name}: the run did not fail"
    assert citing, (
        f"{name}: no failing MUST check cites {fault.requirement}; failing: {[r.name for r in failing]}"
    )
