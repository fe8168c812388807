"""A server that serves one request at a time (``reference_server.netproxy``'s serialising mode), with a
``--timeout`` that the suite's own concurrency used to exceed: the 12-at-once shared lifecycle passes and
the 16-at-once cleanup queued at the server and timed out (before the limiter: 11 of the lifecycle
area's checks errored, "no complete response within 1.0s", and 2 cells were left). With the adaptive
limiter the run is clean: no error, no timeout, nothing left, the cleanup complete."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.amp01.protocol import PROTOCOL
from amp_conformance.amp01.selfserve import BundledServer
from amp_conformance.engine.client import Client, Connection, at_once
from amp_conformance.engine.configuration import build_options
from amp_conformance.engine.limiter import INITIAL, AdaptiveLimiter
from amp_conformance.engine.outcomes import DeadlineExceeded
from amp_conformance.engine.parallel.budget import SharedBudget, join_budget
from amp_conformance.engine.run import Run
from reference_server.netproxy import FaultProxy
from tests.network.harness import NetworkRun, run_through

#: Seconds each request takes at the serialising proxy, and the suite's ``--timeout``: 10 in a row
#: exceed it, 5 (the limiter's first burst before it sees the server serialise) do not.
SERVICE = 0.08
TIMEOUT = 0.8


def _assert_clean(run: NetworkRun) -> None:
    assert run.report is not None, run.describe()
    errored = [c.get("nodeid") for c in run.report["checks"] if c.get("outcome") == "error"]
    assert errored == [], f"checks errored: {errored}\n{run.describe()}"
    assert "no complete response within" not in run.output, run.describe()
    assert run.verdict == "pass", run.describe()
    assert run.exit_code == 0, run.describe()
    assert run.left == [], f"cells left: {run.left}\n{run.describe()}"
    cleanup = run.report["cleanup"]
    assert cleanup["problems"] == [] and cleanup["attempted"] == cleanup["deleted"] > 0, cleanup
    assert run.report["server"]["unavailable"] is None, run.describe()
    assert run.report["server"]["spec"] is not None, run.describe()  # /spec was read
    # the limiter's first burst (before it sees the server serialise), one more as an answer and the
    # next request cross at the proxy; never a burst per process
    assert run.counts["peak_active"] <= INITIAL + 3, run.describe()


def test_a_serial_run_against_a_one_at_a_time_server_neither_errors_nor_times_out() -> None:
    run = run_through((), "--only", "lifecycle", timeout=TIMEOUT, serial=True, service=SERVICE)
    _assert_clean(run)


def test_workers_share_one_budget_against_a_one_at_a_time_server() -> None:
    """Two workers and the controller, each with a budget of its own, would send up to three times
    the limit; sharing one, the run is as clean as a serial one."""
    run = run_through(
        (), "--only", "lifecycle", "--workers", "2", timeout=TIMEOUT, serial=True, service=SERVICE
    )
    _assert_clean(run)


def test_a_request_queued_behind_the_runs_own_is_not_timed_out_for_the_queue() -> None:
    """Six requests at once, one at a time (``--max-in-flight 1``), 0.3 s each at the server: the last
    answers 1.8 s after it was asked, but each attempt's 1 s clock starts when it may be sent."""
    with BundledServer(keys=True) as server, FaultProxy(server.url, serial=True, service=0.3) as proxy:
        connection = Connection(f"{proxy.url}/amp/v1", timeout=1.0, limiter=AdaptiveLimiter(cap=1))
        client = Client(connection)
        started = time.monotonic()
        replies = at_once(connection, [lambda: client.get("/health") for _ in range(6)])
        assert [reply.status for reply in replies] == [200] * 6
        assert time.monotonic() - started >= 6 * 0.3
        assert max(reply.exchange.elapsed for reply in replies) < 1.0
        connection.close()


def test_a_check_deadline_still_ends_the_wait_for_a_slot() -> None:
    limiter = AdaptiveLimiter(cap=1)
    connection = Connection("http://127.0.0.1:9", timeout=5.0, limiter=limiter)
    held = limiter.acquire()
    failure: list[BaseException] = []

    def ask() -> None:
        try:
            Client(connection, deadline=time.monotonic() + 0.2).get("/health")
        except BaseException as exc:
            failure.append(exc)

    waiter = threading.Thread(target=ask)
    waiter.start()
    waiter.join(3)
    held.done()
    assert failure and isinstance(failure[0], DeadlineExceeded), failure


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_a_bad_max_in_flight_is_a_one_line_usage_error(value: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "amp_conformance",
            "--base-url",
            "http://127.0.0.1:9",
            "--max-in-flight",
            value,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--max-in-flight" in lines[0], done.stderr


def test_max_in_flight_caps_the_sessions_limiter_and_workers_join_the_controllers(tmp_path: Path) -> None:
    values = {"amp_base_url": "http://127.0.0.1:9/amp/v1", "amp_max_in_flight": "3"}
    options = build_options(values, PROTOCOL)
    assert options.max_in_flight == 3 and options.public_view()["max_in_flight"] == 3
    run = Run(options, PROTOCOL)
    run.session = PROTOCOL.open_session(run, http=None)
    limiter = run.session.connection.limiter
    assert limiter is not None and limiter.snapshot().cap == 3 and limiter.path is None
    budget = SharedBudget()
    budget.open(run.session, options.max_in_flight)
    controllers = run.session.connection.limiter
    assert controllers is not None and controllers.path is not None  # its own requests count too
    workerinput: dict[str, Any] = {}
    budget.brief(workerinput)
    worker = Run(options, PROTOCOL, worker="gw0")
    worker.session = PROTOCOL.open_session(worker, http=None)
    join_budget(worker.session, workerinput)
    shared = worker.session.connection.limiter
    assert shared is not None and shared.path == controllers.path and shared.snapshot().cap == 3
    slots = [shared.acquire() for _ in range(3)]
    assert controllers.try_acquire() is None  # the three are the run's, not gw0's alone
    for slot in slots:
        slot.done(answered=False)
    budget.close()
    run.session.close()
    worker.session.close()
