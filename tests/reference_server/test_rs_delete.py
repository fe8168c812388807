"""DELETE /memories/{id} (AMP-DEL-*)."""

from __future__ import annotations


def test_delete_archived_is_204_soft_and_terminal(amp):
    owner = amp.owner()
    cell = amp.create(amp.body(owner, "forget me")).json()
    amp.archive(cell["id"])
    amp.advance(seconds=2)
    response = amp.delete(cell["id"])
    assert response.status_code == 204
    assert response.content == b""
    record = amp.state.store.get(cell["id"])
    assert record is not None and record.status == "deleted" and record.deleted_at == amp.clock.now()
    # Reference convention: still readable by id, with status deleted.
    read = amp.get(cell["id"])
    assert read.status_code == 200 and read.json()["lifecycle"]["status"] == "deleted"
    # Terminal: a second DELETE and any PATCH are refused.
    amp.error(amp.delete(cell["id"]), 409, "INVALID_TRANSITION")
    amp.error(amp.patch(cell["id"], {"lifecycle": {"status": "archived"}}), 409, "INVALID_TRANSITION")


def test_deleted_never_listed_or_searched(amp):
    owner = amp.owner()
    cell = amp.create(amp.body(owner, "forget me")).json()
    amp.delete_cell(cell["id"])
    for status in (None, "active", "archived", "deleted"):
        params = {"owner_id": owner} | ({"status": status} if status else {})
        assert cell["id"] not in amp.ids(amp.list(**params))
    for status in (None, ["deleted"], ["active", "stale", "archived", "deleted"]):
        body = {"query": "forget me", "owner_id": owner, "include_stale": True}
        if status is not None:
            body["status"] = status
        assert amp.ids(amp.search(body)) == []


def test_delete_active_or_stale_is_409_and_unchanged(amp):
    cell = amp.new_cell()
    amp.error(amp.delete(cell["id"]), 409, "INVALID_TRANSITION")
    assert amp.status_of(cell["id"]) == "active"
    amp.patch(cell["id"], {"lifecycle": {"status": "stale"}})
    amp.error(amp.delete(cell["id"]), 409, "INVALID_TRANSITION")
    assert amp.status_of(cell["id"]) == "stale"


def test_delete_needs_write_access_first(amp):
    cell = amp.new_cell(access_policy={"readable_by": ["reader"], "writable_by": ["writer"]})
    amp.error(amp.delete(cell["id"], "stranger"), 403, "FORBIDDEN")
    amp.error(amp.delete(cell["id"], "reader"), 403, "FORBIDDEN")
    amp.archive(cell["id"])
    amp.error(amp.delete(cell["id"], "stranger"), 403, "FORBIDDEN")
    assert amp.status_of(cell["id"]) == "archived"
    assert amp.delete(cell["id"], "writer").status_code == 204


def test_delete_unknown_and_without_agent(amp):
    amp.error(amp.delete("mem_01J5A3B7K9M2N4P6Q8R0S1T3V5"), 404, "NOT_FOUND")
    cell = amp.new_cell()
    amp.error(amp.delete(cell["id"], None), 401, "MISSING_AGENT_ID")


def test_no_rest_purge(amp):
    cell = amp.new_cell()
    amp.delete_cell(cell["id"])
    assert amp.request("POST", f"/memories/{cell['id']}/purge", "agent-a").status_code in (404, 405)
    amp.request("DELETE", f"/memories/{cell['id']}", "agent-a", params={"purge": "true"})
    assert amp.state.store.get(cell["id"]) is not None
