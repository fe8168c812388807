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
    from amp_conformance.amp01.checks.access import groups as access_groups

    groups = {
        (
            str(v.get("keyless_caller", v["caller"])),
            str((v.get("owner") or {}).get("id", "")),
            access_groups._CHUNK[v["name"]],
        )
        for v in access_groups.VECTORS
    }
    lists = {id(e) for r in matrix for e in r.exchanges if e.method == "GET" and "/memories?" in e.url}
    assert len(lists) <= len(groups) + 1 < len(matrix)


def test_a_stranger_deleting_a_shared_cell_leaves_the_other_vectors_verdicts_their_own(
    monkeypatch: Any,
) -> None:
    """A cell two vectors share (a rider and its host; the stranger-refusals cell and its creator's
    vector) is asked of the refused caller first: when a server lets that stranger DELETE it, the
    stranger's vectors fail under AMP-ACL-02 and the allowed caller's vector, which can no longer ask
    its DELETE there, gets a cell of its own and passes, as on a cell of its own from the start."""
    from reference_server.amp01.service import ServerState

    delete = ServerState.delete

    def anyone_deletes_default_policy_cells(self: Any, agent: str, memory_id: str) -> Any:
        record = self.store.get(memory_id)
        if record is None or record.status != "archived" or any((record.cell["access_policy"]).values()):
            return delete(self, agent, memory_id)
        creator = record.cell["identity"]["created_by"]
        return delete(self, creator, memory_id)

    monkeypatch.setattr(ServerState, "delete", anyone_deletes_default_policy_cells)
    app = create_app(Settings.from_env({"AMP_LIFECYCLE_ENABLED": "false"}))
    values = {"amp_base_url": BASE_URL, "amp_only": "acl", "amp_no_fuzz": True, "amp_timeout": 10.0}
    with asgi_client(app, BASE_URL) as http:
        outcome = run_suite(values, http=http, quiet=True)
    assert outcome.run is not None
    results = {r.name: r for r in outcome.run.results.values()}

    def matrix(name: str) -> Any:
        return results[f"test_access_matrix[{name}]"]

    for refused in ("owner-bypass-is-for-the-owner-only", "default-policy-refuses-a-stranger"):
        assert matrix(refused).outcome == "fail", (refused, matrix(refused).message)
        assert tuple(matrix(refused).finding_requirements) == ("AMP-ACL-02",), matrix(refused).message
    for allowed in ("owner-of-type-agent-with-the-default-policy", "creator-with-the-default-policy"):
        result = matrix(allowed)
        assert result.outcome == "pass", (allowed, result.message)
        deletes = [e for e in result.exchanges if e.method == "DELETE" and e.status == 204]
        assert len(deletes) == 2, (allowed, [(e.method, e.url, e.status) for e in result.exchanges])


def _matrix_run(env: dict[str, str]) -> dict[str, Any]:
    app = create_app(Settings.from_env({"AMP_LIFECYCLE_ENABLED": "false", **env}))
    values = {"amp_base_url": BASE_URL, "amp_only": "acl", "amp_no_fuzz": True, "amp_timeout": 10.0}
    with asgi_client(app, BASE_URL) as http:
        outcome = run_suite(values, http=http, quiet=True)
    assert outcome.run is not None
    return {r.name: r for r in outcome.run.results.values() if r.name.startswith("test_access_matrix[")}


def _pooled(result: Any) -> bool:
    return any("asked on one cell pooling" in note for note in result.notes)


def test_vectors_refused_everything_share_a_pooled_cell_and_fall_back_to_their_own() -> None:
    """Group testing (access.groups._pool): on a correct server the vectors whose caller is refused
    everything are answered on one pooled cell and pass; when one pooled pattern wrongly admits the
    caller (substring wildcards), nobody is judged on the pooled cell: each vector is asked on a cell of
    its own, and exactly the vectors whose own patterns break the rule fail."""
    from amp_conformance.amp01.checks.access import groups as access_groups

    clean = _matrix_run({})
    pooled = sorted(name for name, result in clean.items() if _pooled(result))
    assert len(pooled) >= 2, pooled
    for name in pooled:
        assert clean[name].outcome == "pass", (name, clean[name].message)
        vector = access_groups.BY_NAME[name.removeprefix("test_access_matrix[").removesuffix("]")]
        assert access_groups.poolable(vector), name
    faulty = _matrix_run({"AMP_REFERENCE_FAULTS": "wildcard-substring"})
    assert not [name for name, result in faulty.items() if _pooled(result)]
    failing = sorted(name for name, result in faulty.items() if result.outcome == "fail")
    assert "test_access_matrix[star-pattern-is-anchored-at-the-start]" in failing, failing
    assert set(failing) & set(pooled), (failing, pooled)  # a pooled vector's own finding, after the fallback
    for name in set(pooled) - set(failing):
        assert faulty[name].outcome == "pass", (name, faulty[name].message)


def test_the_body_claims_check_alone_makes_no_matrix_group() -> None:
    """AMP-ACL-13's check asks its claims on the matrix's pooled cell only when the matrix made it
    already: run alone it creates a cell of its own, and sends none of the matrix's requests."""
    app = create_app(Settings.from_env({"AMP_LIFECYCLE_ENABLED": "false"}))
    values = {"amp_base_url": BASE_URL, "amp_only": "AMP-ACL-13", "amp_no_fuzz": True, "amp_timeout": 10.0}
    with asgi_client(app, BASE_URL) as http:
        outcome = run_suite(values, http=http, quiet=True)
    assert outcome.run is not None
    (result,) = [r for r in outcome.run.results.values() if r.name.startswith("test_nothing_in_the_body")]
    assert result.outcome == "pass", result.message
    assert not any("pooled" in note for note in result.notes), result.notes
    bodies = [e.request_body or "" for e in result.exchanges]
    assert not any("access matrix probe" in str(body) for body in bodies), bodies
