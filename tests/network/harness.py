"""One run of the ``amp-conformance`` command against the bundled v0.1 reference server (keys mode, as
the self-test) behind ``reference_server.netproxy.FaultProxy``, and what it left on the server.

The command runs as its own process (as a user runs it: its output is read for tracebacks and FAIL
lines); the server runs in this process, so the cells left are counted from its store, not through
the network under test.
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from amp_conformance.amp01.selfserve import BundledServer
from reference_server.amp11.threaded import ThreadedRestServer
from reference_server.netproxy import Fault, FaultProxy, ProxyExchange

RUN_TIMEOUT = 240.0
_FAIL_LINE = re.compile(r"^\s*FAIL\s", re.MULTILINE)


@dataclasses.dataclass
class NetworkRun:
    exit_code: int
    output: str
    """The command's stdout and stderr."""
    report: dict[str, Any] | None
    left: list[str]
    """Ids of the cells on the server that are not deleted once the run ended."""
    counts: dict[str, int]
    broken: list[ProxyExchange]
    wall: float

    @property
    def verdict(self) -> str | None:
        return None if self.report is None else str(self.report["summary"]["verdict"])

    @property
    def fail_lines(self) -> list[str]:
        return [line.strip() for line in self.output.splitlines() if _FAIL_LINE.match(line)]

    @property
    def network(self) -> dict[str, Any] | None:
        return None if self.report is None else self.report.get("network")

    def describe(self) -> str:
        """The figures an assertion message shows."""
        tail = "\n".join(self.output.strip().splitlines()[-25:])
        return (
            f"exit {self.exit_code}, verdict {self.verdict}, left {len(self.left)} cells, "
            f"proxy {self.counts}, broken {[(e.fault, e.method, e.target) for e in self.broken]}\n{tail}"
        )


def suite_command(server: BundledServer, base_url: str, report: Path, *arguments: str) -> list[str]:
    command = [sys.executable, "-m", "amp_conformance", "--base-url", base_url]
    command += [f"--api-key={agent}={key}" for agent, key in server.api_keys.items()]
    command += [f"--admin-token={server.admin_token}", "--allow-global-effects", "--no-fuzz"]
    return [*command, "--json", str(report), "-q", *arguments]


def cells_left(server: BundledServer) -> list[str]:
    """The cells the server still holds that are not deleted (its own store, read in-process)."""
    store = server._app.state.amp.store  # type: ignore[attr-defined]
    return sorted(record.id for record in store.records() if record.status != "deleted")


def run_through(
    faults: Sequence[Fault] = (),
    *arguments: str,
    seed: int = 0,
    timeout: float = 3.0,
    serial: bool = False,
    service: float = 0.0,
) -> NetworkRun:
    """Run the suite with ``arguments`` (``--only``, ``--workers``...) through a proxy applying ``faults``."""
    with (
        tempfile.TemporaryDirectory(prefix="amp-network-") as folder,
        BundledServer(keys=True) as server,
        FaultProxy(server.url, faults=faults, seed=seed, serial=serial, service=service) as proxy,
    ):
        report_path = Path(folder) / "report.json"
        command = suite_command(server, proxy.url, report_path, "--timeout", str(timeout), *arguments)
        began = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
        wall = time.monotonic() - began
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        return NetworkRun(
            exit_code=done.returncode,
            output=done.stdout + done.stderr,
            report=report,
            left=cells_left(server),
            counts=proxy.counts(),
            broken=proxy.broken(),
            wall=wall,
        )


def run_amp11_through(
    faults: Sequence[Fault] = (), *arguments: str, seed: int = 0, timeout: float = 3.0
) -> NetworkRun:
    """The same for AMP v1.1 over REST (``--protocol amp-1.1 --base-url``; no MCP channel)."""
    with (
        tempfile.TemporaryDirectory(prefix="amp-network-") as folder,
        ThreadedRestServer() as server,
        FaultProxy(server.url, faults=faults, seed=seed) as proxy,
    ):
        report_path = Path(folder) / "report.json"
        command = [sys.executable, "-m", "amp_conformance", "--protocol", "amp-1.1", "--base-url", proxy.url]
        command += ["--no-fuzz", "--json", str(report_path), "-q", "--timeout", str(timeout), *arguments]
        began = time.monotonic()
        done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
        wall = time.monotonic() - began
        report = json.loads(report_path.read_text()) if report_path.exists() else None
        return NetworkRun(
            exit_code=done.returncode,
            output=done.stdout + done.stderr,
            report=report,
            left=server.rows_left(),
            counts=proxy.counts(),
            broken=proxy.broken(),
            wall=wall,
        )


#: How the report's ``network`` block counts what each proxy fault does to the client
#: (``engine.network.BROKEN_KINDS``); a latency spike counts only when it outlasts the timeout.
REPORTED_AS = {
    "reset-before": "reset",
    "reset-after": "reset",
    "cut-body": "cut",
    "stall": "timeout",
    "latency": "timeout",
}


def assert_recovered(run: NetworkRun, *kinds: str, must_pass: bool = True) -> None:
    """Issue 36's bar for one run: the faults happened; no traceback, no FAIL line, exit code not 1,
    nothing left on the server; PASS (or, ``must_pass=False``, INCOMPLETE); the terminal names the
    network and the report's ``network`` block counts each kind and a recovery."""
    for kind in kinds:
        assert run.counts.get(kind, 0) >= 1, f"the proxy broke no exchange ({kind}): {run.describe()}"
    assert "Traceback" not in run.output, run.describe()
    assert run.fail_lines == [], f"a correct server was failed: {run.fail_lines}\n{run.describe()}"
    assert run.exit_code != 1, run.describe()
    assert run.report is not None, run.describe()
    assert run.left == [], f"cells left on the server: {run.left}\n{run.describe()}"
    allowed = ("pass",) if must_pass else ("pass", "incomplete")
    assert run.verdict in allowed, f"verdict {run.verdict}, not {allowed}: {run.describe()}"
    assert "network:" in run.output, f"the run does not say what the network did: {run.describe()}"
    network = run.network
    assert network is not None, f"the report has no network block: {run.describe()}"
    for kind in kinds:
        assert network["broken_by_kind"][REPORTED_AS[kind]] >= 1, f"{kind} not counted: {network}"
    recoveries = network["repeated"] + network["reconciled"] + len(network["rerun"])
    assert recoveries >= 1, f"no repeat, reconciliation or re-run recorded: {network}"
