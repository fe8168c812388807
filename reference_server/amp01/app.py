"""HTTP: routes under ``/amp/v1``, identity headers, bodies and the error envelope.

The business rules live in ``service``; this module turns requests into calls and results (or
``AMPError``) into responses. Every error, including unknown routes, wrong methods and unexpected
exceptions, leaves in the ``{"error": {...}}`` envelope.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from reference_server.amp01.bodies import FaultyAnswer, get_body_fault, json_body
from reference_server.amp01.clock import Clock, SystemClock
from reference_server.amp01.config import MAX_PAGE_SIZE, Settings
from reference_server.amp01.errors import (
    ACCESS_DENIED,
    ADMIN_DISABLED,
    INTERNAL_ERROR,
    METHOD_NOT_ALLOWED,
    MISSING_AGENT_ID,
    NOT_FOUND,
    UNAUTHENTICATED,
    VALIDATION_ERROR,
    AMPError,
    envelope,
    error_response,
)
from reference_server.amp01.lifecycle import Scheduler
from reference_server.amp01.models import CreateRequest, ListQuery, SearchRequest, UpdateRequest, validate
from reference_server.amp01.service import DeliberateCrash, ServerState

log = logging.getLogger("reference_server")

AGENT_HEADER = "x-amp-agent-id"
KEY_HEADER = "x-amp-api-key"
ADMIN_HEADER = "x-amp-admin-token"
ANONYMOUS = "anonymous"


class _AnyId(Convertor[str]):
    """Everything after /memories/, newlines and slashes included: the ``path`` convertor's ``.*``
    stops at a newline, which left ids such as ``%0Ax`` unrouted (404) instead of unknown ids."""

    regex = r"[\s\S]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("any_id", _AnyId())
BASE = "/amp/v1"

Handler = Callable[[Request, ServerState], Awaitable[Response]]


# --------------------------------------------------------------------------- helpers


def _state(request: Request) -> ServerState:
    state: ServerState = request.app.state.amp
    return state


def _header(request: Request, name: str) -> str | None:
    """A header value, re-read as UTF-8 when it is valid UTF-8; empty counts as absent."""
    value = request.headers.get(name)
    if value is None:
        return None
    raw = value.encode("latin-1")
    with suppress(UnicodeDecodeError):
        value = raw.decode("utf-8")
    value = value.strip()
    return value or None


def _unauthenticated(state: ServerState, agent: str | None) -> AMPError:
    message = "Authentication required: send X-AMP-Agent-ID with its X-AMP-API-Key"
    if (
        state.faults.on("keys-distinct-errors")
        and agent
        and state.keys is not None
        and not state.keys.knows(agent)
    ):
        message = f"Unknown agent {agent!r}"
    return AMPError(401, UNAUTHENTICATED, message)


def _missing_agent() -> AMPError:
    return AMPError(401, MISSING_AGENT_ID, "The X-AMP-Agent-ID header is required")


def authenticate(request: Request, state: ServerState) -> str:
    """The calling agent: the header, proven by its key when keys are configured."""
    agent = _header(request, AGENT_HEADER)
    if state.keys is not None:
        if state.keys.verify(agent, _header(request, KEY_HEADER)) and agent is not None:
            return agent
        raise _unauthenticated(state, agent)
    if agent is not None:
        return agent
    if state.faults.on("missing-agent-id-accepted"):
        return ANONYMOUS
    raise _missing_agent()


async def _json_body(request: Request, state: ServerState) -> dict[str, Any]:
    return await json_body(request, state.settings.max_body_bytes, state.faults)


def _body_creator(body: Mapping[str, Any] | None) -> str | None:
    identity = body.get("identity") if body is not None else None
    creator = identity.get("created_by") if isinstance(identity, dict) else None
    return creator if isinstance(creator, str) and creator.strip() else None


def _clamp_limit(data: dict[str, Any], state: ServerState) -> None:
    """The limit-clamped fault: silently lower a too-large limit instead of refusing it."""
    if not state.faults.on("limit-clamped"):
        return
    value = data.get("limit")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool) and value > MAX_PAGE_SIZE:
        data["limit"] = MAX_PAGE_SIZE


#: The hostile-payloads fault's error page: markup that a report must show as text, never run.
HOSTILE_PAGE = (
    "<!DOCTYPE html><title>Error {status}</title><h1>{code}</h1><p>{message}</p>"
    "<script>window.__ampInjected = 1; alert('amp-injected-script')</script>"
    "<img src=x onerror=\"window.__ampInjected = 2; alert('amp-injected-onerror')\">"
    "<a href=\"javascript:window.__ampInjected = 3; alert('amp-injected-link')\">details</a>"
)
HOSTILE_HEADER = "<script>alert('amp-injected-header')</script><img src=x onerror=alert(4)>"


def render_error(state: ServerState | None, error: AMPError) -> Response:
    if error.code == VALIDATION_ERROR and state is not None and state.faults.on("error-envelope-framework"):
        return JSONResponse({"detail": error.details.get("errors", [])}, status_code=422)
    if state is not None and state.faults.on("hostile-payloads"):
        page = HOSTILE_PAGE.format(status=error.status, code=error.code, message=error.message)
        headers = {**error.headers, "X-AMP-Debug": HOSTILE_HEADER}
        return HTMLResponse(page, status_code=error.status, headers=headers)
    return error_response(error)


def _page(results: list[dict[str, Any]], has_more: bool, offset: int, limit: int) -> dict[str, Any]:
    return {
        "results": results,
        "returned": len(results),
        "has_more": has_more,
        "offset": offset,
        "limit": limit,
    }


# --------------------------------------------------------------------------- endpoints


async def health(request: Request, state: ServerState) -> Response:
    return JSONResponse(state.health())


async def spec(request: Request, state: ServerState) -> Response:
    if state.faults.on("keys-spec-closed") and state.keys is not None:
        authenticate(request, state)
    return JSONResponse(state.spec())


async def openapi(request: Request, state: ServerState) -> Response:
    """The bundled contract, byte for byte."""
    try:
        document = (
            resources.files("amp_conformance").joinpath("amp01", "contract", "openapi.json").read_bytes()
        )
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError, OSError):
        raise AMPError(404, NOT_FOUND, "The bundled OpenAPI contract is not installed") from None
    return Response(document, media_type="application/json")


async def create_memory(request: Request, state: ServerState) -> Response:
    agent = _header(request, AGENT_HEADER)
    body: dict[str, Any] | None = None
    if state.keys is not None:
        key = _header(request, KEY_HEADER)
        if not (agent is not None and state.keys.verify(agent, key)):
            if not (state.faults.on("keys-body-created-by") and agent is None and key is None):
                raise _unauthenticated(state, agent)
            try:
                body = await _json_body(request, state)
            except AMPError:
                raise _unauthenticated(state, agent) from None
            agent = _body_creator(body)
            if agent is None:
                raise _unauthenticated(state, agent)
    elif agent is None:
        # Keyless: the documented fallback to the body's created_by.
        parse_error: AMPError | None = None
        try:
            body = await _json_body(request, state)
        except AMPError as exc:
            parse_error = exc
        agent = _body_creator(body)
        if agent is None:
            if not state.faults.on("missing-agent-id-accepted"):
                raise _missing_agent()
            agent = ANONYMOUS
        if parse_error is not None:
            raise parse_error
    if body is None:
        body = await _json_body(request, state)
    model = validate(CreateRequest, body, location="body", lax=state.faults.on("values-coerced"))
    cell = state.create(agent, model, body)
    return JSONResponse(cell, status_code=200 if state.faults.on("create-returns-200") else 201)


async def list_memories(request: Request, state: ServerState) -> Response:
    agent = authenticate(request, state)
    params: dict[str, Any] = {}
    for name in ("owner_id", "type", "status", "limit", "offset"):
        value = request.query_params.get(name)
        if value is not None:
            params[name] = value
    _clamp_limit(params, state)
    query = validate(ListQuery, params, location="query")
    results, has_more = state.list_cells(agent, query)
    return JSONResponse(_page(results, has_more, query.offset, query.limit))


async def query_alias(request: Request, state: ServerState) -> Response:
    if state.faults.on("query-alias-missing"):  # routed as a read of the id "query"
        return await _read(request, state, "query")
    return await list_memories(request, state)


async def search_memories(request: Request, state: ServerState) -> Response:
    agent = authenticate(request, state)
    body = await _json_body(request, state)
    _clamp_limit(body, state)
    search = validate(SearchRequest, body, location="body")
    results, has_more = state.search(agent, search)
    page = _page(results, has_more, search.offset, search.limit)
    page["query"] = search.query
    return JSONResponse(page)


async def _read(request: Request, state: ServerState, memory_id: str) -> Response:
    agent = authenticate(request, state)
    return JSONResponse(state.read(agent, memory_id))


async def get_memory(request: Request, state: ServerState) -> Response:
    return await _read(request, state, request.path_params["memory_id"])


async def patch_memory(request: Request, state: ServerState) -> Response:
    agent = authenticate(request, state)
    body = await _json_body(request, state)
    try:
        update = validate(UpdateRequest, body, location="body")
    except AMPError:
        if state.faults.on("refused-422-applies-valid-members"):
            _apply_valid_members(state, agent, request.path_params["memory_id"], body)
        raise
    return JSONResponse(state.patch(agent, request.path_params["memory_id"], update, body))


def _apply_valid_members(state: ServerState, agent: str, memory_id: str, body: dict[str, Any]) -> None:
    """The refused-422-applies-valid-members fault: write each top-level member that validates alone."""
    valid: dict[str, Any] = {}
    for name, value in body.items():
        with suppress(AMPError):
            validate(UpdateRequest, {name: value}, location="body")
            valid[name] = value
    if valid:
        with suppress(AMPError):
            state.patch(agent, memory_id, validate(UpdateRequest, valid, location="body"), valid)


async def delete_memory(request: Request, state: ServerState) -> Response:
    agent = authenticate(request, state)
    cell = state.delete(agent, request.path_params["memory_id"])
    if state.faults.on("delete-returns-200-body"):
        return JSONResponse(cell)
    return Response(status_code=204)


async def run_lifecycle(request: Request, state: ServerState) -> Response:
    token = state.settings.admin_token
    if token is None:
        if not state.faults.on("admin-open-when-disabled"):
            raise AMPError(403, ADMIN_DISABLED, "The admin endpoint is disabled: AMP_ADMIN_TOKEN is not set")
    elif not state.faults.on("admin-token-ignored"):
        sent = request.headers.get(ADMIN_HEADER)
        offered = sent.encode("latin-1") if sent is not None else b""
        prefix = state.faults.on("admin-token-prefix") and bool(sent) and token.startswith(sent or "")
        if not prefix and (sent is None or not hmac.compare_digest(offered, token.encode("utf-8"))):
            raise AMPError(403, ACCESS_DENIED, "Missing or wrong X-AMP-Admin-Token")
    report = state.run_pass()
    transitions = report["transitions"]
    if state.faults.on("admin-missing-transition-keys"):
        transitions = {name: count for name, count in transitions.items() if count}
    return JSONResponse({"transitions": transitions, "purged": report["purged"]})


# --------------------------------------------------------------------------- plumbing


class _Endpoint:
    """One ASGI endpoint per path: picks the handler by method, answers 405 (with Allow) otherwise,
    and turns every exception into an answer so nothing escapes as a bare crash. (An ASGI class
    rather than a function so that Starlette routes every method here.)"""

    def __init__(self, handlers: Mapping[str, Handler]) -> None:
        self._handlers = dict(handlers)
        self._allow = ", ".join(sorted(handlers))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive, send)
        response = await self.handle(request)
        await response(scope, receive, send)

    async def handle(self, request: Request) -> Response:
        state = _state(request)
        handler = self._handlers.get(request.method)
        if handler is None:
            return render_error(
                state,
                AMPError(
                    405,
                    METHOD_NOT_ALLOWED,
                    f"Method {request.method} is not allowed on {request.url.path}",
                    {"allowed_methods": sorted(self._handlers)},
                    {"Allow": self._allow},
                ),
            )
        try:
            await get_body_fault(request, state.faults)
            return await handler(request, state)
        except AMPError as error:
            return render_error(state, error)
        except FaultyAnswer as answer:
            return answer.response
        except DeliberateCrash:
            return PlainTextResponse("Internal Server Error", status_code=500)
        except Exception:
            log.exception("unexpected error on %s %s", request.method, request.url.path)
            return JSONResponse(envelope(INTERNAL_ERROR, "Internal server error"), status_code=500)


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        error = AMPError(404, NOT_FOUND, f"No route for {request.url.path}")
    elif exc.status_code == 405:
        error = AMPError(
            405, METHOD_NOT_ALLOWED, f"Method {request.method} is not allowed", headers=exc.headers
        )
    else:
        error = AMPError(exc.status_code, "HTTP_ERROR", str(exc.detail), headers=exc.headers)
    return error_response(error)


async def _unexpected(request: Request, exc: Exception) -> Response:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return JSONResponse(envelope(INTERNAL_ERROR, "Internal server error"), status_code=500)


def create_app(settings: Settings | None = None, clock: Clock | None = None) -> Starlette:
    """Build the app; ``app.state.amp`` is its ``ServerState`` (store, engine, clock, settings)."""
    settings = settings if settings is not None else Settings()
    state = ServerState(settings, clock if clock is not None else SystemClock())
    scheduler = (
        Scheduler(state.engine, settings.lifecycle_interval_seconds) if settings.lifecycle_enabled else None
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if scheduler is not None:
            scheduler.start()
        try:
            yield
        finally:
            if scheduler is not None:
                await scheduler.stop()

    routes = [
        Route("/openapi.json", _Endpoint({"GET": openapi, "HEAD": openapi})),
        Route(f"{BASE}/health", _Endpoint({"GET": health, "HEAD": health})),
        Route(f"{BASE}/spec", _Endpoint({"GET": spec, "HEAD": spec})),
        Route(f"{BASE}/memories/search", _Endpoint({"POST": search_memories})),
        Route(f"{BASE}/memories/query", _Endpoint({"GET": query_alias})),
        Route(f"{BASE}/memories", _Endpoint({"GET": list_memories, "POST": create_memory})),
        Route(
            f"{BASE}/memories/{{memory_id:any_id}}",
            _Endpoint({"GET": get_memory, "PATCH": patch_memory, "DELETE": delete_memory}),
        ),
        Route(f"{BASE}/lifecycle/run", _Endpoint({"POST": run_lifecycle})),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: _http_exception, Exception: _unexpected},
        lifespan=lifespan,
    )
    app.router.redirect_slashes = False
    app.state.amp = state
    app.state.scheduler = scheduler
    return app


def default_app() -> Starlette:
    """The app configured from the ``AMP_*`` environment, as ``python -m reference_server`` serves it:
    a zero-argument factory for ``amp-conformance --app reference_server.amp01.app:default_app``."""
    import os

    return create_app(Settings.from_env(os.environ))
