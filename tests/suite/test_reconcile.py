"""v0.1 steps recover from a write whose answer was lost, without a re-run and without a second cell.

The server is the reference server in-process, behind a transport that breaks one chosen request:
either the server applies it and the response body is cut short (a reset after the server acted), or
the request never reaches the server and the answer never comes (a stall past the timeout). A create
step then finds its cell in the owner's list and adopts it, or sends the create once more when the
list shows it never happened; an archive step reads the cell back."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from amp_conformance.cli import SuiteOutcome, run_suite
from amp_conformance.engine.client import Client, Connection, Reply
from amp_conformance.engine.inprocess import ASGITransport, in_process_client
from amp_conformance.engine.network import NetworkLog
from amp_conformance.engine.verdict import CheckResult
from reference_server import Settings, create_app
from tests.suite.inprocess import ADMIN_TOKEN, BASE_URL

Chosen = Callable[[httpx.Request, Any, "BreakOnce"], bool]


class _Cut(httpx.SyncByteStream):
    """A response body that breaks before its first byte arrives."""

    def __iter__(self) -> Iterator[bytes]:
        raise httpx.ReadError("connection reset by peer")


class BreakOnce(httpx.BaseTransport):
    """The in-process server, except that the first request ``chosen`` picks is broken: ``applied``,
    the server acts on it and the answer is cut; else it never reaches the server and times out."""

    def __init__(self, chosen: Chosen, *, applied: bool) -> None:
        server = {"AMP_LIFECYCLE_ENABLED": "false", "AMP_ADMIN_TOKEN": ADMIN_TOKEN}
        self.inner = ASGITransport(create_app(Settings.from_env(server)))
        self.chosen = chosen
        self.applied = applied
        self.broken: list[Any] = []
        """The body of the request broken (one at most)."""
        self.created: Counter[str] = Counter()
        """Cells the server stored, by owner."""
        self.deleted: set[str] = set()
        """Ids a DELETE answered 204 for."""
        self.texts: dict[str, str] = {}
        """Created cell id -> its text."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        raw = request.read()
        try:
            body = json.loads(raw) if raw else None
        except (ValueError, RecursionError):  # the malformed bodies the suite sends on purpose
            body = None
        if not self.broken and self.chosen(request, body, self):
            self.broken.append(body)
            if not self.applied:
                raise httpx.ReadTimeout("no answer in time", request=request)
            answered = self._forward(request, body)
            return httpx.Response(answered.status_code, headers=answered.headers, stream=_Cut())
        return self._forward(request, body)

    def _forward(self, request: httpx.Request, body: Any) -> httpx.Response:
        response = self.inner.handle_request(request)
        path = request.url.path
        if request.method == "POST" and path.endswith("/memories") and response.status_code == 201:
            self.created[body["identity"]["owner_id"]] += 1
            self.texts[json.loads(response.read())["id"]] = body["content"]["text"]
        if request.method == "DELETE" and response.status_code == 204:
            self.deleted.add(path.rsplit("/", 1)[1])
        return response


def _run(transport: BreakOnce, areas: str, keyword: str | None = None) -> dict[str, CheckResult]:
    values: dict[str, Any] = {
        "amp_base_url": BASE_URL,
        "amp_only": areas,
        "amp_no_fuzz": True,
        "amp_timeout": 5.0,
        "amp_deadline": 60.0,
        "amp_admin_token": ADMIN_TOKEN,
        "amp_allow_global_effects": True,
        "keyword": keyword,
    }
    with in_process_client(transport, BASE_URL) as http:
        outcome: SuiteOutcome = run_suite(values, http=http, quiet=True)
    assert outcome.run is not None
    return {r.name: r for r in outcome.run.results.values()}


def _create_with_text(text: str) -> Chosen:
    def chosen(request: httpx.Request, body: Any, _: BreakOnce) -> bool:
        return (
            request.method == "POST"
            and request.url.path.endswith("/memories")
            and isinstance(body, dict)
            and body.get("content", {}).get("text") == text
        )

    return chosen


#: A check whose first step is ``amp.create_cell()`` (the default text), then PATCHes of that cell.
EXPIRY = "test_expires_at_can_be_set"
DEFAULT_TEXT = "The user prefers Python for backend development"


def _listed_after_the_broken_create(result: CheckResult) -> list[str]:
    methods = [f"{e.method} {e.url.removeprefix(BASE_URL).split('?', 1)[0]}" for e in result.exchanges]
    first = methods.index("POST /amp/v1/memories")
    return methods[first : first + 3]


