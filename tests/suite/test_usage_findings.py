"""No false finding from how the suite was used (issue 38 items 11-13): keys a keyless server does not
take, a convention the fuzz area meets, a server error read as coercion."""

from __future__ import annotations

from pathlib import Path

from amp_conformance.amp01.checks.test_auth import KEYS_UNUSED
from amp_conformance.engine.report import build_report, render_summary
from tests.suite.inprocess import run_against_reference


def test_keys_a_keyless_server_does_not_take_run_it_as_keyless_with_a_note() -> None:
    """``--api-key a=b`` against a server whose /spec says ``api_keys_required: false``: the keys are
    not used, the keys-mode checks skip saying why, the keyless ones run; the note is in the terminal
    and the JSON report."""
    outcome = run_against_reference(areas="acl,auth,admin,cre", extra={"amp_api_key": ["a=b"]})
    assert outcome.run is not None
    results = {r.name: r for r in outcome.run.results.values()}
    bad = {name: r.message for name, r in results.items() if r.outcome in ("fail", "error")}
    assert not bad, bad
    assert outcome.exit_code == 0
    assert results["test_keys_create_does_not_fall_back_to_the_body_created_by"].message == KEYS_UNUSED
    assert results["test_keyless_server_trusts_any_agent_id"].outcome == "pass"
    note = build_report(outcome.run).to_json()["server"]["keys_note"]
    assert "api_keys_required: false" in note and "keyless" in note
    assert f"note: {note}" in render_summary(outcome.run)


def test_the_detected_unknown_id_answer_is_documented_on_the_cell_routes_only() -> None:
    """C-01: a generated id is an unknown id; the answer the server was seen to give it is documented
    on GET/PATCH/DELETE of one cell, and only there; undetected, both documented answers are."""
    from amp_conformance.amp01.conventions import Conventions
    from amp_conformance.amp01.fuzz_profile import PROFILE, profile_for

    route = "/amp/v1/memories/{memory_id}"
    reference = profile_for(Conventions(unknown_id=(404, "NOT_FOUND"))).documented_status
    assert all(reference(method, route, 404) for method in ("GET", "PATCH", "DELETE"))
    assert not reference("GET", route, 403)
    assert not reference("POST", "/amp/v1/memories", 404)
    assert not reference("GET", "/amp/v1/memories/search", 404)
    upstream = profile_for(Conventions(unknown_id=(403, "ACCESS_DENIED"))).documented_status
    assert upstream("GET", route, 403) and not upstream("GET", route, 404)
    undetected = profile_for(Conventions()).documented_status
    assert undetected("DELETE", route, 404) and undetected("DELETE", route, 403)
    assert not PROFILE.documented_status("GET", route, 404)


def test_fuzzing_the_upstream_contract_finds_no_404_c01_documents(spec_dir: Path) -> None:
    """``--openapi`` of the upstream contract (no 404 declared) against the reference server (404
    NOT_FOUND for unknown ids, C-01): no AMP-OAS-02 finding, exit 0."""
    upstream = spec_dir / "upstream" / "openapi.json"
    budget = {"amp_fuzz_examples": 10, "amp_fuzz_seconds": 20.0, "amp_seed": 1234}
    outcome = run_against_reference(areas="fuzz", fuzz=True, extra={**budget, "amp_openapi": str(upstream)})
    assert outcome.run is not None
    bad = {r.name: r.message for r in outcome.run.results.values() if r.outcome != "pass"}
    assert not bad, bad
    assert outcome.exit_code == 0
