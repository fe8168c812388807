"""Throughput and search latency of the in-memory reference server, in process.

    python benchmarks/reference_server.py [--sizes 1000,10000,100000] [--quick]

Prints create/get/search requests per second through the ASGI app (httpx's ASGI transport, so the
figures include routing, validation and JSON but no sockets), then search p50/p95 for one owner
holding 1k, 10k and 100k cells. Each figure is given twice: wall clock, and CPU time of this
process (the second is what the code costs when the machine is shared with other work). Large
stores are seeded straight through the service layer (the same code path as POST /memories minus
HTTP); the timed searches go through the app. Target: p50 < 20 ms at 10k cells on 2 cores.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reference_server import ManualClock, Settings, create_app
from reference_server.amp01.models import CreateRequest, validate
from reference_server.amp01.service import ServerState

_VOCABULARY = (
    "user prefers python for backend development and go for tooling the team deploys services on "
    "tuesday after unit tests pass check container health before release customer reported a timeout "
    "in connection pool four database index rebuild takes an hour memory agent search ranking decay "
    "score archive stale cells weekly meeting notes budget review coffee morning routine paris trip "
    "weather sunny rain schedule dentist appointment birthday gift ideas book club novel chapter "
    "project deadline friday sprint planning retrospective incident postmortem latency spike cache "
    "invalidation bug fix feature flag rollout kubernetes cluster node upgrade certificate renewal"
)
WORDS = _VOCABULARY.split()
AGENT = {"X-AMP-Agent-ID": "bench-agent"}


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))


def body(owner: str, text: str) -> dict[str, Any]:
    return {
        "type": "semantic",
        "content": {"text": text, "metadata": {"source": "bench"}},
        "identity": {"owner_id": owner, "owner_type": "user"},
        "scoring": {"importance": 0.7, "confidence": 0.9},
        "access_policy": {"readable_by": ["reader-*"]},
    }


def _rates(count: int, started: float, started_cpu: float) -> tuple[float, float]:
    """(requests per wall-clock second, requests per CPU second of this process)."""
    wall = time.perf_counter() - started
    cpu = max(time.process_time() - started_cpu, 1e-9)
    return count / wall, count / cpu


def seed(state: ServerState, owner: str, count: int, rng: random.Random) -> float:
    started = time.perf_counter()
    for _ in range(count):
        data = body(owner, sentence(rng))
        state.create("bench-agent", validate(CreateRequest, data, location="body"), data)
    return time.perf_counter() - started


async def throughput(requests: int, rng: random.Random) -> dict[str, tuple[float, float]]:
    app = create_app(Settings(lifecycle_enabled=False, scoring_patch_limit=0), clock=ManualClock())
    transport = httpx.ASGITransport(app=app)
    rates: dict[str, tuple[float, float]] = {}
    async with httpx.AsyncClient(
        transport=transport, base_url="http://bench/amp/v1", headers=AGENT
    ) as client:
        ids: list[str] = []
        bodies = [body("owner-rps", sentence(rng)) for _ in range(requests)]
        started, started_cpu = time.perf_counter(), time.process_time()
        for data in bodies:
            reply = await client.post("/memories", json=data)
            ids.append(reply.json()["id"])
        rates["create"] = _rates(requests, started, started_cpu)
        started, started_cpu = time.perf_counter(), time.process_time()
        for index in range(requests):
            await client.get(f"/memories/{ids[index % len(ids)]}")
        rates["get"] = _rates(requests, started, started_cpu)
        searches = max(1, requests // 4)
        queries = [{"query": sentence(rng), "owner_id": "owner-rps"} for _ in range(searches)]
        started, started_cpu = time.perf_counter(), time.process_time()
        for query in queries:
            await client.post("/memories/search", json=query)
        rates["search"] = _rates(searches, started, started_cpu)
    return rates


def _percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p95 * 1000


async def latency(
    size: int, searches: int, rng: random.Random
) -> tuple[float, tuple[float, float], tuple[float, float]]:
    app = create_app(Settings(lifecycle_enabled=False), clock=ManualClock())
    seconds = seed(app.state.amp, "owner-big", size, rng)
    transport = httpx.ASGITransport(app=app)
    timings: list[float] = []
    cpu: list[float] = []
    async with httpx.AsyncClient(
        transport=transport, base_url="http://bench/amp/v1", headers=AGENT
    ) as client:
        for _ in range(3):  # warm-up
            await client.post("/memories/search", json={"query": sentence(rng), "owner_id": "owner-big"})
        for _ in range(searches):
            query = {"query": sentence(rng), "owner_id": "owner-big", "limit": 10}
            started, started_cpu = time.perf_counter(), time.process_time()
            reply = await client.post("/memories/search", json=query)
            timings.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
            assert reply.status_code == 200 and reply.json()["returned"] == 10, reply.text[:200]
    return seconds, _percentiles(timings), _percentiles(cpu)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="store sizes for search latency")
    parser.add_argument("--requests", type=int, default=2000, help="requests per throughput phase")
    parser.add_argument("--quick", action="store_true", help="small run (sizes 1000,10000; 400 requests)")
    args = parser.parse_args(argv)
    sizes = [int(part) for part in args.sizes.split(",") if part]
    requests = args.requests
    if args.quick:
        sizes, requests = [1000, 10000], 400
    rng = random.Random(2026)
    print(f"python {sys.version.split()[0]}, in-process ASGI (httpx.ASGITransport)")
    rates = asyncio.run(throughput(requests, rng))
    print(
        f"{'':>7}  {'req/s':>8}  {'req/s per CPU-s':>15}  ({requests} requests, search over {requests} cells)"
    )
    for name, (wall_rate, cpu_rate) in rates.items():
        print(f"{name:>7}  {wall_rate:8.0f}  {cpu_rate:15.0f}")
    print()
    print("search latency, one owner, limit 10 (wall clock; CPU time of this process)")
    print(f"{'cells':>7}  {'seed s':>7}  {'p50 ms':>7}  {'p95 ms':>7}  {'cpu p50':>7}  {'cpu p95':>7}")
    for size in sizes:
        searches = 100 if size <= 10000 else 30
        seconds, (p50, p95), (cpu50, cpu95) = asyncio.run(latency(size, searches, rng))
        print(f"{size:>7}  {seconds:7.1f}  {p50:7.2f}  {p95:7.2f}  {cpu50:7.2f}  {cpu95:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
