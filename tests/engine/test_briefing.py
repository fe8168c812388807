"""The briefing a parallel run's controller posts while its workers start (engine.parallel.Briefing),
and the tiers in which the workers start (engine.parallel.start_niceness)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.engine.parallel import DETAIL_PATH_KEY, Briefing, await_briefing, start_niceness


def test_a_worker_reads_the_briefing_once_the_preflight_has_posted_it() -> None:
    briefing = Briefing()
    assert briefing.open() and briefing.path is not None
    release = threading.Event()

    def settle() -> dict[str, Any]:
        release.wait(5)
        return {"amp_run_id": "r", "amp_preflight_problem": None, "amp_protocol": {"x": [1]}}

    briefing.start(settle)
    assert not os.path.exists(briefing.path)  # not before the preflight is done
    waiting: list[dict[str, Any]] = []
    worker = threading.Thread(target=lambda: waiting.append(await_briefing(str(briefing.path), 10)))
    worker.start()
    time.sleep(0.1)
    assert not waiting  # the worker waits for it
    release.set()
    worker.join(10)
    assert waiting == [{"amp_run_id": "r", "amp_preflight_problem": None, "amp_protocol": {"x": [1]}}]
    assert briefing.outcome(1) == waiting[0]
    folder = briefing.folder
    briefing.close()
    assert folder is not None and not os.path.exists(folder)


def test_the_workers_start_on_the_preflight_and_read_the_detail_when_it_is_posted() -> None:
    """The first part (the preflight's outcome) names where the second (what the protocol detects, a
    few requests more) will be: the workers start on the first."""
    briefing = Briefing()
    assert briefing.open() and briefing.path is not None and briefing.detail_path is not None
    release = threading.Event()

    def detail() -> dict[str, Any]:
        release.wait(5)
        return {"conventions": {"x": 1}}

    briefing.start(lambda: {"amp_run_id": "r", "amp_preflight_problem": None}, detail)
    first = await_briefing(briefing.path, 5)
    assert first == {"amp_run_id": "r", "amp_preflight_problem": None, DETAIL_PATH_KEY: briefing.detail_path}
    assert not os.path.exists(briefing.detail_path)  # posted once detected, not before
    release.set()
    assert await_briefing(briefing.detail_path, 5) == {"conventions": {"x": 1}}
    assert briefing.outcome(5) == {
        "amp_run_id": "r",
        "amp_preflight_problem": None,
        "amp_protocol": {"conventions": {"x": 1}},
    }
    briefing.close()


def test_no_detail_follows_a_preflight_problem_and_a_failed_detail_is_empty() -> None:
    failed = Briefing()
    assert failed.open() and failed.path is not None
    failed.start(lambda: {"amp_preflight_problem": "down"}, lambda: {"never": True})
    assert failed.outcome(5) == {"amp_preflight_problem": "down"}
    assert await_briefing(failed.path, 5) == {"amp_preflight_problem": "down"}
    assert not os.path.exists(str(failed.detail_path))
    failed.close()

    def broken() -> dict[str, Any]:
        raise RuntimeError("the detection broke")

    empty = Briefing()
    assert empty.open() and empty.detail_path is not None
    empty.start(lambda: {"amp_preflight_problem": None}, broken)
    assert empty.outcome(5) == {"amp_preflight_problem": None, "amp_protocol": {}}
    assert await_briefing(empty.detail_path, 5) == {}
    empty.close()


def test_a_preflight_that_raises_posts_a_problem_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    briefing = Briefing()
    assert briefing.open() and briefing.path is not None

    def settle() -> dict[str, Any]:
        raise RuntimeError("boom")

    briefing.start(settle)
    outcome = briefing.outcome(5)
    assert outcome is not None and "RuntimeError: boom" in str(outcome["amp_preflight_problem"])
    assert await_briefing(briefing.path, 1) == outcome
    briefing.close()
    assert "Traceback" not in capsys.readouterr().err


def test_no_briefing_in_time_or_an_unreadable_one_is_a_preflight_problem(tmp_path: Path) -> None:
    started = time.monotonic()
    late = await_briefing(str(tmp_path / "never.json"), 0.3)
    assert "no briefing from the controller within" in late["amp_preflight_problem"]
    assert time.monotonic() - started < 2
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert "cannot read the controller's briefing" in await_briefing(str(broken), 1)["amp_preflight_problem"]
    scalar = tmp_path / "scalar.json"
    scalar.write_text(json.dumps([1]))
    assert "not a JSON object" in await_briefing(str(scalar), 1)["amp_preflight_problem"]


def test_without_a_temporary_folder_there_is_no_briefing_file(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(**kwargs: Any) -> str:
        raise PermissionError("read-only")

    monkeypatch.setattr("tempfile.mkdtemp", refuse)
    briefing = Briefing()
    assert not briefing.open() and briefing.path is None  # the plugin then briefs in workerinput


@pytest.mark.parametrize(
    ("workers", "cores", "expected"),
    [
        (8, 2, [0, 0, 6, 6, 13, 13, 19, 19]),
        (4, 2, [0, 0, 19, 19]),
        (2, 2, [0, 0]),  # a core per worker: all start at the run's own priority
        (8, 8, [0] * 8),
        (3, 1, [0, 10, 19]),
    ],
)
def test_workers_start_in_tiers_of_one_per_core(workers: int, cores: int, expected: list[int]) -> None:
    assert [start_niceness(i, workers, cores) for i in range(workers)] == expected


def test_many_tiers_never_go_past_the_lowest_priority() -> None:
    levels = [start_niceness(i, 64, 2) for i in range(64)]
    assert levels == sorted(levels) and levels[0] == 0 and max(levels) == 19


def test_an_interrupt_while_the_workers_start_is_raised_once_they_have() -> None:
    from amp_conformance.engine.parallel import _InterruptGate

    gate = _InterruptGate()
    assert not gate.defer(2)  # not starting workers: the handler raises at once
    gate.release()  # nothing held, nothing raised
    gate.hold()
    assert gate.defer(2) and gate.defer(15)
    with pytest.raises(KeyboardInterrupt, match="signal 2"):
        gate.release()
    assert not gate.defer(2)
