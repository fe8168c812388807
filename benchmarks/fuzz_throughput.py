"""Fuzz throughput: examples (requests) per second of the AMP v1.1 verb fuzzer on each channel and of the
OpenAPI (schemathesis) fuzzer on REST, and the wall time of the fuzz area at its default budget
(``--fuzz-examples 25 --fuzz-seconds 45``).

    python benchmarks/fuzz_throughput.py [--examples N] [--seed N]

The channel figures run :class:`amp_conformance.amp11.fuzz.VerbFuzzer` against the bundled reference
server (MCP: one ``python -m reference_server.amp11 --mcp`` process; REST: the app in-process). The
default-budget figure is ``amp-conformance --protocol amp-1.1 --only fuzz`` (self-test, both channels,
one server process), end to end, including start-up and cleanup.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from amp_conformance.amp11.fuzz import VerbFuzzer  # noqa: E402
from amp_conformance.amp11.rest_fuzz import PROFILE, register_ndjson  # noqa: E402
from amp_conformance.amp11.session import Amp11Session  # noqa: E402
from amp_conformance.fuzz import FuzzConfig, run_fuzz  # noqa: E402
from tests.amp11.harness import mcp_target, rest_target  # noqa: E402


def channel_rate(channel: str, examples: int, seed: int) -> tuple[int, float, int]:
    """(requests, seconds, findings) of one fuzz run over ``channel``."""
    if channel == "mcp":
        session = Amp11Session(mcp_target())
        try:
            session.mcp()
            run = VerbFuzzer(session, "mcp", seed=seed, examples=examples, seconds=60.0).fuzz()
        finally:
            session.close()
        return run.examples, run.seconds, len(run.findings)
    with rest_target() as target:
        session = Amp11Session(target)
        try:
            run = VerbFuzzer(session, "rest", seed=seed, examples=examples, seconds=60.0).fuzz()
        finally:
            session.close()
    return run.examples, run.seconds, len(run.findings)


def openapi_rate(examples: int, seed: int) -> tuple[int, float, int]:
    """(requests, seconds, findings) of one schemathesis run over REST (in-process app)."""
    from reference_server.amp11 import Faults, Store, create_rest_app

    register_ndjson()
    app = create_rest_app(Store(), Faults.parse(""))
    config = FuzzConfig(
        base_url="http://amp11.test",
        headers={},
        profile=PROFILE,
        max_examples=examples,
        seconds=45.0,
        seed=seed,
        app=app,
        owner_id="bench-fuzz",
    )
    result = run_fuzz(config)
    return result.examples, result.seconds, len(result.findings)


def default_budget_wall_time() -> tuple[float, int]:
    command = [sys.executable, "-m", "amp_conformance", "--protocol", "amp-1.1", "--only", "fuzz", "-q"]
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
    return time.monotonic() - started, done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=25, help="valid examples per verb (default 25)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    for channel in ("mcp", "rest"):
        requests, seconds, findings = channel_rate(channel, args.examples, args.seed)
        rate = requests / seconds if seconds else 0.0
        print(
            f"{channel:4}: {requests} requests in {seconds:.2f} s = {rate:.0f} examples/s "
            f"({findings} findings; --fuzz-examples {args.examples}, seed {args.seed})"
        )
    requests, seconds, findings = openapi_rate(args.examples, args.seed)
    rate = requests / seconds if seconds else 0.0
    print(
        f"rest (OpenAPI, schemathesis): {requests} requests in {seconds:.2f} s = {rate:.0f} examples/s "
        f"({findings} findings)"
    )
    wall, status = default_budget_wall_time()
    print(f"default budget, amp-1.1 self-test --only fuzz (both channels): {wall:.1f} s wall, exit {status}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
