"""A broken step no selected check asks about, in a parallel run: each worker's first check hitting it
reports it, and the controller keeps one reporter (``verdict.resolve`` folding the workers' root
steps). The root steps cross from the workers as plain data: a ``Level`` member in them once made
execnet fail and the run die with an internal error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

#: The status-only archive PATCH is refused (AMP-PATCH-10): list, read and search checks need an
#: archived cell, and no check of those areas asks about AMP-PATCH-10 itself.
FAULT = "archive-status-only-refused"
AREAS = "list,read,search"


def _run(folder: Path, name: str, *args: str) -> dict[str, Any]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "AMP_"))}
    environment["AMP_REFERENCE_FAULTS"] = FAULT
    path = folder / f"{name}.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "amp_conformance",
            "--no-fuzz",
            "-q",
            "--only",
            AREAS,
            "--json",
            str(path),
            *args,
        ],
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert path.exists(), (done.stdout + done.stderr)[-3000:]
    report: dict[str, Any] = json.loads(path.read_text())
    report["exit_code"] = done.returncode
    return report


def _blocked_under_one_reporter(report: dict[str, Any]) -> tuple[str, int]:
    failed = [c for c in report["checks"] if c["outcome"] == "fail"]
    assert [c["finding_requirements"] for c in failed] == [["AMP-PATCH-10"]], failed
    blocked = [c for c in report["checks"] if c["outcome"] == "blocked"]
    assert blocked and all(c["blocked_by"]["check"] == failed[0]["id"] for c in blocked)
    assert all(c["blocked_by"]["requirement"] == "AMP-PATCH-10" for c in blocked)
    return failed[0]["id"], len(blocked)


@pytest.mark.slow
def test_a_broken_step_nobody_asks_about_is_reported_once_in_a_parallel_run(tmp_path: Path) -> None:
    serial = _run(tmp_path, "serial")
    parallel = _run(tmp_path, "parallel", "--workers", "2")
    assert serial["exit_code"] == parallel["exit_code"] == 1
    assert parallel["run"]["workers"] == 2
    _, serial_blocked = _blocked_under_one_reporter(serial)
    _, parallel_blocked = _blocked_under_one_reporter(parallel)
    assert parallel_blocked == serial_blocked
    assert {c["id"] for c in parallel["checks"]} == {c["id"] for c in serial["checks"]}
