"""Wall time of the suite's core areas against the bundled reference server, in-process and over loopback.

    python benchmarks/suite.py [--areas health,cap,cell,cre,read,patch,del,list,err] [--repeat 3]

In-process runs send requests straight to the ASGI app (amp_conformance.engine.inprocess); loopback runs
start the server on 127.0.0.1 with uvicorn in a thread. Prints seconds per run and the median.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import time
from pathlib import Path

# This folder holds a script named reference_server.py: put the repository first so that
# ``import reference_server`` finds the package, not the benchmark.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from amp_conformance.amp01.selfserve import BundledServer
from amp_conformance.cli import run_suite
from amp_conformance.engine.inprocess import asgi_client
from reference_server import Settings, create_app

CORE_AREAS = "health,cap,cell,cre,read,patch,del,list,err"


def _timed(values: dict[str, object], http: object | None = None) -> tuple[float, int, int]:
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        outcome = run_suite(values, http=http, quiet=True)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - started
    assert outcome.run is not None
    return elapsed, len(outcome.run.results), outcome.exit_code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--areas", default=CORE_AREAS)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    base = {"amp_only": args.areas, "amp_no_fuzz": True, "amp_timeout": 10.0, "amp_deadline": 60.0}

    in_process: list[float] = []
    for _ in range(args.repeat):
        app = create_app(Settings.from_env({"AMP_LIFECYCLE_ENABLED": "false", "AMP_ADMIN_TOKEN": "bench"}))
        with asgi_client(app) as http:
            values = {**base, "amp_base_url": "http://testserver", "amp_admin_token": "bench"}
            elapsed, checks, code = _timed(values, http)
        in_process.append(elapsed)
        print(f"in-process: {elapsed:6.2f} s  ({checks} checks, exit {code})")

    loopback: list[float] = []
    for _ in range(args.repeat):
        with BundledServer({"AMP_LIFECYCLE_ENABLED": "false"}) as server:
            values = {**base, "amp_base_url": server.url, "amp_admin_token": server.admin_token}
            elapsed, checks, code = _timed(values)
        loopback.append(elapsed)
        print(f"loopback:   {elapsed:6.2f} s  ({checks} checks, exit {code})")

    print(f"areas {args.areas}")
    medians = statistics.median(in_process), statistics.median(loopback)
    print(f"median in-process {medians[0]:.2f} s, loopback {medians[1]:.2f} s")


if __name__ == "__main__":
    main()
