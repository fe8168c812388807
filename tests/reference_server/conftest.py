"""Shared helpers: an in-process reference server on a ManualClock, driven through httpx's ASGI
transport (from synchronous tests, on a private event loop), plus small builders for request bodies."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from reference_server import ManualClock, ServerState, Settings, create_app

START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
ADMIN_TOKEN = "admin-secret-token"
BASE = "/amp/v1"

_owner_counter = itertools.count(1)


def fresh_owner(prefix: str = "owner") -> str:
    return f"{prefix}-{next(_owner_counter)}"


def cell_body(
    owner: str = "owner-1",
    text: str = "User prefers Python for backend development",
    *,
    owner_type: str = "user",
    type_: str = "semantic",
    created_by: str | None = None,
    **sections: Any,
) -> dict[str, Any]:
    """A create body; keyword sections (scoring=..., access_policy=..., provenance=...) are added as-is."""
    identity: dict[str, Any] = {"owner_id": owner, "owner_type": owner_type}
    if created_by is not None:
        identity["created_by"] = created_by
    body: dict[str, Any] = {"type": type_, "content": {"text": text}, "identity": identity}
    body.update(sections)
    return body


def agent_headers(agent: str | None, **extra: str) -> dict[str, str]:
    headers = dict(extra)
    if agent is not None:
        headers["X-AMP-Agent-ID"] = agent
    return headers


def assert_envelope(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    """The response is ``status`` with a well-formed error envelope (and ``code`` when given)."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "details"}, error
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["details"], dict)
    if code is not None:
        assert error["code"] == code, body
    return dict(error)


class _SyncClient:
    """``amp.client.get("/openapi.json")`` and friends, for paths outside ``/amp/v1``."""

    def __init__(self, amp: Amp01Context) -> None:
        self._amp = amp

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        return self._amp.send(method, url, **kwargs)

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def head(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("HEAD", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)


class Amp01Context:
    """One server instance plus a client; every helper returns the raw ``httpx.Response``.

    Test modules cannot import from a conftest reliably, so the builders are reachable from here:
    ``amp.body(...)``, ``amp.owner()``, ``amp.error(response, status, code)``."""

    START = START
    ADMIN_TOKEN = ADMIN_TOKEN
    body = staticmethod(cell_body)
    owner = staticmethod(fresh_owner)
    error = staticmethod(assert_envelope)
    headers = staticmethod(agent_headers)

    def __init__(self, settings: Settings, clock: ManualClock) -> None:
        self.settings = settings
        self.clock = clock
        self.app = create_app(settings, clock=clock)
        self._loop = asyncio.new_event_loop()
        self._client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://amp.test"
        )
        self.client = _SyncClient(self)

    def send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        """One request through the ASGI transport; ``url`` is relative to the origin."""
        return self._loop.run_until_complete(self._client.request(method, url, **kwargs))

    def close(self) -> None:
        self._loop.run_until_complete(self._client.aclose())
        self._loop.close()

    @property
    def state(self) -> ServerState:
        state: ServerState = self.app.state.amp
        return state

    # raw verbs -----------------------------------------------------------
    def request(self, method: str, path: str, agent: str | None = None, **kwargs: Any) -> httpx.Response:
        headers = {**agent_headers(agent), **kwargs.pop("headers", {})}
        return self.client.request(method, BASE + path, headers=headers, **kwargs)

    def create(self, body: Mapping[str, Any], agent: str | None = "agent-a", **kw: Any) -> httpx.Response:
        return self.request("POST", "/memories", agent, json=body, **kw)

    def new_cell(self, agent: str = "agent-a", **kwargs: Any) -> dict[str, Any]:
        """Create a cell (201 expected) and return it. Keyword args go to ``cell_body``."""
        kwargs.setdefault("owner", fresh_owner())
        response = self.create(cell_body(**kwargs), agent)
        assert response.status_code == 201, response.text
        cell: dict[str, Any] = response.json()
        return cell

    def get(self, cell_id: str, agent: str | None = "agent-a") -> httpx.Response:
        return self.request("GET", f"/memories/{cell_id}", agent)

    def patch(self, cell_id: str, body: Any, agent: str | None = "agent-a") -> httpx.Response:
        return self.request("PATCH", f"/memories/{cell_id}", agent, json=body)

    def delete(self, cell_id: str, agent: str | None = "agent-a") -> httpx.Response:
        return self.request("DELETE", f"/memories/{cell_id}", agent)

    def list(self, agent: str | None = "agent-a", path: str = "/memories", **params: Any) -> httpx.Response:
        return self.request("GET", path, agent, params=params)

    def search(self, body: Any, agent: str | None = "agent-a") -> httpx.Response:
        return self.request("POST", "/memories/search", agent, json=body)

    def run_pass(self) -> dict[str, Any]:
        response = self.request("POST", "/lifecycle/run", headers={"X-AMP-Admin-Token": ADMIN_TOKEN})
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    # conveniences ----------------------------------------------------------
    def archive(self, cell_id: str, agent: str = "agent-a") -> None:
        response = self.patch(cell_id, {"lifecycle": {"status": "archived"}}, agent)
        assert response.status_code == 200, response.text

    def delete_cell(self, cell_id: str, agent: str = "agent-a") -> None:
        self.archive(cell_id, agent)
        response = self.delete(cell_id, agent)
        assert response.status_code == 204, response.text

    def status_of(self, cell_id: str) -> str:
        """The stored status, read without a GET (which would reset the decay clock)."""
        record = self.state.store.get(cell_id)
        assert record is not None
        return record.status

    def stored(self, cell_id: str) -> dict[str, Any]:
        record = self.state.store.get(cell_id)
        assert record is not None
        return record.cell

    def ids(self, response: httpx.Response) -> list[str]:
        assert response.status_code == 200, response.text
        return [cell["id"] for cell in response.json()["results"]]

    def advance(self, **delta: float) -> None:
        self.clock.advance(timedelta(**delta))


AmpFactory = Callable[..., Amp01Context]


@pytest.fixture
def make_amp() -> Iterator[AmpFactory]:
    """Build a server: keyword arguments are ``Settings`` fields (admin token and a quiet scheduler
    by default), plus ``start`` for the clock."""
    built: list[Amp01Context] = []

    def factory(*, start: datetime = START, **overrides: Any) -> Amp01Context:
        options: dict[str, Any] = {"admin_token": ADMIN_TOKEN, "lifecycle_enabled": False}
        options.update(overrides)
        amp = Amp01Context(Settings(**options), ManualClock(start))
        built.append(amp)
        return amp

    yield factory
    for amp in built:
        amp.close()


@pytest.fixture
def amp(make_amp: AmpFactory) -> Amp01Context:
    return make_amp()
