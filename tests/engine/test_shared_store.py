"""Shared steps made once across a parallel run's workers (engine.shared_store): claim, publish, adopt,
close, and the pickles that carry a step with its exchanges."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from amp_conformance.engine.context import SharedStep
from amp_conformance.engine.exchange import Exchange, exchange_from_wire, exchange_to_wire
from amp_conformance.engine.outcomes import CheckFailure
from amp_conformance.engine.shared_store import SharedStore, dumps_step, loads_step, mark_done

pytestmark = pytest.mark.skipif(not SharedStore.available(), reason="no fcntl: nothing is shared")


def _never() -> bool:
    return False


def test_one_worker_claims_a_step_and_another_adopts_what_it_published(tmp_path: Path) -> None:
    maker, other = SharedStore(str(tmp_path), "gw0"), SharedStore(str(tmp_path), "gw1")
    assert maker.claim("cells:trio")
    assert not other.claim("cells:trio")  # claimed: the other worker waits for it instead
    assert other.adopt("cells:trio", _never, wait=False) is None  # not made yet, and no wait asked
    maker.publish("cells:trio", b"made")
    assert other.adopt("cells:trio", _never) == b"made"
    assert other.adopt("cells:trio", _never, wait=False) == b"made"


def test_a_worker_cleans_up_only_once_every_worker_is_done(tmp_path: Path) -> None:
    """Cells a step made may be used by any worker until all have run their last check."""
    early, late = SharedStore(str(tmp_path), "gw0", workers=2), SharedStore(str(tmp_path), "gw1", workers=2)
    early.done()
    started = time.monotonic()
    assert not early.wait_for_workers(_never, timeout=0.2)  # gw1 is still checking
    assert time.monotonic() - started >= 0.2
    later = threading.Timer(0.2, late.done)
    later.start()
    assert early.wait_for_workers(_never, timeout=10)
    later.join()
    dead = SharedStore(str(tmp_path / "x"), "gw0", workers=2)
    (tmp_path / "x").mkdir()
    dead.done()
    mark_done(str(tmp_path / "x"), "gw1")  # the controller, for a worker that went down
    assert dead.wait_for_workers(_never, timeout=1)
    assert not SharedStore(str(tmp_path / "x"), "gw0", workers=3).wait_for_workers(lambda: True, timeout=10)


def test_an_unshareable_step_sends_the_waiting_workers_to_make_their_own(tmp_path: Path) -> None:
    maker, other = SharedStore(str(tmp_path), "gw0"), SharedStore(str(tmp_path), "gw1")
    assert maker.claim("step")
    maker.publish("step", None)
    started = time.monotonic()
    assert other.adopt("step", _never) is None
    assert time.monotonic() - started < 1


def test_a_worker_waits_while_the_step_is_being_made(tmp_path: Path) -> None:
    maker, other = SharedStore(str(tmp_path), "gw0"), SharedStore(str(tmp_path), "gw1")
    assert maker.claim("step")
    later = threading.Timer(0.3, lambda: maker.publish("step", b"made"))
    later.start()
    started = time.monotonic()
    assert other.adopt("step", _never) == b"made"
    assert time.monotonic() - started >= 0.25
    later.join()


def test_a_worker_stops_waiting_at_its_deadline_or_the_timeout(tmp_path: Path) -> None:
    maker, other = SharedStore(str(tmp_path), "gw0"), SharedStore(str(tmp_path), "gw1")
    assert maker.claim("step")  # and never publishes (a worker that died making it)
    started = time.monotonic()
    assert other.adopt("step", lambda: time.monotonic() - started > 0.2) is None
    assert other.adopt("step", _never, timeout=0.2) is None
    assert time.monotonic() - started < 3


class _Reply:
    def __init__(self, exchange: Exchange):
        self.exchange = exchange


def test_a_step_crosses_with_its_exchanges_bound_to_the_adopting_worker() -> None:
    first = Exchange("POST", "http://s/memories", {"X-AMP-Agent-ID": "a"}, b"{}", 201, {}, b'{"id": "c1"}')
    second = Exchange("GET", "http://s/memories/c1", {}, None, 200, {}, b"{}")
    failure = CheckFailure("the list is short", expected="3 cells", exchange=second, requirements=("AMP-X",))
    step = SharedStep(
        {"replies": [_Reply(first), _Reply(second)], "note": "kept"},
        failure,
        [first, second],
        {"roles": {"a": "agent-a"}},
        "a check",
        ("AMP-X",),
    )
    data = dumps_step(step, Exchange, exchange_to_wire)
    assert data is not None
    replay: Any = object()
    adopted = loads_step(data, lambda wire: exchange_from_wire(wire, replay))
    assert isinstance(adopted, SharedStep) and adopted.maker == "a check"
    assert [e.url for e in adopted.exchanges] == [first.url, second.url]
    assert all(e.replay is replay for e in adopted.exchanges)
    # the value's replies and the finding point at the adopted exchanges themselves (its evidence)
    assert [r.exchange for r in adopted.value["replies"]] == adopted.exchanges
    assert adopted.value["replies"][0].exchange is adopted.exchanges[0]
    assert adopted.error.exchange is adopted.exchanges[1] and adopted.error.requirements == ("AMP-X",)


def test_a_value_that_cannot_be_pickled_is_not_shared() -> None:
    step = SharedStep({"lock": threading.Lock()}, None, [], None, "a check", ())
    assert dumps_step(step, Exchange, exchange_to_wire) is None
