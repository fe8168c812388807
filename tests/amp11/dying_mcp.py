"""The AMP v1.1 reference server over MCP stdio and REST (one store), whose MCP channel dies after
``argv[1]`` answered frames: it closes its stdout, as a crashed process does, while REST on port
``argv[2]`` goes on serving. Stopped (SIGTERM, the suite's end of run), it writes how many memories
its store still holds to the file ``argv[3]``."""

from __future__ import annotations

import io
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from reference_server.amp11.__main__ import STARTUP_SECONDS, _rest_server
from reference_server.amp11.backend import Backend
from reference_server.amp11.context import Settings, faults_from_env
from reference_server.amp11.mcp import McpSession
from reference_server.amp11.store import Store


def main() -> None:
    frames, port, count_file = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
    backend = Backend(Store(), faults_from_env(os.environ), Settings.from_env(os.environ))

    def stopped(*_: Any) -> None:
        count_file.write_text(str(len(backend.store)))
        os._exit(0)

    signal.signal(signal.SIGTERM, stopped)
    server = _rest_server(backend, "127.0.0.1", port, "warning")
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + STARTUP_SECONDS
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    session = McpSession(backend)
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    answered = 0
    for line in stdin:
        answer = session.handle_line(line)
        if answer is None:
            continue
        sys.stdout.buffer.write(answer.encode("utf-8") + b"\n")
        sys.stdout.buffer.flush()
        answered += 1
        if answered >= frames:
            break
    print(f"dying_mcp: the MCP channel dies after {answered} frames", file=sys.stderr, flush=True)
    os.close(sys.stdout.fileno())
    while True:
        time.sleep(0.1)


if __name__ == "__main__":
    main()
