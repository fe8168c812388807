"""Fake AMP v1.1 REST servers for the verdict-precision tests (issue 20), written from the spec: the
reference REST app behind an ASGI wrapper that changes one behaviour the spec allows (or one real
divergence), called in-process."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from amp_conformance.amp11.session import Amp11Target
from amp_conformance.engine.inprocess import body_once, read_body
from tests.amp11.harness import StreamingASGITransport

#: (method, path, request body) -> the request body the reference app sees
RequestEdit = Callable[[str, str, Any], Any]
#: (method, path, request body, status, response body) -> (status, response body)
ResponseEdit = Callable[[str, str, Any, int, Any], tuple[int, Any]]


def wrap(app: Any, *, request: RequestEdit | None = None, response: ResponseEdit | None = None) -> Any:
    """``app`` with each JSON request body passed through ``request`` and each JSON response through
    ``response`` (streamed, non-JSON bodies pass untouched)."""

    async def wrapper(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        raw = await read_body(receive)
        try:
            body = json.loads(raw) if raw else None
        except (ValueError, RecursionError):
            body = raw
        if request is not None and not isinstance(body, bytes):
            edited = request(method, path, body)
            if edited is not body:  # an untouched request travels byte for byte
                raw = json.dumps(edited).encode()
        start: dict[str, Any] = {}
        parts: list[bytes] = []

        async def capture(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            parts.append(message.get("body", b""))
            if message.get("more_body"):
                return
            status, headers, out = start["status"], list(start.get("headers", [])), b"".join(parts)
            kind = dict(headers).get(b"content-type", b"")
            if response is not None and kind.startswith(b"application/json"):
                status, answer = response(method, path, body, status, json.loads(out) if out else None)
                out = json.dumps(answer).encode()
                headers = [(k, v) for k, v in headers if k != b"content-length"]
                headers.append((b"content-length", str(len(out)).encode()))
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": out})

        await app(scope, body_once(raw), capture)

    return wrapper


@contextmanager
def fake_rest(
    *, request: RequestEdit | None = None, response: ResponseEdit | None = None, timeout: float = 5.0
) -> Iterator[Amp11Target]:
    """A REST target: the reference app with ``request``/``response`` edits."""
    from reference_server.amp11 import Faults, Store, create_rest_app

    app = wrap(create_rest_app(Store(), Faults.parse("")), request=request, response=response)
    http = httpx.Client(transport=StreamingASGITransport(app))
    try:
        yield Amp11Target(base_url="http://fake.test", http=http, timeout=timeout)
    finally:
        http.close()
