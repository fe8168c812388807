"""A pytest plugin for benchmarks/latency.py ``--timeline``: when each process of a run (the
controller, each worker) configures, collects, starts and ends each check and ends, as JSON lines
appended to the file named by ``AMP_TIMELINE`` (wall-clock times, comparable across processes).

Loaded through ``PYTEST_PLUGINS=amp_timeline`` with this folder on ``PYTHONPATH``; it reads nothing
of the run and changes nothing in it. :func:`summary` reads the file back.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

CONTROLLER = "controller"


def _record(event: str, **fields: Any) -> None:
    path = os.environ.get("AMP_TIMELINE")
    if not path:
        return
    process = os.environ.get("PYTEST_XDIST_WORKER", CONTROLLER)
    line = json.dumps({"t": time.time(), "process": process, "event": event, **fields})
    with open(path, "a", encoding="utf-8") as handle:  # one short line per write: appends stay whole
        handle.write(line + "\n")


def pytest_configure(config: pytest.Config) -> None:
    _record("configure")


def pytest_collection_finish(session: pytest.Session) -> None:
    _record("collected", items=len(session.items))


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _record("start", check=nodeid)


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    _record("finish", check=nodeid)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    _record("end")


def summary(path: Path, started: float) -> list[str]:
    """Where a run's time went, in seconds from ``started`` (the command's start): when the workers
    (or, serially, the one process) were ready, ran their first and last checks, and ended."""
    events = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_process: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        by_process[event["process"]].append(event)
    runners = sorted(p for p in by_process if p != CONTROLLER) or [CONTROLLER]

    def when(process: str, event: str, pick: Any = min) -> float | None:
        times = [e["t"] - started for e in by_process[process] if e["event"] == event]
        return pick(times) if times else None

    def span(values: list[float | None]) -> str:
        known = [v for v in values if v is not None]
        if not known:
            return "-"
        low, high = min(known), max(known)
        return f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f}-{high:.2f}"

    ends = [when(p, "finish", max) for p in runners]
    known_ends = [e for e in ends if e is not None]
    firsts = [when(p, "start") for p in runners]
    lines = [
        f"configured {span([when(p, 'configure') for p in runners])} s, collected "
        f"{span([when(p, 'collected') for p in runners])}, first check {span(firsts)}",
        f"last check ends {span(ends)} s"
        + (f" (mean {statistics.mean(known_ends):.2f})" if known_ends else "")
        + f", processes end {span([when(p, 'end', max) for p in runners])}, controller ends "
        f"{span([when(CONTROLLER, 'end', max)])}",
    ]
    if len(runners) > 1:
        for process in runners:
            checks = sum(1 for e in by_process[process] if e["event"] == "start")
            lines.append(
                f"  {process}: first check {span([when(process, 'start')])}, last ends "
                f"{span([when(process, 'finish', max)])}, {checks} checks"
            )
    return lines
