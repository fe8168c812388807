"""The access matrix's shared groups (amp.shared): a list that breaks while one check makes the group is
every vector's own finding, shown with the list exchange, never a blocked check or an error."""

from __future__ import annotations

from typing import Any

from amp_conformance.cli import run_suite
from amp_conformance.engine.inprocess import asgi_client
from reference_server import Settings, create_app
from tests.suite.inprocess import BASE_URL

BROKEN = b'{"error": {"code": "INTERNAL", "message": "list is down"}}'


def list_answers_500(app: Any) -> Any:
    """The reference server, except that every ``GET /memories`` (the list) answers 500."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        path = str(scope.get("path", "")).rstrip("/")
        if scope["type"] == "http" and scope["method"] == "GET" and path.endswith("/memories"):
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 500, "headers": headers})
            await send({"type": "http.response.body", "body": BROKEN})
            return
        await app(scope, receive, send)

    return wrapped


def test_a_broken_list_fails_each_vector_with_the_list_exchange() -> None:
    app = list_answers_500(create_app(Settings.from_env({"AMP_LIFECYCLE_ENABLED": "false"})))
    values = {"amp_base_url": BASE_URL, "amp_only": "acl", "amp_no_fuzz": True, "amp_timeout": 10.0}
    with asgi_client(app, BASE_URL) as http:
        outcome = run_suite(values, http=http, quiet=True)
    assert outcome.run is not None
    matrix = [r for r in outcome.run.results.values() if r.name.startswith("test_access_matrix[")]
    assert len(matrix) > 20
    for result in matrix:
        assert result.outcome == "fail", (result.name, result.outcome, result.message)
        assert "listing the owner's cells answered 500" in result.message, (result.name, result.message)
        failing = result.failing_exchange
        assert failing is not None and failing.method == "GET" and failing.status == 500
        assert "/memories?" in failing.url and failing in result.exchanges
    # one list per group (and the stranger-refusals cell's, which answers the default-policy stranger
    # vectors), not one per vector
    from amp_conformance.amp01.checks import test_access

    groups = {
        (
            str(v.get("keyless_caller", v["caller"])),
            str((v.get("owner") or {}).get("id", "")),
            test_access._CHUNK[v["name"]],
        )
        for v in test_access.VECTORS
    }
    lists = {id(e) for r in matrix for e in r.exchanges if e.method == "GET" and "/memories?" in e.url}
    assert len(lists) <= len(groups) + 1 < len(matrix)
