"""Issue 37's row: a server that serves one request at a time, each taking ``--service`` seconds.

Starts the bundled AMP v0.1 reference server (keys mode, as the self-test) in this process, a fresh
one per row, behind ``reference_server.netproxy``'s ``FaultProxy`` in its serialising mode (one
request forwarded at a time, each after the service time: a store that embeds every write and
serves one request at a time), and runs

    amp-conformance --base-url PROXY --api-key ... --admin-token T --allow-global-effects
                    --no-fuzz [--timeout S] [--workers 4 | --tier smoke] --json PATH -q

as a separate process: serially, with ``--workers 4``, and with ``--tier smoke`` (a row skipped when
the command refuses the option: a usage error before any request). Prints per row: the wall time
against the bound (the requests the server served times the service time: it serves one at a time,
so no run can be faster), the
requests, the most the proxy held at once (the suite's own concurrency as the server would see it
queued), the report's errors, the timeouts (exchanges that got no complete response within the
timeout, from the report's checks, or its ``network`` block when it has one), whether the cleanup
completed (the report's ``cleanup`` without problems, and no cell left in the server's own store),
whether the report carries the ``/spec`` claims, and the verdict.

    python benchmarks/serial_server.py                         # 0.2 s per request, the suite's timeout
    python benchmarks/serial_server.py --service 0.3 --timeout 3   # issue 37's first bar
    python benchmarks/serial_server.py --rows serial,smoke --keep reports/

A row is about requests x service time: at 0.2 s and ~740 requests, 2.5 minutes each. Figures are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# This folder holds a script named reference_server.py: put the repository first so that
# ``import reference_server`` finds the package, not the benchmark.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from amp_conformance.amp01.selfserve import BundledServer
from reference_server.netproxy import FaultProxy

ROWS = {"serial": [], "workers4": ["--workers", "4"], "smoke": ["--tier", "smoke"]}
RUN_TIMEOUT = 3600.0


@dataclasses.dataclass(frozen=True)
class Row:
    name: str
    exit_code: int
    wall: float
    requests: int
    service: float
    peak_active: int
    errors: int | None
    timeouts: int | None
    cleanup_problems: int | None
    left: int
    spec_claims: bool
    verdict_line: str
    skipped: str | None = None

    @property
    def bound(self) -> float:
        return self.requests * self.service


def _timeouts(report: dict[str, Any]) -> int:
    """Exchanges with no complete response in time: the ``network`` block's count when the report has
    one, else the checks' recorded exchanges whose error says so."""
    network = report.get("network") or {}
    counted = (network.get("broken_by_kind") or {}).get("timeout")
    recorded = sum(
        1
        for check in report["checks"]
        for exchange in check.get("exchanges") or ()
        if "within" in (exchange.get("error") or "")
    )
    return max(int(counted or 0), recorded)


def _verdict_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip().startswith("verdict:")]
    return lines[-1] if lines else "(no verdict line)"


def measure(name: str, args: argparse.Namespace, keep: Path | None) -> Row:
    with (
        tempfile.TemporaryDirectory(prefix="amp-serial-") as folder,
        BundledServer(keys=True) as server,
        FaultProxy(server.url, serial=True, service=args.service) as proxy,
    ):
        report_path = Path(folder) / "report.json"
        command = [sys.executable, "-m", "amp_conformance", "--base-url", proxy.url]
        command += [f"--api-key={agent}={key}" for agent, key in server.api_keys.items()]
        command += [f"--admin-token={server.admin_token}", "--allow-global-effects", "--no-fuzz"]
        if args.timeout is not None:
            command += ["--timeout", str(args.timeout)]
        command += [*ROWS[name], "--json", str(report_path), "-q"]
        began = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
        wall = time.monotonic() - began
        output = done.stdout + done.stderr
        store = server._app.state.amp.store  # type: ignore[attr-defined]
        left = sum(1 for record in store.records() if record.status != "deleted")
        counts = proxy.counts()
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        if keep is not None:
            (keep / f"serial-{name}.txt").write_text(output)
            if report is not None:
                shutil.copy(report_path, keep / f"serial-{name}.json")
    # a usage error (exit 2, no report, nothing sent): the option is not there yet
    refused = done.returncode == 2 and report is None and not counts.get("exchanges")
    server_block = (report or {}).get("server") or {}
    cleanup = (report or {}).get("cleanup")
    return Row(
        name=name,
        exit_code=done.returncode,
        wall=wall,
        requests=counts.get("forwarded", 0),
        service=args.service,
        peak_active=counts.get("peak_active", 0),
        errors=None if report is None else int(report["summary"]["errors"]),
        timeouts=None if report is None else _timeouts(report),
        cleanup_problems=None if cleanup is None else len(cleanup.get("problems") or ()),
        left=left,
        spec_claims=bool(server_block.get("spec")) and not server_block.get("spec_error"),
        verdict_line=_verdict_line(output),
        skipped=output.strip().splitlines()[-1][:100] if refused and output.strip() else None,
    )


HEADER = (
    f"{'row':<9} {'exit':>4} {'wall s':>7} {'bound s':>7} {'wall/bound':>10} {'requests':>8} "
    f"{'peak held':>9} {'errors':>6} {'timeouts':>8} {'cleanup':>8} {'left':>4} {'/spec':>5}  verdict"
)


def _figure(value: int | None) -> str:
    return "-" if value is None else str(value)


def format_row(row: Row) -> str:
    if row.skipped is not None:
        return f"{row.name:<9} skipped: the command refused the option ({row.skipped})"
    ratio = row.wall / row.bound if row.bound else float("nan")
    cleanup = (
        "-" if row.cleanup_problems is None else ("complete" if not row.cleanup_problems else "PROBLEMS")
    )
    return (
        f"{row.name:<9} {row.exit_code:>4} {row.wall:>7.1f} {row.bound:>7.1f} {ratio:>10.2f} "
        f"{row.requests:>8} {row.peak_active:>9} {_figure(row.errors):>6} {_figure(row.timeouts):>8} "
        f"{cleanup:>8} {row.left:>4} {'yes' if row.spec_claims else 'NO':>5}  {row.verdict_line[:60]}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--service", type=float, default=0.2, help="seconds per request (default 0.2)")
    parser.add_argument("--timeout", type=float, help="the suite's --timeout (default: the suite's own)")
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated rows of {', '.join(ROWS)}")
    parser.add_argument("--keep", type=Path, help="keep each run's output and JSON report in this folder")
    args = parser.parse_args(argv)
    names = [name for name in args.rows.split(",") if name]
    unknown = [name for name in names if name not in ROWS]
    if unknown:
        parser.error(f"unknown rows: {', '.join(unknown)}")
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    timeout = "the suite's" if args.timeout is None else f"{args.timeout:g} s"
    print(f"one request at a time, {args.service:g} s each; timeout {timeout}", flush=True)
    print(HEADER, flush=True)
    for name in names:
        print(format_row(measure(name, args, args.keep)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
