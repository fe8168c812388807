"""Issue 23 §1: no way out of the command gives a false verdict. Each observed command: one line on
standard error, the documented exit code (2: no verdict), no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from amp_conformance.cli import main

PYTHON = sys.executable


def _one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    assert out == "", out  # nothing started: not even the self-test's announcement
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("amp-conformance: "), err
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--base-url", "http://127.0.0.1:abc"], "not a valid URL"),
        (["--base-url", "http://[::1"], "not a valid URL"),
        (["--base-url", "http://127.0.0.1:8080/a b"], "spaces"),
        (["--base-url", "ftp://example.org"], "not an http(s) URL"),
        (["--only", "nosucharea"], "unknown area 'nosucharea'"),
        (["--only", ""], "names no area"),
        (["--only", " , "], "names no area"),
        (["--timeout", "-1"], "--timeout must be positive"),
        (["--deadline", "0"], "--deadline must be positive"),
        (["--fuzz-examples", "-5"], "--fuzz-examples must be at least 1"),
        (["--fuzz-seconds", "-1"], "--fuzz-seconds must be positive"),
        (["--openapi", "/nonexistent.json"], "no such file"),
        (["--protocol", "amp-1.1", "--mcp-command", "foo-no-such-program"], "not found on PATH"),
        (["--server-cmd", "foo-no-such-program --port {port}"], "server command not found"),
        (["--markdown", "-", "--json", "-"], "standard output"),
        (["--junit", "-"], "--junit writes a file"),
        (["--badge", "-"], "--badge writes a file"),
        (["--workers", "0"], "--workers"),
    ],
)
def test_a_bad_option_is_one_line_and_exit_2_before_anything_starts(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    assert said in _one_line_exit_2(capsys, argv)


def test_a_target_option_without_a_target_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """``--api-key`` without ``--base-url`` was dropped silently: the self-test sets its own keys."""
    code = main(["--api-key", "agent=key", "--only", "read", "--no-fuzz"])
    _, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines() == [
        "amp-conformance: --api-key: goes with a server you give (--base-url, --server-cmd, --app); "
        "the self-test sets its own"
    ]


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("AMP_REFERENCE_FAULTS", "no-such-fault", "unknown fault name"),
        ("AMP_MAX_CELL_SIZE_BYTES", "abc", "is not an integer"),
        ("AMP_REFERENCE_CONVENTION", "bogus", "must be 'reference' or 'upstream'"),
    ],
)
def test_a_bad_bundled_server_setting_is_one_line_and_exit_2(
    variable: str, value: str, said: str, tmp_path: Path
) -> None:
    env = {**os.environ, variable: value}
    result = subprocess.run(
        [PYTHON, "-m", "amp_conformance", "--no-fuzz", "--only", "read"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0], result.stderr
    assert lines[0].startswith("amp-conformance: the bundled reference server cannot start: ")


@pytest.mark.parametrize("url", ["http://127.0.0.1:abc", "http://[::1", "http://127.0.0.1:1/a b"])
def test_a_url_typo_is_one_line_and_exit_2_in_the_run_and_in_validate_contract(
    url: str, tmp_path: Path
) -> None:
    for argv in (["--base-url", url], ["validate-contract", url]):
        result = subprocess.run(
            [PYTHON, "-m", "amp_conformance", *argv],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert result.returncode == 2, (argv, result.stderr)
        output = result.stdout + result.stderr
        assert "Traceback" not in output and len(output.strip().splitlines()) == 1, output
        assert "not a valid URL" in output or "space" in output


def test_workers_are_bounded_by_the_checks_selected(capsys: pytest.CaptureFixture[str]) -> None:
    """``--workers 500`` hung with load 150: one line says how many start, and the run ends."""
    code = main(["--workers", "500", "--only", "health", "--no-fuzz", "-q"])
    out, err = capsys.readouterr()
    assert code == 0, err
    from amp_conformance.cli import _protocol, _selected, list_checks

    values = {"amp_only": "health", "amp_no_fuzz": True}
    units = len(_selected(list_checks(), values, _protocol(values)))
    assert f"amp-conformance: --workers 500: using {min(units, 16)} ({units} check(s) selected)" in err
    assert "verdict: PASS" in out


@pytest.mark.parametrize(
    ("selection", "units"),
    [(["--only", "AMP-CRE-01"], 2), (["--check", "test_ids_are_unique"], 1)],
)
def test_workers_are_bounded_by_a_selection_of_requirement_ids_or_checks(
    selection: list[str], units: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--only ID`` and ``--check`` select fewer checks than their areas: the bound counts them."""
    from amp_conformance.cli import _protocol, _selected, list_checks

    values = {"amp_only": "AMP-CRE-01"} if selection[0] == "--only" else {"amp_check": [selection[1]]}
    assert len(_selected(list_checks(), {**values, "amp_no_fuzz": True}, _protocol(values))) == units
    code = main(["--workers", "8", *selection, "--no-fuzz", "-q"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"amp-conformance: --workers 8: using {units} ({units} check(s) selected)" in err
    assert "verdict: PASS" in out
