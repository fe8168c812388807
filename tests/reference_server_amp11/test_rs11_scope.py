"""Scopes (spec §2.3): isolating keys required, strict-AND matching, no leak through any verb."""

from __future__ import annotations

import pytest

from tests.reference_server_amp11.helpers import (
    McpChannel,
    RestChannel,
    assert_not_found,
    encode,
    ndjson_rows,
    recall_ids,
)

Channel = McpChannel | RestChannel
A = {"agent_id": "agent-a"}
B = {"agent_id": "agent-b"}
EXTRA = {"amp.encode": {"content": "some content"}, "amp.recall": {"query": "q"}}


@pytest.mark.parametrize(
    "scope",
    [
        {"session_id": "s"},
        {"app_id": "x", "org_id": "o"},
        {},
        {"agent_id": ""},
        {"agent_id": 1},
        {"agent_id": "a", "nested": {}},
    ],
)
@pytest.mark.parametrize("verb", ["amp.encode", "amp.recall", "amp.stats", "amp.export", "amp.consolidate"])
def test_bad_scopes_are_invalid_request(channel: Channel, verb: str, scope: dict[str, object]) -> None:
    if channel.name == "rest" and verb == "amp.stats" and not all(isinstance(v, str) for v in scope.values()):
        pytest.skip("query parameters are always strings")
    outcome = channel.call(verb, {"scope": scope, **EXTRA.get(verb, {})})
    assert outcome.error == "invalid_request", outcome
    assert outcome.code == (400 if channel.name == "rest" else -32602)


def test_no_scope_at_all_is_invalid_request(channel: Channel) -> None:
    assert channel.call("amp.encode", {"content": "scopeless"}).error == "invalid_request"


@pytest.mark.parametrize("key", ["agent_id", "group_id", "workspace_id", "user_id"])
def test_each_isolating_key_alone_is_a_scope(channel: Channel, key: str) -> None:
    memory = encode(channel, {key: "only"}, f"isolated by {key}")
    assert recall_ids(channel, {key: "only"}, key) == [memory]


def test_strict_and_over_requested_keys(channel: Channel) -> None:
    broad = encode(channel, {"agent_id": "a"}, "shared fact")
    narrow = encode(channel, {"agent_id": "a", "user_id": "u1"}, "private fact")
    other = encode(channel, {"agent_id": "a", "user_id": "u2"}, "other fact")
    assert recall_ids(channel, {"agent_id": "a", "user_id": "u1"}, "fact") == [narrow]
    assert sorted(recall_ids(channel, {"agent_id": "a"}, "fact")) == sorted([broad, narrow, other])
    assert recall_ids(channel, {"user_id": "u2"}, "fact") == [other]


def test_refining_keys_narrow(channel: Channel) -> None:
    s1 = encode(channel, {"agent_id": "a", "session_id": "s1"}, "session note")
    encode(channel, {"agent_id": "a", "session_id": "s2"}, "session note too")
    assert recall_ids(channel, {"agent_id": "a", "session_id": "s1"}, "session note") == [s1]


def test_no_cross_scope_effects(channel: Channel) -> None:
    memory = encode(channel, A, "belongs to A")
    duplicate = encode(channel, A, "belongs to a")
    assert recall_ids(channel, B, "belongs") == []
    assert_not_found(channel, channel.call("amp.forget", {"scope": B, "id": memory}))
    assert_not_found(channel, channel.call("amp.pin", {"scope": B, "id": memory}))
    assert channel.call("amp.stats", {"scope": B}).get()["memory_count"] == 0
    assert channel.call("amp.export", {"scope": B}).get()["count"] == 0
    channel.call("amp.consolidate", {"scope": B}).get()
    rows = channel.call("amp.recall", {"scope": A, "query": "belongs"}).get()["results"]
    assert sorted(row["id"] for row in rows) == sorted([memory, duplicate])
    assert {row["status"] for row in rows} == {"active"}


def test_export_rows_carry_their_scope(channel: Channel) -> None:
    encode(channel, {"agent_id": "a", "user_id": "u"}, "scoped row")
    rows = ndjson_rows(channel.call("amp.export", {"scope": {"user_id": "u"}}).get()["ndjson"])
    assert [row["scope"] for row in rows] == [{"agent_id": "a", "user_id": "u"}]


def test_scope_and_flat_agent_id_must_agree(channel: Channel) -> None:
    outcome = channel.call("amp.encode", {"scope": A, "agent_id": "someone-else", "content": "x y z"})
    assert outcome.error == "invalid_request"
    assert channel.call("amp.encode", {"scope": A, "agent_id": "agent-a", "content": "x y z"}).ok
