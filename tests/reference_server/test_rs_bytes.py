"""The reference server at the byte level: every body that is not a well-formed JSON request is refused
with 422 VALIDATION_ERROR in the envelope, naming what is wrong; what a parser may read is read; a GET's
body is ignored. The ``bytes-*`` faults answer the same shapes the way real servers have."""

from __future__ import annotations

from typing import Any

import pytest

from reference_server.amp01.bodies import is_json_media_type


def _create(owner: str, slot: bytes = b'"value"', text: bytes = b'"x"') -> bytes:
    return (
        b'{"type":"semantic","content":{"text":%s,"metadata":{"n":%s}},'
        b'"identity":{"owner_id":"%s","owner_type":"user"}}' % (text, slot, owner.encode())
    )


def _send(amp: Any, body: bytes, content_type: str | None = "application/json", **kw: Any) -> Any:
    method, path = kw.get("method", "POST"), kw.get("path", "/memories")
    headers = {"Content-Type": content_type} if content_type is not None else {}
    return amp.request(method, path, "agent-a", content=body, headers=headers)


def _refused(amp: Any, response: Any, kind: str, loc: list[Any] | None = None) -> None:
    error = amp.error(response, 422, "VALIDATION_ERROR")
    entry = error["details"]["errors"][0]
    assert entry["type"] == kind, entry
    assert set(entry) == {"type", "loc", "msg", "input"}
    if loc is not None:
        assert entry["loc"] == loc, entry


@pytest.mark.parametrize(
    ("shape", "kind"),
    [
        ("not-utf8", "json_invalid"),
        ("bom", "json_invalid"),
        ("truncated", "json_invalid"),
        ("duplicate", "duplicate_key"),
        ("1e400", "finite_number"),
        ("deep", "too_deep"),
        ("empty", "missing"),
    ],
)
def test_bodies_that_are_not_json_requests_are_refused_with_422(make_amp: Any, shape: str, kind: str) -> None:
    amp = make_amp()
    owner = amp.owner()
    body = {
        "not-utf8": _create(owner, text=b'"caf\xe9"'),
        "bom": b"\xef\xbb\xbf" + _create(owner),
        "truncated": _create(owner)[:40],
        "duplicate": _create(owner, b'1,"n":2'),
        "1e400": _create(owner, b"1e400"),
        "deep": _create(owner, b"[" * 10_000 + b"]" * 10_000),
        "empty": b"",
    }[shape]
    _refused(amp, _send(amp, body), kind)
    assert amp.list(owner_id=owner).json()["results"] == []


def test_a_duplicate_name_is_refused_at_any_depth_and_on_every_write_route(make_amp: Any) -> None:
    amp = make_amp()
    cell = amp.new_cell()
    patch = b'{"content":{"text":"first","text":"second"}}'
    _refused(amp, _send(amp, patch, method="PATCH", path=f"/memories/{cell['id']}"), "duplicate_key")
    search = b'{"query":"a","query":"b","owner_id":"o"}'
    _refused(amp, _send(amp, search, path="/memories/search"), "duplicate_key")
    assert amp.get(cell["id"]).json()["content"]["text"] == cell["content"]["text"]


@pytest.mark.parametrize("media_type", ["text/plain", "application/x-www-form-urlencoded", "text/json"])
def test_a_body_labelled_other_than_json_is_refused(make_amp: Any, media_type: str) -> None:
    amp = make_amp()
    owner = amp.owner()
    _refused(amp, _send(amp, _create(owner), media_type), "content_type", ["header", "content-type"])
    assert amp.list(owner_id=owner).json()["results"] == []


@pytest.mark.parametrize(
    "content_type",
    [None, "application/json; charset=utf-8", "APPLICATION/JSON", "application/merge-patch+json"],
)
def test_json_without_a_label_or_with_a_json_label_is_read(make_amp: Any, content_type: str | None) -> None:
    amp = make_amp()
    response = _send(amp, _create(amp.owner()), content_type)
    assert response.status_code == 201, response.text


