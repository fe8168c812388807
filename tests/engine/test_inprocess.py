"""The in-process client (engine.inprocess) on public interfaces only (issue 35)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from amp_conformance.engine.client import Connection
from amp_conformance.engine.inprocess import ASGITransport, asgi_client, in_process_client, transport_of


async def _hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"hello"})


def test_an_in_process_clients_transport_is_found_without_httpx_internals() -> None:
    client = asgi_client(_hello)
    transport = transport_of(client)
    assert isinstance(transport, ASGITransport) and transport.app is _hello
    assert Connection("http://testserver", http=client).app is _hello
    other = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(204)))
    assert transport_of(other) is None and transport_of(None) is None
    assert Connection("http://testserver", http=other).app is None
    mock = httpx.MockTransport(lambda request: httpx.Response(204))
    assert transport_of(in_process_client(mock)) is mock


def test_a_request_from_inside_a_running_event_loop_is_served() -> None:
    """Another loop runs in this thread (an async test, Jupyter): the request is served from a thread
    of its own rather than failing as a fake 500."""
    client = asgi_client(_hello)

    async def inside() -> httpx.Response:
        return client.get("/")

    response = asyncio.run(inside())
    assert response.status_code == 200 and response.text == "hello"
    assert client.get("/").text == "hello"  # and outside one, on the transport's own loop
