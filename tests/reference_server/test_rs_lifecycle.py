"""The decay formula and the lifecycle engine, driven by a ManualClock (AMP-LC-*)."""

from __future__ import annotations

import socket
import threading
import time

import httpx
import pytest
import uvicorn

from reference_server import ManualClock, Settings, create_app
from reference_server.amp01.lifecycle import decay_score

DAY = 86400


@pytest.mark.parametrize(
    ("importance", "confidence", "rate", "days", "expected"),
    [
        (0.5, 1.0, 0.01, 30, 0.370409),
        (0.5, 1.0, 0.01, 52, 0.297260),
        (0.5, 1.0, 0.01, 51, 0.300248),
        (0.8, 0.95, 0.01, 0, 0.760000),
        (0.8, 0.95, 0.01, 92, 0.302874),
        (0.8, 0.95, 0.01, 93, 0.299861),
        (0.3, 1.0, 0.0, 1000, 0.300000),
        (0.2, 1.0, 0.0, 0, 0.200000),
        (1.0, 1.0, 20000, 10 / DAY, 0.098784),
        (1.0, 1.0, 20000, 5 / DAY, 0.314300),
        (1.0, 1.0, 20000, 0.5 / DAY, 0.890706),
        (0.9, 0.5, 0.05, 8, 0.301644),
        (0.9, 0.5, 0.05, 9, 0.286933),
    ],
)
def test_worked_examples(importance, confidence, rate, days, expected):
    assert round(decay_score(importance, confidence, rate, days), 6) == expected


def test_extreme_rates_do_not_overflow():
    assert decay_score(1.0, 1.0, 1e308, 1e10) == 0.0
    assert decay_score(1.0, 1.0, 0.0, 1e10) == 1.0
    assert decay_score(1.0, 1.0, 1.0, -5) == 1.0


def test_exactly_threshold_stays_active(amp):
    cell = amp.new_cell(scoring={"importance": 0.3, "confidence": 1.0, "decay_rate": 0})
    assert amp.run_pass()["transitions"]["active_to_stale"] == 0
    assert amp.status_of(cell["id"]) == "active"


def test_below_threshold_goes_stale_then_recovers_at_the_next_pass(amp):
    cell = amp.new_cell(scoring={"importance": 0.2, "decay_rate": 0})
    assert amp.run_pass()["transitions"]["active_to_stale"] == 1
    assert amp.status_of(cell["id"]) == "stale"
    assert amp.patch(cell["id"], {"scoring": {"importance": 0.9}}).json()["lifecycle"]["status"] == "stale"
    assert amp.run_pass()["transitions"]["stale_to_active"] == 1
    assert amp.status_of(cell["id"]) == "active"


def test_defaults_cross_the_line_after_51_days(amp):
    cell = amp.new_cell()
    amp.advance(days=51)
    amp.run_pass()
    assert amp.status_of(cell["id"]) == "active"
    amp.advance(days=1)
    amp.run_pass()
    assert amp.status_of(cell["id"]) == "stale"


def test_a_read_restarts_the_decay_clock(amp):
    cell = amp.new_cell(scoring={"importance": 1, "confidence": 1, "decay_rate": 20000})
    amp.advance(seconds=10)
    amp.run_pass()
    assert amp.status_of(cell["id"]) == "stale"
    amp.get(cell["id"])
    amp.advance(seconds=4)
    assert amp.run_pass()["transitions"]["stale_to_active"] == 1
    assert amp.status_of(cell["id"]) == "active"


def test_a_patch_does_not_restart_the_decay_clock(amp):
    cell = amp.new_cell(scoring={"importance": 1, "confidence": 1, "decay_rate": 20000})
    amp.advance(seconds=10)
    amp.run_pass()
    amp.patch(cell["id"], {"content": {"text": "edited"}})
    amp.run_pass()
    assert amp.status_of(cell["id"]) == "stale"


