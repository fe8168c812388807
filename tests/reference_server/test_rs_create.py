"""POST /memories (AMP-CRE-*, AMP-CELL-*)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from ulid import ULID

from amp_conformance.engine.resources import load_fixture

TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")

S1_EXAMPLE = load_fixture("http", "api-reference-create-request.json")


def test_create_returns_201_and_the_full_example_cell(amp):
    response = amp.create(S1_EXAMPLE, agent="agent-456")
    assert response.status_code == 201
    cell = response.json()
    assert list(cell) == [
        "amp_version",
        "id",
        "type",
        "content",
        "identity",
        "lifecycle",
        "scoring",
        "access_policy",
        "provenance",
    ]
    assert cell["amp_version"] == "0.1.0"
    assert cell["content"] == S1_EXAMPLE["content"]
    assert cell["identity"] == S1_EXAMPLE["identity"]
    assert cell["scoring"] == {**S1_EXAMPLE["scoring"], "access_count": 0}
    assert cell["access_policy"] == S1_EXAMPLE["access_policy"]
    assert cell["provenance"] == S1_EXAMPLE["provenance"]
    assert cell["lifecycle"] == {
        "created_at": "2026-01-01T12:00:00.000000Z",
        "last_accessed_at": None,
        "last_updated_at": None,
        "expires_at": None,
        "status": "active",
    }
    # The body equals what a GET returns, apart from the read counters.
    again = amp.get(cell["id"], "agent-456").json()
    assert again["scoring"]["access_count"] == 1
    again["scoring"]["access_count"] = 0
    again["lifecycle"]["last_accessed_at"] = None
    assert again == cell


def test_minimal_create_gets_every_default(amp):
    cell = amp.new_cell()
    assert cell["scoring"] == {"importance": 0.5, "confidence": 1.0, "decay_rate": 0.01, "access_count": 0}
    assert cell["access_policy"] == {"readable_by": [], "writable_by": [], "public": False}
    assert cell["provenance"] == {"source_type": None, "source_ref": None, "extraction_method": None}
    assert cell["content"]["metadata"] == {}
    assert cell["identity"]["session_id"] is None
    assert cell["identity"]["created_by"] == "agent-a"
    assert cell["lifecycle"]["status"] == "active"


def test_null_sections_mean_defaults(amp):
    body = amp.body(amp.owner(), scoring=None, access_policy=None, provenance=None)
    cell = amp.create(body).json()
    assert cell["scoring"]["importance"] == 0.5
    assert cell["access_policy"]["public"] is False


def test_id_is_a_prefixed_ulid_near_created_at(amp):
    cell = amp.new_cell()
    assert cell["id"].startswith("mem_")
    ulid = ULID.from_str(cell["id"][4:])
    created = datetime.strptime(cell["lifecycle"]["created_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert abs((ulid.datetime - created).total_seconds()) < 0.01


def test_ids_are_unique_and_sortable(amp):
    ids = []
    for step in range(30):
        if step % 10 == 0:
            amp.advance(milliseconds=5)
        ids.append(amp.new_cell()["id"])
    assert len(set(ids)) == 30
    assert ids == sorted(ids)


def test_ids_stay_sorted_when_the_clock_steps_back(amp):
    first = amp.new_cell()["id"]
    amp.advance(seconds=-10)
    second = amp.new_cell()["id"]
    assert second > first


def test_bare_id_form(make_amp):
    amp = make_amp(id_form="bare")
    cell = amp.new_cell()
    assert not cell["id"].startswith("mem_")
    ULID.from_str(cell["id"])
    assert amp.get(cell["id"]).status_code == 200
    amp.error(amp.get("mem_" + cell["id"]), 404, "NOT_FOUND")


def test_timestamps_are_utc_z(amp):
    cell = amp.new_cell()
    read = amp.get(cell["id"]).json()
    for name in ("created_at", "last_accessed_at"):
        assert TIMESTAMP.fullmatch(read["lifecycle"][name])


def test_header_wins_over_body_created_by(amp):
    body = amp.body(amp.owner(), created_by="agent-B")
    cell = amp.create(body, agent="agent-A").json()
    assert cell["identity"]["created_by"] == "agent-A"


def test_keyless_body_created_by_is_the_fallback(amp):
    body = amp.body(amp.owner(), created_by="agent-B")
    response = amp.create(body, agent=None)
    assert response.status_code == 201
    assert response.json()["identity"]["created_by"] == "agent-B"


def test_no_identity_at_all_is_401(amp):
    amp.error(amp.create(amp.body(amp.owner()), agent=None), 401, "MISSING_AGENT_ID")
    # Also when the body is not even JSON: identity is checked first.
    response = amp.request("POST", "/memories", None, content=b"{not json")
    amp.error(response, 401, "MISSING_AGENT_ID")


def test_keyless_fallback_with_invalid_body_is_422(amp):
    body = {"type": "literal", "identity": {"created_by": "agent-B"}}
    amp.error(amp.create(body, agent=None), 422, "VALIDATION_ERROR")


def test_client_supplied_server_fields_are_ignored(amp):
    body = amp.body(
        amp.owner(),
        id="mem_00000000000000000000000000",
        amp_version="9.9",
        lifecycle={"status": "archived", "created_at": "2000-01-01T00:00:00Z", "last_accessed_at": None},
        scoring={"importance": 0.7, "access_count": 7},
    )
    cell = amp.create(body).json()
    assert cell["id"] != "mem_00000000000000000000000000"
    assert cell["amp_version"] == "0.1.0"
    assert cell["lifecycle"]["status"] == "active"
    assert cell["lifecycle"]["created_at"] == "2026-01-01T12:00:00.000000Z"
    assert cell["scoring"]["access_count"] == 0
    assert cell["scoring"]["importance"] == 0.7


def test_unknown_members_are_ignored_and_not_stored(amp):
    body = amp.body(amp.owner(), ttl=3600)
    body["content"]["colour"] = "x"
    body["identity"]["team"] = "y"
    response = amp.create(body)
    assert response.status_code == 201
    cell = response.json()
    assert "ttl" not in cell and "colour" not in cell["content"] and "team" not in cell["identity"]
    assert "ttl" not in amp.stored(cell["id"])


def test_rich_metadata_round_trips(amp):
    metadata = {
        "n": 1,
        "f": 1.5,
        "b": True,
        "z": None,
        "list": [1, "two", {"three": 3}],
        "nested": {"a": {"b": []}},
    }
    body = amp.body(amp.owner())
    body["content"]["metadata"] = metadata
    cell = amp.create(body).json()
    assert amp.get(cell["id"]).json()["content"]["metadata"] == metadata


def test_unicode_text_round_trips(amp):
    text = "Préfère le café ☕ — 日本語 \U0001f600 \u0000 end"
    cell = amp.create(amp.body(amp.owner(), text)).json()
    assert amp.get(cell["id"]).json()["content"]["text"] == text


@pytest.mark.parametrize(
    ("mutate", "loc_end"),
    [
        (lambda b: b.pop("type"), "type"),
        (lambda b: b.pop("content"), "content"),
        (lambda b: b["content"].pop("text"), "text"),
        (lambda b: b.pop("identity"), "identity"),
        (lambda b: b["identity"].pop("owner_id"), "owner_id"),
        (lambda b: b["identity"].pop("owner_type"), "owner_type"),
        (lambda b: b.update(type="literal"), "type"),
        (lambda b: b["identity"].update(owner_type="team"), "owner_type"),
        (lambda b: b.update(provenance={"source_type": "telepathy"}), "source_type"),
        (lambda b: b.update(provenance={"extraction_method": "guess"}), "extraction_method"),
        (lambda b: b.update(scoring={"importance": 1.5}), "importance"),
        (lambda b: b.update(scoring={"importance": -0.1}), "importance"),
        (lambda b: b.update(scoring={"confidence": 1.01}), "confidence"),
        (lambda b: b.update(scoring={"decay_rate": -0.01}), "decay_rate"),
        (lambda b: b.update(scoring={"importance": "0.5"}), "importance"),
        (lambda b: b.update(scoring={"importance": True}), "importance"),
        (lambda b: b.update(access_policy={"public": "yes"}), "public"),
        (lambda b: b.update(access_policy={"readable_by": [1]}), 0),
        (lambda b: b.update(access_policy={"readable_by": "agent-x"}), "readable_by"),
        (lambda b: b["content"].update(text=""), "text"),
        (lambda b: b["content"].update(text=5), "text"),
        (lambda b: b["content"].update(metadata=[1]), "metadata"),
        (lambda b: b["content"].update(metadata=None), "metadata"),
        (lambda b: b["identity"].update(session_id=5), "session_id"),
    ],
)
def test_invalid_create_is_422_with_field_errors(amp, mutate, loc_end):
    owner = amp.owner()
    body = amp.body(owner)
    mutate(body)
    error = amp.error(amp.create(body), 422, "VALIDATION_ERROR")
    entries = error["details"]["errors"]
    assert entries and all(set(entry) >= {"type", "loc", "msg", "input"} for entry in entries)
    assert any(entry["loc"][0] == "body" and entry["loc"][-1] == loc_end for entry in entries), entries
    assert amp.list(owner_id=owner).json()["results"] == []


def test_boundary_scores_are_accepted(amp):
    for scoring in ({"importance": 0, "confidence": 1}, {"importance": 1.0, "confidence": 0.0}):
        assert amp.create(amp.body(amp.owner(), scoring=scoring)).status_code == 201
    for rate in (0, 20000, 1e300):
        response = amp.create(amp.body(amp.owner(), scoring={"decay_rate": rate}))
        assert response.status_code == 201
        assert response.json()["scoring"]["decay_rate"] == rate


def test_integer_scores_are_numbers(amp):
    cell = amp.create(amp.body(amp.owner(), scoring={"importance": 1, "confidence": 0})).json()
    assert cell["scoring"]["importance"] == 1.0


def test_create_is_readable_and_listed_at_once(amp):
    owner = amp.owner()
    cell = amp.create(amp.body(owner)).json()
    assert amp.get(cell["id"]).status_code == 200
    assert amp.ids(amp.list(owner_id=owner)) == [cell["id"]]
