"""A Core REST server (Full routes answering 501 not_supported, or absent) makes the Full checks skip
with that reason and nothing fail."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from amp_conformance.amp11.session import Amp11Target
from reference_server.amp11 import Faults, Store, create_rest_app
from tests.amp11.harness import StreamingASGITransport, run_checks

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")]

FULL_PATHS = ("/v1/memories/consolidate", "/v1/memories/export", "/v1/memories/import")


def core_only(app: Any, answer: str) -> Any:
    """The reference REST app with the Full routes refused (``501``) or missing (``404``)."""

    async def wrapper(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and (path in FULL_PATHS or path.endswith("/pin")):
            if answer == "501":
                body = json.dumps({"amp_error_code": "not_supported", "message": "a Core server"}).encode()
                status, kind = 501, b"application/json"
            else:
                body, status, kind = b"Not Found", 404, b"text/plain"
            await send(
                {"type": "http.response.start", "status": status, "headers": [(b"content-type", kind)]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        await app(scope, receive, send)

    return wrapper


@pytest.mark.parametrize("answer", ["501", "404"])
def test_full_checks_skip_on_a_core_rest_server(answer: str) -> None:
    app = core_only(create_rest_app(Store(), Faults.parse("")), answer)
    http = httpx.Client(transport=StreamingASGITransport(app))
    try:
        collector = run_checks(Amp11Target(base_url="http://core.test", http=http, timeout=5.0))
    finally:
        http.close()
    bad = {o.name: o.message[:200] for o in collector.results.values() if o.outcome in ("failed", "error")}
    assert not bad, bad
    wanted = "not_supported" if answer == "501" else "no such route"
    full_skips = [o for o in collector.results.values() if o.outcome == "skipped" and wanted in o.message]
    assert len(full_skips) >= 15, [o.name for o in full_skips]
    assert collector.results["test_export_emits_one_line_per_memory"].outcome == "skipped"
    assert collector.results["test_recall_honours_top_k"].outcome == "passed"


@pytest.mark.parametrize("mode", ["not-supported", "unknown-tool"])
def test_full_checks_skip_on_a_core_mcp_server(mode: str) -> None:
    """A Core server refuses an unlisted Full verb with not_supported or, as MCP SDKs answer a tool
    they lack, JSON-RPC -32601 (issue 20 §1): either way the Full checks skip and COMPAT-01, SCOPE-01
    and SCOPE-02 judge only the verbs the server serves."""
    import os
    import sys
    from pathlib import Path

    command = [sys.executable, str(Path(__file__).with_name("core_mcp.py")), mode]
    collector = run_checks(Amp11Target(mcp_command=command, timeout=5.0, env=dict(os.environ)))
    bad = {o.name: o.message[:200] for o in collector.results.values() if o.outcome in ("failed", "error")}
    assert not bad, bad
    assert collector.results["test_server_behaves_at_its_declared_level"].outcome == "passed"
    skipped = {o.name: o.message for o in collector.results.values() if o.outcome == "skipped"}
    assert "not listed by this Core server" in skipped["test_pin_annotations"]
    assert "not full" in skipped["test_full_verbs_are_listed_by_a_full_server"]
    assert "Core server" in skipped["test_export_emits_one_line_per_memory"]
    for name in (
        "test_flat_agent_id_works_on_every_verb",
        "test_refining_keys_alone_are_refused",
        "test_a_request_without_scope_is_refused",
    ):
        assert collector.results[name].outcome == "passed", collector.results[name].message
