"""``matrix`` on Ctrl-C or SIGTERM (issue 38 item 5): no new implementation starts, the running ones
get the interrupt and end, and the matrix exits 2 saying it was interrupted."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SLOW = """
[[implementation]]
name = "{name}"
protocol = "amp-0.1"
server-cmd = "{{python}} -c 'import time; time.sleep(120)' {{port}}"
startup-timeout = 100
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_matrix_starts_nothing_more_and_exits_2(signum: int, tmp_path: Path) -> None:
    names = ("first", "second", "third")
    (tmp_path / "m.toml").write_text("".join(SLOW.format(name=n) for n in names), encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, "-m", "amp_conformance", "matrix", "m.toml", "--jobs", "1", "--no-fuzz"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    seen: list[str] = []
    for line in process.stdout:
        seen.append(line)
        if line.startswith("[first] $"):
            break
    time.sleep(1.5)  # the first implementation's run is waiting for its server
    started = time.monotonic()
    process.send_signal(signum)
    try:
        rest, _ = process.communicate(timeout=60)
    finally:
        process.kill()
    output = "".join(seen) + rest
    assert process.returncode == 2, output
    assert time.monotonic() - started < 30, output
    assert "[second] $" not in output and "[third] $" not in output, output
    last = [line for line in output.splitlines() if line.strip()][-1]
    assert "interrupted" in last and signal.Signals(signum).name in last, output
