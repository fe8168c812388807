"""No false finding from how the suite was used (issue 38 items 11-13): keys a keyless server does not
take, a convention the fuzz area meets, a server error read as coercion."""

from __future__ import annotations

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
