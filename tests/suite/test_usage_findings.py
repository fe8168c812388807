"""No false finding from how the suite was used (issue 38 items 11-13): keys a keyless server does not
take, a convention the fuzz area meets, a server error read as coercion."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from amp_conformance.amp01.checks.test_auth import KEYS_UNUSED
from amp_conformance.cli import run_suite
from amp_conformance.engine.inprocess import asgi_client
from amp_conformance.engine.report import build_report, render_summary
from reference_server import Settings, create_app
from tests.suite.inprocess import BASE_URL, run_against_reference


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


def answers_500_but_health(app: Any) -> Any:
    """A server that answers 500 to everything but ``GET /health`` (so the preflight lets it be checked)."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].endswith("/health"):
            await app(scope, receive, send)
            return
        body = json.dumps({"error": {"code": "INTERNAL", "message": "boom", "details": {}}}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 500, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return wrapped


def test_a_500_is_no_evidence_of_coercion() -> None:
    """AMP-ERR-04's mistyped creates answered 500: the check is held under the server error
    (AMP-ERR-07), it does not say the value was coerced."""
    app = answers_500_but_health(create_app(Settings.from_env({"AMP_LIFECYCLE_ENABLED": "false"})))
    with asgi_client(app, BASE_URL) as http:
        values = {"amp_base_url": BASE_URL, "amp_only": "AMP-ERR-04,AMP-ERR-07", "amp_no_fuzz": True}
        outcome = run_suite({**values, "amp_timeout": 5.0}, http=http, quiet=True)
    assert outcome.run is not None
    result = next(
        r for r in outcome.run.results.values() if r.name == "test_values_of_the_wrong_type_are_not_coerced"
    )
    assert "coerced, not refused" not in (result.message or ""), result.message
    assert "server error" in (result.message or ""), result.message
    # under the server-error requirement: blocked under it, or (no other check reported it, the checks
    # asking about it being blocked themselves) the one reporting it, at its level (SHOULD: a warning)
    if result.outcome == "blocked":
        assert result.blocked_by is not None and result.blocked_by["requirement"] == "AMP-ERR-07"
    else:
        assert result.outcome == "warn" and result.finding_requirements == ("AMP-ERR-07",), result


def test_skip_reasons_name_the_option_of_the_mode_they_run_in(tmp_path: Path) -> None:
    """Under the pytest plugin a skip reason names ``--amp-admin-token``; from the command (run_suite),
    ``--admin-token`` (item 23)."""
    import os
    import subprocess
    import sys

    from amp_conformance.amp01.selfserve import BundledServer

    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "AMP_CONFORMANCE_COMMAND"))}
    with BundledServer({"AMP_LIFECYCLE_ENABLED": "false"}) as server:
        args = ["--pyargs", "amp_conformance.amp01.checks", "-p", "no:cacheprovider", "-n", "0"]
        args += ["--amp-base-url", server.url, "--amp-only", "admin", f"--amp-json={report}"]
        subprocess.run(
            [sys.executable, "-m", "pytest", *args], cwd=tmp_path, env=env, capture_output=True, timeout=300
        )
    plugin = [c["message"] for c in json.loads(report.read_text())["checks"] if c["outcome"] == "skip"]
    assert any("--amp-admin-token" in message for message in plugin), plugin
    assert not any(re.search(r"(?<![\w-])--admin-token", message) for message in plugin), plugin
    outcome = run_against_reference(areas="admin", admin=False)
    assert outcome.run is not None
    command = [r.message for r in outcome.run.results.values() if r.outcome == "skip"]
    assert any(re.search(r"(?<![\w-])--admin-token", message) for message in command), command
    assert not any("--amp-admin-token" in message for message in command), command
