"""Cost and length of curl lines for the bodies the suite sends: how long rendering takes and how long
the line is, per body shape (small JSON, "a" * 70000, 10,000-deep nesting, random bytes).

    python benchmarks/curl_lines.py [--repeat N]

Prints, for each shape: body bytes, line characters, how the body travels (inline, generator or
file) and the median rendering time in milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.replay import ReplayContext

SHAPES: dict[str, bytes] = {
    "small JSON": b'{"type":"semantic","content":{"text":"User prefers Python"}}',
    "'a' * 70000 in a cell": b'{"content":{"text":"' + b"a" * 70_000 + b'"}}',
    "nesting 10,000 deep": b'{"m":' + b"[" * 10_000 + b"]" * 10_000 + b"}",
    "'é' * 40000 (UTF-8)": ('{"t":"' + "é" * 40_000 + '"}').encode(),
    "random 64 KiB": os.urandom(65_536),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        replay = ReplayContext.for_run("token-123456", {"agent-a": "key-a-123456"}, Path(folder) / "r.json")
        headers = {
            "X-AMP-Agent-ID": "agent-a",
            "X-AMP-API-Key": "key-a-123456",
            "Content-Type": "application/json",
        }
        print(f"{'shape':<24}{'body bytes':>12}{'line chars':>12}  {'body travels':<12}{'ms (median)':>12}")
        for name, body in SHAPES.items():
            times = []
            line = ""
            for _ in range(args.repeat):
                exchange = Exchange(
                    "POST", "http://127.0.0.1:1/amp/v1/memories", headers, body, replay=replay
                )
                started = time.perf_counter()
                line = exchange.curl()
                times.append((time.perf_counter() - started) * 1000)
            travels = "generator" if line.startswith("python3") else "file" if "@/" in line else "inline"
            median = statistics.median(times)
            print(f"{name:<24}{len(body):>12}{len(line):>12}  {travels:<12}{median:>12.2f}")


if __name__ == "__main__":
    main()