def test_an_integer_of_400_digits_round_trips(make_amp: Any) -> None:
    amp = make_amp()
    response = _send(amp, _create(amp.owner(), b"9" * 400))
    assert response.status_code == 201, response.text
    assert response.json()["content"]["metadata"]["n"] == int("9" * 400)


def test_a_huge_search_offset_is_honoured_not_a_crash(make_amp: Any) -> None:
    amp = make_amp()
    body = b'{"query":"x","owner_id":"o","offset":%s}' % (b"9" * 400)
    response = _send(amp, body, path="/memories/search")
    assert response.status_code in (200, 422), response.text
    if response.status_code == 200:
        assert response.json()["results"] == []


@pytest.mark.parametrize("path", ["/memories/{id}", "/memories"])
def test_a_body_on_get_is_ignored(make_amp: Any, path: str) -> None:
    amp = make_amp()
    cell = amp.new_cell()
    owner = cell["identity"]["owner_id"]
    target = path.format(id=cell["id"]) + ("" if "{id}" in path else f"?owner_id={owner}")
    response = _send(amp, b'{"owner_id":"someone-else","status":"deleted"}', method="GET", path=target)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer.get("id") == cell["id"] or [c["id"] for c in answer["results"]] == [cell["id"]]


def test_json_media_types() -> None:
    assert is_json_media_type(None)
    assert is_json_media_type("application/vnd.api+json; charset=utf-8")
    assert not is_json_media_type("text/plain")
    assert not is_json_media_type("multipart/form-data; boundary=x")
    assert not is_json_media_type("")


# --- the faults' answers, shape by shape -----------------------------------------------------------


def _answer(response: Any) -> tuple[int, str]:
    return response.status_code, response.headers.get("content-type", "").split(";")[0]


@pytest.mark.parametrize(
    ("fault", "body", "content_type", "expected"),
    [
        ("bytes-non-utf8-500", b'{"a":"caf\xe9"}', "application/json", (500, "text/plain")),
        ("bytes-bom-500", b'\xef\xbb\xbf{"a":1}', "application/json", (500, "text/plain")),
        ("bytes-truncated-html", b'{"a":"unfinished', "application/json", (400, "text/html")),
        ("bytes-duplicate-keys-500", b'{"a":1,"a":2}', "application/json", (500, "application/json")),
        ("bytes-huge-number-500", b'{"a":-1e400}', "application/json", (500, "application/json")),
        ("bytes-deep-nesting-500", b"[" * 5000 + b"]" * 5000, "application/json", (500, "text/plain")),
        ("bytes-content-type-framework", b'{"a":1}', "text/plain", (415, "application/json")),
        ("bytes-missing-content-type-500", b'{"a":1}', None, (500, "text/plain")),
        ("bytes-empty-body-500", b"", "application/json", (500, "application/json")),
    ],
)
def test_each_byte_fault_answers_its_shape_as_a_real_bug_would(
    make_amp: Any, fault: str, body: bytes, content_type: str | None, expected: tuple[int, str]
) -> None:
    amp = make_amp(faults=frozenset({fault}))
    response = _send(amp, body, content_type)
    assert _answer(response) == expected, response.text
    if fault == "bytes-content-type-framework":
        assert set(response.json()) == {"detail"}
    if expected == (500, "application/json"):
        amp.error(response, 500, "INTERNAL_ERROR")
    healthy = make_amp()
    assert _send(healthy, body, content_type).status_code == 422


def test_a_truncation_fault_leaves_other_malformed_json_alone(make_amp: Any) -> None:
    amp = make_amp(faults=frozenset({"bytes-truncated-html"}))
    for body in (b"{not json}", b'{"type": "semantic",', b"not json"):
        amp.error(_send(amp, body), 422, "VALIDATION_ERROR")


def test_the_get_body_fault_needs_a_body(make_amp: Any) -> None:
    amp = make_amp(faults=frozenset({"bytes-get-body-500"}))
    cell = amp.new_cell()
    assert amp.get(cell["id"]).status_code == 200
    crashed = _send(amp, b"{}", method="GET", path=f"/memories/{cell['id']}")
    amp.error(crashed, 500, "INTERNAL_ERROR")
