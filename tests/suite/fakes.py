"""Real servers' documented or buggy behaviour, modelled as ASGI middleware around the reference server.

Each wrapper changes one thing a real implementation was observed to do (issue 22, "Exact on real
servers"), so a test can run the suite in-process against it and show the verdict the suite gives.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from amp_conformance.cli import SuiteOutcome, run_suite
from amp_conformance.engine.inprocess import asgi_client, body_once, read_body
from reference_server import Settings, create_app
from tests.suite.inprocess import ADMIN_TOKEN, BASE_URL

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
#: Given the method, path and parsed JSON body (None when not JSON): an answer (status, body) or None.
Rule = Callable[[str, str, Any], "tuple[int, Any] | None"]


def envelope(code: str, message: str, *, loc: list[str | int] | None = None) -> dict[str, Any]:
    """The AMP error envelope (a 422 carries one ``details.errors`` entry at ``loc``)."""
    error: dict[str, Any] = {"code": code, "message": message, "details": {}}
    if loc is not None:
        error["details"] = {"errors": [{"type": "value_error", "loc": loc, "msg": message, "input": None}]}
    return {"error": error}


def intercept(app: App, rule: Rule) -> App:
    """``app``, except where ``rule`` answers a request itself."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        raw = await read_body(receive)
        try:
            body = json.loads(raw) if raw else None
        except (ValueError, RecursionError):
            body = None
        answer = rule(scope["method"], scope["path"], body)
        if answer is None:
            await app(scope, body_once(raw), send)
            return
        status, payload = answer
        data = json.dumps(payload).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": data})

    return wrapped


def run_against(
    rule: Rule,
    env: Mapping[str, str] | None = None,
    *,
    areas: str | None = None,
    admin: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> SuiteOutcome:
    """Run the suite (``--no-fuzz``) in-process against the reference server wrapped by ``rule``."""
    server_env = {"AMP_LIFECYCLE_ENABLED": "false", **(env or {})}
    if admin:
        server_env["AMP_ADMIN_TOKEN"] = ADMIN_TOKEN
    app = intercept(create_app(Settings.from_env(server_env)), rule)
    values: dict[str, Any] = {
        "amp_base_url": BASE_URL,
        "amp_only": areas,
        "amp_no_fuzz": True,
        "amp_timeout": 10.0,
        "amp_deadline": 60.0,
    }
    if admin:
        values.update(amp_admin_token=ADMIN_TOKEN, amp_allow_global_effects=True)
    values.update(extra or {})
    with asgi_client(app, BASE_URL) as http:
        return run_suite(values, http=http, quiet=True)
