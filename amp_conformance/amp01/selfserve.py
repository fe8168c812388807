"""Start the bundled reference server on a free loopback port: the self-test and the fresh-machine demo."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import secrets
import socket
import threading
import time
from types import TracebackType

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BundledServer:
    """``with BundledServer() as server: ... server.url ... server.admin_token ... server.api_keys``.

    The reference server reads its usual ``AMP_*`` environment (so ``AMP_REFERENCE_FAULTS=...``
    shows the suite catching a fault), except that the admin token is always a fresh secret and, with
    ``keys=True`` (the self-test), API keys are required and issued fresh for a few agents: keys mode
    exercises authentication as well as everything else. ``delay`` (seconds) holds every HTTP response
    back that long before it starts, without blocking the others: a distant server, for
    ``benchmarks/latency.py``.
    """

    def __init__(
        self,
        environ: dict[str, str] | None = None,
        *,
        keys: bool = False,
        agents: int = 6,
        start_timeout: float = 10.0,
        delay: float = 0.0,
    ):
        from reference_server import Settings, create_app

        self.admin_token = secrets.token_urlsafe(24)
        self.api_keys: dict[str, str] = {}
        settings = Settings.from_env(dict(os.environ if environ is None else environ))
        digests = None
        if keys:
            self.api_keys = {
                f"amp-selftest-agent-{n}": secrets.token_urlsafe(18) for n in range(1, agents + 1)
            }
            digests = {
                a: "sha256:" + hashlib.sha256(k.encode()).hexdigest() for a, k in self.api_keys.items()
            }
        elif settings.api_keys is not None:
            raise ValueError(
                "the bundled server was configured with AMP_API_KEYS_FILE; their keys are unknown"
            )
        self.settings = dataclasses.replace(
            settings, admin_token=self.admin_token, api_keys=digests, api_keys_file=None
        )
        self._app: ASGIApp = create_app(self.settings)
        if delay > 0:
            self._app = _Delayed(self._app, delay)
        self._start_timeout = start_timeout
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket.bind(("127.0.0.1", 0))
        self.port: int = self._socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(self._app, log_level="warning", access_log=False, lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self._socket]},
            name="amp-reference-server",
            daemon=True,
        )

    def __enter__(self) -> BundledServer:
        self._thread.start()
        deadline = time.monotonic() + self._start_timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the bundled reference server did not start")
            time.sleep(0.01)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=5)
        self._socket.close()


class _Delayed:
    """ASGI middleware: each HTTP response starts ``delay`` seconds late; concurrent requests overlap."""

    def __init__(self, app: ASGIApp, delay: float):
        self._app = app
        self._delay = delay

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def delayed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                await asyncio.sleep(self._delay)
            await send(message)

        await self._app(scope, receive, delayed_send)