def test_status_changes_only_at_passes(amp):
    cell = amp.new_cell(scoring={"decay_rate": 20000})
    amp.advance(seconds=10)
    assert cell["id"] in amp.ids(amp.list(owner_id=cell["identity"]["owner_id"]))
    assert amp.status_of(cell["id"]) == "active"


def test_one_step_per_pass_and_archive_after_30_days(amp):
    cell = amp.new_cell(scoring={"importance": 0.2, "decay_rate": 0})
    amp.advance(days=40)
    amp.run_pass()
    assert amp.status_of(cell["id"]) == "stale"  # not archived in the same pass
    amp.advance(days=29, hours=23)
    assert amp.run_pass()["transitions"]["stale_to_archived"] == 0
    assert amp.status_of(cell["id"]) == "stale"
    amp.advance(hours=1)
    assert amp.run_pass()["transitions"]["stale_to_archived"] == 1
    assert amp.status_of(cell["id"]) == "archived"


def test_an_update_or_access_postpones_archival(amp):
    updated = amp.new_cell(scoring={"importance": 0.1, "decay_rate": 0})
    read = amp.new_cell(scoring={"importance": 0.1, "decay_rate": 0})
    amp.run_pass()
    amp.advance(days=20)
    amp.patch(updated["id"], {"content": {"text": "touched"}})
    amp.get(read["id"])
    amp.advance(days=15)
    amp.run_pass()
    assert amp.status_of(updated["id"]) == "stale"
    assert amp.status_of(read["id"]) == "stale"
    amp.advance(days=16)
    amp.run_pass()
    assert amp.status_of(updated["id"]) == "archived"
    assert amp.status_of(read["id"]) == "archived"


def test_archived_and_deleted_cells_are_untouched(amp):
    archived = amp.new_cell(scoring={"importance": 1, "decay_rate": 0})
    amp.archive(archived["id"])
    deleted = amp.new_cell(scoring={"importance": 0.1})
    amp.delete_cell(deleted["id"])
    amp.advance(days=400)
    result = amp.run_pass()
    assert result["transitions"] == {"active_to_stale": 0, "stale_to_archived": 0, "stale_to_active": 0}
    assert amp.status_of(archived["id"]) == "archived"
    assert amp.status_of(deleted["id"]) == "deleted"


def test_stale_cells_leave_default_search(amp):
    owner = amp.owner()
    cell = amp.create(amp.body(owner, "stale text", scoring={"importance": 0.1, "decay_rate": 0})).json()
    assert amp.ids(amp.search({"query": "stale text", "owner_id": owner})) == [cell["id"]]
    amp.run_pass()
    assert amp.ids(amp.search({"query": "stale text", "owner_id": owner})) == []
    assert amp.ids(amp.search({"query": "stale text", "owner_id": owner, "include_stale": True})) == [
        cell["id"]
    ]


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_background_scheduler_runs_passes():
    clock = ManualClock()
    app = create_app(Settings(lifecycle_enabled=True, lifecycle_interval_seconds=1), clock=clock)
    state = app.state.amp
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}/amp/v1", timeout=5) as client:
            deadline = time.monotonic() + 5
            while True:
                try:
                    client.get("/health")
                    break
                except httpx.TransportError:
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
            body = {
                "type": "semantic",
                "content": {"text": "low"},
                "identity": {"owner_id": "o", "owner_type": "user"},
                "scoring": {"importance": 0.1, "decay_rate": 0},
            }
            cell = client.post("/memories", json=body, headers={"X-AMP-Agent-ID": "a"}).json()
            deadline = time.monotonic() + 4
            while state.store.get(cell["id"]).status != "stale":
                assert time.monotonic() < deadline, "the scheduler did not run a pass"
                time.sleep(0.1)
            assert app.state.scheduler.passes >= 1
    finally:
        server.should_exit = True
        thread.join(timeout=5)


def test_scheduler_off_means_no_automatic_pass(make_amp):
    amp = make_amp(lifecycle_enabled=False)
    assert amp.app.state.scheduler is None
