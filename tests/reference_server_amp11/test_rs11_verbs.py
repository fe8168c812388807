"""Each verb on both channels: results, statuses and their effect on the store."""

from __future__ import annotations

import json

from tests.reference_server_amp11.helpers import (
    McpChannel,
    RestChannel,
    Server,
    assert_not_found,
    encode,
    ndjson_rows,
    recall_ids,
)

Channel = McpChannel | RestChannel
A = {"agent_id": "agent-a"}


def test_encode_stores_and_recall_finds_it(channel: Channel) -> None:
    result = channel.call(
        "amp.encode", {"scope": A, "content": "Alice prefers dark mode", "source": "inferred", "force": True}
    ).get()
    assert result["status"] == "stored" and result["id"].startswith("mem_")
    assert "visibility" not in result
    rows = channel.call("amp.recall", {"scope": A, "query": "dark mode"}).get()["results"]
    assert [row["id"] for row in rows] == [result["id"]]
    row = rows[0]
    assert row["content"] == "Alice prefers dark mode" and row["source"] == "inferred"
    assert row["status"] == "active" and row["scope"] == A and row["score"] == 1.0
    assert row["timestamp"].startswith("2026-06-01T12:00:00.") and row["timestamp"].endswith("Z")


def test_encode_salience_gate_and_duplicates(channel: Channel) -> None:
    assert channel.call("amp.encode", {"scope": A, "content": "ok"}).get() == {"status": "below_threshold"}
    assert channel.call("amp.stats", {"scope": A}).get()["memory_count"] == 0
    first = channel.call("amp.encode", {"scope": A, "content": "likes tea"}).get()
    again = channel.call("amp.encode", {"scope": A, "content": "likes tea"}).get()
    assert again == {"id": first["id"], "status": "duplicate"}
    forced = channel.call("amp.encode", {"scope": A, "content": "likes tea", "force": True}).get()
    assert forced["status"] == "stored" and forced["id"] != first["id"]


def test_recall_ranks_by_score_and_respects_top_k(channel: Channel) -> None:
    partial = encode(channel, A, "cats only")
    full = encode(channel, A, "cats dogs birds")
    rows = channel.call("amp.recall", {"scope": A, "query": "cats dogs birds"}).get()["results"]
    assert [row["id"] for row in rows] == [full, partial]
    assert rows[0]["score"] > rows[1]["score"] > 0
    assert recall_ids(channel, A, "cats", top_k=1) == [full]  # equal scores: newest first
    assert recall_ids(channel, A, "zebra") == []


def test_recall_filters(channel: Channel, server: Server) -> None:
    kept = encode(channel, A, "filter probe one", source="external")
    other = encode(channel, A, "filter probe two")
    assert recall_ids(channel, A, "filter probe", filters={"source": "external"}) == [kept]
    assert recall_ids(channel, A, "filter probe", filters={"timestamp_after": "2099-01-01T00:00:00Z"}) == []
    assert recall_ids(channel, A, "filter probe", filters={"timestamp_before": "2000-01-01T00:00:00Z"}) == []
    assert (
        len(recall_ids(channel, A, "filter probe", filters={"timestamp_after": "2000-01-01T00:00:00Z"})) == 2
    )
    channel.call("amp.pin", {"scope": A, "id": other}).get()
    assert recall_ids(channel, A, "filter probe", filters={"status": "pinned"}) == [other]
    assert recall_ids(channel, A, "filter probe", filters={"status": "archived"}) == []


def test_forget_then_gone(channel: Channel) -> None:
    memory = encode(channel, A, "temporary note")
    assert channel.call("amp.forget", {"scope": A, "id": memory}).get() == {"status": "forgotten"}
    assert recall_ids(channel, A, "temporary note") == []
    assert_not_found(channel, channel.call("amp.forget", {"scope": A, "id": memory}))
    assert channel.call("amp.stats", {"scope": A}).get()["memory_count"] == 0


def test_stats_counts_the_partition(channel: Channel) -> None:
    assert channel.call("amp.stats", {"scope": A}).get() == {
        "memory_count": 0,
        "unconsolidated_count": 0,
        "metadata": {"pinned_count": 0, "archived_count": 0, "content_bytes": 0},
    }
    first = encode(channel, A, "one memory")
    encode(channel, A, "two memory")
    stats = channel.call("amp.stats", {"scope": A}).get()
    assert stats["memory_count"] == 2 and stats["unconsolidated_count"] == 2
    channel.call("amp.pin", {"scope": A, "id": first}).get()
    channel.call("amp.consolidate", {"scope": A}).get()
    stats = channel.call("amp.stats", {"scope": A}).get()
    assert stats["unconsolidated_count"] == 0 and stats["metadata"]["pinned_count"] == 1
    assert stats["metadata"]["last_consolidation_time"].endswith("Z")


def test_pin_is_idempotent_and_reported(channel: Channel) -> None:
    memory = encode(channel, A, "pin me please")
    for _ in range(2):
        assert channel.call("amp.pin", {"scope": A, "id": memory}).get() == {"status": "pinned"}
    rows = channel.call("amp.recall", {"scope": A, "query": "pin me"}).get()["results"]
    assert rows[0]["status"] == "pinned"
    assert_not_found(channel, channel.call("amp.pin", {"scope": A, "id": "mem_nope"}))


