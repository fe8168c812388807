"""The progress line: on a terminal only, at the command's default verbosity only."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios

import pytest

from amp_conformance.amp01.protocol import PROTOCOL
from amp_conformance.engine.configuration import build_options
from amp_conformance.engine.progress import Progress
from amp_conformance.engine.run import Run
from tests.ci.helpers import PYTHON, command_env, run_command

ARGS = ["--app", "reference_server:create_app", "--only", "health,cap,read"]
CLEAR = "\r\x1b[2K"


def _on_a_terminal(args: list[str]) -> tuple[int, str]:
    """Run the command with its output on a pseudo-terminal 120 columns wide."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        [PYTHON, "-m", "amp_conformance", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=command_env(TERM="xterm"),
    )
    os.close(slave)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return process.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")


def test_a_terminal_gets_the_progress_line() -> None:
    code, output = _on_a_terminal(ARGS)
    assert code == 0, output[-2000:]
    lines = [part.split("\r")[0] for part in output.split(CLEAR)[1:] if part.startswith("AMP ")]
    assert lines, output[-2000:]
    total = int(lines[0].split()[1].split("/")[1])
    assert any(
        line.startswith(f"AMP {total}/{total} checks") or line.startswith(f"AMP {total - 1}/")
        for line in lines
    )
    assert any("area read" in line for line in lines) and all("requests" in line for line in lines)
    assert all(len(line) < 120 for line in lines)
    assert "verdict: PASS" in output


@pytest.mark.parametrize("extra", [["-q"], ["-v"]])
def test_quiet_and_verbose_runs_get_none(extra: list[str]) -> None:
    code, output = _on_a_terminal([*ARGS, *extra])
    assert code == 0, output[-2000:]
    assert "\x1b[2K" not in output


def test_a_pipe_gets_none() -> None:
    result = run_command(ARGS)
    assert result.returncode == 0
    assert "\x1b[2K" not in result.stdout + result.stderr and "AMP 1/" not in result.stdout


def test_the_line_counts_fuzz_requests() -> None:
    """The count is the run's (Run.note_fuzz_requests), not a module's: two runs do not add up."""
    run = Run(build_options({"amp_base_url": "http://127.0.0.1:9/amp/v1"}, PROTOCOL), PROTOCOL)
    other = Run(build_options({"amp_base_url": "http://127.0.0.1:9/amp/v1"}, PROTOCOL), PROTOCOL)
    progress = Progress(lambda config: run)
    progress._config = object()  # type: ignore[assignment]  # as after _start: the line asks for its run
    progress.total, progress.done, progress.area = 10, 3, "fuzz"
    before = progress.line()
    other.note_fuzz_requests(7)
    unchanged = progress.line()
    run.note_fuzz_requests(25)
    after = progress.line()
    assert before.startswith("AMP 3/10 checks  area fuzz") and "fuzzing: 0 requests" in before
    assert unchanged == before
    assert "fuzzing: 25 requests" in after
