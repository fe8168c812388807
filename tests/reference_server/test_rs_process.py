"""The real thing: ``python -m reference_server`` under uvicorn on a free 127.0.0.1 port, the
command line (``--list-faults``) and start-up refusals (AMP-AUTH-10)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from reference_server import FAULTS
from reference_server.amp01.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AMP_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serves_health_on_a_real_port_within_5_seconds():
    port = _free_port()
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "reference_server", "--host", "127.0.0.1", "--port", str(port)],
        env=_env(AMP_ADMIN_TOKEN="t"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        reply = None
        while time.monotonic() - started < 5:
            try:
                reply = httpx.get(f"http://127.0.0.1:{port}/amp/v1/health", timeout=1)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
                time.sleep(0.05)
        assert reply is not None, "no answer within 5 s"
        assert reply.status_code == 200
        assert reply.json() == {"status": "ok", "amp_version": "0.1.0"}
        base = f"http://127.0.0.1:{port}/amp/v1"
        headers = {"X-AMP-Agent-ID": "agent-a"}
        body = {
            "type": "semantic",
            "content": {"text": "hi"},
            "identity": {"owner_id": "o", "owner_type": "user"},
        }
        created = httpx.post(f"{base}/memories", json=body, headers=headers, timeout=5)
        assert created.status_code == 201
        assert (
            httpx.get(f"{base}/memories/{created.json()['id']}", headers=headers, timeout=5).status_code
            == 200
        )
        assert (
            httpx.post(f"{base}/lifecycle/run", headers={"X-AMP-Admin-Token": "t"}, timeout=5).status_code
            == 200
        )
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"AMP_REFERENCE_FAULTS": "no-such-fault"}, "no-such-fault"),
        ({"AMP_API_KEYS_FILE": "/nonexistent/keys.json"}, "AMP_API_KEYS_FILE"),
        ({"AMP_SCORING_PATCH_LIMIT": "five"}, "AMP_SCORING_PATCH_LIMIT"),
        ({"AMP_REFERENCE_CONVENTION": "other"}, "AMP_REFERENCE_CONVENTION"),
        ({"AMP_LIFECYCLE_ENABLED": "maybe"}, "AMP_LIFECYCLE_ENABLED"),
    ],
)
def test_bad_configuration_stops_start_up(env, needle):
    result = subprocess.run(
        [sys.executable, "-m", "reference_server", "--port", str(_free_port())],
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2
    assert "configuration error" in result.stderr and needle in result.stderr


def test_bad_configuration_in_process(monkeypatch, capsys):
    monkeypatch.setenv("AMP_REFERENCE_FAULTS", "bogus")
    assert main(["--port", "1"]) == 2
    assert "bogus" in capsys.readouterr().err


def test_list_faults_text(capsys):
    assert main(["--list-faults"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(FAULTS)
    for line, fault in zip(lines, FAULTS.values(), strict=True):
        assert line.split()[0] == fault.name and fault.requirement in line and fault.description in line


def test_list_faults_json(capsys):
    assert main(["--list-faults", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed == [
        {"name": f.name, "requirement": f.requirement, "description": f.description} for f in FAULTS.values()
    ]


def test_list_faults_as_a_process():
    result = subprocess.run(
        [sys.executable, "-m", "reference_server", "--list-faults", "--json"],
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert len(json.loads(result.stdout)) == len(FAULTS)
