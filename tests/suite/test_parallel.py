"""Parallel runs (issue 13): ``--workers N`` is the same run as a serial one, only sooner.

Serial and parallel self-tests give the same (check, outcome) pairs, verdict and exit code, with and
without a reference-server fault; the parallel JSON report validates; a server that dies mid-run ends
a parallel run with exit 2 in bounded time, with no traceback and no worker left behind; so does an
interrupt. The serial self-test stays within its request budget (900, cleanup included).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest

from amp_conformance.amp01.selfserve import BundledServer
from amp_conformance.cli import main
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.parallel import plain_nodeid, result_from_wire, result_to_wire
from amp_conformance.engine.resources import contract_path
from amp_conformance.engine.run import CheckResult

#: The serial --no-fuzz self-test's requests (checks and cleanup): 896 before the blind-spot and
#: real-server checks of issue 22 (990 after them), 953 after issue 25's first cuts (matrix write
#: surfaces, shared read and list answers; the issue's bar, 750, is not reached yet), 958 with the
#: decay-arithmetic cells of issue 22 (a steady and a low cell: 5 more), 847 after session 5's cuts,
#: 823 after session 6's, 801 after session 7's probe sharing (rate cells, unknown id, admin route),
#: 798 with its cell and capability cuts, 786 with its access and auth cuts, 742 after session 10's
#: (the matrix's pooled refusal cells, one create of every ignored member, shared refused PATCHes):
#: the issue's bar, 750, was the budget then; 744 once the 2-request refused_patches share was reverted
#: (CONTRIBUTING's 5-request bar), 741 after the open routes' GETs the run sent itself and the timestamp
#: walk's first read were no longer sent twice: issue 35's bar, 742 (no more than before), is the budget
#: now; a change that adds requests must say why.
REQUEST_BUDGET = 742
WORKERS = "3"
#: Faults whose failures reach across areas: a plain finding, a cascade of blocked checks under one
#: root cause, an access-matrix rule, and one caught by a check of the serial group.
#: Areas whose checks share the most steps (the owner set, the minimal cell, the unread cell).
KEYLESS_AREAS = "search,list,read,cell,create"
FAULTS = ("deleted-in-list", "no-creator-bypass", "wildcard-substring", "threshold-inclusive")


def _command(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> tuple[int, str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "AMP_"))}
    environment.update(env or {})
    done = subprocess.run(
        [sys.executable, "-m", "amp_conformance", "--no-fuzz", "-q", *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def _self_test(folder: Path, name: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    path = folder / f"{name}.json"
    code, output = _command("--json", str(path), *args, env=env)
    assert path.exists(), output[-3000:]
    report: dict[str, Any] = json.loads(path.read_text())
    report["exit_code"] = code
    report["output"] = output
    return report


def _pairs(report: dict[str, Any]) -> set[tuple[str, str]]:
    return {(check["id"], check["outcome"]) for check in report["checks"]}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    folder = tmp_path_factory.mktemp("parallel")
    return {
        "serial": _self_test(folder, "serial"),
        "parallel": _self_test(folder, "parallel", "--workers", WORKERS),
    }


def test_serial_and_parallel_self_tests_agree_check_by_check(runs: dict[str, dict[str, Any]]) -> None:
    serial, parallel = runs["serial"], runs["parallel"]
    assert serial["exit_code"] == 0, serial["output"][-3000:]
    assert _pairs(parallel) == _pairs(serial)
    assert [c["id"] for c in parallel["checks"]] == [c["id"] for c in serial["checks"]]
    assert parallel["summary"]["verdict"] == serial["summary"]["verdict"] == "pass"
    assert parallel["exit_code"] == serial["exit_code"]
    assert parallel["summary"]["outcomes"] == serial["summary"]["outcomes"]
    assert parallel["run"]["workers"] == int(WORKERS) and serial["run"]["workers"] == 1
    assert f"{WORKERS} workers" in parallel["output"]


def test_the_parallel_report_validates_and_counts_every_workers_requests(
    runs: dict[str, dict[str, Any]],
) -> None:
    parallel = runs["parallel"]
    schema = json.loads(contract_path("report.schema.json").read_text())
    jsonschema.validate({k: v for k, v in parallel.items() if k not in ("exit_code", "output")}, schema)
    requests = parallel["run"]["requests"]
    sent_by_checks = sum(check["requests"] or 0 for check in parallel["checks"])
    assert requests["checks"] >= sent_by_checks > 0
    assert requests["cleanup"] > 0 and requests["total"] == requests["checks"] + requests["cleanup"]
    cleanup = parallel["cleanup"]
    assert cleanup["problems"] == [] and cleanup["deleted"] == cleanup["attempted"] > 0


def test_the_workers_make_each_shared_step_once_between_them(runs: dict[str, dict[str, Any]]) -> None:
    """engine.shared_store: a step that checks of several modules share is made by the first worker to
    need it and adopted by the others, so a parallel run sends about what a serial one does (a step
    its maker closed before another worker needed it is made again: the slack); what a step created
    is cleaned up once, by its maker or, when another worker adopted it, by the controller."""
    serial, parallel = runs["serial"]["run"]["requests"], runs["parallel"]["run"]["requests"]
    assert parallel["total"] <= serial["total"] * 1.02, (
        serial,
        parallel,
    )  # 984 of 958 when each worker made its own
    adopted = [
        c["id"] for c in runs["parallel"]["checks"] if any("in another worker" in n for n in c["notes"])
    ]
    assert adopted, "no check adopted a step another worker made"
    cleanup = runs["parallel"]["cleanup"]
    assert cleanup["problems"] == [] and cleanup["attempted"] == cleanup["deleted"]
    assert cleanup["attempted"] <= runs["serial"]["cleanup"]["attempted"] * 1.05


def test_a_serial_self_test_stays_within_its_request_budget(runs: dict[str, dict[str, Any]]) -> None:
    requests = runs["serial"]["run"]["requests"]
    assert requests["total"] <= REQUEST_BUDGET, requests
    assert f"requests sent: {requests['total']}" in runs["serial"]["output"]


@pytest.mark.parametrize("fault", FAULTS)
def test_with_a_fault_the_parallel_run_fails_the_same_checks(fault: str, tmp_path: Path) -> None:
    env = {"AMP_REFERENCE_FAULTS": fault}
    serial = _self_test(tmp_path, "serial", env=env)
    parallel = _self_test(tmp_path, "parallel", "--workers", WORKERS, env=env)
    assert serial["exit_code"] == parallel["exit_code"] == 1, serial["output"][-2000:]
    assert _pairs(parallel) == _pairs(serial)
    assert parallel["summary"]["must_failures"] == serial["summary"]["must_failures"] > 0


# the serial group holds every check a concurrent lifecycle pass could change -----------------------


def _run_against(server: Any, folder: Path, name: str) -> dict[str, str]:
    path = folder / f"{name}.json"
    args = ["--base-url", server.url, f"--admin-token={server.admin_token}", "--allow-global-effects"]
    for agent, key in server.api_keys.items():
        args += [f"--api-key={agent}={key}"]
    _command(*args, "--json", str(path))
    return {check["id"]: check["outcome"] for check in json.loads(path.read_text())["checks"]}


def test_no_check_outside_the_serial_group_of_passes_is_changed_by_a_concurrent_pass(tmp_path: Path) -> None:
    """Run the self-test twice, the second time with lifecycle passes hammering the server throughout:
    a check outside the serial group of passes that changes its outcome would, in a parallel run, be
    changed by that group's passes on another worker (and must join it: ``serial=True``)."""
    from amp_conformance.amp01.selfserve import BundledServer
    from amp_conformance.engine.parallel import serial_check_finder

    with BundledServer(keys=True) as server:
        quiet = _run_against(server, tmp_path, "quiet")
    with BundledServer(keys=True) as server:
        stop = threading.Event()

        def passes() -> None:
            with httpx.Client() as client:
                while not stop.is_set():
                    client.post(
                        f"{server.url}/amp/v1/lifecycle/run",
                        headers={"X-AMP-Admin-Token": server.admin_token},
                    )

        storm = [threading.Thread(target=passes, daemon=True) for _ in range(3)]
        for thread in storm:
            thread.start()
        try:
            stormy = _run_against(server, tmp_path, "stormy")
        finally:
            stop.set()
            for thread in storm:
                thread.join(timeout=10)
    from amp_conformance.amp01.protocol import PASSES, PROTOCOL

    group_of = serial_check_finder(PROTOCOL)
    changed = {
        check: (quiet.get(check), outcome)
        for check, outcome in stormy.items()
        if outcome != quiet.get(check) and group_of(check) != PASSES
    }
    assert changed == {}
    groups = {group_of(check) for check in quiet}
    assert groups == {None, PASSES, "rate-windows"}


