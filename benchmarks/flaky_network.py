"""Issue 36's bars: whole runs against a correct server behind a network that breaks ~3% of exchanges.

For each fault kind (``reset-before``: reset before the request reaches the server; ``reset-after``:
reset after the server applied it, before any response byte; ``cut-body``: the response body cut
short; ``stall``: the response held past ``--timeout``) and each seed, starts a fresh bundled AMP v0.1
reference server (keys mode, as the self-test) in this process, puts ``reference_server.netproxy``'s
``FaultProxy`` in front of it at ``--rate``, and runs

    amp-conformance --base-url PROXY --api-key ... --admin-token T --allow-global-effects
                    --no-fuzz --timeout 3 [--workers 4] --json PATH -q

as a separate process; then the same for AMP v1.1 over REST (``--protocol amp-1.1 --base-url``, the
v1.1 reference server's REST channel served in this process; serial only: v1.1 runs one worker).

Prints per run: the exit code, the verdict line, the report's errors, the ``network`` line and block
(what the suite says the network did), whether a traceback appeared, the cells left on the server
afterwards (counted from the server's own store in this process, never through the proxy: v0.1 cells
whose status is not ``deleted``, v1.1 rows not forgotten), what the proxy broke, and the wall time.
Each group starts with a fault-free run (its requests, and what a clean run leaves). Then the bars
per group: no run exits 1, at least 6 of 8 PASS (the others INCOMPLETE naming the network), nothing
left, no traceback. Figures are printed, never asserted.

    python benchmarks/flaky_network.py        # 4 kinds x seeds 1,2: serial, --workers 4, v1.1 serial
    python benchmarks/flaky_network.py --kinds stall --seeds 1 --workers 1 --protocols amp-0.1
    python benchmarks/flaky_network.py --keep reports/          # keep each run's JSON report and output

A stall at 3% of a serial run's ~740 exchanges costs ~22 timeouts of 3 s each: that row takes minutes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# This folder holds a script named reference_server.py: put the repository first so that
# ``import reference_server`` finds the package, not the benchmark.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from amp_conformance.amp01.selfserve import BundledServer
from reference_server.amp11.threaded import ThreadedRestServer
from reference_server.netproxy import Fault, FaultProxy

KINDS = ("reset-before", "reset-after", "cut-body", "stall")
#: The fault-free row each group starts with (``--baseline``): its requests and what a clean run leaves.
NONE = "none"
RUN_TIMEOUT = 1800.0
_FAIL_LINE = re.compile(r"^\s*FAIL\s", re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class Row:
    protocol: str
    kind: str
    seed: int
    workers: int
    exit_code: int
    wall: float
    verdict_line: str
    errors: int | None
    network_line: str | None
    network: dict[str, Any] | None
    traceback: bool
    fail_lines: int
    left: list[str]
    broken: int
    exchanges: int

    @property
    def verdict(self) -> str:
        return self.verdict_line.removeprefix("verdict:").strip().split(":")[0] or "?"


@contextmanager
def target(protocol: str) -> Iterator[tuple[str, list[str], Any]]:
    """The server's URL, the command's target arguments, and a function counting the cells left."""
    if protocol == "amp-1.1":
        with ThreadedRestServer() as rest:
            yield rest.url, ["--protocol", "amp-1.1"], rest.rows_left
        return
    with BundledServer(keys=True) as server:
        arguments = [f"--api-key={agent}={key}" for agent, key in server.api_keys.items()]
        arguments += [f"--admin-token={server.admin_token}", "--allow-global-effects"]
        store = server._app.state.amp.store  # type: ignore[attr-defined]

        def left() -> list[str]:
            return sorted(record.id for record in store.records() if record.status != "deleted")

        yield server.url, arguments, left


def _line(output: str, prefix: str) -> str | None:
    lines = [line.strip() for line in output.splitlines() if line.strip().startswith(prefix)]
    return lines[-1] if lines else None


def measure(
    protocol: str, kind: str, seed: int, workers: int, args: argparse.Namespace, keep: Path | None
) -> Row:
    faults = (
        [] if kind == NONE else [Fault(kind, rate=args.rate, seconds=args.stall if kind == "stall" else None)]
    )
    with (
        tempfile.TemporaryDirectory(prefix="amp-flaky-") as folder,
        target(protocol) as (url, arguments, left),
        FaultProxy(url, faults=faults, seed=seed) as proxy,
    ):
        report_path = Path(folder) / "report.json"
        command = [sys.executable, "-m", "amp_conformance", "--base-url", proxy.url, *arguments]
        command += ["--no-fuzz", "--timeout", str(args.timeout), "--json", str(report_path), "-q"]
        if workers > 1:
            command += ["--workers", str(workers)]
        began = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
        wall = time.monotonic() - began
        output = done.stdout + done.stderr
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        if keep is not None:
            stem = f"{protocol}-{kind}-seed{seed}-w{workers}"
            (keep / f"{stem}.txt").write_text(output)
            if report is not None:
                shutil.copy(report_path, keep / f"{stem}.json")
        counts = proxy.counts()
        network = None if report is None else report.get("network")
        return Row(
            protocol=protocol,
            kind=kind,
            seed=seed,
            workers=workers,
            exit_code=done.returncode,
            wall=wall,
            verdict_line=_line(output, "verdict:") or "(no verdict line)",
            errors=None if report is None else int(report["summary"]["errors"]),
            network_line=_line(output, "network:"),
            network=network,
            traceback="Traceback" in output,
            fail_lines=len(_FAIL_LINE.findall(output)),
            left=left(),
            broken=counts.get(kind, 0),
            exchanges=counts.get("exchanges", 0),
        )


def format_row(row: Row) -> str:
    network = row.network_line or "(no network line)"
    return (
        f"{row.protocol:<8} {row.kind:<13} {row.seed:>4} {row.workers:>7} {row.exit_code:>4} "
        f"{row.broken:>4}/{row.exchanges:<5} {row.errors if row.errors is not None else '-':>6} "
        f"{row.fail_lines:>5} {len(row.left):>4} {'yes' if row.traceback else 'no':>9} {row.wall:>7.1f}  "
        f"{row.verdict_line[:70]} | {network}"
    )


HEADER = (
    f"{'protocol':<8} {'fault':<13} {'seed':>4} {'workers':>7} {'exit':>4} {'broken/exch':<10} "
    f"{'errors':>6} {'FAILs':>5} {'left':>4} {'traceback':>9} {'wall s':>7}  verdict | network"
)


def bars(rows: Sequence[Row]) -> list[str]:
    """Issue 36's bars over one group of runs (one protocol, one worker count)."""
    passed = sum(row.verdict == "PASS" for row in rows)
    exit_one = [row for row in rows if row.exit_code == 1]
    unnamed = [row for row in rows if row.verdict != "PASS" and row.network_line is None]
    left = sum(len(row.left) for row in rows)
    tracebacks = sum(row.traceback for row in rows)
    need = max(0, len(rows) - 2)
    return [
        f"  no run exits 1: {'yes' if not exit_one else f'NO ({len(exit_one)})'}",
        f"  PASS: {passed} of {len(rows)} (bar: at least {need}); "
        f"not PASS and not naming the network: {len(unnamed)}",
        f"  cells left on the server: {left}",
        f"  tracebacks: {tracebacks}",
    ]


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated fault kinds")
    parser.add_argument("--seeds", type=_ints, default=[1, 2], help="comma-separated seeds (default 1,2)")
    parser.add_argument("--rate", type=float, default=0.03, help="share of exchanges broken (default 0.03)")
    parser.add_argument("--workers", type=_ints, default=[1, 4], help="worker counts for v0.1 (default 1,4)")
    parser.add_argument("--protocols", default="amp-0.1,amp-1.1", help="amp-0.1 and/or amp-1.1 (REST)")
    parser.add_argument("--timeout", type=float, default=3.0, help="the suite's --timeout (default 3)")
    parser.add_argument("--stall", type=float, default=5.0, help="seconds a stall holds (default 5)")
    parser.add_argument("--keep", type=Path, help="keep each run's output and JSON report in this folder")
    parser.add_argument("--blocks", action="store_true", help="print each run's network block too")
    parser.add_argument(
        "--no-baseline",
        dest="baseline",
        action="store_false",
        help="leave out the fault-free run each group starts with",
    )
    args = parser.parse_args(argv)
    kinds = [kind for kind in args.kinds.split(",") if kind]
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    groups: list[tuple[str, int]] = []
    for protocol in (p for p in args.protocols.split(",") if p):
        for workers in args.workers if protocol == "amp-0.1" else [1]:
            groups.append((protocol, workers))
    print(f"rate {args.rate:.0%}, --timeout {args.timeout:g}, stall {args.stall:g} s", flush=True)
    for protocol, workers in groups:
        print(f"\n{protocol}, workers {workers}", flush=True)
        print(HEADER, flush=True)
        rows = []
        if args.baseline:
            baseline = measure(protocol, NONE, 0, workers, args, args.keep)
            print(format_row(baseline), flush=True)
            if baseline.left:
                print(f"    left by a fault-free run: {len(baseline.left)}", flush=True)
        for kind in kinds:
            for seed in args.seeds:
                row = measure(protocol, kind, seed, workers, args, args.keep)
                rows.append(row)
                print(format_row(row), flush=True)
                if args.blocks and row.network is not None:
                    print(f"    network block: {json.dumps(row.network)}", flush=True)
                if row.left:
                    print(f"    left: {', '.join(row.left[:12])}{' ...' if len(row.left) > 12 else ''}")
        print("\n".join(bars(rows)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
