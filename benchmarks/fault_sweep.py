"""The fault sweep: a whole ``--no-fuzz`` run against the in-process reference server per fault.

    python benchmarks/fault_sweep.py [FAULT ...] [--workers N] [--slowest 5]

Prints, per fault, OK or BAD (the bar of tests/suite/test_fault_sweep.py: exit 1, only the fault's
requirement failing, every blocked check under it, no errors), the failing ids with the checks that
report them, the blocked counts, the errors, what is wrong for a BAD one and the seconds the run took;
then the wall time and the checks that took longest over all runs. Exits 1 when a fault is BAD.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# This folder holds a script named reference_server.py: put the repository first so that
# ``import reference_server`` finds the package, not the benchmark.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.suite.test_fault_sweep import SWEPT, sweep_all, workers


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("faults", nargs="*", help="faults to sweep (default: all but the fuzz-only ones)")
    parser.add_argument(
        "--workers", type=int, default=workers(), help="faults run at once (default: cores + 1)"
    )
    parser.add_argument("--slowest", type=int, default=5, help="how many of the slowest checks to print")
    args = parser.parse_args()
    unknown = sorted(set(args.faults) - set(SWEPT))
    if unknown:
        print(f"fault_sweep: not swept: {', '.join(unknown)}", file=sys.stderr)
        return 2
    faults = args.faults or list(SWEPT)
    bad = 0
    durations: dict[str, list[float]] = {}
    started = time.perf_counter()
    for found in sweep_all(faults, args.workers):
        print(f"{found.line()}  {found.seconds:.1f} s", flush=True)
        for problem in found.problems():
            print(f"      {problem}")
        for result in found.outcomes:
            if result.outcome == "fail":
                print(f"      fail {result.name}: {result.message[:240]}")
            durations.setdefault(result.name, []).append(result.duration)
        bad += bool(found.problems())
    total = time.perf_counter() - started
    print(f"\n{len(faults)} faults, {bad} BAD, {total:.1f} s wall with {args.workers} worker(s)")
    slowest = sorted(durations.items(), key=lambda item: -sum(item[1]))[: args.slowest]
    for name, seconds in slowest:
        print(f"  {sum(seconds):7.1f} s  {name} ({len(seconds)} runs, {max(seconds):.1f} s at most)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
