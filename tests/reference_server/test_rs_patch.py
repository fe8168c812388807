"""PATCH /memories/{id} (AMP-PATCH-*)."""

from __future__ import annotations

import pytest


def test_patch_returns_the_full_updated_cell(amp):
    cell = amp.new_cell(scoring={"importance": 0.8, "confidence": 0.95})
    amp.advance(seconds=5)
    body = {"content": {"text": "new text", "metadata": {"k": "v"}}, "scoring": {"importance": 0.9}}
    response = amp.patch(cell["id"], body)
    assert response.status_code == 200
    patched = response.json()
    assert patched["content"] == {"text": "new text", "metadata": {"k": "v"}}
    assert patched["scoring"] == {
        "importance": 0.9,
        "confidence": 0.95,
        "decay_rate": 0.01,
        "access_count": 0,
    }
    assert patched["lifecycle"]["last_updated_at"] == "2026-01-01T12:00:05.000000Z"
    assert amp.get(cell["id"]).json()["content"]["text"] == "new text"


def test_merge_inside_sub_objects(amp):
    cell = amp.new_cell(
        scoring={"importance": 0.8, "confidence": 0.95, "decay_rate": 0.05},
        access_policy={"readable_by": ["r-1"], "writable_by": ["w-1"], "public": False},
        provenance={"source_type": "document", "source_ref": "doc-1", "extraction_method": "rule_based"},
    )
    amp.get(cell["id"])
    patched = amp.patch(cell["id"], {"scoring": {"importance": 0.9}}).json()
    assert patched["scoring"] == {
        "importance": 0.9,
        "confidence": 0.95,
        "decay_rate": 0.05,
        "access_count": 1,
    }
    patched = amp.patch(cell["id"], {"access_policy": {"public": True}}).json()
    assert patched["access_policy"] == {"readable_by": ["r-1"], "writable_by": ["w-1"], "public": True}
    patched = amp.patch(cell["id"], {"provenance": {"source_ref": None}}).json()
    assert patched["provenance"] == {
        "source_type": "document",
        "source_ref": None,
        "extraction_method": "rule_based",
    }
    assert patched["identity"] == cell["identity"]


def test_unsent_sections_unchanged_and_arrays_replaced(amp):
    cell = amp.new_cell(access_policy={"readable_by": ["a", "b"]})
    patched = amp.patch(cell["id"], {"access_policy": {"readable_by": ["c"]}}).json()
    assert patched["access_policy"]["readable_by"] == ["c"]
    for name in ("scoring", "provenance", "identity", "content", "type", "id", "amp_version"):
        assert patched[name] == cell[name]


def test_content_text_and_metadata_are_each_optional_and_replaced_when_sent(amp):
    owner = amp.owner()
    body = amp.body(owner)
    body["content"]["metadata"] = {"a": 1, "b": 2}
    cell = amp.create(body).json()
    kept = amp.patch(cell["id"], {"content": {"text": "t2"}}).json()
    assert kept["content"] == {"text": "t2", "metadata": {"a": 1, "b": 2}}
    replaced = amp.patch(cell["id"], {"content": {"text": "t3", "metadata": {"c": 3}}}).json()
    assert replaced["content"]["metadata"] == {"c": 3}
    metadata_only = amp.patch(cell["id"], {"content": {"metadata": {"d": 4}}}).json()
    assert metadata_only["content"] == {"text": "t3", "metadata": {"d": 4}}
    amp.error(amp.patch(cell["id"], {"content": {"text": None}}), 422, "VALIDATION_ERROR")
    amp.error(amp.patch(cell["id"], {"content": {"text": ""}}), 422, "VALIDATION_ERROR")


def test_patch_is_not_a_read(amp):
    cell = amp.new_cell()
    read = amp.get(cell["id"]).json()
    amp.advance(seconds=3)
    patched = amp.patch(cell["id"], {"content": {"text": "x"}}).json()
    assert patched["scoring"]["access_count"] == 1
    assert patched["lifecycle"]["last_accessed_at"] == read["lifecycle"]["last_accessed_at"]


