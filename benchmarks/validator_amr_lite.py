"""Benchmark: validate 100,000 AMR-lite memory lines with ``validate --profile amr-lite``; print the time.

The bar (issue 14) is under 5 s. Lines are generated with varied types, sources, dates, contents,
supersession markers (each linked to a later entry) and prose between entries, so every rule runs;
generation time is not counted. The first figure covers reading, checking, secret search and
linking (the text output), as wall and CPU time; the last adds the normalized entries the JSON
output carries.

    python benchmarks/validator_amr_lite.py [--lines N]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from amp_conformance.validator.amr_lite import SOURCES, TYPES, validate_amr_lite

WORDS = [
    *("deploy", "staging", "release", "tests", "cache", "schema", "config", "review", "docs", "vendor"),
    *("limit", "queue", "index", "migration", "backup", "alert", "budget", "latency", "owner", "ticket"),
]


def make_lines(count: int, seed: int = 14) -> list[str]:
    """``count`` lines: about one in five is prose, the rest entries; some entries are superseded."""
    rng = random.Random(seed)
    start = date(2025, 1, 1)
    lines: list[str] = []
    while len(lines) < count:
        if rng.random() < 0.2:
            lines.append(
                f"Prose about the {rng.choice(WORDS)} of item {len(lines)} and its {rng.choice(WORDS)}."
            )
            continue
        rec = start + timedelta(days=rng.randrange(600))
        when = "unknown" if rng.random() < 0.2 else (rec - timedelta(days=rng.randrange(30))).isoformat()
        kind = rng.choice(TYPES)
        src = "stated" if kind == "instruction" else rng.choice(SOURCES)
        content = " ".join(rng.choice(WORDS) for _ in range(rng.randrange(6, 16))) + f" #{len(lines)}"
        prefix = "- " if rng.random() < 0.5 else ""
        if rng.random() < 0.1 and len(lines) + 1 < count:
            later = (rec + timedelta(days=rng.randrange(1, 60))).isoformat()
            lines.append(
                f"{prefix}[type:{kind}] [src:{src}] [when:{when}] [rec:{rec}] {content} [superseded:{later}]"
            )
            lines.append(
                f"{prefix}[type:{kind}] [src:{src}] [when:{later}] [rec:{later}] {content} (revised)"
            )
            continue
        lines.append(f"{prefix}[type:{kind}] [src:{src}] [when:{when}] [rec:{rec}] {content}")
    return lines[:count]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "MEMORY.md")
        path.write_text("\n".join(make_lines(args.lines)) + "\n", encoding="utf-8")
        size = path.stat().st_size
        started, cpu_started = time.perf_counter(), time.process_time()
        report = validate_amr_lite([path])
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
        entries = len(report.as_dict()["entries"])
        with_json = time.perf_counter() - started
    print(f"{args.lines} lines ({size / 1e6:.1f} MB, {entries} entries): {elapsed:.2f} s checked")
    print(f"CPU time {cpu:.2f} s (wall time exceeds it when other processes share the cores)")
    print(f"with the JSON entries: {with_json:.2f} s; {args.lines / elapsed:,.0f} lines/s; bar: < 5 s")
    print(f"problems: {len(report.problems)} (expected 0)")
    return 0 if not report.problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
