"""Collecting the checks without a target fails closed (issue 38 item 3): ``pytest --pyargs
amp_conformance.amp01.checks`` with no ``--amp-base-url`` is a usage error in one line, not 307 skips
and exit 0 that a CI job reads as green."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _pytest(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "AMP_"))}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        "amp_conformance.amp01.checks",
        "-p",
        "no:cacheprovider",
    ]
    return subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_checks_without_a_target_are_a_usage_error(tmp_path: Path) -> None:
    result = _pytest("-n", "0", cwd=tmp_path)
    assert result.returncode != 0, result.stdout[-2000:]
    said = [line for line in (result.stdout + result.stderr).splitlines() if "--amp-base-url" in line]
    assert len(said) == 1 and "target" in said[0], result.stdout[-2000:] + result.stderr[-2000:]
    assert " skipped" not in result.stdout and "passed" not in result.stdout


def test_listing_the_checks_needs_no_target(tmp_path: Path) -> None:
    result = _pytest("-n", "0", "--collect-only", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "test_health.py::" in result.stdout