def test_immutable_and_unknown_members_are_ignored(amp):
    cell = amp.new_cell()
    body = {
        "id": "mem_00000000000000000000000000",
        "amp_version": "9.9",
        "type": "episodic",
        "identity": {"owner_id": "evil", "created_by": "evil", "owner_type": "agent"},
        "lifecycle": {
            "created_at": "2020-01-01T00:00:00Z",
            "last_accessed_at": "2030-01-01T00:00:00Z",
            "last_updated_at": "2030-01-01T00:00:00Z",
        },
        "scoring": {"access_count": 99},
        "foo": 1,
        "content": {"text": "x", "bar": 2},
    }
    response = amp.patch(cell["id"], body)
    assert response.status_code == 200
    patched = response.json()
    assert patched["id"] == cell["id"] and patched["amp_version"] == "0.1.0" and patched["type"] == "semantic"
    assert patched["identity"] == cell["identity"]
    assert patched["lifecycle"]["created_at"] == cell["lifecycle"]["created_at"]
    assert patched["lifecycle"]["last_accessed_at"] is None
    assert patched["lifecycle"]["last_updated_at"] == "2026-01-01T12:00:00.000000Z"
    assert patched["scoring"]["access_count"] == 0
    assert "foo" not in patched and "bar" not in patched["content"]


def test_empty_patch_only_stamps_last_updated_at(amp):
    cell = amp.new_cell()
    amp.advance(seconds=1)
    patched = amp.patch(cell["id"], {}).json()
    assert patched["lifecycle"]["last_updated_at"] == "2026-01-01T12:00:01.000000Z"
    patched["lifecycle"]["last_updated_at"] = None
    assert patched == cell


def test_null_sections_are_no_ops(amp):
    cell = amp.new_cell()
    patch = {"content": None, "scoring": None, "access_policy": None, "provenance": None, "lifecycle": None}
    response = amp.patch(cell["id"], patch)
    assert response.status_code == 200
    assert response.json()["scoring"] == cell["scoring"]


@pytest.mark.parametrize(
    ("start", "target", "allowed"),
    [
        ("active", "archived", True),
        ("active", "active", True),
        ("active", "stale", True),
        ("stale", "active", True),
        ("stale", "archived", True),
        ("stale", "stale", True),
        ("archived", "archived", True),
        ("archived", "active", False),
        ("archived", "stale", False),
        ("active", "deleted", False),
        ("stale", "deleted", False),
        ("archived", "deleted", False),
    ],
)
def test_status_transitions(amp, start, target, allowed):
    cell = amp.new_cell()
    if start != "active":
        assert amp.patch(cell["id"], {"lifecycle": {"status": start}}).status_code == 200
    before = amp.stored(cell["id"])
    response = amp.patch(cell["id"], {"content": {"text": "changed"}, "lifecycle": {"status": target}})
    if allowed:
        assert response.status_code == 200
        assert response.json()["lifecycle"]["status"] == target
    else:
        amp.error(response, 409, "INVALID_TRANSITION")
        assert amp.stored(cell["id"]) == before  # nothing applied, not even the text


def test_archiving_needs_nothing_else(amp):
    cell = amp.new_cell()
    patched = amp.patch(cell["id"], {"lifecycle": {"status": "archived"}}).json()
    assert patched["lifecycle"]["status"] == "archived"
    assert patched["lifecycle"]["created_at"] == cell["lifecycle"]["created_at"]


def test_unknown_or_null_status_is_422(amp):
    cell = amp.new_cell()
    amp.error(amp.patch(cell["id"], {"lifecycle": {"status": "expired"}}), 422, "VALIDATION_ERROR")
    amp.error(amp.patch(cell["id"], {"lifecycle": {"status": None}}), 422, "VALIDATION_ERROR")


