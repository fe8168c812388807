"""The access, auth and admin areas against the reference server in-process: keys mode and keyless, both
conventions, without an admin token, and with too few or no keys for a server that requires them.

Every run must end with zero fails and zero errors; the skips a run cannot avoid must name the flag
that would lift them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.cli import SuiteOutcome
from amp_conformance.engine.resources import load_fixture
from tests.suite.inprocess import KEYED_AGENTS, run_against_reference, write_keys_file

AREAS = "acl,auth,admin"
VECTOR_COUNT = len(load_fixture("access", "matrix.json")["vectors"])
KEYS_ONLY = {
    "test_keys_the_right_pair_works_on_every_agent_route",
    "test_keys_every_authentication_failure_gets_the_same_401",
    "test_keys_a_request_without_agent_id_is_401",
    "test_keys_create_does_not_fall_back_to_the_body_created_by",
    "test_keys_body_created_by_cannot_impersonate",
    "test_keys_a_public_cell_needs_an_authenticated_caller",
    "test_keys_authentication_comes_before_anything_else",
}


def assert_clean(outcome: SuiteOutcome, *, only_ours: bool = False) -> dict[str, Any]:
    """Exit 0, no fail and no error; returns the results by check name.

    ``only_ours`` judges only this issue's modules (the areas also hold other modules' checks).
    """
    assert outcome.run is not None, "the run did not start"
    mine = [
        r
        for r in outcome.run.results.values()
        if not only_ours or r.nodeid.startswith(("test_access.py", "test_auth.py", "test_admin.py"))
    ]
    bad = {r.name: f"{r.outcome}: {r.message}" for r in mine if r.outcome in ("fail", "error")}
    assert not bad, bad
    if not only_ours:
        assert outcome.exit_code == 0
    return {r.name: r for r in mine}


def outcomes_of(by_name: dict[str, Any], prefix: str) -> dict[str, str]:
    return {name: r.outcome for name, r in by_name.items() if name.startswith(prefix)}


def cited(by_name: dict[str, Any]) -> set[str]:
    return {rid for r in by_name.values() if r.outcome != "skip" for rid in r.requirements}


@pytest.mark.parametrize("convention", ["reference", "upstream"])
def test_keys_mode_runs_clean(convention: str, tmp_path: Path) -> None:
    env = {"AMP_API_KEYS_FILE": str(write_keys_file(tmp_path)), "AMP_REFERENCE_CONVENTION": convention}
    by_name = assert_clean(run_against_reference(env, areas=AREAS, keys=True))
    matrix = outcomes_of(by_name, "test_access_matrix[")
    assert len(matrix) == VECTOR_COUNT
    assert "skip" not in matrix.values(), matrix
    for name in KEYS_ONLY:
        assert by_name[name].outcome in ("pass", "warn"), (name, by_name[name].message)
    assert by_name["test_keyless_server_trusts_any_agent_id"].outcome == "skip"
    ids = {rid for rid in cited(by_name) if rid.split("-")[1] in ("ACL", "AUTH", "ADMIN")}
    assert len(ids) >= 30, sorted(ids)


@pytest.mark.parametrize("convention", ["reference", "upstream"])
def test_keyless_runs_clean(convention: str) -> None:
    by_name = assert_clean(run_against_reference({"AMP_REFERENCE_CONVENTION": convention}, areas=AREAS))
    matrix = outcomes_of(by_name, "test_access_matrix[")
    assert len(matrix) == VECTOR_COUNT and "skip" not in matrix.values(), matrix
    assert by_name["test_keyless_server_trusts_any_agent_id"].outcome == "pass"
    for name in KEYS_ONLY:
        assert by_name[name].outcome == "skip"


def test_without_an_admin_token_the_endpoint_still_refuses() -> None:
    by_name = assert_clean(run_against_reference(areas="admin", admin=False))
    assert by_name["test_run_endpoint_exists_and_refuses_without_a_token"].outcome == "pass"
    disabled = by_name["test_server_without_a_token_answers_admin_disabled"]
    assert disabled.outcome == "pass"
    assert any("ADMIN_DISABLED" in note for note in disabled.notes), disabled.notes
    for name, result in by_name.items():
        if result.outcome == "skip":
            assert "--admin-token" in result.message, (name, result.message)


def test_a_keys_server_without_keys_skips_naming_the_flag(tmp_path: Path) -> None:
    env = {"AMP_API_KEYS_FILE": str(write_keys_file(tmp_path))}
    by_name = assert_clean(run_against_reference(env, areas=AREAS), only_ours=True)
    skipped = {name: r.message for name, r in by_name.items() if r.outcome == "skip"}
    needs_identity = [name for name in skipped if name.startswith("test_access_matrix[")]
    assert len(needs_identity) == VECTOR_COUNT
    for name in needs_identity:
        assert "--api-key" in skipped[name], skipped[name]
    for name in (
        "test_keys_every_authentication_failure_gets_the_same_401",
        "test_keys_a_request_without_agent_id_is_401",
        "test_keys_create_does_not_fall_back_to_the_body_created_by",
        "test_health_and_spec_stay_open",
        "test_keys_authentication_comes_before_anything_else",
    ):
        assert by_name[name].outcome == "pass", (name, by_name[name].message)


def test_too_few_keys_skip_checks_that_need_another_agent(tmp_path: Path) -> None:
    env = {"AMP_API_KEYS_FILE": str(write_keys_file(tmp_path))}
    two = [f"{agent}={key}" for agent, key in list(KEYED_AGENTS.items())[:2]]
    by_name = assert_clean(run_against_reference(env, areas="acl", extra={"amp_api_key": two}))
    skipped = {name: r.message for name, r in by_name.items() if r.outcome == "skip"}
    assert skipped, "the owner vectors need a third agent"
    assert all(name.startswith("test_access_matrix[owner-") for name in skipped), skipped
    assert all("--api-key" in message for message in skipped.values()), skipped


@pytest.mark.parametrize("given", [0, 1, 2, 6])
def test_a_keys_mode_server_passes_with_any_number_of_keys(given: int, tmp_path: Path) -> None:
    """Issue 10 §3: a keys-mode server checked with no, one, two or six keys passes everywhere; a check
    needing more agents than keys skips naming --api-key (never an error, never a false failure)."""
    agents = {f"amp-keyed-agent-{n}": f"key-{n}-{'y' * 8}" for n in range(1, 7)}
    digests = {a: "sha256:" + hashlib.sha256(k.encode()).hexdigest() for a, k in agents.items()}
    keys_file = tmp_path / "keys.json"
    keys_file.write_text(json.dumps(digests))
    chosen = list(agents.items())[:given]
    outcome = run_against_reference(
        {"AMP_API_KEYS_FILE": str(keys_file)},
        extra={"amp_api_key": [f"{agent}={key}" for agent, key in chosen]},
    )
    assert outcome.run is not None
    results = list(outcome.run.results.values())
    bad = {r.name: f"{r.outcome}: {r.message}" for r in results if r.outcome in ("fail", "error", "blocked")}
    assert not bad, bad
    assert outcome.exit_code == 0
    skipped = [r for r in results if r.outcome == "skip"]
    if given < 6:
        assert skipped and all(r.message for r in skipped)
        assert all("Error" not in r.message and "NotEnoughAgents" not in r.message for r in skipped)
    if given == 0:
        assert any("--api-key" in r.message for r in skipped)
