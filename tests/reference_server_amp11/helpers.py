"""Both channels of the AMP v1.1 reference server, in process, behind one small interface.

``Channel.call(verb, args)`` sends one verb over MCP (frames through an ``McpSession``) or REST (httpx over
ASGI on a private event loop) and returns an ``Outcome``: the result object, or the AMP error code with
its transport code (JSON-RPC code or HTTP status). Tests parametrised over ``channel`` run on both.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from reference_server.amp11 import Backend, Faults, McpSession, Settings, Store, create_rest_app

START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


class StepClock:
    """Each reading is one millisecond after the last: timestamps are distinct and ordered."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=1)
        return self.now


@dataclass
class Outcome:
    result: dict[str, Any] | None = None
    error: str | None = None  # the amp_error_code
    code: int | None = None  # JSON-RPC error code or HTTP status
    headers: dict[str, str] | None = None

    @property
    def ok(self) -> bool:
        return self.result is not None

    def get(self) -> dict[str, Any]:
        assert self.result is not None, f"expected a result, got {self.error} ({self.code})"
        return self.result


class McpChannel:
    name = "mcp"

    def __init__(self, backend: Backend) -> None:
        self.session = McpSession(backend)
        self._ids = itertools.count(1)

    def frame(self, frame: Any) -> dict[str, Any] | None:
        answer = self.session.handle_line(json.dumps(frame))
        return None if answer is None else dict(json.loads(answer))

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": next(self._ids), "method": method}
        if params is not None:
            frame["params"] = params
        answer = self.frame(frame)
        assert answer is not None
        return answer

    def call(self, verb: str, args: dict[str, Any], **_: Any) -> Outcome:
        answer = self.request("tools/call", {"name": verb, "arguments": args})
        if "error" in answer:
            error = answer["error"]
            data = error.get("data") or {}
            return Outcome(error=data.get("amp_error_code"), code=error["code"])
        result = answer["result"]
        assert result["isError"] is False
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
        return Outcome(result=result["structuredContent"])


_ROUTES: dict[str, tuple[str, str]] = {
    "amp.encode": ("POST", "/v1/memories"),
    "amp.recall": ("POST", "/v1/memories/recall"),
    "amp.forget": ("DELETE", "/v1/memories/{id}"),
    "amp.pin": ("PUT", "/v1/memories/{id}/pin"),
    "amp.consolidate": ("POST", "/v1/memories/consolidate"),
    "amp.stats": ("GET", "/v1/memories/stats"),
    "amp.export": ("POST", "/v1/memories/export"),
    "amp.import": ("POST", "/v1/memories/import"),
    "amp.update": ("PATCH", "/v1/memories/{id}"),
    "amp.batch_encode": ("POST", "/v1/memories/batch_encode"),
}


class RestChannel:
    name = "rest"

    def __init__(self, app: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")

    def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        return self.loop.run_until_complete(self.client.request(method, path, **kwargs))

    def call(self, verb: str, args: dict[str, Any], *, headers: dict[str, str] | None = None) -> Outcome:
        method, path = _ROUTES[verb]
        body = dict(args)
        kwargs: dict[str, Any] = {"headers": headers or {}}
        if "{id}" in path:
            path = path.replace("{id}", str(body.pop("id", "")))
        if verb == "amp.stats":
            kwargs["params"] = body.get("scope") or {k: v for k, v in body.items() if k == "agent_id"}
        else:
            kwargs["content"] = json.dumps(body)
            kwargs["headers"]["content-type"] = "application/json"
        response = self.request(method, path, **kwargs)
        if response.status_code != 200:
            payload = response.json()
            return Outcome(error=payload.get("amp_error_code"), code=response.status_code)
        if verb == "amp.export":
            assert response.headers["content-type"].startswith("application/x-ndjson")
            lines = [line for line in response.text.split("\n") if line]
            result: dict[str, Any] = {"ndjson": response.text, "count": len(lines)}
            if "x-amp-next-cursor" in response.headers:
                result["next_cursor"] = response.headers["x-amp-next-cursor"]
            return Outcome(result=result, headers=dict(response.headers))
        assert response.headers["content-type"] == "application/json"
        return Outcome(result=response.json(), headers=dict(response.headers))

    def close(self) -> None:
        self.loop.run_until_complete(self.client.aclose())
        self.loop.close()


@dataclass
class Server:
    """One store served over both channels (what ``--mcp --rest-port`` runs in one process)."""

    store: Store
    mcp: McpChannel
    rest: RestChannel

    def channel(self, name: str) -> McpChannel | RestChannel:
        return self.mcp if name == "mcp" else self.rest


def encode(channel: McpChannel | RestChannel, scope: dict[str, str], content: str, **extra: Any) -> str:
    """Store a memory (forced) and return its id."""
    result = channel.call("amp.encode", {"scope": scope, "content": content, "force": True, **extra}).get()
    assert result["status"] == "stored", result
    return str(result["id"])


def recall_ids(
    channel: McpChannel | RestChannel, scope: dict[str, str], query: str, **extra: Any
) -> list[str]:
    results = channel.call("amp.recall", {"scope": scope, "query": query, **extra}).get()["results"]
    return [row["id"] for row in results]


def ndjson_rows(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def make_server_now(faults: str = "", settings: Settings | None = None) -> Server:
    """One store over both channels; close it with ``server.rest.close()``."""
    store = Store(clock=StepClock())
    parsed = Faults.parse(faults)
    return Server(
        store,
        McpChannel(Backend(store, parsed, settings)),
        RestChannel(create_rest_app(store, parsed, settings)),
    )


def assert_not_found(channel: McpChannel | RestChannel, outcome: Outcome) -> None:
    """An unknown id under the default setting: in band over MCP, 404 not_found over REST."""
    if channel.name == "mcp":
        assert outcome.result == {"status": "not_found"}, outcome
    else:
        assert (outcome.error, outcome.code) == ("not_found", 404), outcome
