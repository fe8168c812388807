"""A reduced matrix, run once per session through the real command: the material of the matrix tests.

Six columns, two areas each (``--only read,err --no-fuzz``): the bundled v0.1 server in two documented
setups, two faulty variants (one of them serving hostile payloads), the bundled v1.1 server at Core
level, and an implementation that cannot start.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
ONLY = "read,err"

IMPLEMENTATIONS = """
title = "test matrix <i>ecosystem</i>"

[[implementation]]
name = "reference"
protocol = "amp-0.1"
server-cmd = "{python} -m reference_server --port {port}"

[[implementation]]
name = "upstream, bare ids"
protocol = "amp-0.1"
server-cmd = "{python} -m reference_server --port {port}"
environment = { AMP_REFERENCE_CONVENTION = "upstream", AMP_REFERENCE_ID_FORM = "bare" }

[[implementation]]
name = "no access count"
protocol = "amp-0.1"
server-cmd = "{python} -m reference_server --port {port}"
environment = { AMP_REFERENCE_FAULTS = "get-no-access-count" }

[[implementation]]
name = "hostile <img src=x onerror=alert(1)>"
protocol = "amp-0.1"
server-cmd = "{python} -m reference_server --port {port}"
environment = { AMP_REFERENCE_FAULTS = "hostile-payloads" }

[[implementation]]
name = "v1.1 core"
protocol = "amp-1.1"
mcp-command = "{python} -m reference_server.amp11 --mcp"
environment = { AMP11_REFERENCE_LEVEL = "core" }

[[implementation]]
name = "never starts"
protocol = "amp-0.1"
server-cmd = "{python} -c 'raise SystemExit(3)' {port}"
startup-timeout = 5
"""


@dataclass
class MatrixRun:
    directory: Path
    exit_code: int
    stdout: str
    matrix: dict[str, Any]
    html: Path
    site: Path
    badges: Path


def run_matrix_command(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amp_conformance", "matrix", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


@pytest.fixture(scope="session")
def matrix_run(tmp_path_factory: pytest.TempPathFactory) -> MatrixRun:
    directory = tmp_path_factory.mktemp("matrix")
    (directory / "implementations.toml").write_text(IMPLEMENTATIONS, encoding="utf-8")
    done = run_matrix_command(
        [
            "implementations.toml",
            "--only",
            ONLY,
            "--no-fuzz",
            "--jobs",
            "3",
            "--json",
            "m.json",
            "--html",
            "m.html",
            "--site",
            "site",
            "--badges",
            "badges",
            "--reports-dir",
            "reports",
        ],
        directory,
    )
    assert (directory / "m.json").exists(), done.stdout + done.stderr
    matrix = json.loads((directory / "m.json").read_text(encoding="utf-8"))
    return MatrixRun(
        directory,
        done.returncode,
        done.stdout,
        matrix,
        directory / "m.html",
        directory / "site",
        directory / "badges",
    )


def report_of(run: MatrixRun, name: str) -> dict[str, Any]:
    impl = next(i for i in run.matrix["implementations"] if i["name"] == name)
    path = run.directory / impl["report"]
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document
