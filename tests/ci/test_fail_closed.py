"""Fail closed (issue 38): an empty target, an option that cannot work, a malformed argument is a
usage error in one line (exit 2) before anything starts, never a self-test or a run."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from amp_conformance.cli import main


def _usage_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1, captured.err
    assert "verdict" not in captured.out
    return lines[0]


@pytest.mark.parametrize(
    ("arguments", "flag"),
    [
        (["--server-cmd", ""], "--server-cmd"),
        (["--base-url", ""], "--base-url"),
        (["--app", ""], "--app"),
        (["--server-cmd", "  "], "--server-cmd"),
        (["--protocol", "amp-1.1", "--mcp-command", ""], "--mcp-command"),
    ],
)
def test_an_empty_target_is_a_usage_error_not_a_self_test(
    arguments: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*arguments, "--only", "health" if "amp-1.1" not in arguments else "init"]) == 2
    line = _usage_line(capsys)
    assert flag in line and "empty" in line


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (["--level", "HIGH"], ["--level: HIGH is not one of MUST, SHOULD, MAY", "see --help"]),
        (["--timeout", "soon"], ["--timeout", "see --help"]),
        (["--no-such-option"], ["--no-such-option", "see --help"]),
        (["--base-url", "http://127.0.0.1:99999"], ["port", "out of range"]),
        (["--base-url", "http://[::1"], ["malformed", "bracket"]),
    ],
)
def test_malformed_arguments_say_the_real_problem_in_one_line(
    arguments: list[str], words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    try:
        code = main(arguments)
    except SystemExit as exc:  # argparse's own errors end the process
        code = exc.code
    assert code == 2
    line = _usage_line(capsys)
    for word in words:
        assert word in line, line


def test_argparse_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["--level", "HIGH"])
    assert raised.value.code == 2


@pytest.mark.parametrize(
    "arguments",
    [
        ["--html", "/proc/r.html"],
        ["--json", "/proc/r.json"],
        ["-k", "and ("],
    ],
)
def test_options_that_cannot_work_are_refused_before_anything_starts(
    arguments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    assert main([*arguments, "--only", "health"]) == 2
    assert time.monotonic() - started < 3
    line = _usage_line(capsys)
    assert arguments[0] in line
    assert not Path("/proc/r.html").exists()


def test_openapi_that_is_no_openapi_document_is_refused_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    not_openapi = tmp_path / "cells.json"
    not_openapi.write_text('{"hello": "world"}', encoding="utf-8")
    missing = tmp_path / "missing.json"
    for path in (not_openapi, missing):
        assert main(["--openapi", str(path), "--only", "health"]) == 2
        line = _usage_line(capsys)
        assert "--openapi" in line and str(path) in line
