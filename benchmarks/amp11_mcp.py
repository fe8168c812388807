"""AMP v1.1 over MCP: frame round trips per second of the suite's MCP client, and the wall time of
the AMP v1.1 checks against the bundled reference server on each channel.

    python benchmarks/amp11_mcp.py [--calls N] [--repeat N]

The round trips are ``tools/call amp.stats`` against ``python -m reference_server.amp11 --mcp`` (one
process, after the handshake). The check runs are in-process pytest runs of amp_conformance/amp11/checks
(plugin autoload off), one per target; the MCP and both-channel targets start their own server process.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from amp_conformance.amp11.mcp import McpSession  # noqa: E402
from tests.amp11.harness import MCP_SERVER, both_channels, mcp_target, rest_target, run_checks  # noqa: E402


def round_trips(calls: int) -> float:
    with McpSession(MCP_SERVER, timeout=10.0) as session:
        session.start()
        session.initialize()
        arguments = {"scope": {"agent_id": "bench"}}
        session.call_tool("amp.stats", arguments)  # warm
        started = time.perf_counter()
        for _ in range(calls):
            session.call_tool("amp.stats", arguments)
        return calls / (time.perf_counter() - started)


def check_run(name: str) -> tuple[float, int]:
    started = time.perf_counter()
    if name == "mcp":
        collector = run_checks(mcp_target())
    elif name == "rest":
        with rest_target() as target:
            collector = run_checks(target)
    else:
        with both_channels() as target:
            collector = run_checks(target)
    return time.perf_counter() - started, len(collector.results)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rates = [round_trips(args.calls) for _ in range(args.repeat)]
    rate = statistics.median(rates)
    print(f"MCP tools/call round trips: median {rate:.0f}/s over {args.repeat} x {args.calls}")
    for name in ("mcp", "rest", "both"):
        times = []
        count = 0
        for _ in range(args.repeat):
            seconds, count = check_run(name)
            times.append(seconds)
        median = statistics.median(times)
        print(f"checks over {name:>4}: {count} checks, median {median:.2f}s (of {args.repeat})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
