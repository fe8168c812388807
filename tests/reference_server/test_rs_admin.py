"""POST /lifecycle/run (AMP-ADMIN-*)."""

from __future__ import annotations

import json

import pytest

from reference_server.amp01.auth import hash_key


def _run(amp, token=None, **headers):
    if token is not None:
        headers["X-AMP-Admin-Token"] = token
    return amp.request("POST", "/lifecycle/run", headers=headers)


@pytest.mark.parametrize("token", [None, "", "anything", "admin-secret-token"])
def test_disabled_without_a_configured_token(make_amp, token):
    amp = make_amp(admin_token=None)
    cell = amp.new_cell(scoring={"importance": 0.2, "decay_rate": 0})
    amp.error(_run(amp, token), 403, "ADMIN_DISABLED")
    assert amp.status_of(cell["id"]) == "active"


@pytest.mark.parametrize("token", [None, "", "wrong", "ADMIN-SECRET-TOKEN", "admin-secret-token "])
def test_wrong_or_missing_token_is_access_denied(amp, token):
    cell = amp.new_cell(scoring={"importance": 0.2, "decay_rate": 0})
    amp.error(_run(amp, token), 403, "ACCESS_DENIED")
    assert amp.status_of(cell["id"]) == "active"


def test_right_token_runs_a_pass(amp):
    cells = [amp.new_cell(scoring={"importance": 0.2, "decay_rate": 0}) for _ in range(3)]
    response = _run(amp, amp.ADMIN_TOKEN)
    assert response.status_code == 200
    assert response.json() == {
        "transitions": {"active_to_stale": 3, "stale_to_archived": 0, "stale_to_active": 0},
        "purged": 0,
    }
    assert all(amp.status_of(cell["id"]) == "stale" for cell in cells)
    again = _run(amp, amp.ADMIN_TOKEN).json()
    assert again["transitions"] == {"active_to_stale": 0, "stale_to_archived": 0, "stale_to_active": 0}


def test_admin_needs_no_agent_or_key(make_amp, tmp_path):
    path = tmp_path / "keys.json"
    path.write_text(json.dumps({"a": hash_key("k")}))
    amp = make_amp(api_keys_file=str(path))
    assert _run(amp, amp.ADMIN_TOKEN).status_code == 200
