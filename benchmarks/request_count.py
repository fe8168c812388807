"""How many requests a serial ``--no-fuzz`` self-test sends, and where they go.

Runs ``amp-conformance --no-fuzz`` against the bundled reference server (keys mode, as the command's
self-test does) and prints, per check module: checks, requests the checks sent, cells they created,
the cleanup those cells cost (archive + delete, less what a check already did), and the sum. The
total line is the report's own count (``run.requests``): 741, bounded at 742 (``REQUEST_BUDGET`` in
tests/suite/test_parallel.py, issue 35's bar).

    python benchmarks/request_count.py [--only AREAS] [--top N]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

_CELL = re.compile(r"/memories/([^/?#]+)$")


def _module(check_id: str) -> str:
    return check_id.split("::", 1)[0].rsplit("/", 1)[-1]


def cleanup_cost(checks: list[dict[str, Any]]) -> dict[str, int]:
    """Estimated cleanup requests per module: 2 per cell left active, 1 per cell left archived."""
    creator: dict[str, str] = {}
    state: dict[str, str] = {}
    for check in checks:
        for exchange in check["exchanges"]:
            url, method, status = exchange["url"], exchange["method"], exchange["status"]
            if method == "POST" and url.split("?")[0].endswith("/memories") and status == 201:
                body = exchange.get("response_body") or ""
                found = re.search(r'"id"\s*:\s*"([^"]+)"', body)
                if found:
                    creator.setdefault(found.group(1), _module(check["id"]))
            match = _CELL.search(url)
            if match and method == "DELETE" and status == 204:
                state[match.group(1)] = "deleted"
            elif (
                match
                and method == "PATCH"
                and status == 200
                and '"archived"' in (exchange.get("response_body") or "")
            ):
                state.setdefault(match.group(1), "archived")
    cost: collections.Counter[str] = collections.Counter()
    for cell, module in creator.items():
        cost[module] += {"deleted": 0, "archived": 1}.get(state.get(cell, ""), 2)
    return dict(cost)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="areas to run (as amp-conformance --only)")
    parser.add_argument("--top", type=int, default=15, help="also list the N checks that send most")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        report_path = Path(folder) / "report.json"
        command = [sys.executable, "-m", "amp_conformance", "--no-fuzz", "-q", "--json", str(report_path)]
        if args.only:
            command += ["--only", args.only]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if not report_path.exists():
            print(done.stdout[-2000:], done.stderr[-2000:], file=sys.stderr)
            return 2
        report = json.loads(report_path.read_text())
    checks = report["checks"]
    sent: collections.Counter[str] = collections.Counter()
    count: collections.Counter[str] = collections.Counter()
    for check in checks:
        sent[_module(check["id"])] += check.get("requests") or 0
        count[_module(check["id"])] += 1
    cleanup = cleanup_cost(checks)
    print(f"{'module':<22}{'checks':>7}{'requests':>10}{'cleanup~':>10}{'sum':>7}")
    for module in sorted(count, key=lambda m: -(sent[m] + cleanup.get(m, 0))):
        print(
            f"{module:<22}{count[module]:>7}{sent[module]:>10}{cleanup.get(module, 0):>10}"
            f"{sent[module] + cleanup.get(module, 0):>7}"
        )
    requests = report["run"]["requests"]
    print(
        f"total: {requests['total']} requests ({requests['checks']} by checks and the run, "
        f"{requests['cleanup']} for cleanup); verdict {report['summary']['verdict']}; exit {done.returncode}"
    )
    ranked = sorted(checks, key=lambda c: -(c.get("requests") or 0))[: args.top]
    for check in ranked:
        print(f"  {check.get('requests') or 0:>4}  {check['id'].rsplit('/', 1)[-1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
