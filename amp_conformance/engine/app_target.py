"""``--app module:attribute``: check a Python ASGI app in-process, without sockets.

The attribute is an ASGI app (a callable taking ``scope, receive, send``) or a zero-argument factory
returning one. Requests go through :class:`amp_conformance.engine.inprocess.ASGITransport`; the app's
lifespan is run around the suite (when the app supports it) so that an app that opens its database at
start-up works as it does under a real server. Its background tasks run while requests are served.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from amp_conformance.engine.inprocess import ASGITransport, in_process_client

if TYPE_CHECKING:
    from amp_conformance.engine.protocol import AnyProtocol

DEFAULT_BASE_URL = "http://testserver"

Runner = Callable[[dict[str, Any], httpx.Client | None, list[object]], int]
"""Runs the suite with option values, an HTTP client (or None) and extra pytest plugins."""


class AppLoadError(Exception):
    """``--app`` names nothing usable; the command exits 2 with this one line."""


def _binds(target: Any, count: int) -> bool:
    try:
        inspect.signature(target).bind(*([None] * count))
    except (TypeError, ValueError):
        return False
    return True


def is_asgi_app(target: Any) -> bool:
    """A callable (not a class) that takes ``scope, receive, send``."""
    return callable(target) and not isinstance(target, type) and _binds(target, 3)


def load_app(spec: str) -> Any:
    """Import ``module:attribute`` (dotted attributes allowed) and return the ASGI app it names."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise AppLoadError(f"--app takes module:attribute (e.g. mypackage.app:app), got {spec!r}")
    if os.getcwd() not in sys.path:  # like uvicorn: the app is usually in the current folder
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise AppLoadError(f"--app {spec}: no module named {exc.name!r}") from None
        raise AppLoadError(f"--app {spec}: importing {module_name} failed: {exc}") from None
    except Exception as exc:
        raise AppLoadError(
            f"--app {spec}: importing {module_name} failed: {type(exc).__name__}: {exc}"
        ) from None
    for part in attribute.split("."):
        try:  # a lazy module __getattr__ may import more, and fail in any way
            target = getattr(target, part)
        except AttributeError:
            raise AppLoadError(f"--app {spec}: {module_name} has no attribute {attribute!r}") from None
        except Exception as exc:
            raise AppLoadError(
                f"--app {spec}: reading {attribute} failed: {type(exc).__name__}: {exc}"
            ) from None
    if is_asgi_app(target):
        return target
    if callable(target) and _binds(target, 0):
        try:
            app = target()
        except Exception as exc:
            raise AppLoadError(
                f"--app {spec}: calling {attribute}() failed: {type(exc).__name__}: {exc}"
            ) from None
        if is_asgi_app(app):
            return app
        raise AppLoadError(f"--app {spec}: {attribute}() returned a {type(app).__name__}, not an ASGI app")
    raise AppLoadError(
        f"--app {spec}: {attribute} is a {type(target).__name__}, not an ASGI app (a callable taking "
        "scope, receive, send) nor a zero-argument factory returning one"
    )


class LifespanTransport(ASGITransport):
    """The in-process transport, plus the ASGI lifespan protocol around the run."""

    def __init__(self, app: Any, *, timeout: float = 30.0):
        super().__init__(app)
        self._timeout = timeout
        self._inbox: asyncio.Queue[dict[str, Any]] | None = None
        self._task: asyncio.Task[None] | None = None
        self._startup: asyncio.Future[str] | None = None
        self._shutdown: asyncio.Future[str] | None = None

    def startup(self) -> None:
        """Send ``lifespan.startup``; AppLoadError when the app reports a failed start-up. An app
        that does not speak lifespan (it raises or returns at once) is used without it."""
        loop = self._loop
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        startup: asyncio.Future[str] = loop.create_future()
        shutdown: asyncio.Future[str] = loop.create_future()
        self._inbox, self._startup, self._shutdown = inbox, startup, shutdown

        async def send(message: dict[str, Any]) -> None:
            kind = str(message.get("type", ""))
            future = startup if kind.startswith("lifespan.startup") else shutdown
            if not future.done():
                future.set_result(
                    kind if kind.endswith("complete") else f"{kind}: {message.get('message', '')}"
                )

        async def main() -> None:
            scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}, "state": {}}
            with contextlib.suppress(Exception):  # no lifespan support: carry on without it
                await self.app(scope, inbox.get, send)
            for future in (startup, shutdown):
                if not future.done():
                    future.set_result("unsupported")

        inbox.put_nowait({"type": "lifespan.startup"})
        self._task = loop.create_task(main())
        try:
            result = loop.run_until_complete(asyncio.wait_for(asyncio.shield(startup), self._timeout))
        except TimeoutError:
            raise AppLoadError(f"the app did not finish its start-up within {self._timeout:g} s") from None
        if result.startswith("lifespan.startup.failed"):
            raise AppLoadError(
                f"the app's start-up failed ({result.partition(': ')[2] or 'no reason given'})"
            )

    def close(self) -> None:
        """Send ``lifespan.shutdown`` (when the start-up went through), then close the loop."""
        task, self._task = self._task, None
        if task is not None and self._inbox is not None and self._shutdown is not None:
            if not task.done():
                self._inbox.put_nowait({"type": "lifespan.shutdown"})
                with contextlib.suppress(Exception):  # a failed shutdown is the app's business
                    self._loop.run_until_complete(asyncio.wait_for(asyncio.shield(self._shutdown), 5))
            if not task.done():
                task.cancel()
            pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]
            for leftover in pending:
                leftover.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        super().close()


def app_client(app: Any, base_url: str = DEFAULT_BASE_URL, *, startup_timeout: float = 30.0) -> httpx.Client:
    """An httpx client bound to ``app`` with its lifespan started; closing it shuts the app down."""
    transport = LifespanTransport(app, timeout=startup_timeout)
    try:
        transport.startup()
    except BaseException:
        transport.close()
        raise
    return in_process_client(transport, base_url)


def run_with_app(values: dict[str, Any], runner: Runner, protocol: AnyProtocol) -> int:
    """The command's ``--app`` path: ``--server-env`` goes into this process's environment (the app
    is built here), the app is loaded and started, and the suite runs through it. Returns the exit code."""
    from amp_conformance.engine.configuration import build_options
    from amp_conformance.engine.options import UsageError
    from amp_conformance.engine.server_process import parse_server_env

    spec = str(values.get("amp_app"))
    if values.get("amp_server_cmd"):
        print("amp-conformance: --app and --server-cmd exclude each other: give one", file=sys.stderr)
        return 2
    try:
        os.environ.update(parse_server_env(values.get("amp_server_env") or []))
        values["amp_base_url"] = values.get("amp_base_url") or DEFAULT_BASE_URL
        build_options(values, protocol)
        app = load_app(spec)
        http = app_client(
            app, values["amp_base_url"], startup_timeout=values.get("amp_startup_timeout") or 30.0
        )
    except (AppLoadError, UsageError, ValueError) as exc:
        print(f"amp-conformance: {exc}", file=sys.stderr)
        return 2
    with http:
        return runner(values, http, [])