def test_consolidate_archives_superseded_but_never_pinned(channel: Channel) -> None:
    older = encode(channel, A, "Likes espresso")
    newer = encode(channel, A, "likes  ESPRESSO")
    pinned_old = encode(channel, A, "Speaks French")
    pinned_new = encode(channel, A, "speaks french")
    channel.call("amp.pin", {"scope": A, "id": pinned_new}).get()
    for depth in ("light", "full"):
        result = channel.call("amp.consolidate", {"scope": A, "depth": depth}).get()
        assert result["status"] == "ok" and isinstance(result["memories_processed"], int)
    assert recall_ids(channel, A, "espresso") == [older]
    assert recall_ids(channel, A, "espresso", filters={"status": "archived"}) == [newer]
    assert sorted(recall_ids(channel, A, "french")) == sorted([pinned_old, pinned_new])


def test_consolidate_full_expires_ttl(channel: Channel) -> None:
    expired = encode(channel, A, "short lived", metadata={"amp.ttl": 0})
    lasting = encode(channel, A, "long lived", metadata={"amp.ttl": 10**6})
    channel.call("amp.consolidate", {"scope": A, "depth": "light"}).get()
    assert set(recall_ids(channel, A, "lived")) == {expired, lasting}
    channel.call("amp.consolidate", {"scope": A}).get()
    assert recall_ids(channel, A, "lived") == [lasting]


def test_export_and_import_round_trip(channel: Channel) -> None:
    source, target = {"agent_id": "src"}, {"agent_id": "dst"}
    ids = [encode(channel, source, f"round trip 😀 {n}", metadata={"n": n}) for n in range(3)]
    exported = channel.call("amp.export", {"scope": source}).get()
    rows = ndjson_rows(exported["ndjson"])
    assert exported["count"] == 3 and [row["id"] for row in rows] == ids
    for row in rows:
        row["scope"] = target
    document = "".join(json.dumps(row) + "\n" for row in rows)
    result = channel.call("amp.import", {"scope": target, "ndjson": document}).get()
    assert result == {"imported": 3, "skipped": 0, "failed": 0}
    back = channel.call("amp.recall", {"scope": target, "query": "round trip"}).get()["results"]
    assert sorted(row["id"] for row in back) == sorted(ids)
    assert {row["content"] for row in back} == {f"round trip 😀 {n}" for n in range(3)}
    assert all(row["metadata"]["n"] in (0, 1, 2) for row in back)


def test_flat_agent_id_and_legacy_private(channel: Channel) -> None:
    legacy = channel.call("amp.encode", {"agent_id": "old", "content": "legacy one", "private": True}).get()
    assert legacy["visibility"] == "private"
    shared = channel.call("amp.encode", {"agent_id": "old", "content": "legacy two", "private": False}).get()
    assert shared["visibility"] == "shared"
    native = channel.call(
        "amp.encode", {"scope": {"agent_id": "old"}, "content": "native", "private": True}
    ).get()
    assert "visibility" not in native
    assert sorted(recall_ids(channel, {"agent_id": "old"}, "legacy")) == sorted([legacy["id"], shared["id"]])
    rows = channel.call(
        "amp.recall", {"agent_id": "old", "query": "legacy", "filters": {"visibility": "private"}}
    ).get()["results"]
    assert len(rows) == 2 and {row["visibility"] for row in rows} == {"private", "shared"}
    plain = channel.call("amp.recall", {"agent_id": "old", "query": "legacy"}).get()["results"]
    assert all("visibility" not in row for row in plain)


def test_rest_compat_header_echoes_visibility(server: Server) -> None:
    encode(server.rest, A, "header echo")
    outcome = server.rest.call("amp.recall", {"scope": A, "query": "echo"}, headers={"X-AMP-Compat": "v1.0"})
    assert outcome.get()["results"][0]["visibility"] == "shared"


def test_content_and_metadata_fidelity(channel: Channel) -> None:
    content = 'Hello, 🗺️ 世界! مرحبا "quoted" \\ back\nslash\t<script>x</script> 𓀀 e\u0301 👩‍👩‍👧'
    metadata = {
        "amp.confidence": 0.9,
        "amp.entities": ["Alice"],
        "amp.relations": [{"subject": "a", "predicate": "b", "object": "c"}],
        "amp.ttl": 3600,
        "amp.categories": ["x"],
        "amp.summary": "s",
        "nested": {"list": [1, None, True], "ключ": "значение"},
    }
    memory = encode(
        channel, {"agent_id": "unicode-🌍", "workspace_id": "space-🚀"}, content, metadata=metadata
    )
    rows = channel.call(
        "amp.recall", {"scope": {"agent_id": "unicode-🌍", "workspace_id": "space-🚀"}, "query": "世界"}
    ).get()["results"]
    assert rows[0]["id"] == memory and rows[0]["content"] == content and rows[0]["metadata"] == metadata


def test_channels_share_one_store(server: Server) -> None:
    memory = encode(server.mcp, A, "written over mcp")
    assert recall_ids(server.rest, A, "written over") == [memory]
    assert (
        server.rest.call("amp.stats", {"scope": A}).get() == server.mcp.call("amp.stats", {"scope": A}).get()
    )
    server.rest.call("amp.pin", {"scope": A, "id": memory}).get()
    assert (
        server.mcp.call("amp.recall", {"scope": A, "query": "written"}).get()["results"][0]["status"]
        == "pinned"
    )
    server.rest.call("amp.forget", {"scope": A, "id": memory}).get()
    assert recall_ids(server.mcp, A, "written over") == []
