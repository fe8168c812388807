"""The cleanup leaves nothing behind on a flaky network (issue 36 item 4): a create whose response was
lost is found by sweeping its owner, a DELETE refused with 409 because its archive PATCH was lost is
archived again, and a cell the server will not delete is listed in ``cleanup.left`` with the reason,
and the summary's last lines say so. The faults are an in-process wrapper transport around the
reference server; what is left is counted in the server's own store."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from amp_conformance.amp01.session import Amp01Session
from amp_conformance.cli import run_suite
from amp_conformance.engine.inprocess import ASGITransport, in_process_client
from amp_conformance.engine.report import build_report, render_summary
from amp_conformance.engine.run import Run
from reference_server import Settings, create_app
from tests.suite.inprocess import BASE_URL

#: A small selection that creates cells (and archives and deletes some itself).
AREAS = "cell"

Forward = Callable[[httpx.Request], httpx.Response]
Fault = Callable[[httpx.Request, Forward], httpx.Response]


class FaultyTransport(httpx.BaseTransport):
    """The reference server in-process, with ``fault`` deciding each request's fate; ``cleaning``
    says whether the run's cleanup has started (the faults that aim at it)."""

    def __init__(self, app: Any, fault: Fault) -> None:
        self.inner = ASGITransport(app)
        self.fault = fault
        self.cleaning = False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.fault(request, self.inner.handle_request)

    def close(self) -> None:
        self.inner.close()


def _run(monkeypatch: pytest.MonkeyPatch, make_fault: Callable[[FaultyTransport], Fault]) -> tuple[Run, Any]:
    """The suite over :data:`AREAS` through the faulty transport, and the server's state."""
    app = create_app(Settings.from_env({"AMP_LIFECYCLE_ENABLED": "false"}))
    transport = FaultyTransport(app, lambda request, forward: forward(request))
    transport.fault = make_fault(transport)
    original = Amp01Session.clean_up

    def cleaning(self: Amp01Session, **kwargs: Any) -> None:
        transport.cleaning = True
        original(self, **kwargs)

    monkeypatch.setattr(Amp01Session, "clean_up", cleaning)
    values: dict[str, Any] = {"amp_base_url": BASE_URL, "amp_only": AREAS, "amp_no_fuzz": True}
    values |= {"amp_timeout": 10.0, "amp_deadline": 60.0}
    with in_process_client(transport, BASE_URL) as http:
        outcome = run_suite(values, http=http, quiet=True)
    assert outcome.run is not None
    return outcome.run, app.state.amp


def _live(state: Any) -> list[str]:
    """The ids of the cells the server still holds (any state but deleted)."""
    return [r.cell["id"] for r in state.store.iter_records() if r.cell["lifecycle"]["status"] != "deleted"]


def _is_create(request: httpx.Request) -> bool:
    return request.method == "POST" and request.url.path.endswith("/memories")


def _is_archive(request: httpx.Request) -> bool:
    if request.method != "PATCH":
        return False
    body = json.loads(request.content or b"null")
    return isinstance(body, dict) and body.get("lifecycle") == {"status": "archived"}


def test_a_create_whose_response_was_lost_leaves_no_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server applies the third and the eighth create, then the connection times out: the run
    never learns those cells' ids, and the sweep of their owners removes them."""
    creates = 0

    def make(transport: FaultyTransport) -> Fault:
        def fault(
            request: httpx.Request, forward: Callable[[httpx.Request], httpx.Response]
        ) -> httpx.Response:
            nonlocal creates
            response = forward(request)
            if _is_create(request) and not transport.cleaning:
                creates += 1
                if creates in (3, 8):
                    raise httpx.ReadTimeout("the response was lost", request=request)
            return response

        return fault

    run, state = _run(monkeypatch, make)
    assert creates >= 8
    assert _live(state) == []
    cleanup = build_report(run).cleanup
    assert cleanup.left == () and cleanup.deleted == cleanup.attempted > 0


