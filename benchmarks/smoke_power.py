"""The smoke tier's power: the reference server's v0.1 fault sweep run with ``--tier smoke`` and with
the full tier, and the share of the faults the full run catches that smoke catches too.

    python benchmarks/smoke_power.py [FAULT ...] [--workers N]

Each fault is one whole ``--no-fuzz`` run per tier against the in-process reference server, in the
fault's profile (``tests/suite/test_fault_sweep.py``: keys mode, no admin token, a short rate window).
A fault is caught when a check fails with the fault's requirement among its finding's ids (for a
fault whose requirement is a SHOULD, ``WARNS``: when one warns with it). Prints one line per fault,
then ``smoke catches N of M faults (P %) the full run catches`` and the faults smoke misses: what a
pull-request gate on smoke leaves to the nightly full run. Exits 1 when the full run misses a fault
the sweep holds it to.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

# This folder holds a script named reference_server.py: put the repository first so that
# ``import reference_server`` finds the package, not the benchmark.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reference_server import FAULTS
from tests.suite.inprocess import run_against_reference, write_keys_file
from tests.suite.test_fault_sweep import PROFILES, SWEPT, WARNS

TIERS = ("full", "smoke")


@dataclass(frozen=True)
class Caught:
    """What one tier's run with one fault on showed."""

    fault: str
    tier: str
    caught: bool
    exit_code: int
    requests: int
    seconds: float
    catchers: tuple[str, ...] = ()
    """The checks whose finding shows the fault."""


def run_tier(job: tuple[str, str]) -> Caught:
    """One whole ``--no-fuzz`` run of ``tier`` with ``fault`` on (in a fresh process of the pool)."""
    fault, tier = job
    started = time.perf_counter()
    profile = PROFILES.get(fault, {})
    env = {"AMP_REFERENCE_FAULTS": fault, **profile.get("env", {})}
    keys = bool(profile.get("keys"))
    with tempfile.TemporaryDirectory() as directory, contextlib.redirect_stdout(io.StringIO()):
        if keys:
            env["AMP_API_KEYS_FILE"] = str(write_keys_file(Path(directory)))
        outcome = run_against_reference(
            env, admin=profile.get("admin", True), keys=keys, extra={"amp_tier": tier}
        )
    requirement = FAULTS[fault].requirement
    showing = "warn" if fault in WARNS else "fail"
    results = outcome.run.results.values() if outcome.run is not None else ()
    catchers = tuple(
        r.name for r in results if r.outcome == showing and requirement in r.finding_requirements
    )
    requests = outcome.run.requests_sent if outcome.run is not None else 0
    seconds = time.perf_counter() - started
    return Caught(fault, tier, bool(catchers), outcome.exit_code, requests, seconds, catchers)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("faults", nargs="*", help="faults to run (default: every fault the sweep holds)")
    parser.add_argument("--workers", type=int, default=2, help="runs at once (default 2)")
    args = parser.parse_args()
    unknown = sorted(set(args.faults) - set(SWEPT))
    if unknown:
        print(f"smoke_power: not swept: {', '.join(unknown)}", file=sys.stderr)
        return 2
    faults = args.faults or list(SWEPT)
    jobs = [(fault, tier) for fault in faults for tier in TIERS]
    started = time.perf_counter()
    found: dict[tuple[str, str], Caught] = {}
    with ProcessPoolExecutor(max(1, args.workers), mp_context=multiprocessing.get_context("spawn")) as pool:
        for result in pool.map(run_tier, jobs):
            found[result.fault, result.tier] = result
            if result.tier == TIERS[-1]:
                full = "caught" if found[result.fault, "full"].caught else "MISSED"
                smoke = "caught" if result.caught else "missed"
                requirement = FAULTS[result.fault].requirement
                print(f"{result.fault:<34} {requirement:<13} full {full}  smoke {smoke}", flush=True)
    by_full = [f for f in faults if found[f, "full"].caught]
    by_smoke = [f for f in by_full if found[f, "smoke"].caught]
    missed = [f for f in by_full if f not in by_smoke]
    share = 100.0 * len(by_smoke) / len(by_full) if by_full else 0.0
    print()
    for tier in TIERS:
        requests = sorted(found[f, tier].requests for f in faults)
        seconds = sum(found[f, tier].seconds for f in faults)
        print(f"{tier:<6} requests per run: median {requests[len(requests) // 2]}, {seconds:.0f} s in all")
    print(f"smoke catches {len(by_smoke)} of {len(by_full)} faults ({share:.0f} %) the full run catches")
    if missed:
        print("a PR gate on smoke misses (the nightly full run catches them):")
        for fault in missed:
            print(f"  {fault:<34} {FAULTS[fault].requirement:<13} {FAULTS[fault].description}")
            print(f"  {'':<34} caught in full by {', '.join(found[fault, 'full'].catchers[:3])}")
    not_full = [f for f in faults if not found[f, "full"].caught]
    if not_full:
        print(f"the full run missed: {', '.join(not_full)}")
    print(f"{len(jobs)} runs, {time.perf_counter() - started:.0f} s wall with {args.workers} worker(s)")
    return 1 if not_full else 0


if __name__ == "__main__":
    sys.exit(main())
