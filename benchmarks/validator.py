"""Benchmark: validate 100,000 JSONL cells through ``validate_documents`` and print the rate.

The bar (issue 7) is under 10 s on a 2-core machine. Cells are generated with varied ids, texts,
scores and timestamps so that no cache can help; generation time is not counted.

    python benchmarks/validator.py [--cells N] [--pure]

``--pure`` disables the jsonschema-rs fast path (jsonschema only) to show what it buys.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ulid import ULID

TYPES = ("episodic", "semantic", "procedural")
STATUSES = ("active", "stale", "archived", "deleted")
SOURCES = ("conversation", "document", "inference", "user_explicit", None)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def make_cell(rng: random.Random, number: int) -> dict[str, object]:
    """One valid, distinct cell (about 700 bytes of compact JSON)."""
    created = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randrange(30_000_000))
    accessed = created + timedelta(seconds=rng.randrange(1_000_000)) if rng.random() < 0.5 else None
    updated = created + timedelta(seconds=rng.randrange(1_000_000)) if rng.random() < 0.3 else None
    ulid = ULID.from_timestamp(created.timestamp())
    return {
        "amp_version": "0.1.0",
        "id": f"mem_{ulid}" if number % 2 else str(ulid),
        "type": rng.choice(TYPES),
        "content": {
            "text": f"memory number {number}: user likes item {rng.randrange(10**6)}",
            "metadata": {"n": number},
        },
        "identity": {
            "owner_id": f"user-{number % 997}",
            "owner_type": "user",
            "created_by": f"agent-{number % 31}",
            "session_id": None,
        },
        "lifecycle": {
            "created_at": _stamp(created),
            "last_accessed_at": _stamp(accessed) if accessed else None,
            "last_updated_at": _stamp(updated) if updated else None,
            "expires_at": None,
            "status": rng.choice(STATUSES),
        },
        "scoring": {
            "importance": round(rng.random(), 3),
            "confidence": round(rng.random(), 3),
            "decay_rate": round(rng.random() / 10, 4),
            "access_count": rng.randrange(100),
        },
        "access_policy": {"readable_by": [f"agent-{number % 31}"], "writable_by": [], "public": False},
        "provenance": {"source_type": rng.choice(SOURCES), "source_ref": None, "extraction_method": None},
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cells", type=int, default=100_000)
    parser.add_argument("--pure", action="store_true", help="jsonschema only (no jsonschema-rs fast path)")
    args = parser.parse_args(argv)
    if args.pure:
        os.environ["AMP_CONFORMANCE_NO_ACCELERATION"] = "1"
    from amp_conformance.validator import validate_documents  # after the environment is set

    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cells.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for number in range(args.cells):
                out.write(json.dumps(make_cell(rng, number), separators=(",", ":")) + "\n")
        size = path.stat().st_size
        start, cpu_start = time.perf_counter(), time.process_time()
        report = validate_documents([path])
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    print(f"cells: {report.cells} ({size / 1e6:.1f} MB JSONL), invalid: {report.invalid_cells}")
    print(f"total: {seconds:.2f} s, {report.cells / seconds:,.0f} cells/s (CPUs: {os.cpu_count()})")
    print(f"cpu time: {cpu:.2f} s (wall time above includes waiting for a busy machine)")
    return 0 if report.exit_code == 0 and report.cells == args.cells else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
