"""Shared helpers of the CI-gate tests: running the command as a process, finding the processes a
test started (by a marker in their environment), reading reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import jsonschema

from amp_conformance.engine.resources import load_contract

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
SERVERS = Path(__file__).resolve().parent / "servers.py"
REFERENCE_CMD = "python -m reference_server --host 127.0.0.1 --port {port} --log-level warning"


def command_env(**extra: str) -> dict[str, str]:
    """The environment for the command: this interpreter's folder first on PATH (so ``python`` is
    it), the checkout importable, no GitHub Actions variables leaking in from a real CI."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["PATH"] = os.pathsep.join([str(Path(PYTHON).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env.update(extra)
    return env


def new_marker() -> str:
    return f"amp-ci-{uuid.uuid4().hex}"


def marked_processes(marker: str) -> list[int]:
    """Running (not zombie) processes whose environment carries ``AMP_CI_MARK=marker``: everything
    a server started with ``--server-env AMP_CI_MARK=marker`` spawned, children included."""
    needle = f"AMP_CI_MARK={marker}".encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state = stat[stat.rfind(")") + 2 :].split()[0]
        if needle in environ.split(b"\0") and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def run_command(
    args: list[str], *, timeout: float = 300, cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m amp_conformance ARGS`` as a separate process."""
    return subprocess.run(
        [PYTHON, "-m", "amp_conformance", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=command_env(**env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def validate(document: Any, schema: str) -> None:
    jsonschema.Draft202012Validator(
        load_contract(schema), format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    ).validate(document)
