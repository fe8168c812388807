"""The two documented conventions (C-01, C-02, C-05) and the id forms (C-03)."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def upstream(make_amp):
    return make_amp(convention="upstream")


def _normalised(response):
    return response.status_code, json.dumps(response.json(), sort_keys=True)


def test_upstream_answers_unknown_forbidden_and_deleted_identically(upstream):
    amp = upstream
    forbidden = amp.new_cell(agent="creator")
    deleted = amp.new_cell()
    amp.delete_cell(deleted["id"])
    unknown = "mem_01J5A3B7K9M2N4P6Q8R0S1T3V5"
    answers = {
        _normalised(amp.get(unknown)),
        _normalised(amp.get(forbidden["id"], "stranger")),
        _normalised(amp.get(deleted["id"])),
        _normalised(amp.patch(unknown, {})),
        _normalised(amp.patch(forbidden["id"], {}, "stranger")),
        _normalised(amp.patch(deleted["id"], {})),
        _normalised(amp.delete(unknown)),
        _normalised(amp.delete(forbidden["id"], "stranger")),
        _normalised(amp.delete(deleted["id"])),
        _normalised(amp.get("not-an-id")),
    }
    assert len(answers) == 1
    amp.error(amp.get(unknown), 403, "ACCESS_DENIED")
    assert amp.status_of(deleted["id"]) == "deleted"


def test_upstream_still_409s_forbidden_transitions(upstream):
    cell = upstream.new_cell()
    upstream.error(upstream.delete(cell["id"]), 409, "INVALID_TRANSITION")
    upstream.archive(cell["id"])
    upstream.error(upstream.patch(cell["id"], {"lifecycle": {"status": "active"}}), 409, "INVALID_TRANSITION")


def test_reference_convention_distinguishes(amp):
    forbidden = amp.new_cell(agent="creator")
    amp.error(amp.get("mem_01J5A3B7K9M2N4P6Q8R0S1T3V5"), 404, "NOT_FOUND")
    amp.error(amp.get(forbidden["id"], "stranger"), 403, "FORBIDDEN")
    deleted = amp.new_cell()
    amp.delete_cell(deleted["id"])
    assert amp.get(deleted["id"]).json()["lifecycle"]["status"] == "deleted"
    amp.error(amp.get(deleted["id"], "stranger"), 403, "FORBIDDEN")


@pytest.mark.parametrize("convention", ["reference", "upstream"])
def test_bare_ids_in_both_conventions(make_amp, convention):
    amp = make_amp(convention=convention, id_form="bare")
    cell = amp.new_cell()
    assert len(cell["id"]) == 26
    assert amp.get(cell["id"]).status_code == 200
    assert amp.get("mem_" + cell["id"]).status_code == (403 if convention == "upstream" else 404)
