"""max_cell_size_bytes (AMP-SIZE-*)."""

from __future__ import annotations

import json

from reference_server.amp01.service import cell_size


def test_create_over_the_limit_is_413_and_stores_nothing(make_amp):
    amp = make_amp(max_cell_size_bytes=2048)
    owner = amp.owner()
    error = amp.error(amp.create(amp.body(owner, "x" * 3000)), 413, "CELL_TOO_LARGE")
    assert error["details"]["max_cell_size_bytes"] == 2048
    assert len(amp.state.store) == 0
    assert amp.list(owner_id=owner).json()["results"] == []


def test_size_is_the_serialised_cell_in_bytes(make_amp):
    amp = make_amp(max_cell_size_bytes=4096)
    cell = amp.new_cell()
    base = cell_size(cell)
    assert base == len(json.dumps(cell, separators=(",", ":"), ensure_ascii=False).encode())
    room = 4096 - base + len(cell["content"]["text"])
    assert amp.create(amp.body(amp.owner("o"), "a" * room)).status_code in (201, 413)
    fits = amp.create(amp.body(cell["identity"]["owner_id"], "a" * (room - 10)))
    assert fits.status_code == 201 and cell_size(fits.json()) <= 4096
    # Two bytes per character in UTF-8: half the room in characters is already too much.
    amp.error(amp.create(amp.body(amp.owner(), "é" * (room // 2 + 40))), 413, "CELL_TOO_LARGE")
    # Metadata counts too.
    body = amp.body(amp.owner(), "short")
    body["content"]["metadata"] = {"blob": "m" * 4096}
    amp.error(amp.create(body), 413, "CELL_TOO_LARGE")


def test_exactly_at_the_limit_is_accepted(make_amp):
    amp = make_amp(max_cell_size_bytes=1500)
    owner = amp.owner()
    probe = amp.new_cell(owner=owner, text="x")
    text = "x" * (1500 - cell_size(probe) + 1)
    response = amp.create(amp.body(owner, text))
    assert response.status_code == 201 and cell_size(response.json()) == 1500
    amp.error(amp.create(amp.body(owner, text + "x")), 413)


def test_default_limit_accepts_a_comfortable_cell(amp):
    assert amp.create(amp.body(amp.owner(), "x" * (65536 - 4096))).status_code == 201
    amp.error(amp.create(amp.body(amp.owner(), "x" * (65536 + 1024))), 413, "CELL_TOO_LARGE")


def test_patch_over_the_limit_is_413_and_changes_nothing(make_amp):
    amp = make_amp(max_cell_size_bytes=2048)
    cell = amp.new_cell()
    before = amp.stored(cell["id"])
    amp.advance(seconds=5)
    amp.error(amp.patch(cell["id"], {"content": {"text": "y" * 3000}}), 413, "CELL_TOO_LARGE")
    assert amp.stored(cell["id"]) is before
    assert amp.get(cell["id"]).json()["lifecycle"]["last_updated_at"] is None


def test_stranger_gets_403_not_413(make_amp):
    amp = make_amp(max_cell_size_bytes=2048)
    cell = amp.new_cell()
    amp.error(amp.patch(cell["id"], {"content": {"text": "y" * 3000}}, "stranger"), 403, "FORBIDDEN")


def test_spec_reports_the_enforced_limit(make_amp):
    amp = make_amp(max_cell_size_bytes=3000)
    assert amp.request("GET", "/spec").json()["capabilities"]["max_cell_size_bytes"] == 3000
