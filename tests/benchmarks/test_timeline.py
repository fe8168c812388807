"""benchmarks/latency.py --timeline: the plugin records every process's events, and the summary
reads them back as seconds from the command's start."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "plugins"))

import amp_timeline


def _events(path: Path, started: float, rows: list[tuple[str, str, float]]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for process, event, at in rows:
            handle.write(json.dumps({"t": started + at, "process": process, "event": event}) + "\n")


def test_a_parallel_run_is_summarised_from_its_workers(tmp_path: Path) -> None:
    path = tmp_path / "timeline.jsonl"
    _events(
        path,
        1000.0,
        [
            ("controller", "configure", 0.3),
            ("gw0", "configure", 0.6),
            ("gw1", "configure", 0.8),
            ("gw0", "collected", 0.9),
            ("gw1", "collected", 1.1),
            ("controller", "start", 1.0),  # xdist relays the workers' events: not the controller's work
            ("gw0", "start", 1.0),
            ("gw1", "start", 1.2),
            ("gw0", "finish", 8.0),
            ("gw1", "finish", 9.0),
            ("gw0", "end", 9.2),
            ("gw1", "end", 9.3),
            ("controller", "end", 9.5),
        ],
    )
    lines = amp_timeline.summary(path, 1000.0)
    assert lines[0] == "configured 0.60-0.80 s, collected 0.90-1.10, first check 1.00-1.20"
    assert lines[1] == (
        "last check ends 8.00-9.00 s (mean 8.50), processes end 9.20-9.30, controller ends 9.50"
    )
    assert lines[2:] == [
        "  gw0: first check 1.00, last ends 8.00, 1 checks",
        "  gw1: first check 1.20, last ends 9.00, 1 checks",
    ]


def test_a_serial_run_is_summarised_from_its_one_process(tmp_path: Path) -> None:
    path = tmp_path / "timeline.jsonl"
    _events(
        path,
        50.0,
        [("controller", "configure", 0.25), ("controller", "start", 0.5), ("controller", "finish", 6.0)],
    )
    assert amp_timeline.summary(path, 50.0)[:2] == [
        "configured 0.25 s, collected -, first check 0.50",
        "last check ends 6.00 s (mean 6.00), processes end -, controller ends -",
    ]


def test_the_plugin_records_a_runs_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "timeline.jsonl"
    monkeypatch.setenv("AMP_TIMELINE", str(path))
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # this test's own worker, if any
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    plugins = ["-p", "amp_timeline", "-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:amp_conformance"]
    code = pytest.main([str(tmp_path / "test_one.py"), "-c", str(tmp_path / "pytest.ini"), "-q", *plugins])
    assert code == pytest.ExitCode.OK
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["event"] for e in events] == ["configure", "collected", "start", "finish", "end"]
    assert {e["process"] for e in events} == {"controller"}
    assert events[2]["check"] == "test_one.py::test_one"
