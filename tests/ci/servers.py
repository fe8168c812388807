"""Odd servers for the --server-cmd tests: ``python servers.py MODE PORT [N]``.

``spawn``: starts a child process that sleeps (it inherits the environment), then serves the
reference server: proves the whole process group is stopped. ``die-after N``: serves the reference
server and exits with code 7 after N requests, printing a marker line: a server crashing mid-run.
``unhealthy``: answers every request 503: a server that never becomes healthy.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import uvicorn

from reference_server import Settings, create_app


def _serve(app: Any, port: int) -> None:
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")


def main() -> None:
    mode, port = sys.argv[1], int(sys.argv[2])  # then the mode's own arguments
    app = create_app(Settings.from_env({**os.environ, "AMP_LIFECYCLE_ENABLED": "false"}))
    if mode == "spawn":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        print(f"spawned child {child.pid}", flush=True)
        _serve(app, port)
    elif mode == "die-after":
        budget = int(sys.argv[3])
        seen = 0

        async def dying(scope: Any, receive: Any, send: Any) -> None:
            nonlocal seen
            if scope["type"] == "http":
                seen += 1
                if seen > budget:
                    print(f"dying-marker: giving up after {budget} requests", flush=True)
                    os._exit(7)
            await app(scope, receive, send)

        _serve(dying, port)
    elif mode == "unhealthy":

        async def unhealthy(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                await send({"type": "http.response.start", "status": 503, "headers": []})
                await send({"type": "http.response.body", "body": b"not yet"})

        print("unhealthy-marker: starting", flush=True)
        _serve(unhealthy, port)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
