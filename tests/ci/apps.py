"""ASGI apps for the ``--app`` tests: one with a lifespan, one whose start-up fails, odd factories."""

from __future__ import annotations

from typing import Any

EVENTS: list[str] = []


async def lifespan_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Records lifespan events; answers every request with them."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            EVENTS.append(message["type"])
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            else:
                await send({"type": "lifespan.shutdown.complete"})
                return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": ",".join(EVENTS).encode()})


async def failing_startup(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await receive()
        await send({"type": "lifespan.startup.failed", "message": "database unreachable"})
        return


async def no_lifespan(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """An app that refuses the lifespan scope, as many simple apps do."""
    if scope["type"] != "http":
        raise RuntimeError("only http")
    await send({"type": "http.response.start", "status": 204, "headers": []})
    await send({"type": "http.response.body", "body": b""})


def factory_that_raises() -> Any:
    raise RuntimeError("missing setting DATABASE_URL")


def factory_of_nothing() -> Any:
    return 42


def needs_arguments(settings: Any, other: Any) -> Any:
    return None
