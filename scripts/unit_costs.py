"""Write a protocol's measured work-unit costs (``unit_costs.json`` beside its checks) from a serial run.

A parallel run starts its costliest work units first (``engine.parallel.unit_cost_estimate``): what
each unit cost is read from this file. Measure against a distant server, where waiting dominates as
it does when workers pay off, e.g. the bundled server behind 100 ms per response:

    python benchmarks/latency.py --delay 100 --workers 1 --service-ms 0 --keep /tmp/costs
    python scripts/unit_costs.py /tmp/costs/latency-100ms-1w.json

The figures only order the units: a stale file costs speed, never a verdict. Re-measure when checks
move between modules or a module's requests change much.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

from amp_conformance.engine import registry
from amp_conformance.engine.parallel import scope_finder
from amp_conformance.engine.protocol import UNIT_COSTS_FILE


def unit_costs(report: dict[str, object]) -> dict[str, float]:
    """Seconds per work unit: the durations of the report's checks, summed by unit."""
    protocol = registry.get(str(report["protocol"]))
    scope_of = scope_finder(protocol)
    costs: dict[str, float] = defaultdict(float)
    checks = report["checks"]
    assert isinstance(checks, list)
    for check in checks:
        nodeid = str(check["id"]).split("/checks/", 1)[-1]
        costs[scope_of(nodeid)] += float(check.get("duration_seconds") or 0.0)
    return {unit: round(seconds, 2) for unit, seconds in sorted(costs.items())}


def check_costs(report: dict[str, object]) -> dict[str, float]:
    """Seconds per check, by node id below the checks folder (the scheduler's estimate of how long a
    worker has left)."""
    checks = report["checks"]
    assert isinstance(checks, list)
    return {
        str(check["id"]).split("/checks/", 1)[-1]: round(float(check.get("duration_seconds") or 0.0), 2)
        for check in checks
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("report", type=Path, help="a serial run's JSON report (--json)")
    parser.add_argument("--print", action="store_true", help="print the file instead of writing it")
    arguments = parser.parse_args(argv)
    report = json.loads(arguments.report.read_text(encoding="utf-8"))
    if (report.get("run") or {}).get("workers", 1) != 1:  # durations of a parallel run overlap
        print(
            "unit_costs.py: give a serial run's report (a parallel run's durations overlap)", file=sys.stderr
        )
        return 2
    protocol = registry.get(str(report["protocol"]))
    run = report.get("run") or {}
    document = {
        "about": "seconds each parallel work unit, and each check, took in a serial run "
        "(scripts/unit_costs.py); a parallel run starts the costliest units first",
        "measured": {
            "run": run.get("id"),
            "duration_seconds": run.get("duration_seconds"),
            "requests": (run.get("requests") or {}).get("total"),
        },
        "units": unit_costs(report),
        "checks": check_costs(report),
    }
    text = json.dumps(document, indent=1) + "\n"
    if arguments.print:
        sys.stdout.write(text)
    else:
        path = protocol.checks_dir / UNIT_COSTS_FILE
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path} ({len(document['units'])} units)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
