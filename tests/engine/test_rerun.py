"""Issue 36: a check that a transport failure ended is run once more from the start, on a fresh
context, and judged on that run alone; a failure is never re-run.

AMP v0.1 in-process against the reference server, with a fake transport (``Connection.send``
monkeypatched) that applies a create and then loses its answer (``AmbiguousExchange``), as a reset
after the server acted would."""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from amp_conformance import plugin
from amp_conformance.engine.client import Connection
from amp_conformance.engine.exchange import Exchange
from amp_conformance.engine.network import NetworkLog
from amp_conformance.engine.outcomes import AmbiguousExchange
from amp_conformance.engine.verdict import CheckResult
from tests.suite.inprocess import run_against_reference

CHECK = "test_a_new_cell_is_readable_and_listed_at_once"  # AMP-CRE-09: a create, a read, a list
FAILING = "test_create_returns_201_with_the_stored_cell"  # AMP-CRE-01, failed by create-returns-200


class Breaker:
    """Loses the answer of the first ``times`` creates (POST /memories) a check named ``check`` sends,
    after the server applied them."""

    def __init__(self, check: str, times: int):
        self.check = check
        self.times = times
        self.broken = 0
        self.sent: list[str] = []

    def wanted(self, method: str, url: str) -> bool:
        """A request the check sends itself (not the session's lazy detection of conventions)."""
        frames = []
        frame = sys._getframe(2)
        while frame is not None:
            frames.append((frame.f_code.co_name, frame.f_code.co_filename))
            frame = frame.f_back
        return any(name == self.check for name, _ in frames) and not any(
            path.endswith("conventions.py") for _, path in frames
        )

    def send(self, original: Callable[..., Exchange]) -> Callable[..., Exchange]:
        def send(connection: Connection, method: str, url: str, **kwargs: Any) -> Exchange:
            if not self.wanted(method, url):
                return original(connection, method, url, **kwargs)
            self.sent.append(f"{method} {url}")
            exchange = original(connection, method, url, **kwargs)  # applied by the server
            if method == "POST" and url.endswith("/memories") and self.broken < self.times:
                self.broken += 1
                lost = Exchange(method, url, exchange.request_headers, exchange.request_body)
                lost.error = "the connection was reset after the request was sent (a fake transport)"
                failure = AmbiguousExchange(f"{method} {url}: {lost.error}")
                failure.exchange = lost
                raise failure
            return exchange

        return send


@pytest.fixture
def breaker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, int], Breaker]]:
    """A :class:`Breaker` on every connection; each connection given a network log if it has none
    (engineer A's client hangs one on every connection)."""
    init, original = Connection.__init__, Connection.send

    def with_network(self: Connection, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        if not isinstance(getattr(self, "network", None), NetworkLog):
            self.network = NetworkLog()  # type: ignore[attr-defined]

    monkeypatch.setattr(Connection, "__init__", with_network)

    def make(check: str, times: int) -> Breaker:
        one = Breaker(check, times)
        monkeypatch.setattr(Connection, "send", one.send(original))
        return one

    yield make


def _run(keyword: str, env: dict[str, str] | None = None) -> tuple[dict[str, CheckResult], NetworkLog]:
    outcome = run_against_reference(env, areas="create", admin=False, extra={"keyword": keyword})
    assert outcome.run is not None
    network = outcome.run.active_session.connection.network  # type: ignore[attr-defined]
    return {r.name: r for r in outcome.run.results.values()}, network


def test_a_check_whose_create_lost_its_answer_passes_on_its_rerun(
    breaker: Callable[[str, int], Breaker],
) -> None:
    fake = breaker(CHECK, 1)
    results, network = _run(CHECK)
    result = results[CHECK]
    assert result.outcome == "pass", result.message
    assert fake.broken == 1
    assert network.rerun == [result.nodeid] and network.unrecovered == 0
    assert any(note.startswith("re-run once: POST ") for note in result.notes), result.notes
    # the attempt that broke stays in the evidence, before the re-run's own exchanges
    broken = [e for e in result.exchanges if e.error and "fake transport" in e.error]
    assert len(broken) == 1 and result.exchanges.index(broken[0]) < len(result.exchanges) - 1
    creates = [e for e in result.exchanges if e.method == "POST" and e.url.endswith("/memories")]
    owners = {(e.request_body or b"").split(b'"owner_id"', 1)[-1][:60] for e in creates}
    assert len(creates) == 2 and len(owners) == 2, "the re-run works on fresh cells (a new owner)"
    assert (result.requests or 0) >= len(fake.sent), "the report counts both runs' requests"


def test_a_check_broken_twice_is_an_error_and_counted_unrecovered(
    breaker: Callable[[str, int], Breaker],
) -> None:
    fake = breaker(CHECK, 2)
    results, network = _run(CHECK)
    result = results[CHECK]
    assert result.outcome == "error" and "fake transport" in result.message
    assert fake.broken == 2, "run twice, never a third time"
    assert network.rerun == [result.nodeid] and network.unrecovered == 1


def test_a_failure_is_never_rerun(breaker: Callable[[str, int], Breaker]) -> None:
    faulty = breaker(FAILING, 0)
    results, network = _run(FAILING, {"AMP_REFERENCE_FAULTS": "create-returns-200"})
    result = results[FAILING]
    assert result.outcome == "fail"
    assert network.rerun == [] and not any(n.startswith("re-run once") for n in result.notes)
    creates = [sent for sent in faulty.sent if sent.startswith("POST ")]
    assert len(creates) == 1, f"the check's create was sent once, not re-run: {faulty.sent}"


def test_no_rerun_once_the_run_is_interrupted(
    breaker: Callable[[str, int], Breaker], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A signal the command caught (Ctrl-C, SIGTERM) ends the run: nothing is sent again."""
    monkeypatch.setattr(plugin, "INTERRUPTED_BY", [signal.SIGINT])
    fake = breaker(CHECK, 1)
    results, network = _run(CHECK)
    assert results[CHECK].outcome == "error" and fake.broken == 1
    assert network.rerun == [] and network.unrecovered == 1


@pytest.mark.parametrize(
    ("case", "expected"),
    [("fresh", True), ("deadline spent", False), ("breaker open", False), ("re-run already", False)],
)
def test_a_check_runs_again_only_once_within_its_deadline_and_while_the_server_is_up(
    case: str, expected: bool
) -> None:
    context = SimpleNamespace(deadline=time.monotonic() + (-1 if case == "deadline spent" else 60))
    item = SimpleNamespace(stash=pytest.Stash(), funcargs={"amp": context})
    item.stash[plugin.CONTEXT_KEY] = context  # type: ignore[assignment]
    if case == "re-run already":
        item.stash[plugin.FIRST_RUN_KEY] = ((), "reset")
    breaker = "the server failed 3 requests in a row" if case == "breaker open" else None
    session = SimpleNamespace(broken_reason=breaker)
    run = SimpleNamespace(interrupted=False, active_session=session)
    assert plugin._may_run_again(item, run) is expected  # type: ignore[arg-type]