def test_expires_at_set_normalised_and_cleared(amp):
    cell = amp.new_cell()
    patched = amp.patch(cell["id"], {"lifecycle": {"expires_at": "2030-01-01T02:00:00+02:00"}}).json()
    assert patched["lifecycle"]["expires_at"] == "2030-01-01T00:00:00.000000Z"
    patched = amp.patch(cell["id"], {"lifecycle": {"expires_at": "2030-06-01t10:00:00.5z"}}).json()
    assert patched["lifecycle"]["expires_at"] == "2030-06-01T10:00:00.500000Z"
    for bad in (
        "tomorrow",
        "2030-01-01",
        "2030-02-30T00:00:00Z",
        "2024-01-01T12:99:00Z",
        "2030-01-01T00:00:00",
    ):
        amp.error(amp.patch(cell["id"], {"lifecycle": {"expires_at": bad}}), 422, "VALIDATION_ERROR")
    patched = amp.patch(cell["id"], {"lifecycle": {"expires_at": None}}).json()
    assert patched["lifecycle"]["expires_at"] is None


def test_extreme_but_valid_expiry_dates_are_clamped_not_refused(amp):
    cell = amp.new_cell()
    low = amp.patch(cell["id"], {"lifecycle": {"expires_at": "0001-01-01T00:00:00+23:59"}})
    assert low.status_code == 200
    assert low.json()["lifecycle"]["expires_at"] == "0001-01-01T00:00:00.000000Z"
    high = amp.patch(cell["id"], {"lifecycle": {"expires_at": "9999-12-31T23:59:60-01:00"}})
    assert high.status_code == 200
    assert high.json()["lifecycle"]["expires_at"] == "9999-12-31T23:59:59.999999Z"


@pytest.mark.parametrize(
    "body",
    [
        {"scoring": {"importance": 2}},
        {"scoring": {"importance": None}},
        {"scoring": {"confidence": "high"}},
        {"scoring": {"decay_rate": -1}},
        {"access_policy": {"readable_by": [1]}},
        {"access_policy": {"public": None}},
        {"provenance": {"source_type": "telepathy"}},
        {"content": {"text": ""}},
        {"content": "text"},
        {"lifecycle": {"expires_at": 5}},
    ],
)
def test_invalid_patch_is_422_and_changes_nothing(amp, body):
    cell = amp.new_cell()
    before = amp.stored(cell["id"])
    error = amp.error(amp.patch(cell["id"], body), 422, "VALIDATION_ERROR")
    assert error["details"]["errors"][0]["loc"][0] == "body"
    assert amp.stored(cell["id"]) is before


def test_patch_without_agent_is_401(amp):
    cell = amp.new_cell()
    amp.error(amp.patch(cell["id"], {"content": {"text": "x"}}, None), 401, "MISSING_AGENT_ID")


def test_scoring_patch_does_not_flip_status(amp):
    cell = amp.new_cell(scoring={"importance": 0.2, "decay_rate": 0})
    amp.run_pass()
    patched = amp.patch(cell["id"], {"scoring": {"importance": 0.9}}).json()
    assert patched["lifecycle"]["status"] == "stale"
    amp.run_pass()
    assert amp.status_of(cell["id"]) == "active"


def test_deleted_cell_cannot_be_patched(amp):
    cell = amp.new_cell()
    amp.delete_cell(cell["id"])
    amp.error(amp.patch(cell["id"], {"content": {"text": "back"}}), 409, "INVALID_TRANSITION")
    amp.error(amp.patch(cell["id"], {"lifecycle": {"status": "active"}}), 409, "INVALID_TRANSITION")
    assert amp.status_of(cell["id"]) == "deleted"


def test_check_order_permission_before_transition(amp):
    cell = amp.new_cell()
    amp.archive(cell["id"])
    amp.error(amp.patch(cell["id"], {"lifecycle": {"status": "active"}}, "stranger"), 403, "FORBIDDEN")
    amp.error(amp.patch("mem_01J5A3B7K9M2N4P6Q8R0S1T3V5", {}, "agent-a"), 404, "NOT_FOUND")
    # Validation comes before existence (keyless order 401 -> 422 -> 404/403).
    amp.error(amp.patch("mem_01J5A3B7K9M2N4P6Q8R0S1T3V5", {"scoring": {"importance": 5}}), 422)
