"""The v1.2-draft verbs and metadata filters (an optional tier the reference serves by default)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.reference_server_amp11.helpers import McpChannel, RestChannel, encode, recall_ids

Channel = McpChannel | RestChannel
A = {"agent_id": "agent-a"}


def metadata_of(channel: Channel, memory: str, query: str) -> dict[str, Any]:
    rows = channel.call("amp.recall", {"scope": A, "query": query}).get()["results"]
    return dict(next(r for r in rows if r["id"] == memory)["metadata"])


def test_update_content_and_merge_patch(channel: Channel) -> None:
    memory = encode(channel, A, "original text", metadata={"keep": 1, "drop": 2, "slot": "str"})
    result = channel.call(
        "amp.update",
        {
            "scope": A,
            "id": memory,
            "content": "updated text",
            "metadata": {"drop": None, "slot": {"a": 1, "b": None}},
        },
    ).get()
    assert result == {"status": "updated", "id": memory}
    assert recall_ids(channel, A, "updated") == [memory]
    assert metadata_of(channel, memory, "updated") == {"keep": 1, "slot": {"a": 1}}
    same = channel.call("amp.update", {"scope": A, "id": memory, "content": "updated text"}).get()
    assert same["status"] == "no_change"
    channel.call(
        "amp.update", {"scope": A, "id": memory, "metadata": {"only": True}, "metadata_mode": "replace"}
    ).get()
    assert metadata_of(channel, memory, "updated") == {"only": True}


def test_update_refusals(channel: Channel) -> None:
    memory = encode(channel, A, "guarded text")
    assert channel.call("amp.update", {"scope": {"agent_id": "b"}, "id": memory, "content": "x"}).get() == {
        "status": "not_found"
    }
    for args in ({"content": ""}, {"metadata_mode": "lolwhat"}, {"metadata": {"big": "x" * 70000}}):
        assert channel.call("amp.update", {"scope": A, "id": memory, **args}).error == "invalid_request"
    assert recall_ids(channel, A, "guarded text") == [memory]


def test_batch_encode_rows_in_order(channel: Channel) -> None:
    entries: list[Any] = [
        {"content": "batch row zero", "force": True},
        {"content": ""},
        {"content": "batch row two", "force": True, "metadata": {"amp.confidence": 0.77}},
        {"content": None},
        {"content": "batch row four", "force": "true"},
        {"content": "batch row five", "scope": {"agent_id": "x"}},
        {"content": "batch row six", "source": "definitely-not-a-source"},
        "not an object",
    ]
    result = channel.call("amp.batch_encode", {"scope": A, "entries": entries}).get()
    statuses = [r["status"] for r in result["results"]]
    assert statuses == ["stored"] + ["invalid_request"] + ["stored"] + ["invalid_request"] * 5
    assert all("message" in r for r in result["results"] if r["status"] == "invalid_request")
    assert result["summary"] == {"stored": 2, "duplicate": 0, "below_threshold": 0, "failed": 6}
    assert recall_ids(channel, A, "batch row") == [result["results"][2]["id"], result["results"][0]["id"]]
    assert channel.call("amp.batch_encode", {"scope": A, "entries": []}).get() == {"results": []}


def test_batch_encode_request_level_errors(channel: Channel) -> None:
    assert channel.call("amp.batch_encode", {"entries": [{"content": "x y"}]}).error == "invalid_request"
    assert channel.call("amp.batch_encode", {"scope": A, "entries": "nope"}).error == "invalid_request"
    too_many = [{"content": f"row {n}"} for n in range(1001)]
    assert channel.call("amp.batch_encode", {"scope": A, "entries": too_many}).error == "invalid_request"


@pytest.mark.parametrize(
    ("predicates", "expected"),
    [
        ([{"key": "tag", "operator": "eq", "value": "alpha"}], {"a"}),
        ([{"key": "tag", "operator": "ne", "value": "alpha"}], {"b"}),  # 42: another type family, a miss
        ([{"key": "amp.confidence", "operator": "gt", "value": 0.5}], {"b"}),
        ([{"key": "amp.confidence", "operator": "lte", "value": 0.3}], {"a"}),
        ([{"key": "tag", "operator": "in", "value": ["alpha", "beta"]}], {"a", "b"}),
        ([{"key": "label", "operator": "contains", "value": "bet"}], {"b"}),
        ([{"key": "amp.categories", "operator": "contains", "value": "pref"}], {"a"}),
        (
            [
                {"key": "tag", "operator": "eq", "value": "alpha"},
                {"key": "amp.confidence", "operator": "gte", "value": 0.5},
            ],
            set(),
        ),
        ([{"key": "tag", "operator": "gt", "value": 10}], {"n"}),
        ([{"key": "flag", "operator": "ne", "value": True}], set()),
        ([], {"a", "b", "n"}),
    ],
)
def test_metadata_filters(channel: Channel, predicates: list[dict[str, Any]], expected: set[str]) -> None:
    rows = {
        "a": {"tag": "alpha", "amp.confidence": 0.3, "amp.categories": ["pref"], "flag": True},
        "b": {"tag": "beta", "amp.confidence": 0.9, "label": "alpha-beta", "flag": 1},
        "n": {"tag": 42},
    }
    ids = {encode(channel, A, f"metadata probe {name}", metadata=meta): name for name, meta in rows.items()}
    found = recall_ids(channel, A, "metadata probe", filters={"metadata_filters": predicates})
    assert {ids[memory] for memory in found} == expected


@pytest.mark.parametrize(
    "predicates",
    [
        [{"key": "tag", "operator": "regex", "value": "^a"}],
        [{"key": "tag", "operator": "in", "value": "alpha"}],
        [{"key": "tag", "operator": "eq", "value": ["alpha"]}],
        [{"key": "tag", "operator": "eq"}],
        [{"key": "tag", "operator": "eq", "value": None}],
        [{"key": "tag", "operator": "in", "value": ["a", None]}],
        {"key": "tag", "operator": "eq", "value": "a"},
        [{"key": f"k{n}", "operator": "eq", "value": "v"} for n in range(33)],
    ],
)
def test_malformed_metadata_filters(channel: Channel, predicates: Any) -> None:
    outcome = channel.call(
        "amp.recall", {"scope": A, "query": "q", "filters": {"metadata_filters": predicates}}
    )
    assert outcome.error == "invalid_request"


def test_top_k_applies_after_filtering(channel: Channel) -> None:
    encode(channel, A, "oversample first", metadata={"tag": "no"})
    wanted = encode(channel, A, "oversample second", metadata={"tag": "yes"})
    filters = {"metadata_filters": [{"key": "tag", "operator": "eq", "value": "yes"}]}
    assert recall_ids(channel, A, "oversample", top_k=1, filters=filters) == [wanted]
