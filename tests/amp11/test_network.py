"""AMP v1.1 on a flaky network (issue 36 items 4, 5): the REST channel's reads may be sent again, its
writes never are; a scope a lost encode may have stored into is swept at the end; an MCP server that
dies mid-run ends the run INCOMPLETE (never FAIL), the later MCP checks errored under one cause, and
what REST can forget is forgotten."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from amp_conformance.amp11.context import Amp11Context
from amp_conformance.amp11.session import Amp11Target
from amp_conformance.engine.client import Client
from amp_conformance.engine.inprocess import ASGITransport, in_process_client
from amp_conformance.engine.report import render_summary, verdict
from tests.amp11.harness import free_port, run_checks

DYING_MCP = Path(__file__).with_name("dying_mcp.py")

Forward = Callable[[httpx.Request], httpx.Response]
Fault = Callable[[httpx.Request, Forward], httpx.Response]


class FaultyTransport(httpx.BaseTransport):
    """The REST reference app in-process, each request's fate decided by ``fault``."""

    def __init__(self, app: Any, fault: Fault) -> None:
        self.inner = ASGITransport(app)
        self.fault = fault

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.fault(request, self.inner.handle_request)

    def close(self) -> None:
        self.inner.close()


@contextmanager
def faulty_rest(fault: Fault) -> Iterator[tuple[Amp11Target, Any]]:
    """A REST-only target through ``fault``, and the server's store (to count what is left)."""
    from reference_server.amp11 import Faults, Store, create_rest_app

    store = Store()
    http = in_process_client(FaultyTransport(create_rest_app(store, Faults.parse("")), fault))
    try:
        yield Amp11Target(base_url="http://amp11.test", http=http, timeout=5.0), store
    finally:
        http.close()


def _is_encode(request: httpx.Request) -> bool:
    return request.method == "POST" and request.url.path == "/v1/memories"


def _losing(*which: int) -> tuple[Fault, list[int]]:
    """A fault storing every encode but answering none of the ``which``-th (the connection times out),
    and the count of encodes seen."""
    encodes = [0]

    def fault(request: httpx.Request, forward: Forward) -> httpx.Response:
        response = forward(request)
        if _is_encode(request):
            encodes[0] += 1
            if encodes[0] in which:
                raise httpx.ReadTimeout("the response was lost", request=request)
        return response

    return fault, encodes


