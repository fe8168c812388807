"""GET /memories/{id} (AMP-READ-*)."""

from __future__ import annotations


def test_each_read_adds_one_and_shows_it(amp):
    cell = amp.new_cell()
    for expected in (1, 2, 3):
        amp.advance(seconds=1)
        body = amp.get(cell["id"]).json()
        assert body["scoring"]["access_count"] == expected
        assert body["lifecycle"]["last_accessed_at"] == f"2026-01-01T12:00:0{expected}.000000Z"
        assert body["lifecycle"]["last_updated_at"] is None


def test_refused_reads_change_nothing(amp):
    cell = amp.new_cell()
    amp.error(amp.get(cell["id"], "stranger"), 403, "FORBIDDEN")
    amp.error(amp.get(cell["id"], None), 401, "MISSING_AGENT_ID")
    body = amp.get(cell["id"]).json()
    assert body["scoring"]["access_count"] == 1


def test_list_and_search_are_not_reads(amp):
    owner = amp.owner()
    cell = amp.create(amp.body(owner, "coffee in the morning")).json()
    for _ in range(3):
        assert cell["id"] in amp.ids(amp.list(owner_id=owner))
        assert cell["id"] in amp.ids(amp.search({"query": "coffee", "owner_id": owner}))
    assert amp.stored(cell["id"])["scoring"]["access_count"] == 0
    assert amp.get(cell["id"]).json()["scoring"]["access_count"] == 1


def test_unknown_and_malformed_ids(amp):
    for bad in ("mem_01J5A3B7K9M2N4P6Q8R0S1T3V5", "not-an-id", "x/y", "%20", "query2"):
        error = amp.error(amp.get(bad), 404, "NOT_FOUND")
        assert error["message"].startswith("Memory cell ")
    cell = amp.new_cell()
    amp.error(amp.get(cell["id"][4:]), 404, "NOT_FOUND")  # the bare ULID of a prefixed id


def test_stale_and_archived_cells_are_readable(amp):
    cell = amp.new_cell(scoring={"importance": 0.2, "decay_rate": 0})
    amp.run_pass()
    assert amp.status_of(cell["id"]) == "stale"
    response = amp.get(cell["id"])
    assert response.status_code == 200 and response.json()["lifecycle"]["status"] == "stale"
    amp.archive(cell["id"])
    response = amp.get(cell["id"])
    assert response.status_code == 200 and response.json()["lifecycle"]["status"] == "archived"


def test_header_names_are_case_insensitive(amp):
    cell = amp.new_cell()
    response = amp.request("GET", f"/memories/{cell['id']}", headers={"x-amp-agent-id": "agent-a"})
    assert response.status_code == 200


def test_empty_agent_header_counts_as_missing(amp):
    cell = amp.new_cell()
    response = amp.request("GET", f"/memories/{cell['id']}", headers={"X-AMP-Agent-ID": ""})
    amp.error(response, 401, "MISSING_AGENT_ID")


def test_utf8_agent_header_matches_body_ids(amp):
    owner = amp.owner()
    body = amp.body(owner, access_policy={"readable_by": ["agënt-ü"]})
    cell = amp.create(body).json()
    response = amp.request("GET", f"/memories/{cell['id']}", headers={"X-AMP-Agent-ID": "agënt-ü".encode()})
    assert response.status_code == 200


def test_ids_with_control_characters_or_slashes_are_unknown_ids(amp):
    for odd in ("%0Ax", "%0A%2C", "x%0A", "a/b"):  # percent-encoded: what reaches the server
        error = amp.error(amp.get(odd), 404, "NOT_FOUND")
        assert error["message"].startswith("Memory cell "), error  # an unknown id, not an unknown route
