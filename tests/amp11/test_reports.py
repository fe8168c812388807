"""Issue 20 §4: an MCP-only run names its MCP command in the header, the JSON server block and the
HTML report (never a REST base URL it did not use, nor "(unknown)")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_an_mcp_only_report_names_the_mcp_command(tmp_path: Path) -> None:
    command = f"{sys.executable} -m reference_server.amp11 --mcp"
    report, page = tmp_path / "r.json", tmp_path / "r.html"
    arguments = ["--protocol", "amp-1.1", "--no-fuzz", "--only", "init", "--mcp-command", command]
    done = subprocess.run(
        [sys.executable, "-m", "amp_conformance", *arguments, "--json", str(report), "--html", str(page)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"AMP v1.1 conformance of MCP: {command}" in done.stdout
    assert "127.0.0.1:9" not in done.stdout
    server = json.loads(report.read_text())["server"]
    assert server["base_url"] is None
    assert server["target"] == f"MCP: {command}"
    assert server["targets"] == {"mcp": command}
    header = page.read_text().split("<main>")[0]  # the title and the facts of the run
    assert "(unknown)" not in header and "unknown server" not in header
    assert "reference_server.amp11 --mcp" in header
