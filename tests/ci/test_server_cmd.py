"""``--server-cmd``: the suite starts the server under test and never leaves a process of it behind."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from amp_conformance.amp01.protocol import PROTOCOL as AMP01
from amp_conformance.cli import main
from amp_conformance.engine.server_process import ServerProcess, ServerStartError
from tests.ci.helpers import (
    PYTHON,
    REFERENCE_CMD,
    SERVERS,
    command_env,
    marked_processes,
    new_marker,
    read_json,
    run_command,
)


def _gone(marker: str, within: float = 10.0) -> list[int]:
    """The marked processes still running after waiting up to ``within`` seconds for them to go."""
    end = time.monotonic() + within
    while (alive := marked_processes(marker)) and time.monotonic() < end:
        time.sleep(0.1)
    return alive


@pytest.mark.slow
def test_the_reference_server_passes_and_leaves_no_process() -> None:
    marker = new_marker()
    result = run_command(
        [
            "--server-cmd",
            REFERENCE_CMD,
            "--admin-token",
            "T",
            "--server-env",
            "AMP_ADMIN_TOKEN=T",
            "--allow-global-effects",
            "--no-fuzz",
            "--server-env",
            f"AMP_CI_MARK={marker}",
        ]
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr
    assert "verdict: PASS" in result.stdout
    assert marked_processes(marker) == []


def test_a_faulty_server_exits_1_and_leaves_no_process() -> None:
    marker = new_marker()
    result = run_command(
        [
            "--server-cmd",
            REFERENCE_CMD,
            "--server-env",
            "AMP_REFERENCE_FAULTS=limit-clamped",
            "--server-env",
            f"AMP_CI_MARK={marker}",
            "--only",
            "list",
            "--no-fuzz",
        ]
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr
    assert "AMP-LIST-05" in result.stdout
    assert marked_processes(marker) == []


def test_a_server_that_exits_at_once_is_exit_2_within_5_s(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    code = main(["--server-cmd", "false"])
    elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2
    assert elapsed < 5
    assert "exited with code 1 before it answered GET /health" in err
    assert "the server wrote nothing to its log" in err  # `false` says nothing: the tail says so


def test_the_log_tail_is_printed_with_the_last_40_lines() -> None:
    script = "import sys\nfor n in range(100): print(f'line-{n}')\nprint('\\x1b[31mred')\nsys.exit(3)"
    result = run_command(["--server-cmd", f"python -c {shlex.quote(script)}"], timeout=60)
    assert result.returncode == 2
    assert "exited with code 3" in result.stderr
    assert "line-99" in result.stderr and "line-61" in result.stderr and "line-60" not in result.stderr
    assert "\x1b" not in result.stderr and "\\x1b[31mred" in result.stderr  # server text made printable
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--server-cmd", "no-such-server-binary --port {port}"],
            "server command not found: no-such-server-binary",
        ),
        (["--server-cmd", "python -c 'pass'", "--server-env", "NOEQUALS"], "--server-env takes KEY=VALUE"),
        (["--server-cmd", "python 'unclosed"], "cannot parse --server-cmd"),
        (["--server-cmd", "true", "--only", "nonsense"], "nonsense"),
        (["--server-cmd", "true", "--app", "x:y"], "--app and --server-cmd"),
        (
            ["--base-url", "http://127.0.0.1:1", "--server-env", "A=B"],
            "--server-env and --server-log go with",
        ),
    ],
)
def test_bad_server_commands_are_one_line_and_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err


def test_a_server_that_never_becomes_healthy_is_stopped_and_exit_2() -> None:
    marker = new_marker()
    started = time.monotonic()
    result = run_command(
        [
            "--server-cmd",
            f"python {SERVERS} unhealthy {{port}}",
            "--startup-timeout",
            "2",
            "--server-env",
            f"AMP_CI_MARK={marker}",
        ],
        timeout=60,
    )
    assert result.returncode == 2
    assert "did not become healthy within 2 s" in result.stderr and "answered 503" in result.stderr
    assert "unhealthy-marker" in result.stderr  # the log tail
    assert time.monotonic() - started < 30
    assert marked_processes(marker) == []


def test_a_server_that_spawns_a_child_leaves_neither_behind() -> None:
    marker = new_marker()
    result = run_command(
        [
            "--server-cmd",
            f"python {SERVERS} spawn {{port}}",
            "--only",
            "health",
            "--server-env",
            f"AMP_CI_MARK={marker}",
        ]
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert marked_processes(marker) == []


def test_a_crash_of_the_suite_inside_the_with_block_stops_the_group() -> None:
    marker = new_marker()
    with pytest.raises(RuntimeError, match="the suite crashed"):  # noqa: SIM117 (the raise is the test)
        with ServerProcess(
            f"{PYTHON} {SERVERS} spawn {{port}}", env={"AMP_CI_MARK": marker}, health_url=AMP01.health_url
        ) as server:
            assert len(marked_processes(marker)) == 2, server.log_tail()  # the server and its child
            raise RuntimeError("the suite crashed")
    assert marked_processes(marker) == []


def test_start_errors_stop_what_was_started() -> None:
    marker = new_marker()
    server = ServerProcess(
        f"{PYTHON} {SERVERS} unhealthy {{port}}",
        env={"AMP_CI_MARK": marker},
        startup_timeout=1,
        health_url=AMP01.health_url,
    )
    with pytest.raises(ServerStartError, match="did not become healthy"):
        server.start()
    assert marked_processes(marker) == []


def _start_suite(marker: str, *extra: str) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [
            PYTHON,
            "-m",
            "amp_conformance",
            "--server-cmd",
            f"python {SERVERS} spawn {{port}}",
            "--server-env",
            f"AMP_CI_MARK={marker}",
            "--no-fuzz",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=command_env(),
        stdin=subprocess.DEVNULL,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    assert "started the server" in line, line + process.stderr.read()
    time.sleep(1.0)  # checks are running now
    assert len(marked_processes(marker)) == 2
    return process


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_suite_mid_run_leaves_no_server(sig: signal.Signals) -> None:
    marker = new_marker()
    process = _start_suite(marker)
    process.send_signal(sig)
    out, err = process.communicate(timeout=60)
    # 2, or death by SIGINT when the interrupt came while Python was importing (the interpreter then
    # re-raises it at exit, as a shell expects of an interrupted program): never a success
    assert process.returncode in (2, -signal.SIGINT), out[-2000:] + err
    assert "interrupted" in err or "KeyboardInterrupt" in out or "Interrupted" in out + err
    assert "Traceback" not in err
    assert marked_processes(marker) == []


def test_a_killed_suite_is_cleaned_up_by_the_watchdog() -> None:
    marker = new_marker()
    process = _start_suite(marker)
    process.kill()
    process.communicate(timeout=30)
    assert _gone(marker, within=15) == []


def test_a_server_dying_mid_run_turns_the_rest_into_errors_quoting_its_log(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = run_command(
        [
            "--server-cmd",
            f"python {SERVERS} die-after {{port}} 40",
            "--only",
            "read,patch,list,del",
            "--json",
            str(report),
        ]
    )
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr
    assert "killed" not in result.stderr and "exited with code 7 during the run" in result.stderr
    document = read_json(report)
    errors = [c for c in document["checks"] if c["outcome"] == "error"]
    assert len(errors) >= 5
    # issue 23: the 40-line log tail is printed once, not in each of the remaining errors
    quoting = [c for c in errors if "dying-marker: giving up after 40 requests" in c["message"]]
    assert len(quoting) <= 1  # the check that was running when the server died, if one was
    output = result.stdout + result.stderr
    assert output.count("dying-marker: giving up after 40 requests") == 1, output[-4000:]
    rest = [c for c in errors if c not in quoting]
    # the check in flight when the server died may end before the exit is seen (a plain transport
    # error); every check after it says where the log tail is
    lacking = [c for c in rest if "its log tail is printed at the end of the run" not in c["message"]]
    assert len(quoting) + len(lacking) <= 1, [c["message"][:200] for c in lacking]
    assert document["summary"]["verdict"] == "incomplete"


def test_json_on_standard_output_stays_valid_with_a_started_server() -> None:
    result = run_command(["--server-cmd", REFERENCE_CMD, "--only", "health", "--json", "-"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout)["summary"]["verdict"] == "pass"
    assert "started the server" in result.stderr


def test_the_port_reaches_the_command_the_url_and_the_environment() -> None:
    server = ServerProcess("srv --port {port} --name x", base_url="http://127.0.0.1:{port}/amp/v1")
    assert server.argv == ["srv", "--port", str(server.port), "--name", "x"]
    assert server.url == f"http://127.0.0.1:{server.port}/amp/v1"
    assert server.health_url == f"http://127.0.0.1:{server.port}/amp/v1/health"
    assert server.env["PORT"] == str(server.port)
    fixed = ServerProcess("srv --port {port}", base_url="http://127.0.0.1:8123", env={"PORT": "9"})
    assert fixed.argv == ["srv", "--port", "8123"] and fixed.url == "http://127.0.0.1:8123"
    assert fixed.env["PORT"] == "9"  # --server-env wins
