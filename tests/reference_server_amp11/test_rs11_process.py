"""The entry point as a process: MCP over real stdio, both channels over one store, broken-process modes."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from reference_server.amp11 import FAULTS, MISBEHAVIOURS
from reference_server.amp11.__main__ import main

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26"}}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Process:
    def __init__(self, *args: str, faults: str = "") -> None:
        env = {**os.environ, "AMP11_REFERENCE_FAULTS": faults}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "reference_server.amp11", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            env=env,
        )

    def send(self, frame: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(frame) + "\n").encode())

    def line(self, timeout: float = 10.0) -> bytes | None:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        return self.proc.stdout.readline() if ready else None

    def answer(self, frame: Any) -> dict[str, Any]:
        self.send(frame)
        line = self.line()
        assert line, "no answer"
        return dict(json.loads(line))

    def close(self, timeout: float = 10.0) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def spawn() -> Iterator[Any]:
    started: list[Process] = []

    def start(*args: str, faults: str = "") -> Process:
        process = Process(*args, faults=faults)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


def test_mcp_over_stdio(spawn: Any) -> None:
    server = spawn("--mcp")
    assert server.answer(INIT)["result"]["serverInfo"]["amp_conformance"] == "full"
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = {
        "name": "amp.encode",
        "arguments": {"scope": {"agent_id": "a"}, "content": "stdio 世界", "force": True},
    }
    stored = server.answer({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    assert stored["id"] == 2 and stored["result"]["structuredContent"]["status"] == "stored"
    assert server.close() == 0
    assert b"mcp=on" in server.proc.stderr.read()


def test_both_channels_share_one_store(spawn: Any) -> None:
    port = _free_port()
    server = spawn("--mcp", "--rest-port", str(port))
    server.answer(INIT)
    call = {
        "name": "amp.encode",
        "arguments": {"scope": {"agent_id": "a"}, "content": "seen over rest", "force": True},
    }
    memory = server.answer({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    recalled = httpx.post(
        f"http://127.0.0.1:{port}/v1/memories/recall", json={"scope": {"agent_id": "a"}, "query": "seen over"}
    )
    assert [row["id"] for row in recalled.json()["results"]] == [memory["result"]["structuredContent"]["id"]]
    assert server.close() == 0


def test_exit_misbehaviour(spawn: Any) -> None:
    server = spawn("--mcp", faults="mcp-exit")
    assert server.proc.wait(10) == 3
    assert server.proc.stdout.read() == b""


def test_garbage_misbehaviour(spawn: Any) -> None:
    server = spawn("--mcp", faults="mcp-garbage")
    server.send(INIT)
    line = server.line()
    assert line and not line.startswith(b"{")


def test_hang_misbehaviour(spawn: Any) -> None:
    server = spawn("--mcp", faults="mcp-hang")
    assert server.answer(INIT)["id"] == 1
    server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert server.line(timeout=1.0) is None
    assert server.proc.poll() is None


def test_list_faults_and_usage(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert main(["--list-faults", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {row["name"] for row in rows} == set(FAULTS) | set(MISBEHAVIOURS)
    assert main([]) == 2 and "--mcp" in capsys.readouterr().err
    monkeypatch.setenv("AMP11_REFERENCE_FAULTS", "no-such-fault")
    assert main(["--mcp"]) == 2
    message = capsys.readouterr().err
    assert "no-such-fault" in message and "Traceback" not in message and message.count("\n") == 1


def test_rest_only(spawn: Any) -> None:
    port = _free_port()
    spawn("--rest-port", str(port))
    deadline = time.monotonic() + 10
    while True:
        try:
            response = httpx.get(f"http://127.0.0.1:{port}/v1/memories/stats", params={"agent_id": "a"})
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline
            time.sleep(0.05)
    assert response.json()["memory_count"] == 0


def test_a_taken_rest_port_leaves_the_mcp_channel_serving(spawn: Any) -> None:
    port = _free_port()
    first = spawn("--mcp", "--rest-port", str(port))
    first.answer(INIT)
    second = spawn("--mcp", "--rest-port", str(port))
    assert second.answer(INIT)["result"]["serverInfo"]["amp_version"] == "1.1"
    assert second.close() == 0
    assert b"serving MCP only" in second.proc.stderr.read()
