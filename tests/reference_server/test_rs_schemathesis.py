"""schemathesis, given the bundled contract and its default checks, finds nothing on the reference server
(positive and negative generation, 100 examples per operation), without and with API keys."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CONTRACT = Path(__file__).resolve().parents[2] / "amp_conformance" / "amp01" / "contract" / "openapi.json"
SCHEMATHESIS = shutil.which("schemathesis", path=str(Path(sys.executable).parent))


@contextmanager
def reference_server(env: dict[str, str]) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AMP_")}
    process = subprocess.Popen(
        [sys.executable, "-m", "reference_server", "--host", "127.0.0.1", "--port", str(port)],
        env={**clean, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                urllib.request.urlopen(f"{url}/amp/v1/health", timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the reference server did not start"
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def run_schemathesis(url: str, *headers: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert SCHEMATHESIS, "the schemathesis command is not installed beside this Python"
    command = [SCHEMATHESIS, "run", str(CONTRACT), "--url", url, "--max-examples", "100", "--mode", "all"]
    command += ["--seed", "20261130", "--workers", "1"]
    for header in headers:
        command += ["-H", header]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=cwd)


@pytest.mark.parametrize("keys", [False, True], ids=["keyless", "api-keys"])
def test_schemathesis_default_checks_find_nothing(keys: bool, tmp_path: Path) -> None:
    env = {"AMP_ADMIN_TOKEN": "schemathesis-admin", "AMP_LIFECYCLE_ENABLED": "false"}
    headers = ["X-AMP-Agent-ID: schemathesis-agent", "X-AMP-Admin-Token: schemathesis-admin"]
    if keys:
        key = "schemathesis-key"
        keys_file = tmp_path / "keys.json"
        keys_file.write_text(
            json.dumps({"schemathesis-agent": "sha256:" + hashlib.sha256(key.encode()).hexdigest()})
        )
        env["AMP_API_KEYS_FILE"] = str(keys_file)
        headers.append(f"X-AMP-API-Key: {key}")
    with reference_server(env) as url:
        result = run_schemathesis(url, *headers, cwd=tmp_path)
    summary = result.stdout[-4000:]
    assert result.returncode == 0, summary
    assert " failed" not in summary.split("SUMMARY")[-1], summary
    assert "Tested: 10" in summary
