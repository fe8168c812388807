"""Concurrent requests and background passes: no lost or torn writes."""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import uvicorn

from reference_server import Settings, create_app


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_fifty_threads_reading_and_patching_one_cell():
    app = create_app(Settings(scoring_patch_limit=0, lifecycle_enabled=False))
    state = app.state.amp
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    stop = threading.Event()
    try:
        base = f"http://127.0.0.1:{port}/amp/v1"
        deadline = time.monotonic() + 5
        while not server.started:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        headers = {"X-AMP-Agent-ID": "agent-a"}
        body = {
            "type": "semantic",
            "content": {"text": "shared"},
            "identity": {"owner_id": "o", "owner_type": "user"},
        }
        cell_id = httpx.post(f"{base}/memories", json=body, headers=headers).json()["id"]

        def passes() -> int:
            count = 0
            while not stop.is_set():
                state.engine.run_pass()
                count += 1
                time.sleep(0.002)
            return count

        reads_per_thread, direct_reads = 4, 4

        # One shared client (thread-safe); building 50 clients costs seconds of TLS set-up.
        client = httpx.Client(
            base_url=base, headers=headers, timeout=30, limits=httpx.Limits(max_connections=50)
        )

        def worker(n: int) -> list[int]:
            statuses = []
            for _ in range(reads_per_thread):
                statuses.append(client.get(f"/memories/{cell_id}").status_code)
            patch = {"content": {"text": f"thread {n}"}, "scoring": {"importance": 0.5 + n / 100}}
            reply = client.patch(f"/memories/{cell_id}", json=patch)
            statuses.append(reply.status_code)
            patched = reply.json()
            assert patched["content"]["text"] == f"thread {n}"
            assert patched["scoring"]["importance"] == 0.5 + n / 100
            for _ in range(direct_reads):  # straight into the service, off the event loop
                state.read("agent-a", cell_id)
            return statuses

        background = threading.Thread(target=passes, daemon=True)
        background.start()
        with client, ThreadPoolExecutor(max_workers=50) as pool:
            results = list(pool.map(worker, range(50)))
        stop.set()
        background.join(timeout=10)
        assert all(status == 200 for statuses in results for status in statuses)
        final = state.store.get(cell_id).cell
        assert final["scoring"]["access_count"] == 50 * (reads_per_thread + direct_reads)
        n = int(final["content"]["text"].split()[1])
        assert final["scoring"]["importance"] == 0.5 + n / 100  # text and score from the same PATCH
        assert final["lifecycle"]["status"] == "active"  # every score >= 0.5: passes never stale it
    finally:
        stop.set()
        server.should_exit = True
        thread.join(timeout=10)
