"""Issue 20: v1.1 verdicts that never mislead, each shown on a fake server written from the spec.

For each behaviour: zero false MUST failures, the real divergence (if any) reported once under its own
requirement, and cascades ``blocked`` under the root cause."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from amp_conformance.amp11.session import Amp11Target
from tests.amp11.fakes import fake_rest
from tests.amp11.harness import Collector, StreamingASGITransport, run_checks

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")]


def failed(collector: Collector) -> dict[str, tuple[tuple[str, ...], str]]:
    return {
        o.name: (o.requirements, o.message[:300])
        for o in collector.results.values()
        if o.outcome in ("failed", "error")
    }


def accepts_top_k_zero(method: str, path: str, body: Any) -> Any:
    """A server that takes ``top_k: 0`` as "the default" (breaks ``minimum: 1``, AMP11-REC-09)."""
    if path == "/v1/memories/recall" and isinstance(body, dict) and body.get("top_k") == 0:
        return {k: v for k, v in body.items() if k != "top_k"}
    return body


def test_an_accepted_invalid_input_is_one_finding_under_its_own_requirement() -> None:
    with fake_rest(request=accepts_top_k_zero) as target:
        collector = run_checks(target)
    bad = failed(collector)
    assert set(bad) == {"test_malformed_recall_inputs_are_refused"}, bad
    assert "top_k 0" in bad["test_malformed_recall_inputs_are_refused"][1]
    results = collector.results
    for name in (
        "test_invalid_request_mapping",
        "test_rest_errors_carry_the_amp_code",
        "test_codes_and_transport_always_agree",
        "test_errors_do_not_break_the_session",
        "test_error_payloads_are_amp_error_data",
    ):
        assert results[name].outcome == "passed", (name, results[name].message)
        assert any("judged under AMP11-REC-09" in n for n in results[name].notes), name


def proxy(modes: str, *, timeout: float = 5.0) -> Amp11Target:
    """The MCP fake of ``proxy_mcp.py`` in ``modes``."""
    command = [sys.executable, str(Path(__file__).with_name("proxy_mcp.py")), modes]
    return Amp11Target(mcp_command=command, timeout=timeout, deadline=30.0, env=dict(os.environ))


def refuses_scope_form_encode(method: str, path: str, body: Any, status: int, answer: Any) -> tuple[int, Any]:
    """A v1.0-style REST server: an encode carrying a ``scope`` object is refused invalid_request."""
    if method == "POST" and path == "/v1/memories" and isinstance(body, dict) and "scope" in body:
        return 400, {"amp_error_code": "invalid_request", "message": "use the flat agent_id"}
    return status, answer


def assert_one_root_cause(collector: Collector) -> None:
    bad = failed(collector)
    assert set(bad) == {"test_forced_encode_stores"}, bad
    assert bad["test_forced_encode_stores"][0] == ("AMP11-ENC-01",)
    blocked = {o.name: o for o in collector.results.values() if o.outcome == "blocked"}
    # checks whose own assertion never ran, and checks that hit the same refusal
    for name in (
        "test_encode_status_and_id",
        "test_encode_output_schema",
        "test_private_is_accepted",
    ):
        assert name in blocked, (name, collector.results[name].outcome, collector.results[name].message)
    for name, outcome in blocked.items():
        assert outcome.blocked_by is not None, name
        assert outcome.blocked_by["requirement"] == "AMP11-ENC-01", (name, outcome.blocked_by)
        assert outcome.blocked_by["check"].endswith("test_forced_encode_stores"), (name, outcome.blocked_by)


def test_a_refused_scope_form_encode_is_one_root_cause_over_rest() -> None:
    with fake_rest(response=refuses_scope_form_encode) as target:
        collector = run_checks(target)
    assert_one_root_cause(collector)
    assert collector.results["test_encode_route"].outcome == "blocked"


def test_a_refused_scope_form_encode_is_one_root_cause_over_mcp() -> None:
    collector = run_checks(proxy("refuse-scope-encode"))
    assert_one_root_cause(collector)
    assert collector.results["test_tool_results_carry_the_output_as_json_text"].outcome == "blocked"


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18"])
def test_sdk_wrapped_structured_content_is_not_a_mismatch(version: str) -> None:
    """An SDK's ``structuredContent: {"result": ...}`` matching the tool's own outputSchema (2025-06-18),
    or any structuredContent under a version that has none (2025-03-26), fails nothing."""
    collector = run_checks(proxy(f"sdk@{version}"))
    assert not failed(collector), failed(collector)
    assert collector.results["test_tool_results_carry_the_output_as_json_text"].outcome == "passed"


def test_structured_content_against_its_declared_schema_is_judged_once() -> None:
    collector = run_checks(proxy("sdk@2025-06-18,unwrapped"))
    bad = failed(collector)
    assert set(bad) == {"test_tool_results_carry_the_output_as_json_text"}, bad
    assert "declared outputSchema" in bad["test_tool_results_carry_the_output_as_json_text"][1]


def test_a_silently_dropped_malformed_line_costs_a_short_window() -> None:
    started = time.monotonic()
    collector = run_checks(
        proxy("drop-malformed", timeout=20.0), "test_malformed_frame_is_answered_and_survived"
    )
    elapsed = time.monotonic() - started
    outcome = collector.results["test_malformed_frame_is_answered_and_survived"]
    assert outcome.outcome == "warned", outcome  # AMP11-INIT-10 is a SHOULD
    assert "probe window" in outcome.message and "kept serving" in outcome.message
    assert elapsed < 15, elapsed  # not the 20 s timeout


def test_a_stall_beyond_the_timeout_is_incomplete_not_failed() -> None:
    collector = run_checks(proxy("stall", timeout=1.0))
    assert not [o for o in collector.results.values() if o.outcome == "failed"], failed(collector)
    errors = [o for o in collector.results.values() if o.outcome == "error"]
    assert errors
    assert all("--timeout" in o.message for o in errors), [
        o.message for o in errors if "--timeout" not in o.message
    ]


def test_offset_less_timestamps_are_one_should_finding() -> None:
    """Conflict C12: ``2026-12-01T18:20:47.243471`` is ISO 8601 but not RFC 3339: one SHOULD warning
    under AMP11-SCHEMA-11, no MUST failure in EXP-02, SCHEMA-02, SCHEMA-07 or SCHEMA-10."""
    collector = run_checks(proxy("naive-time"))
    assert not failed(collector), failed(collector)
    warned = {o.name: o for o in collector.results.values() if o.outcome == "warned"}
    assert set(warned) == {"test_timestamps_carry_an_offset"}, {n: o.message for n, o in warned.items()}
    assert warned["test_timestamps_carry_an_offset"].requirements == ("AMP11-SCHEMA-11",)
    for name in (
        "test_recall_output_schema",
        "test_memory_results_are_complete",
        "test_export_output_schema",
    ):
        assert collector.results[name].outcome == "passed", name


@pytest.mark.parametrize("mode", ["backend-metadata", "visibility-private"])
def test_what_the_spec_allows_draws_no_finding(mode: str) -> None:
    """Backend metadata keys (``additionalProperties: true``; DRAFT-02 compares the keys it sent) and a
    ``visibility: "private"`` echo on a v1.1-native encode (§5, conflict C11) fail and warn nothing."""
    collector = run_checks(proxy(mode))
    assert not failed(collector), failed(collector)
    warned = {o.name: o.message for o in collector.results.values() if o.outcome == "warned"}
    assert not warned, warned
    assert collector.results["test_update_changes_content_and_merges_metadata"].outcome == "passed"
    assert collector.results["test_visibility_echo"].outcome == "passed"


def backend_error_as_502(method: str, path: str, body: Any, status: int, answer: Any) -> tuple[int, Any]:
    """A backend whose consolidate fails, reported as backend_error but with HTTP 502 (§3.5 says 500)."""
    if path == "/v1/memories/consolidate":
        return 502, {"amp_error_code": "backend_error", "message": "the LLM pass failed"}
    return status, answer


def test_a_wrongly_mapped_backend_error_is_one_finding_whatever_the_order() -> None:
    """AMP11-ERR-04 is judged where a backend_error is met, not by a check that looks back at what
    earlier checks saw: one failure under ERR-04, every other check meeting it blocked under it."""
    with fake_rest(response=backend_error_as_502) as target:
        collector = run_checks(target)
    bad = failed(collector)
    under_err04 = [
        n for n, o in collector.results.items() if o.outcome == "failed" and "HTTP 502" in o.message
    ]
    assert len(under_err04) == 1, bad
    assert set(bad) == set(under_err04), bad
    run = collector.run
    reporter = next(r for r in run.results.values() if r.name == under_err04[0])
    assert reporter.finding_requirements == ("AMP11-ERR-04",), reporter.finding_requirements
    blocked = [o for o in collector.results.values() if o.outcome == "blocked"]
    assert blocked and all(o.blocked_by and o.blocked_by["requirement"] == "AMP11-ERR-04" for o in blocked)
    assert collector.results["test_backend_error_mapping"].outcome == "skipped"


def strict_query_parameters(app: Any) -> Any:
    """A REST server generated from the pinned OpenAPI with unknown parameters forbidden: a query key
    its route does not list (forget and stats list no session_id nor org_id) draws a framework 422,
    not an AMP error."""
    from urllib.parse import parse_qs

    unlisted = {"session_id", "org_id"}

    async def wrapper(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path, method = scope.get("path", ""), scope.get("method", "")
        query = set(parse_qs(scope.get("query_string", b"").decode()))
        routed = method in ("DELETE", "GET", "PUT") and path != "/v1/memories/import"
        if scope["type"] == "http" and routed and query & unlisted:
            body = json.dumps({"detail": [{"type": "extra_forbidden", "loc": ["query"]}]}).encode()
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 422, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return wrapper


def test_rest_sends_only_the_scope_keys_each_route_lists() -> None:
    from reference_server.amp11 import Faults, Store, create_rest_app

    app = strict_query_parameters(create_rest_app(Store(), Faults.parse("")))
    http = httpx.Client(transport=StreamingASGITransport(app))
    try:
        collector = run_checks(Amp11Target(base_url="http://strict.test", http=http, timeout=5.0))
    finally:
        http.close()
    assert not failed(collector), failed(collector)
    assert collector.results["test_refining_keys_alone_are_refused"].outcome == "passed"
    session = collector.session  # cleanup cannot send session_id on DELETE either, and says so
    assert session is not None
    assert all("lists no `session_id`" in p for p in session.cleanup_problems), session.cleanup_problems


def test_a_banner_line_on_stdout_is_one_init08_failure_not_an_unusable_channel() -> None:
    """README: one non-JSON line on stdout (a banner) is AMP11-INIT-08, exit 1; only a channel that
    never answers in JSON-RPC is unusable (exit 2)."""
    collector = run_checks(proxy("banner"))
    assert collector.run is not None and collector.run.preflight_problem is None
    assert set(failed(collector)) == {"test_stdout_carries_only_json_rpc"}, failed(collector)