@pytest.fixture
def network(monkeypatch: pytest.MonkeyPatch) -> list[NetworkLog]:
    """The network log of every connection the test opens (one hung on each, where the client does not
    hang its own yet)."""
    logs: list[NetworkLog] = []
    original = Connection.__init__

    def init(self: Connection, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        log = getattr(self, "network", None)
        if not isinstance(log, NetworkLog):
            log = NetworkLog()
            vars(self)["network"] = log
        logs.append(log)

    monkeypatch.setattr(Connection, "__init__", init)
    return logs


def test_a_create_applied_but_unanswered_is_adopted_from_the_owners_list(network: list[NetworkLog]) -> None:
    transport = BreakOnce(_create_with_text(DEFAULT_TEXT), applied=True)
    results = _run(transport, "patch", EXPIRY)
    assert sum(log.reconciled for log in network) == 1
    result = results[EXPIRY]
    assert result.outcome == "pass", result.message
    owner = transport.broken[0]["identity"]["owner_id"]
    assert transport.created[owner] == 1  # adopted, never sent again
    assert _listed_after_the_broken_create(result)[:2] == ["POST /amp/v1/memories", "GET /amp/v1/memories"]
    adopted = [n for n in result.notes if "taken as the step's" in n]
    assert len(adopted) == 1, result.notes
    cell_id = adopted[0].split("creating cell ", 1)[1].split(" ", 1)[0]
    assert cell_id in transport.deleted  # remembered: the run's cleanup removed it


def test_a_create_that_never_arrived_is_sent_once_more(network: list[NetworkLog]) -> None:
    transport = BreakOnce(_create_with_text(DEFAULT_TEXT), applied=False)
    results = _run(transport, "patch", EXPIRY)
    assert sum(log.repeated for log in network) >= 1 and not any(log.reconciled for log in network)
    result = results[EXPIRY]
    assert result.outcome == "pass", result.message
    owner = transport.broken[0]["identity"]["owner_id"]
    assert transport.created[owner] == 1
    # the lost POST, the owner's lists (every status: none shows a cell), the one repeat
    sent = _listed_after_the_broken_create(result)
    assert sent[:2] == ["POST /amp/v1/memories", "GET /amp/v1/memories"], sent
    posts = [e for e in result.exchanges if e.method == "POST" and e.url.endswith("/memories")]
    assert len(posts) == 2 and posts[1].status == 201
    assert any("sent once more" in n for n in result.notes), result.notes


def _owner_set_third(request: httpx.Request, body: Any, transport: BreakOnce) -> bool:
    """The owner set's third create: its only procedural cell."""
    return _create_with_text(DEFAULT_TEXT)(request, body, transport) and body.get("type") == "procedural"


def _archive_of_text(text: str) -> Chosen:
    def chosen(request: httpx.Request, body: Any, transport: BreakOnce) -> bool:
        cell_id = request.url.path.rsplit("/", 1)[1]
        return (
            request.method == "PATCH"
            and body == {"lifecycle": {"status": "archived"}}
            and transport.texts.get(cell_id) == text
        )

    return chosen


def _verdicts(results: dict[str, CheckResult]) -> dict[str, str]:
    return {name: str(r.outcome) for name, r in results.items()}


def _fault_free(areas: str) -> dict[str, str]:
    return _verdicts(_run(BreakOnce(lambda *_: False, applied=True), areas))


#: The status trio's text (its archived and deleted cells carry it).
BEES = "The user keeps bees on the roof of the office"


def test_an_archive_applied_but_unanswered_is_settled_by_reading_the_cell_back() -> None:
    transport = BreakOnce(_archive_of_text(BEES), applied=True)
    results = _run(transport, "list")
    assert transport.broken, "no archive of the status trio was sent"
    assert _verdicts(results) == _fault_free("list")
    settled = [r for r in results.values() if any("reads back archived" in n for n in r.notes)]
    assert settled, "no check shows the archive settled by its read-back"


def test_a_whole_area_passes_with_a_shared_create_applied_but_unanswered() -> None:
    """The owner set's third create (five cells of one owner, one text) answered with a reset after the
    server stored it: the owner still has five cells, and every list check reaches its verdict."""
    transport = BreakOnce(_owner_set_third, applied=True)
    results = _run(transport, "list")
    assert transport.broken
    owner = transport.broken[0]["identity"]["owner_id"]
    assert transport.created[owner] == 5
    assert _verdicts(results) == _fault_free("list")
    assert all(r.outcome in ("pass", "skip", "warn") for r in results.values()), {
        n: r.message for n, r in results.items() if r.outcome not in ("pass", "skip", "warn")
    }


def test_searches_are_sent_as_reads_and_creates_are_not(monkeypatch: pytest.MonkeyPatch) -> None:
    """POST /memories/search only reads: the client is told it may repeat it (``repeatable=True``)."""
    sent: list[tuple[str, str, bool | None]] = []
    request = Client.request

    def recording(self: Client, method: str, path: str, **kwargs: Any) -> Reply:
        sent.append((method, path, kwargs.get("repeatable")))
        return request(self, method, path, **kwargs)

    monkeypatch.setattr(Client, "request", recording)
    results = _run(BreakOnce(lambda *_: False, applied=True), "search")
    assert all(r.outcome in ("pass", "skip", "warn") for r in results.values())
    searches = {repeatable for method, path, repeatable in sent if path == "/memories/search"}
    creates = {repeatable for method, path, repeatable in sent if (method, path) == ("POST", "/memories")}
    assert searches == {True}
    assert creates == {None}


def _access_policy_null_create(request: httpx.Request, body: Any, _: BreakOnce) -> bool:
    """AMP-ERR-07's create with access_policy null: judged by it, the bytes PATCH probes' target."""
    return (
        request.method == "POST"
        and request.url.path.endswith("/memories")
        and isinstance(body, dict)
        and "access_policy" in body
        and body["access_policy"] is None
    )


def test_probes_that_only_need_a_cell_take_a_fresh_one_when_a_judged_create_lost_its_answer() -> None:
    transport = BreakOnce(_access_policy_null_create, applied=True)
    results = _run(transport, "bytes", "patch")
    assert transport.broken
    assert results and all(r.outcome in ("pass", "warn") for r in results.values()), {
        n: r.message for n, r in results.items() if r.outcome not in ("pass", "warn")
    }
