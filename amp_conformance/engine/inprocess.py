"""A synchronous httpx client that calls an ASGI app in-process, without sockets.

The suite is synchronous and ASGI is asynchronous; this transport keeps one event loop and runs each
request to completion on it in the calling thread, so a request costs no thread hand-off (Starlette's
TestClient crosses threads through a portal and is several times slower). Used by the project's tests
and benchmarks to run the whole suite against the reference server in-process. Not thread-safe: one
client per thread. The app's lifespan is not run, so no background task starts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

Receive = Callable[[], Awaitable[dict[str, Any]]]


def body_once(body: bytes) -> Receive:
    """An ASGI ``receive`` that gives ``body`` in one message, then stays connected until the app is
    done: answering "disconnect" would cut a streamed response (Starlette's StreamingResponse listens
    for it) short."""
    received = False

    async def receive() -> dict[str, Any]:
        nonlocal received
        if received:
            await asyncio.Event().wait()
        received = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


async def read_body(receive: Receive) -> bytes:
    """The whole body of an ASGI request (its ``http.request`` messages joined); for middleware that
    looks at a request before passing it on with :func:`body_once`."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


class ASGITransport(httpx.BaseTransport):
    def __init__(self, app: Any):
        self.app = app
        self._loop = asyncio.new_event_loop()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()
        url = request.url
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": request.method,
            "scheme": url.scheme,
            "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0],
            "query_string": url.query,
            "root_path": "",
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "client": ("127.0.0.1", 50000),
            "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
        }
        status = 500
        headers: list[tuple[bytes, bytes]] = []
        chunks: list[bytes] = []
        receive = body_once(body)

        async def send(message: dict[str, Any]) -> None:
            nonlocal status, headers
            if message["type"] == "http.response.start":
                status = message["status"]
                headers = list(message.get("headers", []))
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        try:
            if _loop_running():
                # another event loop runs in this thread (Jupyter, an async test, a browser driver):
                # serve this request from a thread of its own rather than fail as a fake 500
                with concurrent.futures.ThreadPoolExecutor(1) as pool:
                    pool.submit(asyncio.run, self.app(scope, receive, send)).result()
            else:
                self._loop.run_until_complete(self.app(scope, receive, send))
        except Exception:
            if not headers:
                status, headers, chunks = 500, [(b"content-type", b"text/plain")], [b"Internal Server Error"]
        return httpx.Response(status, headers=headers, content=b"".join(chunks), request=request)

    def close(self) -> None:
        self._loop.close()


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


_TRANSPORTS: weakref.WeakKeyDictionary[httpx.Client, httpx.BaseTransport] = weakref.WeakKeyDictionary()


def in_process_client(transport: httpx.BaseTransport, base_url: str = "") -> httpx.Client:
    """An ``httpx.Client`` sending through ``transport``, which :func:`transport_of` finds again: httpx
    keeps a client's transport to itself, and the fuzz area needs it to fuzz the app in-process."""
    client = httpx.Client(transport=transport, base_url=base_url)
    _TRANSPORTS[client] = transport
    return client


def transport_of(client: httpx.Client | None) -> httpx.BaseTransport | None:
    """The transport of a client :func:`in_process_client` made (None for any other client)."""
    return None if client is None else _TRANSPORTS.get(client)


def asgi_client(app: Any, base_url: str = "http://testserver") -> httpx.Client:
    """An ``httpx.Client`` whose requests go straight to ``app``."""
    return in_process_client(ASGITransport(app), base_url)
