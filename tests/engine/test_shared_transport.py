"""Issue 36: a shared step that a transport failure broke is not kept as broken: its next user (the
maker's re-run) makes it again, once; broken again, it is one cause, shown once by the check that
made it, and the checks built on it are errored under it. Serial and ``--workers`` runs agree.

Three toy-protocol checks (``tests/engine/toy``) share one declared step; a fake transport
(``conftest.py`` written beside them, ``Connection.send`` patched in the run's processes) loses the
answer of the step's write after the server applied it (``AmbiguousExchange``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jsonschema
import pytest

from amp_conformance.engine.context import CheckContext, SharedStepBroken, release_held_claims
from amp_conformance.engine.network import NetworkLog
from amp_conformance.engine.outcomes import AmbiguousExchange, Evidence
from amp_conformance.engine.resources import load_contract
from amp_conformance.engine.shared_store import SharedStore
from amp_conformance.engine.spec import CheckSpec
from amp_conformance.engine.vocabulary import Level

TOY = Path(__file__).resolve().parent / "toy"
STEP = "toy:shared-value"

CHECKS = '''
"""Three checks built on one shared step (written by tests/engine/test_shared_transport.py)."""

from amp_conformance.engine.client import Reply
from amp_conformance.engine.marking import check
from amp_conformance.engine.steps import Step
from toy_protocol.protocol import ToyContext


def _make(amp: ToyContext, rec) -> str:
    key = f"{amp.run.prefix}-shared"
    amp.client().request("PUT", f"/kv/{key}", content="shared")
    rec("read", amp.client().get(f"/kv/{key}"))
    return key


SHARED = Step("toy:shared-value", _make, reply=Reply)


@check("TOY-PUT-01", uses=(SHARED,))
def test_first(amp: ToyContext) -> None:
    """The shared value reads back (it makes the step)."""
    made = SHARED(amp)
    amp.expect(made["read"].text == "shared", f"read {made['read'].text!r}", made["read"])


@check("TOY-PUT-02", uses=(SHARED,))
def test_second(amp: ToyContext) -> None:
    """The shared value is still there."""
    reply = amp.client().get(f"/kv/{SHARED(amp).value}")
    amp.expect(reply.text == "shared", f"read {reply.text!r}", reply)


@check("TOY-GET-01", uses=(SHARED,))
def test_third(amp: ToyContext) -> None:
    """The shared value's read answered 200."""
    made = SHARED(amp)
    amp.expect(made["read"].status == 200, f"answered {made['read'].status}", made["read"])
'''

CONFTEST = '''
"""The fake transport: the first BREAK_SHARED writes of the shared value lose their answer."""

import json
import os

from amp_conformance.engine.client import Connection
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.network import NetworkLog
from amp_conformance.engine.outcomes import AmbiguousExchange
from amp_conformance.plugin import active_run

_send, _init = Connection.send, Connection.__init__
_broken = [0]


def _with_network(self, *args, **kwargs):
    _init(self, *args, **kwargs)
    if not isinstance(getattr(self, "network", None), NetworkLog):
        self.network = NetworkLog()


def _breaking(self, method, url, **kwargs):
    exchange = _send(self, method, url, **kwargs)  # applied by the server
    if method == "PUT" and url.endswith("-shared") and _broken[0] < int(os.environ["BREAK_SHARED"]):
        _broken[0] += 1
        lost = Exchange(method, url, exchange.request_headers, exchange.request_body)
        lost.error = "the connection was reset after the request was sent (a fake transport)"
        failure = AmbiguousExchange(f"{method} {url}: {lost.error}")
        failure.exchange = lost
        raise failure
    return exchange


Connection.__init__, Connection.send = _with_network, _breaking


def pytest_sessionfinish(session):
    run = active_run(session.config)
    if run is None:
        return
    worker = getattr(session.config, "workerinput", {}).get("workerid", "main")
    block = run.active_session.connection.network.as_block()
    with open(os.path.join(os.environ["NETWORK_OUT"], f"network-{worker}.json"), "w") as handle:
        json.dump({"network": block, "broken": _broken[0]}, handle)
