"""The plugin and the command refuse what they cannot judge (issue 10 §3, §5): empty selections,
report paths that cannot be written and unsupported distribution modes end with a clear message and exit
2, never PASS; plain ``pytest -n N`` with the plugin is a parallel run (issue 13)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from amp_conformance.amp01.selfserve import BundledServer
from amp_conformance.cli import main


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with BundledServer({"AMP_LIFECYCLE_ENABLED": "false"}) as server:
        yield server.url


def _pytest(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            "amp_conformance.amp01.checks",
            "-p",
            "no:cacheprovider",
            *args,
        ],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_plugin_runs_with_n_workers_are_one_merged_run(server_url: str, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    result = _pytest(
        "--amp-base-url",
        server_url,
        "-n",
        "2",
        "--amp-only",
        "health,read",
        f"--amp-json={report}",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "verdict: PASS" in result.stdout and "2 workers" in result.stdout
    document = json.loads(report.read_text())
    assert document["run"]["workers"] == 2
    assert {c["area"] for c in document["checks"]} == {"health", "read"}
    assert all(c["outcome"] in ("pass", "skip") for c in document["checks"])


def test_distribution_modes_that_ignore_the_serial_group_are_refused(server_url: str, tmp_path: Path) -> None:
    result = _pytest(
        "--amp-base-url", server_url, "-n", "2", "--dist", "loadfile", "--amp-only", "health", cwd=tmp_path
    )
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr[-2000:]
    assert "--dist loadfile is not supported" in result.stdout + result.stderr
    assert "verdict: PASS" not in result.stdout


def test_an_empty_selection_is_not_a_pass_in_plugin_mode(server_url: str, tmp_path: Path) -> None:
    result = _pytest("--amp-base-url", server_url, "--amp-only", "health", "-k", "nomatch", cwd=tmp_path)
    assert result.returncode != 0
    assert "verdict: PASS" not in result.stdout


def test_an_empty_selection_is_not_a_pass_in_the_command(
    server_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--base-url", server_url, "--only", "fuzz", "--no-fuzz"]) == 2
    assert "no checks selected" in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["directory", "under-a-file"])
def test_an_unwritable_report_path_is_refused_before_the_run(
    kind: str, server_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("x")
    target = tmp_path if kind == "directory" else tmp_path / "file" / "report.json"
    code = main(["--base-url", server_url, "--only", "health", "--json", str(target)])
    captured = capsys.readouterr()
    assert code == 2
    assert "--json" in captured.err and "Traceback" not in captured.err
    assert "verdict" not in captured.out


def test_json_dash_writes_only_the_report_to_standard_output(server_url: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "amp_conformance",
            "--base-url",
            server_url,
            "--only",
            "health",
            "--json",
            "-",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    document = json.loads(result.stdout)
    assert document["summary"]["verdict"] == "pass"
    assert "verdict: PASS" in result.stderr


def test_list_honours_only_and_level(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--list", "--format", "json", "--only", "health", "--level", "MUST"]) == 0
    checks = json.loads(capsys.readouterr().out)["checks"]
    assert checks and {c["area"] for c in checks} == {"health"} and {c["level"] for c in checks} == {"MUST"}


def test_format_without_list_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--format", "json"]) == 2
    assert "--format goes with --list" in capsys.readouterr().err


def test_help_names_no_environment_variable_the_command_does_not_read(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import re

    with pytest.raises(SystemExit):
        main(["--help"])
    named = set(re.findall(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b", capsys.readouterr().out))
    read_by_the_command = {"GITHUB_STEP_SUMMARY", "GITHUB_ACTIONS"}
    assert named <= read_by_the_command, named - read_by_the_command


def test_list_faults_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    command = f"{sys.executable} -m reference_server --list-faults --json | head -c 10"
    result = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "", result.stderr


CRASHING_CHECKS = '''
import os

from amp_conformance import MUST, Amp01Context, check


@check("AMP-HEALTH-01", level=MUST)
def test_health_answers(amp: Amp01Context) -> None:
    """GET /health answers."""
    amp.expect_status(amp.anonymous().get("/health"), 200)


@check("AMP-HEALTH-02", level=MUST)
def test_the_worker_dies(amp: Amp01Context) -> None:
    """The worker process dies in the middle of a check."""
    os._exit(3)
'''


def test_a_worker_dying_with_a_check_in_hand_makes_the_run_incomplete(
    server_url: str, tmp_path: Path
) -> None:
    (tmp_path / "test_crash.py").write_text(CRASHING_CHECKS)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    result = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "test_crash.py", "-p", "no:cacheprovider", "-n", "2"),
            *("--max-worker-restart", "1", "--amp-base-url", server_url),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    assert "verdict: INCOMPLETE" in result.stdout, result.stdout[-3000:]
    assert "verdict: PASS" not in result.stdout
