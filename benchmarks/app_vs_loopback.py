"""Wall time of the same command run with ``--app`` (in-process, no sockets) and with
``--server-cmd`` (the reference server as a process on a loopback port).

    python benchmarks/app_vs_loopback.py [--only AREAS] [--repeat N]

Each run is ``amp-conformance ... --no-fuzz`` as a separate process (interpreter start-up included),
against the reference server with an admin token. Prints seconds per run, the medians and the ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMON = ["--no-fuzz", "--admin-token", "T", "--allow-global-effects", "--server-env", "AMP_ADMIN_TOKEN=T"]
TARGETS = {
    "app (in-process)": ["--app", "reference_server.amp01.app:default_app"],
    "loopback (--server-cmd)": [
        "--server-cmd",
        f"{sys.executable} -m reference_server --host 127.0.0.1 --port {{port}} --log-level warning",
    ],
}


def _timed(args: list[str]) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "amp_conformance", *args], capture_output=True, env=env, check=False
    )
    return time.perf_counter() - started, result.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", help="areas to run (default: all but fuzz)")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    only = ["--only", args.only] if args.only else []
    medians: dict[str, float] = {}
    for name, target in TARGETS.items():
        times = []
        for _ in range(args.repeat):
            elapsed, code = _timed([*target, *COMMON, *only])
            times.append(elapsed)
            print(f"{name:<24} {elapsed:7.2f} s  (exit {code})", flush=True)
        medians[name] = statistics.median(times)
    app, loopback = medians.values()
    print(f"median: app {app:.2f} s, loopback {loopback:.2f} s; app/loopback = {app / loopback:.2f}")


if __name__ == "__main__":
    main()
