"""Retention and purge (AMP-RET-*)."""

from __future__ import annotations

import pytest

from reference_server import RetentionWindowError


def test_purge_is_refused_inside_the_window(amp):
    cell = amp.new_cell()
    amp.delete_cell(cell["id"])
    amp.advance(days=29, hours=23, minutes=59)
    with pytest.raises(RetentionWindowError):
        amp.state.store.purge(cell["id"])
    assert amp.state.store.get(cell["id"]) is not None
    amp.advance(minutes=1)
    amp.state.store.purge(cell["id"])
    assert amp.state.store.get(cell["id"]) is None
    amp.error(amp.get(cell["id"]), 404, "NOT_FOUND")


def test_only_deleted_cells_can_be_purged(amp):
    cell = amp.new_cell()
    with pytest.raises(ValueError):
        amp.state.store.purge(cell["id"])
    with pytest.raises(KeyError):
        amp.state.store.purge("mem_unknown")


def test_pass_never_purges_by_default(amp):
    cell = amp.new_cell()
    amp.delete_cell(cell["id"])
    amp.advance(days=365)
    assert amp.run_pass()["purged"] == 0
    assert amp.state.store.get(cell["id"]) is not None


def test_opted_in_pass_purges_only_after_the_window(make_amp):
    amp = make_amp(purge_retention=True)
    owner = amp.owner()
    old = amp.create(amp.body(owner, "old")).json()
    amp.delete_cell(old["id"])
    amp.advance(days=10)
    young = amp.create(amp.body(owner, "young")).json()
    amp.delete_cell(young["id"])
    amp.advance(days=20)
    assert amp.run_pass()["purged"] == 1
    assert amp.state.store.get(old["id"]) is None
    assert amp.state.store.get(young["id"]) is not None
    # The purged cell is gone from the owner's index too.
    assert amp.ids(amp.search({"query": "old", "owner_id": owner, "status": ["deleted"]})) == []
    amp.advance(days=10)
    assert amp.run_pass()["purged"] == 1
    assert len(amp.state.store) == 0