'''


def _run(tmp_path: Path, *, breaks: int, workers: int) -> tuple[dict[str, Any], NetworkLog, str]:
    """The three checks against the toy server, serially or on ``workers``: the JSON report's checks
    by name, the report's network block (workers merged by the controller), the terminal output."""
    site = tmp_path / f"site-{breaks}-{workers}"
    shutil.copytree(TOY, site, ignore=shutil.ignore_patterns("__pycache__"))
    (site / "test_shared.py").write_text(textwrap.dedent(CHECKS))
    (site / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    out = site / "out"
    out.mkdir()
    sys.path.insert(0, str(site))
    try:
        from toy_protocol.server import start

        server, url = start()
    finally:
        sys.path.remove(str(site))
    env = {**os.environ, "PYTHONPATH": str(site), "BREAK_SHARED": str(breaks), "NETWORK_OUT": str(out)}
    env.pop("PYTEST_ADDOPTS", None)
    command = [
        sys.executable,
        "-m",
        "pytest",
        "test_shared.py",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--amp-protocol",
        "toy",
        "--amp-base-url",
        url,
        "--amp-json",
        str(out / "report.json"),
        "-n",
        str(workers),
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=180, cwd=site)
    finally:
        server.shutdown()
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    report = json.loads((out / "report.json").read_text())
    jsonschema.validate(report, load_contract("report.schema.json"))
    network = NetworkLog()
    network.merge(report["network"])  # the controller's block: its workers' counts merged in
    return {check["name"]: check for check in report["checks"]}, network, done.stdout


@pytest.mark.parametrize("workers", [0, 2])
def test_a_step_broken_once_is_made_again_and_its_checks_pass(tmp_path: Path, workers: int) -> None:
    checks, network, _ = _run(tmp_path, breaks=1, workers=workers)
    assert {name: c["outcome"] for name, c in checks.items()} == dict.fromkeys(
        ("test_first", "test_second", "test_third"), "pass"
    ), {name: c["message"] for name, c in checks.items()}
    assert network.rerun == ["test_shared.py::test_first"] and network.unrecovered == 0
    assert any(note.startswith("re-run once: PUT ") for note in checks["test_first"]["notes"])


@pytest.mark.parametrize("workers", [0, 2])
def test_a_step_broken_every_time_is_one_cause(tmp_path: Path, workers: int) -> None:
    checks, network, stdout = _run(tmp_path, breaks=1000, workers=workers)
    assert {name: c["outcome"] for name, c in checks.items()} == dict.fromkeys(
        ("test_first", "test_second", "test_third"), "error"
    )
    cause = checks["test_first"]
    assert cause["message"].startswith(f"the shared step {STEP!r} broke twice"), cause["message"]
    assert "fake transport" in cause["message"]
    for name in ("test_second", "test_third"):
        message = checks[name]["message"]
        maker = "The shared value reads back (it makes the step)."
        assert message == f"blocked by the shared step {STEP!r}'s broken exchange (see the check {maker!r})"
        assert not any("-shared" in e["url"] for e in checks[name]["exchanges"]), "shown once, by the cause"
    assert network.rerun == ["test_shared.py::test_first"] and network.unrecovered == 1
    # the summary's errors list the cause once, its dependents under it
    listed = stdout.split("errors (the tool or the network failed", 1)[1].split("\n\n", 1)[0]
    assert listed.count(f"{STEP!r} broke twice") == 1 and listed.count(" x ") == 1, listed
    assert "\n         2 check(s) errored under it: blocked by the shared step" in listed, listed


def _context(run: Any, title: str) -> CheckContext[Any]:
    context = CheckContext.__new__(CheckContext)  # only what shared() needs
    context.run = run
    context.evidence = Evidence()
    context.check_spec = CheckSpec(requirements=("TOY-PUT-01",), level=Level.MUST, area="put", title=title)
    context.deadline = float("inf")
    context.session = SimpleNamespace(replay=None)  # type: ignore[assignment]
    return context


def _broken(times: list[int]) -> Any:
    def make(_: object) -> str:
        if times[0] > 0:
            times[0] -= 1
            raise AmbiguousExchange("PUT /kv/x: the connection was reset")
        return "value"

    return make


def _worker(folder: Path, name: str) -> Any:
    return SimpleNamespace(cache={}, shared_store=SharedStore(str(folder), name, workers=2))


def test_a_worker_keeps_its_claim_on_a_step_broken_once_and_shares_it_made_again(tmp_path: Path) -> None:
    """Parallel runs: the claim stays with the worker whose making broke (its re-run makes it) and the
    value it then makes is what the other worker adopts."""
    maker, other = _worker(tmp_path, "gw0"), _worker(tmp_path, "gw1")
    make = _broken([1])
    with pytest.raises(AmbiguousExchange):
        _context(maker, "maker").shared(STEP, make)
    assert not _context(maker, "maker").shared_made(STEP)
    assert _context(maker, "maker, again").shared(STEP, make) == "value"
    assert _context(other, "other").shared(STEP, lambda _: pytest.fail("made twice")) == "value"


def test_a_claim_nobody_made_again_is_given_up_after_the_check(tmp_path: Path) -> None:
    maker, other = _worker(tmp_path, "gw0"), _worker(tmp_path, "gw1")
    with pytest.raises(AmbiguousExchange):
        _context(maker, "maker").shared(STEP, _broken([1]))
    release_held_claims(maker)  # the plugin's, once the check (and its re-run) is over
    assert _context(other, "other").shared(STEP, lambda _: "its own") == "its own"


def test_broken_twice_the_step_keeps_a_pointer_for_its_other_users() -> None:
    run = SimpleNamespace(cache={})
    make = _broken([2])
    with pytest.raises(AmbiguousExchange):
        _context(run, "maker").shared(STEP, make)
    with pytest.raises(SharedStepBroken) as cause:
        _context(run, "maker").shared(STEP, make)
    assert cause.value.reporter and "broke twice" in str(cause.value)
    with pytest.raises(SharedStepBroken) as dependent:
        _context(run, "user").shared(STEP, lambda _: pytest.fail("made a third time"))
    assert not dependent.value.reporter and str(dependent.value).startswith("blocked by the shared step")


def test_a_step_broken_twice_crosses_to_another_worker_as_its_pointer(tmp_path: Path) -> None:
    maker, other = _worker(tmp_path, "gw0"), _worker(tmp_path, "gw1")
    make = _broken([2])
    with pytest.raises(AmbiguousExchange):
        _context(maker, "maker").shared(STEP, make)
    with pytest.raises(SharedStepBroken):
        _context(maker, "maker").shared(STEP, make)
    with pytest.raises(SharedStepBroken) as adopted:
        _context(other, "other").shared(STEP, lambda _: pytest.fail("made in another worker too"))
    assert not adopted.value.reporter and "(see the check 'maker')" in str(adopted.value)
