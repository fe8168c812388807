"""A preflight failure still writes the reports asked for (issue 38 item 18): CI keeps its artefacts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from amp_conformance.cli import main
from tests.suite.badservers import answers, raw_server


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_preflight_failure_writes_an_incomplete_report(
    workers: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    paths = {
        flag: tmp_path / name
        for flag, name in [("--json", "r.json"), ("--junit", "r.xml"), ("--markdown", "r.md")]
    }
    page = answers("200 OK", "text/html", b"<html><body>a static site</body></html>")
    with raw_server(page) as url:
        arguments = ["--base-url", url, "--timeout", "2", "--no-fuzz", "--workers", workers]
        code = main([*arguments, *(word for flag, path in paths.items() for word in (flag, str(path)))])
    out, err = capfd.readouterr()
    assert code == 2
    assert "does not look like an AMP server" in err and err.count("amp-conformance:") == 1, err
    assert "deselected" not in out and "deselected" not in err, out
    report = json.loads(paths["--json"].read_text(encoding="utf-8"))
    assert report["summary"]["verdict"] == "incomplete"
    assert "does not look like an AMP server" in (report["server"]["unavailable"] or "")
    assert paths["--junit"].exists() and paths["--markdown"].exists()


def test_an_echoing_mcp_command_is_not_quoted_as_the_servers_reply(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """``--mcp-command cat`` sends back what it is sent: the suite's own request is no reply."""
    report = tmp_path / "r.json"
    code = main(["--protocol", "amp-1.1", "--mcp-command", "cat", "--no-fuzz", "--json", str(report)])
    out, err = capfd.readouterr()
    assert code == 2
    assert "echoed the request" in err and err.count("amp-conformance:") == 1, err
    assert '"method"' not in err and "offers no such method" not in err, err
    assert "deselected" not in out
    assert json.loads(report.read_text(encoding="utf-8"))["summary"]["verdict"] == "incomplete"