# a server that goes away, an interrupted run ------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def doomed_server() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "reference_server", "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    yield server, url
    server.kill()
    server.wait()


def _start_parallel_run(url: str, timeout: float) -> subprocess.Popen[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "AMP_"))}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "amp_conformance",
            "--base-url",
            url,
            "--no-fuzz",  # no -q: the progress letters show the checks running (-q hides them)
            "--workers",
            "2",
            "--timeout",
            str(timeout),
        ],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: every worker it leaves behind is findable
    )


def _group_is_gone(pgid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    os.killpg(pgid, signal.SIGKILL)
    return False


class _Output:
    """A run's output, read as it comes (so the test can wait for the checks to start)."""

    def __init__(self, run: subprocess.Popen[str]) -> None:
        self.text = ""
        self._thread = threading.Thread(target=self._read, args=(run,), daemon=True)
        self._thread.start()

    def _read(self, run: subprocess.Popen[str]) -> None:
        assert run.stdout is not None
        while chunk := run.stdout.read(1):
            self.text += chunk

    def wait_for_checks(self, run: subprocess.Popen[str]) -> None:
        """Until the workers report their first finished checks (start-up takes seconds on a busy machine)."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and run.poll() is None:
            started = (
                self.text.split("bringing up nodes...", 1)[-1] if "bringing up nodes" in self.text else ""
            )
            if started.count(".") >= 5:
                return
            time.sleep(0.05)
        raise AssertionError(f"the checks never started: {self.text[-2000:]}")

    def rest(self, run: subprocess.Popen[str], timeout: float) -> str:
        run.wait(timeout=timeout)
        self._thread.join(timeout=10)
        return self.text


def test_a_server_dying_mid_run_ends_a_parallel_run_with_exit_2(
    doomed_server: tuple[subprocess.Popen[bytes], str],
) -> None:
    server, url = doomed_server
    timeout = 3.0
    run = _start_parallel_run(url, timeout)
    output = _Output(run)
    output.wait_for_checks(run)
    server.kill()
    died = time.monotonic()
    text = output.rest(run, timeout=120)
    took = time.monotonic() - died
    assert run.returncode == 2, text[-3000:]
    assert took <= 2 * timeout + 10, f"{took:.1f}s after the server died"
    assert "Traceback" not in text, text[-3000:]
    assert "server unavailable" in text
    assert _group_is_gone(run.pid), "a worker outlived the run"


def test_interrupting_a_parallel_run_leaves_no_worker(
    doomed_server: tuple[subprocess.Popen[bytes], str],
) -> None:
    _, url = doomed_server
    run = _start_parallel_run(url, 10.0)
    output = _Output(run)
    output.wait_for_checks(run)
    os.killpg(run.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
    text = output.rest(run, timeout=60)
    assert run.returncode == 2, text[-3000:]
    assert "verdict: PASS" not in text
    assert _group_is_gone(run.pid), "a worker outlived the run"


# what cannot run in parallel is refused -----------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workers", "0"], "--workers takes a number"),
        (["--workers", "many"], "--workers takes a number"),
        (["--workers", "2", "--app", "reference_server:create_app"], "workers cannot share"),
        (["--workers", "2", "--protocol", "amp-1.1"], "one worker"),
    ],
)
def test_what_cannot_run_in_parallel_is_refused_with_exit_2(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == 2
    assert message in capsys.readouterr().err


# what crosses between processes -------------------------------------------------------------------


def test_a_check_result_crosses_from_worker_to_controller_unchanged() -> None:
    sent = Exchange("POST", "http://h/amp/v1/memories", {"X-AMP-Agent-ID": "a"}, b'{"x": 1}', status=422)
    sent.response_body = b'{"error": {"code": "VALIDATION_ERROR"}}'
    other = Exchange("GET", "http://h/amp/v1/health", {}, None, status=200)
    result = CheckResult(
        nodeid="test_x.py::test_y[case]@amp-serial",
        name="test_y[case]",
        title="t",
        requirements=("AMP-CRE-01",),
        level="MUST",
        area="cre",
        outcome="fail",
        message="m",
        exchanges=[other, sent],
        failing_exchange=sent,
        finding_requirements=("AMP-CRE-01",),
        requests=2,
    )
    wire = json.loads(json.dumps(result_to_wire(result, None), default=lambda b: b.decode()))
    wire["exchanges"] = [
        {
            **e,
            "request_body": e["request_body"] and e["request_body"].encode(),
            "response_body": e["response_body"].encode(),
        }
        for e in wire["exchanges"]
    ]
    back, root_step = result_from_wire(wire, None)
    assert root_step is None
    assert back.nodeid == "test_x.py::test_y[case]" == plain_nodeid(result.nodeid)
    assert back.exchanges == result.exchanges and back.failing_exchange == sent
    assert (back.requirements, back.finding_requirements, back.requests) == (
        result.requirements,
        result.finding_requirements,
        2,
    )
    assert plain_nodeid("test_x.py::test_y[a@b]") == "test_x.py::test_y[a@b]"


def test_a_parallel_run_with_one_key_briefs_without_what_it_cannot_detect(tmp_path: Path) -> None:
    """The controller's briefing detects the conventions with a second agent; given one API key it
    leaves them to the workers' checks, which skip what needs another agent as a serial run's do
    (the preflight once crashed the run there)."""
    from amp_conformance.amp01.selfserve import BundledServer

    with BundledServer(keys=True) as server:
        agent, key = next(iter(server.api_keys.items()))
        report = _self_test(
            tmp_path,
            "one-key",
            "--base-url",
            server.url,
            f"--api-key={agent}={key}",
            "--workers",
            "2",
            "--only",
            "read,crud",
        )
    assert report["exit_code"] == 0, report["output"][-3000:]
    outcomes = {check["outcome"] for check in report["checks"]}
    assert outcomes <= {"pass", "skip", "warn"} and "pass" in outcomes, report["output"][-3000:]
    assert any("--api-key" in check["message"] for check in report["checks"] if check["outcome"] == "skip")
    assert "Traceback" not in report["output"] and "INTERNALERROR" not in report["output"]


def test_a_keyless_parallel_run_shares_steps_between_workers(tmp_path: Path) -> None:
    """Without keys the agents' ids derive from the run, the same in every worker: a worker adopting a
    step another made plays the same agents (they once carried the worker's id, and every adoption of
    a step a worker's check had played a part for was an error)."""
    with BundledServer(keys=False) as server:
        report = _self_test(
            tmp_path, "keyless", "--base-url", server.url, "--workers", "2", "--only", KEYLESS_AREAS
        )
    errors = [(c["id"], c["message"]) for c in report["checks"] if c["outcome"] == "error"]
    assert errors == [], errors
    assert report["summary"]["verdict"] == "pass", report["output"][-3000:]
    assert report["exit_code"] == 0
    adopted = [c["id"] for c in report["checks"] if any("in another worker" in n for n in c["notes"])]
    assert adopted, "no check adopted a step another worker made"