def test_a_delete_refused_after_its_archive_was_lost_is_archived_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cleanup's first archive PATCH never reaches the server (the connection drops): its DELETE
    answers 409, the cell is archived again and deleted."""
    dropped: list[str] = []

    def make(transport: FaultyTransport) -> Fault:
        def fault(
            request: httpx.Request, forward: Callable[[httpx.Request], httpx.Response]
        ) -> httpx.Response:
            if transport.cleaning and _is_archive(request) and not dropped:
                dropped.append(request.url.path)
                raise httpx.ReadTimeout("the connection dropped", request=request)
            return forward(request)

        return fault

    run, state = _run(monkeypatch, make)
    assert len(dropped) == 1
    assert _live(state) == []
    assert build_report(run).cleanup.left == ()


def test_a_cell_the_server_will_not_delete_is_left_by_id_with_its_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cleanup's first DELETE answers 500 every time: that cell is ``cleanup.left`` (id, reason),
    the JSON report validates, and the terminal's last lines name it; the others are removed."""
    refused: list[str] = []

    def make(transport: FaultyTransport) -> Fault:
        def fault(
            request: httpx.Request, forward: Callable[[httpx.Request], httpx.Response]
        ) -> httpx.Response:
            path = request.url.path
            if transport.cleaning and request.method == "DELETE" and (not refused or refused[0] == path):
                refused.append(path)
                return httpx.Response(500, json={"error": {"code": "internal"}}, request=request)
            return forward(request)

        return fault

    run, state = _run(monkeypatch, make)
    cell_id = refused[0].rsplit("/", 1)[1]
    assert _live(state) == [cell_id]
    report = build_report(run)
    assert [dict(entry) for entry in report.cleanup.left] == [
        {"id": cell_id, "reason": "DELETE answered 500"}
    ]
    document = report.to_json()
    assert document["cleanup"]["left"] == [{"id": cell_id, "reason": "DELETE answered 500"}]
    type(report).from_json(document)  # the schema takes it
    tail = render_summary(run).splitlines()[-8:]
    assert f"  cleanup: 1 cell left on the server: {cell_id} (DELETE answered 500)" in tail, tail


def test_a_fault_free_run_lists_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sweep costs a fault-free run no request: no owner is listed when every create answered."""
    listed: list[str] = []

    def make(transport: FaultyTransport) -> Fault:
        def fault(
            request: httpx.Request, forward: Callable[[httpx.Request], httpx.Response]
        ) -> httpx.Response:
            if transport.cleaning and request.method == "GET":
                listed.append(str(request.url))
            return forward(request)

        return fault

    _, state = _run(monkeypatch, make)
    assert listed == [] and _live(state) == []


def test_a_cell_a_create_answered_but_no_step_remembered_is_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Creates sent together (``at_once``) whose first failure is raised before the others' cells are
    remembered leave answered cells nobody knows; simulated by forgetting to remember the first cell:
    the cleanup removes it all the same (every create's answer is noted)."""
    dropped: list[str] = []
    remember = Amp01Session.remember

    def forgetful(self: Amp01Session, cell_id: str, agent: Any) -> None:
        if not dropped:
            dropped.append(cell_id)
            return
        remember(self, cell_id, agent)

    monkeypatch.setattr(Amp01Session, "remember", forgetful)
    _, state = _run(monkeypatch, lambda transport: lambda request, forward: forward(request))
    assert dropped
    assert _live(state) == []


def test_a_cell_too_big_to_archive_is_shrunk_then_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A size check cut short by the network leaves its cell at the size limit, where the archive PATCH
    itself is 413 (the cell grows by the status): the cleanup shrinks the text, archives, deletes."""
    refused: list[str] = []
    shrunk: set[str] = set()
    big: list[str] = []  # the first cell the cleanup archives stands for the one at the limit

    def make(transport: FaultyTransport) -> Fault:
        def fault(
            request: httpx.Request, forward: Callable[[httpx.Request], httpx.Response]
        ) -> httpx.Response:
            path = request.url.path
            if transport.cleaning and request.method == "PATCH":
                if b'"content"' in request.content:
                    shrunk.add(path)
                elif b'"archived"' in request.content and (big or [path])[0] == path:
                    big[:] = [path]
                    if path not in shrunk:
                        refused.append(path)
                        return httpx.Response(
                            413, json={"error": {"code": "PAYLOAD_TOO_LARGE"}}, request=request
                        )
            return forward(request)

        return fault

    _, state = _run(monkeypatch, make)
    assert refused and _live(state) == []
