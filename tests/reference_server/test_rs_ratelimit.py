"""The per-cell scoring PATCH budget (AMP-RATE-*), with time moved by the ManualClock."""

from __future__ import annotations


def _score(amp, cell_id, value=0.5, agent="agent-a"):
    return amp.patch(cell_id, {"scoring": {"importance": value}}, agent)


def _exhaust(amp, cell_id, count=5, step=0.0):
    for n in range(count):
        assert _score(amp, cell_id, 0.1 + n / 100).status_code == 200
        if step:
            amp.advance(seconds=step)


def test_budget_then_429_with_matching_retry_after(amp):
    cell = amp.new_cell()
    _exhaust(amp, cell["id"], step=10)  # edits at t=0,10,20,30,40; now t=50
    before = amp.stored(cell["id"])
    response = amp.patch(cell["id"], {"scoring": {"importance": 0.4}, "content": {"text": "new"}})
    error = amp.error(response, 429, "RATE_LIMITED")
    assert response.headers["retry-after"] == str(error["details"]["retry_after_seconds"])
    assert error["details"]["retry_after_seconds"] == 3600 - 50
    assert amp.stored(cell["id"]) is before  # nothing applied


def test_refused_attempts_do_not_push_the_deadline(amp):
    cell = amp.new_cell()
    _exhaust(amp, cell["id"])
    waits = []
    for _ in range(5):
        amp.advance(seconds=1)
        waits.append(amp.error(_score(amp, cell["id"]), 429)["details"]["retry_after_seconds"])
    assert waits == [3599, 3598, 3597, 3596, 3595]


def test_window_expiry(amp):
    cell = amp.new_cell()
    _exhaust(amp, cell["id"], step=1)  # edits at t=0..4
    amp.advance(seconds=3600 - 5 - 1)  # t=3599: first edit still inside
    retry = amp.error(_score(amp, cell["id"]), 429)["details"]["retry_after_seconds"]
    assert retry == 1
    amp.advance(seconds=retry)
    assert _score(amp, cell["id"]).status_code == 200
    amp.error(_score(amp, cell["id"]), 429)


def test_retry_after_rounds_up_and_is_at_least_one(amp):
    cell = amp.new_cell()
    _exhaust(amp, cell["id"])
    amp.advance(seconds=3599.5)
    assert amp.error(_score(amp, cell["id"]), 429)["details"]["retry_after_seconds"] == 1


def test_budget_is_per_cell_and_shared_by_writers(amp):
    first = amp.new_cell(access_policy={"writable_by": ["writer"]})
    second = amp.new_cell()
    owner = first["identity"]["owner_id"]
    for agent in ("agent-a", "agent-a", owner, owner):
        assert _score(amp, first["id"], agent=agent).status_code == 200
    assert _score(amp, first["id"], agent="writer").status_code == 200
    amp.error(_score(amp, first["id"], agent="writer"), 429)
    assert _score(amp, second["id"]).status_code == 200


def test_non_scoring_and_null_scoring_patches_are_free(amp):
    cell = amp.new_cell()
    _exhaust(amp, cell["id"])
    for body in (
        {"content": {"text": "still fine"}},
        {"provenance": {"source_ref": "x"}},
        {"access_policy": {"public": True}},
        {"lifecycle": {"expires_at": None}},
        {"scoring": None},
        {},
    ):
        assert amp.patch(cell["id"], body).status_code == 200, body


def test_access_is_checked_first_and_costs_nothing(amp):
    cell = amp.new_cell()
    _exhaust(amp, cell["id"], count=4)
    for _ in range(3):
        amp.error(_score(amp, cell["id"], agent="stranger"), 403, "FORBIDDEN")
    assert _score(amp, cell["id"]).status_code == 200
    amp.error(_score(amp, cell["id"], agent="stranger"), 403, "FORBIDDEN")
    amp.error(_score(amp, cell["id"]), 429)


def test_invalid_and_refused_scoring_patches_cost_nothing(amp):
    cell = amp.new_cell()
    for _ in range(5):
        amp.error(_score(amp, cell["id"], 2), 422)
    amp.archive(cell["id"])
    for _ in range(5):
        body = {"scoring": {"importance": 0.3}, "lifecycle": {"status": "active"}}
        amp.error(amp.patch(cell["id"], body), 409, "INVALID_TRANSITION")
    _exhaust(amp, cell["id"])


def test_limit_zero_disables_the_budget(make_amp):
    amp = make_amp(scoring_patch_limit=0)
    cell = amp.new_cell()
    for n in range(15):
        assert _score(amp, cell["id"], n / 20).status_code == 200


def test_custom_budget(make_amp):
    amp = make_amp(scoring_patch_limit=2, scoring_patch_window_seconds=5)
    cell = amp.new_cell()
    _exhaust(amp, cell["id"], count=2)
    response = _score(amp, cell["id"])
    assert amp.error(response, 429)["details"]["retry_after_seconds"] == 5
    amp.advance(seconds=5)
    assert _score(amp, cell["id"]).status_code == 200