def test_a_scope_left_by_a_lost_encode_is_swept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server stores the second and the fifth encode, then the connection times out, and no recall
    settles them: the run never learns those ids; the sweep of their scopes forgets them, and the store
    ends empty."""

    def unreconciled(self: Any, scope: Any, content: Any, on: Any, lost: Exception) -> Any:
        raise lost

    monkeypatch.setattr(Amp11Context, "_reconciled_encode", unreconciled)
    fault, counted = _losing(2, 5)
    with faulty_rest(fault) as (target, store):
        collector = run_checks(target, "recall")
    assert counted[0] >= 5
    assert collector.session is not None
    assert len(store) == 0, [m.id for _, m in store.rows()]
    info = collector.session.cleanup_info()
    assert info["left"] == [] and info["deleted"] == info["attempted"] > 0
    outcomes = {r.outcome for r in collector.results.values()}
    assert "failed" not in outcomes, outcomes  # a lost answer is never judged: the check is re-run
    assert collector.session.http_connection is not None
    assert collector.session.http_connection.network.rerun, "the checks whose encode was lost re-ran"


def test_a_lost_encode_found_by_a_recall_in_its_scope_is_adopted() -> None:
    """The same lost answers, settled: a recall of the content in the check's own fresh scope finds
    the one memory it stored, the check goes on (no error, nothing sent twice), and it is cleaned up."""
    fault, counted = _losing(2, 5)
    with faulty_rest(fault) as (target, store):
        collector = run_checks(target, "recall")
    clean, fault_free = _losing()
    with faulty_rest(clean) as (target, _):
        run_checks(target, "recall")
    assert counted == fault_free  # no encode sent twice
    errors = {r.name: r.message for r in collector.results.values() if r.outcome == "error"}
    assert errors == {}
    notes = [n for r in collector.results.values() for n in r.notes if "a recall found the memory" in n]
    assert len(notes) == 2, notes
    assert len(store) == 0


def test_reads_may_be_sent_again_writes_never(monkeypatch: pytest.MonkeyPatch) -> None:
    """recall and export (read-only POSTs) go out ``repeatable=True``, stats (a GET) repeatable by
    its method or explicitly; encode never is."""
    seen: dict[str, set[bool | None]] = {}
    original = Client.request

    def request(self: Client, method: str, path: str, **kwargs: Any) -> Any:
        seen.setdefault(f"{method} {path}", set()).add(kwargs.get("repeatable"))
        return original(self, method, path, **kwargs)

    monkeypatch.setattr(Client, "request", request)
    with faulty_rest(lambda request, forward: forward(request)) as (target, _):
        run_checks(target, "recall or export or stats")
    assert seen["POST /v1/memories/recall"] == {True}
    assert seen["POST /v1/memories/export"] == {True}
    assert seen["GET /v1/memories/stats"] <= {True, None}
    assert seen["POST /v1/memories"] == {None}


def test_an_mcp_server_dying_mid_run_ends_incomplete_and_rest_cleans_up(tmp_path: Path) -> None:
    """The MCP channel dies after 30 answered frames; REST (the same store) stays up. No check fails,
    the run is INCOMPLETE, the MCP checks after the death errored under the one cause, and every
    memory is forgotten (over REST for those MCP stored)."""
    port = free_port()
    count = tmp_path / "left.txt"
    command = [sys.executable, str(DYING_MCP), "30", str(port), str(count)]
    target = Amp11Target(mcp_command=command, base_url=f"http://127.0.0.1:{port}", timeout=5.0, deadline=30.0)
    collector = run_checks(target, "encode or recall")
    outcomes = [r.outcome for r in collector.results.values()]
    assert "failed" not in outcomes, [
        (r.name, r.message) for r in collector.results.values() if r.outcome == "failed"
    ]
    assert verdict(collector.run) == "incomplete"
    errored = [r.message for r in collector.results.values() if r.outcome == "error"]
    not_sent = [m for m in errored if m.startswith("request not sent: ")]
    assert len(not_sent) >= 2 and len(set(not_sent)) == 1, errored
    assert "passed" in outcomes  # the REST checks ran on
    assert count.read_text() == "0"
    assert collector.session is not None
    assert collector.session.cleanup_info()["left"] == []
    assert "INCOMPLETE" in render_summary(collector.run)


def test_a_rest_only_run_forgets_the_memories_of_scopes_its_delete_route_cannot_name() -> None:
    """A scope with ``session_id`` cannot travel on REST's DELETE (the pinned OpenAPI lists no such
    parameter): the cleanup forgets by the keys the route lists (strict AND still names the memory),
    so a fault-free REST-only run leaves the store empty."""
    with faulty_rest(lambda request, forward: forward(request)) as (target, store):
        collector = run_checks(target)
    assert collector.session is not None
    assert collector.session.cleanup_info()["left"] == []
    assert len(store) == 0, [m.scope for _, m in store.rows()]


def test_a_memory_whose_forget_was_lost_in_its_check_is_forgotten_by_the_cleanup() -> None:
    """A check forgets its own memory (not left to the cleanup); that DELETE never reaches the server:
    the memory is the cleanup's, and the store ends empty."""
    dropped: list[str] = []

    def fault(request: httpx.Request, forward: Forward) -> httpx.Response:
        if request.method == "DELETE" and len(dropped) < 2:
            dropped.append(request.url.path)
            raise httpx.ReadTimeout("the connection dropped", request=request)
        return forward(request)

    with faulty_rest(fault) as (target, store):
        collector = run_checks(target, "forget")
    assert len(dropped) == 2
    assert collector.session is not None
    assert len(store) == 0, [m.id for _, m in store.rows()]
    assert collector.session.cleanup_info()["left"] == []


def test_a_memory_its_check_never_got_to_forget_is_forgotten_by_the_cleanup() -> None:
    """A check stores a memory it means to forget itself, then errors first (its stats read is lost):
    that memory is the cleanup's, and the store ends empty."""
    stats: list[str] = []

    def fault(request: httpx.Request, forward: Forward) -> httpx.Response:
        if request.url.path == "/v1/memories/stats":
            stats.append(str(request.url))
            if len(stats) >= 2:  # the check's, each attempt and its re-run (the first is the preflight's)
                raise httpx.ReadTimeout("the response was lost", request=request)
        return forward(request)

    with faulty_rest(fault) as (target, store):
        collector = run_checks(target, "stats_follows_encode_and_forget")
    assert [r.outcome for r in collector.results.values()] == ["error"]
    assert len(store) == 0, [m.id for _, m in store.rows()]
