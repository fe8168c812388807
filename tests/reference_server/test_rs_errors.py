"""Errors and bad input (AMP-ERR-*, AMP-CRE-10): always a 4xx in the envelope, never a 5xx, and a
refused request changes nothing stored."""

from __future__ import annotations

import json

import pytest


def _snapshot(amp):
    return [(record.id, record.cell) for record in amp.state.store.records()]


BAD_BODIES = [
    b"not json",
    b"",
    b"   ",
    b"[]",
    b'"a string"',
    b"null",
    b"42",
    b'{"type": "semantic",}',
    b"\xff\xfe{}",
    b"\xef\xbb\xbf{}",
    b'{"scoring": {"importance": NaN}}',
    b'{"scoring": {"importance": Infinity}}',
    b'{"scoring": {"importance": -Infinity}}',
    b'{"scoring": {"importance": 1e400}}',
    b'{"content": {"text": "x", "metadata": {"n": 1e999}}}',
    b'{"content": {"text": "x", "metadata": {"n": ' + b"9" * 5000 + b"}}}",
    b'{"content": {"text": "\\ud800"}}',
    b'{"\\udfff": 1}',
    b"[" * 100000 + b"]" * 100000,
    b'{"a":' * 40 + b"1" + b"}" * 40,
    b'{"type": "semantic", "content": {"text": "x", "metadata": ' + b"[" * 40 + b"]" * 40 + b"}}",
]


@pytest.mark.parametrize("raw", BAD_BODIES, ids=lambda raw: repr(raw[:30]))
@pytest.mark.parametrize("route", ["create", "patch", "search"])
def test_bad_bodies_are_422_envelopes_and_change_nothing(amp, raw, route):
    cell = amp.new_cell()
    before = _snapshot(amp)
    path = {"create": "/memories", "patch": f"/memories/{cell['id']}", "search": "/memories/search"}[route]
    method = "PATCH" if route == "patch" else "POST"
    response = amp.request(method, path, "agent-a", content=raw, headers={"content-type": "application/json"})
    error = amp.error(response, 422, "VALIDATION_ERROR")
    entries = error["details"]["errors"]
    assert entries and all(set(entry) == {"type", "loc", "msg", "input"} for entry in entries)
    assert entries[0]["loc"][0] == "body"
    json.dumps(error)  # serialisable
    assert _snapshot(amp) == before


def test_huge_but_parseable_integers_are_fine(amp):
    body = amp.body(amp.owner())
    body["content"]["metadata"] = {"big": 10**100, "neg": -(2**70)}
    cell = amp.create(body).json()
    assert amp.get(cell["id"]).json()["content"]["metadata"]["big"] == 10**100


def test_oversized_body_is_413_before_parsing(make_amp):
    amp = make_amp(max_cell_size_bytes=1000)
    limit = amp.settings.max_body_bytes
    raw = b'{"type": "semantic", "pad": "' + b"x" * limit + b'"}'
    before = _snapshot(amp)
    error = amp.error(amp.request("POST", "/memories", "agent-a", content=raw), 413, "CELL_TOO_LARGE")
    assert error["details"]["max_body_bytes"] == limit
    assert _snapshot(amp) == before


def test_oversized_streamed_body_without_length_is_413(amp):
    limit = amp.settings.max_body_bytes

    async def chunks():
        for _ in range(limit // 65536 + 2):
            yield b"x" * 65536

    response = amp.request("POST", "/memories/search", "agent-a", content=chunks())
    amp.error(response, 413, "CELL_TOO_LARGE")


@pytest.mark.parametrize(
    "body",
    [
        {"type": ["semantic"], "content": {"text": "x"}, "identity": {"owner_id": "o", "owner_type": "user"}},
        {"type": "semantic", "content": {"text": ["x"]}, "identity": {"owner_id": "o", "owner_type": "user"}},
        {"type": "semantic", "content": {"text": "x"}, "identity": {"owner_id": 5, "owner_type": "user"}},
        {"type": "semantic", "content": {"text": "x"}, "identity": "o"},
        {"type": "semantic", "content": {"text": "x"}, "identity": {"owner_id": "o", "owner_type": None}},
        {
            "type": "semantic",
            "content": {"text": "x"},
            "identity": {"owner_id": "o", "owner_type": "user"},
            "scoring": [],
        },
    ],
)
def test_wrong_types_are_422(amp, body):
    amp.error(amp.create(body), 422, "VALIDATION_ERROR")


def test_validation_error_shape(amp):
    error = amp.error(amp.create({"type": "semantic"}), 422, "VALIDATION_ERROR")
    locs = [entry["loc"] for entry in error["details"]["errors"]]
    assert ["body", "content"] in locs and ["body", "identity"] in locs
    error = amp.error(amp.list(limit=101), 422, "VALIDATION_ERROR")
    assert error["details"]["errors"] == [
        {
            "type": "less_than_equal",
            "loc": ["query", "limit"],
            "msg": "Input should be less than or equal to 100",
            "input": "101",
        }
    ]


def test_unknown_routes_and_methods_use_the_envelope(amp):
    amp.error(amp.request("GET", "/nope", "agent-a"), 404, "NOT_FOUND")
    amp.error(amp.client.get("/"), 404, "NOT_FOUND")
    amp.error(amp.request("GET", "/memories/", "agent-a"), 404, "NOT_FOUND")
    for method, path, allow in (
        ("PUT", "/memories", "GET, POST"),
        ("DELETE", "/memories", "GET, POST"),
        ("POST", "/health", "GET, HEAD"),
        ("TRACE", "/spec", "GET, HEAD"),
        ("GET", "/lifecycle/run", "POST"),
        ("POST", "/memories/mem_x", "DELETE, GET, PATCH"),
    ):
        response = amp.request(method, path, "agent-a")
        amp.error(response, 405, "METHOD_NOT_ALLOWED")
        assert response.headers["allow"] == allow


def test_unexpected_exception_is_a_500_envelope(amp, monkeypatch):
    def boom(*_args, **_kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(amp.state, "health", boom)
    amp.error(amp.request("GET", "/health"), 500, "INTERNAL_ERROR")


def test_error_codes_are_screaming_snake_case(amp):
    import re

    cell = amp.new_cell()
    responses = [
        amp.get("mem_01J5A3B7K9M2N4P6Q8R0S1T3V5"),
        amp.get(cell["id"], "stranger"),
        amp.get(cell["id"], None),
        amp.delete(cell["id"]),
        amp.create({}),
        amp.request("PUT", "/health"),
    ]
    for response in responses:
        assert re.fullmatch(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*", response.json()["error"]["code"])


def test_odd_but_well_formed_input_is_never_5xx(amp):
    cell = amp.new_cell()
    long_agent = "a" * 5000
    for agent in (long_agent, "agent with spaces", "ünïcode"):
        assert amp.get(cell["id"], agent.encode()).status_code == 403
    assert amp.patch(cell["id"], {"scoring": None}).status_code == 200
    body = amp.body(amp.owner(), "😀" * 100, access_policy={"readable_by": ["*", "?", "[", "\\"]})
    assert amp.create(body).status_code == 201
