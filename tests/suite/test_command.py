"""The command on broken or absent servers, and the plugin's silence in unrelated projects."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from amp_conformance.cli import main
from tests.suite.badservers import answers, free_port, never_answers, raw_server

PYTHON = sys.executable


def test_an_unreachable_server_is_one_line_and_exit_2(capsys: object) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    result = subprocess.run(
        [PYTHON, "-m", "amp_conformance", "--base-url", url, "--timeout", "2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "cannot reach" in result.stderr and url in result.stderr
    assert result.stdout == ""
    assert elapsed < 2 * 2 + 3  # twice the timeout, plus interpreter start-up


def test_a_server_that_never_answers_is_refused_by_the_preflight(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 10 §5: one clear line and exit 2 after a short preflight, not a failure per check."""
    report = tmp_path / "report.json"
    with raw_server(never_answers) as url:
        started = time.monotonic()
        code = main(
            ["--base-url", url, "--timeout", "1", "--deadline", "3", "--no-fuzz", "--json", str(report)]
        )
        elapsed = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2
    assert "cannot reach" in err and err.count("amp-conformance:") == 1, err
    assert "Traceback" not in err
    assert elapsed < 15


@pytest.mark.parametrize(
    ("status", "kind", "body"),
    [
        ("200 OK", "text/html", b"<html><body>a static site</body></html>"),
        ("404 Not Found", "text/html", b"<html><body>no such page</body></html>"),
        ("404 Not Found", "application/json", b'{"detail": "Not Found"}'),
    ],
)
def test_a_url_that_is_no_amp_server_gets_one_message(
    status: str, kind: str, body: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    """A static file server or a wrong prefix (issue 10 §5): one message, exit 2, no check run."""
    with raw_server(answers(status, kind, body)) as url:
        code = main(["--base-url", url + "/amp", "--timeout", "2", "--no-fuzz"])
    captured = capsys.readouterr()
    assert code == 2
    assert "does not look like an AMP server" in captured.err
    assert "FAIL" not in captured.out and "Traceback" not in captured.err


@pytest.mark.parametrize("server", ["no-amp-server", "never-answers"])
def test_a_failed_preflight_with_workers_is_still_one_line_and_exit_2(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With --workers the preflight runs while the workers start (engine.parallel.Briefing): its
    problem is still the run's one message and exit 2; no worker runs a check, the report says
    INCOMPLETE (issue 38 item 18)."""
    handler = (
        answers("200 OK", "text/html", b"<html><body>a static site</body></html>")
        if server == "no-amp-server"
        else never_answers
    )
    report = tmp_path / "report.json"
    with raw_server(handler) as url:
        code = main(
            [
                "--base-url",
                url,
                "--timeout",
                "1",
                "--only",
                "health,cap",
                "--workers",
                "2",
                "--json",
                str(report),
            ]
        )
    captured = capsys.readouterr()
    assert code == 2
    reason = "does not look like an AMP server" if server == "no-amp-server" else "cannot reach"
    assert reason in captured.err and captured.err.count("amp-conformance:") == 1, captured.err
    assert "Traceback" not in captured.err and "FAIL" not in captured.out
    assert '"verdict": "incomplete"' in report.read_text(encoding="utf-8")


def test_an_html_gateway_page_is_refused_not_crashed(capsys: pytest.CaptureFixture[str]) -> None:
    """A proxy answering 502 HTML pages for everything: the preflight names what came back, exit 2."""
    page = answers("502 Bad Gateway", "text/html", b"<html><body>upstream down</body></html>")
    with raw_server(page) as url:
        code = main(["--base-url", url, "--timeout", "2", "--only", "health"])
    err = capsys.readouterr().err
    assert code == 2
    assert "answered 502 (text/html)" in err and "Traceback" not in err


def test_usage_errors_exit_2(capsys: object) -> None:
    assert main(["--base-url", "http://127.0.0.1:1", "--only", "nonsense"]) == 2
    assert main(["--base-url", "not a url"]) == 2
    assert main(["--base-url", "http://127.0.0.1:1", "--allow-global-effects"]) == 2


def test_installing_the_plugin_changes_nothing_in_an_unrelated_project(tmp_path: Path) -> None:
    (tmp_path / "test_sample.py").write_text(
        "import pytest\n"
        "def test_ok():\n    assert 1\n"
        "def test_bad():\n    assert 0\n"
        "@pytest.mark.skip(reason='because')\ndef test_skipped():\n    pass\n"
    )

    def run(*extra: str) -> tuple[int, list[str]]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AMP_")}
        result = subprocess.run(
            [PYTHON, "-m", "pytest", "-rA", "-p", "no:cacheprovider", "-q", *extra],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        lines = [line for line in result.stdout.splitlines() if not line.startswith(("plugins:", "rootdir"))]
        return result.returncode, [line.split(" in ")[0] for line in lines]

    with_plugin = run()
    without_plugin = run("-p", "no:amp_conformance")
    assert with_plugin == without_plugin
    assert with_plugin[0] == 1


def test_option_values_that_look_like_options_reach_the_plugin() -> None:
    from amp_conformance.cli import suite_args

    args = suite_args({"amp_admin_token": "-starts-with-dash", "amp_api_key": ["a=-k"], "amp_no_fuzz": True})
    assert sorted(args) == ["--amp-admin-token=-starts-with-dash", "--amp-api-key=a=-k", "--amp-no-fuzz"]


def test_list_names_every_check_with_its_ids(capsys: pytest.CaptureFixture[str]) -> None:
    from amp_conformance.cli import list_checks

    assert main(["--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    checks = list_checks()
    assert lines[-1] == f"{len(checks)} checks"
    assert len(lines) == 2 * len(checks) + 1
    assert all(line.split()[0] in ("MUST", "SHOULD", "MAY") for line in lines[:-1:2])
    assert all("AMP-" in line for line in lines[1:-1:2])


def test_no_fuzz_shows_the_fuzz_checks_as_skipped_with_the_reason(tmp_path: Path) -> None:
    """Issue 21: ``--no-fuzz`` skips the fuzz area with its reason (never silently), for each protocol."""
    import json

    for protocol in ("amp-0.1", "amp-1.1"):
        report = tmp_path / f"{protocol}.json"
        only = "fuzz,read" if protocol == "amp-0.1" else "fuzz,init"
        assert main(["--protocol", protocol, "--only", only, "--no-fuzz", "-q", "--json", str(report)]) == 0
        checks = json.loads(report.read_text())["checks"]
        fuzz = [c for c in checks if c["area"] == "fuzz"]
        assert fuzz and {c["outcome"] for c in fuzz} == {"skip"}, protocol
        assert {c["message"] for c in fuzz} == {"the fuzz area is not run (--no-fuzz)"}
        assert any(c["outcome"] == "pass" for c in checks if c["area"] != "fuzz")
