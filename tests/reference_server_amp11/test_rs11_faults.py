"""Every named fault changes an observable response (table-driven: one probe per fault).

A probe runs a short scenario against a fresh server and returns what a client would see; the test runs
it with the fault off and on and requires the two observations to differ.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reference_server.amp11 import FAULTS, MISBEHAVIOURS, ConfigError, Faults, Settings
from reference_server.amp11.__main__ import list_faults
from reference_server.amp11.faults import UnknownFaultError
from tests.reference_server_amp11.conftest import ServerFactory
from tests.reference_server_amp11.helpers import Server, encode, ndjson_rows, recall_ids

A = {"agent_id": "agent-a"}
B = {"agent_id": "agent-b"}
Probe = Callable[[Server], Any]


def _row(memory_id: str, scope: dict[str, str], content: str = "imported row") -> str:
    body = {"id": memory_id, "content": content, "timestamp": "2026-05-30T12:00:00Z", "status": "active"}
    return json.dumps({**body, "scope": scope}) + "\n"


def _tools(s: Server) -> dict[str, dict[str, Any]]:
    return {tool["name"]: tool for tool in s.mcp.request("tools/list")["result"]["tools"]}


def _duplicates(s: Server, pin_newer: bool = False) -> list[str]:
    encode(s.mcp, A, "Twice told")
    newer = encode(s.mcp, A, "twice told")
    if pin_newer:
        s.mcp.call("amp.pin", {"scope": A, "id": newer}).get()
    s.mcp.call("amp.consolidate", {"scope": A}).get()
    rows = s.mcp.call("amp.export", {"scope": A}).get()["ndjson"]
    return [row["status"] for row in ndjson_rows(rows)]


def _pages(s: Server) -> list[str]:
    for n in range(3):
        encode(s.mcp, A, f"page probe {n}")
    seen, cursor = [], None
    for _ in range(5):
        args: dict[str, Any] = {"scope": A, "page_size": 1, **({"cursor": cursor} if cursor else {})}
        page = s.mcp.call("amp.export", args).get()
        seen += [row["id"] for row in ndjson_rows(page["ndjson"])]
        cursor = page.get("next_cursor")
        if not cursor:
            break
    return seen


def _forgotten_then(s: Server, look: Callable[[str], Any]) -> Any:
    memory = encode(s.mcp, A, "forget probe")
    s.mcp.call("amp.forget", {"scope": A, "id": memory}).get()
    return look(memory)


def _import(s: Server, document: str, **policy: Any) -> Any:
    return s.mcp.call("amp.import", {"scope": A, "ndjson": document, **policy}).get()


PROBES: dict[str, Probe] = {
    "serverinfo-no-amp-version": lambda s: s.mcp.request("initialize", {})["result"]["serverInfo"].get(
        "amp_version"
    ),
    "notification-answered": lambda s: s.mcp.frame({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    "response-id-stringified": lambda s: s.mcp.request("ping")["id"],
    "unknown-method-wrong-code": lambda s: s.mcp.request("resources/list")["error"]["code"],
    "annotations-missing": lambda s: [tool.get("annotations") for tool in _tools(s).values()],
    "forget-not-destructive": lambda s: _tools(s)["amp.forget"]["annotations"]["destructiveHint"],
    "refining-only-scope-accepted": lambda s: (
        s.mcp.call("amp.encode", {"scope": {"session_id": "s"}, "content": "refining only"}).error
    ),
    "recall-scope-leak": lambda s: (encode(s.mcp, A, "leak probe"), recall_ids(s.mcp, B, "leak probe"))[1],
    "scope-not-strict-and": lambda s: (
        encode(s.mcp, A, "wildcard probe"),
        recall_ids(s.mcp, {**A, "user_id": "u"}, "wildcard probe"),
    )[1],
    "recall-ignores-refining-keys": lambda s: (
        encode(s.mcp, {**A, "session_id": "s1"}, "session probe"),
        recall_ids(s.mcp, {**A, "session_id": "s2"}, "session probe"),
    )[1],
    "forget-ignores-scope": lambda s: s.mcp.call(
        "amp.forget", {"scope": B, "id": encode(s.mcp, A, "mine")}
    ).get(),
    "pin-ignores-scope": lambda s: s.mcp.call("amp.pin", {"scope": B, "id": encode(s.mcp, A, "mine")}).get(),
    "stats-counts-other-scopes": lambda s: (
        encode(s.mcp, A, "counted elsewhere"),
        s.mcp.call("amp.stats", {"scope": B}).get()["memory_count"],
    )[1],
    "export-scope-leak": lambda s: (
        encode(s.mcp, A, "exported elsewhere"),
        s.mcp.call("amp.export", {"scope": B}).get()["count"],
    )[1],
    "consolidate-ignores-scope": lambda s: (
        encode(s.mcp, A, "dup probe"),
        encode(s.mcp, A, "dup probe"),
        s.mcp.call("amp.consolidate", {"scope": B}).get(),
        recall_ids(s.mcp, A, "dup probe"),
    )[3],
    "unicode-mangled": lambda s: (
        encode(s.mcp, A, "emoji probe 😀 𓀀"),
        s.mcp.call("amp.recall", {"scope": A, "query": "emoji probe"}).get()["results"][0]["content"],
    )[1],
    "minimum-not-enforced": lambda s: s.mcp.call("amp.recall", {"scope": A, "query": "q", "top_k": 0}).error,
    "enum-backend-error": lambda s: s.mcp.call("amp.consolidate", {"scope": A, "depth": "bogus"}).error,
    "type-coerced": lambda s: s.mcp.call("amp.recall", {"scope": A, "query": "q", "top_k": "1"}).error,
    "recall-crash-non-ascii": lambda s: (
        (o := s.mcp.call("amp.recall", {"scope": A, "query": "caf\u00e9"})).error,
        o.code,
    ),
    "invalid-input-crashes-mcp": lambda s: (
        (o := s.mcp.call("amp.recall", {"scope": A, "query": 42})).error,
        o.code,
    ),
    "source-label-overwritten": lambda s: (
        encode(s.mcp, A, "source probe", source="inferred"),
        s.mcp.call("amp.recall", {"scope": A, "query": "source probe"}).get()["results"][0]["source"],
    )[1],
    "metadata-dropped": lambda s: (
        encode(s.mcp, A, "meta probe", metadata={"custom": {"k": [1, 2]}}),
        s.mcp.call("amp.recall", {"scope": A, "query": "meta probe"}).get()["results"][0]["metadata"],
    )[1],
    "reserved-metadata-stringified": lambda s: (
        encode(s.mcp, A, "reserved probe", metadata={"amp.confidence": 0.9, "amp.entities": ["x"]}),
        s.mcp.call("amp.recall", {"scope": A, "query": "reserved probe"}).get()["results"][0]["metadata"],
    )[1],
    "top-k-ignored": lambda s: (
        [encode(s.mcp, A, f"top k probe {n}") for n in range(3)],
        len(recall_ids(s.mcp, A, "top k probe", top_k=1)),
    )[1],
    "recall-unsorted": lambda s: (
        encode(s.mcp, A, "cats"),
        encode(s.mcp, A, "cats dogs birds"),
        [
            row["score"]
            for row in s.mcp.call("amp.recall", {"scope": A, "query": "cats dogs"}).get()["results"]
        ],
    )[2],
    "archived-in-default-recall": lambda s: (_duplicates(s), len(recall_ids(s.mcp, A, "twice told")))[1],
    "status-filter-ignored": lambda s: (
        encode(s.mcp, A, "status probe"),
        recall_ids(s.mcp, A, "status probe", filters={"status": "archived"}),
    )[1],
    "timestamp-filters-ignored": lambda s: (
        encode(s.mcp, A, "time probe"),
        recall_ids(s.mcp, A, "time probe", filters={"timestamp_after": "2099-01-01T00:00:00Z"}),
    )[1],
    "forget-archives": lambda s: _forgotten_then(
        s, lambda _: recall_ids(s.mcp, A, "forget probe", filters={"status": "archived"})
    ),
    "stats-ignores-forget": lambda s: _forgotten_then(
        s, lambda _: s.mcp.call("amp.stats", {"scope": A}).get()["memory_count"]
    ),
    "pin-not-protecting": lambda s: _duplicates(s, pin_newer=True),
    "pin-not-persisted": lambda s: (
        s.mcp.call("amp.pin", {"scope": A, "id": encode(s.mcp, A, "pinned probe")}).get(),
        s.mcp.call("amp.recall", {"scope": A, "query": "pinned probe"}).get()["results"][0]["status"],
    )[1],
    "export-page-size-exceeded": lambda s: (
        [encode(s.mcp, A, f"size probe {n}") for n in range(3)],
        s.mcp.call("amp.export", {"scope": A, "page_size": 1}).get()["count"],
    )[1],
    "export-cursor-skips": _pages,
    "bad-cursor-backend-error": lambda s: s.mcp.call("amp.export", {"scope": A, "cursor": "junk"}).error,
    "import-skip-overwrites": lambda s: (_import(s, _row("i1", A)), _import(s, _row("i1", A, "second")))[1],
    "import-cross-scope-accepted": lambda s: _import(s, _row("i2", B))["failed"],
    "import-strict-remap-inherits": lambda s: s.mcp.call(
        "amp.import", {"scope": {**A, "user_id": "u"}, "ndjson": _row("i3", A)}
    ).get()["failed"],
    "import-line-zero-based": lambda s: _import(s, "junk\n")["errors"][0]["line"],
    "import-atomic-no-rollback": lambda s: (
        _import(s, _row("i4", A) + "junk\n", on_conflict="fail_atomic"),
        s.mcp.call("amp.export", {"scope": A}).get()["count"],
    )[1],
    "invalid-request-wrong-rpc-code": lambda s: s.mcp.call("amp.encode", {"scope": A}).code,
    "rest-invalid-request-422": lambda s: s.rest.call("amp.encode", {"scope": A}).code,
    "error-data-missing": lambda s: s.mcp.call("amp.encode", {"scope": A}).error,
    "rest-error-body-framework": lambda s: s.rest.request("POST", "/v1/memories", json={"scope": A}).json(),
    "rest-not-found-400": lambda s: (
        s.rest.request("DELETE", "/v1/memories/nope", json={"scope": A}).status_code
    ),
    "flat-agent-id-refused": lambda s: (
        s.mcp.call("amp.encode", {"agent_id": "a", "content": "flat probe"}).ok
    ),
    "legacy-private-refused": lambda s: (
        s.mcp.call("amp.encode", {"agent_id": "a", "content": "private probe", "private": True}).ok
    ),
    "visibility-filter-refused": lambda s: (
        s.mcp.call("amp.recall", {"scope": A, "query": "q", "filters": {"visibility": "private"}}).ok
    ),
    "channels-separate-stores": lambda s: (
        encode(s.mcp, A, "one store probe"),
        recall_ids(s.rest, A, "one store probe"),
    )[1],
}


CATALOGUE = (
    Path(__file__).resolve().parents[2] / "amp_conformance" / "amp11" / "contract" / "requirements.json"
)


def test_every_fault_has_a_probe_and_a_requirement_of_the_catalogue() -> None:
    assert set(PROBES) == set(FAULTS)
    assert len(FAULTS) >= 20
    rows = {row["id"]: row for row in json.loads(CATALOGUE.read_text(encoding="utf-8"))["requirements"]}
    for fault in (*FAULTS.values(), *MISBEHAVIOURS.values()):
        assert fault.description and fault.requirement in rows, fault
    # a fault must be able to fail a run: it breaks a MUST of the v1.1 tiers
    assert all(
        rows[f.requirement]["level"] == "MUST" and rows[f.requirement]["tier"] != "draft"
        for f in FAULTS.values()
    )


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_fault_changes_an_observable_response(make_server: ServerFactory, name: str) -> None:
    healthy = PROBES[name](make_server())
    faulty = PROBES[name](make_server(name))
    assert healthy != faulty, f"{name}: {healthy!r} == {faulty!r}"


def test_unknown_fault_names_are_refused() -> None:
    with pytest.raises(UnknownFaultError, match="no-such-fault"):
        Faults.parse("recall-scope-leak, no-such-fault")
    assert Faults.parse(" mcp-hang ,").names == {"mcp-hang"}
    with pytest.raises(KeyError):
        Faults().on("no-such-fault")


def test_fault_listing_and_settings() -> None:
    text = list_faults(as_json=False).splitlines()
    assert len(text) == len(FAULTS) + len(MISBEHAVIOURS)
    assert any(line.startswith("mcp-hang") and "[process misbehaviour]" in line for line in text)
    assert Settings.from_env({}) == Settings(not_found="channel", draft=True)
    assert Settings.from_env(
        {"AMP11_REFERENCE_NOT_FOUND": "error", "AMP11_REFERENCE_DRAFT": "0"}
    ) == Settings(not_found="error", draft=False)
    for env in ({"AMP11_REFERENCE_NOT_FOUND": "404"}, {"AMP11_REFERENCE_DRAFT": "yes"}):
        with pytest.raises(ConfigError):
            Settings.from_env(env)
