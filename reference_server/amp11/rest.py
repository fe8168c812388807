"""The REST channel (spec Appendix C.1, schema/amp-openapi.yaml), a Starlette app over the same Backend.

Routes: POST /v1/memories (encode), POST /v1/memories/recall, DELETE /v1/memories/{id} (forget),
PUT /v1/memories/{id}/pin, POST /v1/memories/consolidate, GET /v1/memories/stats (scope keys as query
parameters), POST /v1/memories/export (application/x-ndjson, X-AMP-Next-Cursor), POST /v1/memories/import,
and the v1.2-draft PATCH /v1/memories/{id} (update) and POST /v1/memories/batch_encode. The stored OpenAPI
versions disagree on where forget, pin and import take their scope (query parameters or flat keys vs a JSON
envelope; an NDJSON body vs a JSON ImportRequest): every published form is accepted.

Every non-2xx body is the ``AmpErrorData`` object (plus the same code as ``code``, the OpenAPI name)
with the §3.5 HTTP status. forget and pin answer an unknown id with 404 ``not_found`` (the v1.1 OpenAPI
file), or in band (200 ``{"status": "not_found"}``) when ``AMP11_REFERENCE_NOT_FOUND=status``; the
draft update answers it in band. ``X-AMP-Compat: v1.0`` marks a v1.0 client: recall rows then carry the
deprecated ``visibility`` (spec §5.4).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from reference_server.amp11 import wire
from reference_server.amp11.backend import Backend, FaultCrash
from reference_server.amp11.context import Settings
from reference_server.amp11.errors import HTTP_STATUSES, AmpError, invalid
from reference_server.amp11.faults import NO_FAULTS, Faults
from reference_server.amp11.scope import SCOPE_KEYS
from reference_server.amp11.store import Store

NEXT_CURSOR_HEADER = "X-AMP-Next-Cursor"


def _error_response(backend: Backend, exc: AmpError) -> JSONResponse:
    faults = backend.faults
    status = HTTP_STATUSES[exc.code]
    if exc.code == "invalid_request" and faults.on("rest-invalid-request-422"):
        status = 422
    # AmpErrorData (amp.json) names the code amp_error_code, the v1.1 OpenAPI ErrorResponse names it code:
    # the body carries both so it validates against each (conflict C3)
    body: dict[str, Any] = {**exc.data(), "code": exc.code}
    if faults.on("rest-error-body-framework"):
        body = {"detail": exc.message}
    return JSONResponse(body, status_code=status)


def _parse_object(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise invalid("a JSON object body is required")
    try:
        body = wire.loads(raw)
    except ValueError:
        raise invalid("the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise invalid("the body must be a JSON object")
    return body


def _query(request: Request, allowed: tuple[str, ...]) -> dict[str, str]:
    unknown = sorted(set(request.query_params) - set(allowed))
    if unknown:
        raise invalid(f"unknown query parameter(s): {', '.join(unknown)}")
    return dict(request.query_params.items())


def _scope_only(query: dict[str, str]) -> dict[str, Any]:
    scope = {key: value for key, value in query.items() if key in SCOPE_KEYS}
    return {"scope": scope} if scope else {}


async def _point_args(request: Request) -> dict[str, Any]:
    """forget and pin: the scope as a ScopeEnvelope body (``scope`` or flat ``agent_id``), as flat scope keys
    in the body, or as query parameters (the two published forms of the OpenAPI file), plus the path id."""
    query = _query(request, SCOPE_KEYS)
    raw = await request.body()
    if raw.strip():
        if query:
            raise invalid("send the scope in the body or as query parameters, not both")
        body = _parse_object(raw)
        flat = {key: value for key, value in body.items() if key in SCOPE_KEYS}
        if "scope" not in body and set(flat) - {"agent_id"}:
            body = {**{k: v for k, v in body.items() if k not in SCOPE_KEYS}, "scope": flat}
    else:
        body = _scope_only(query)
    memory_id = request.path_params["id"]
    if "id" in body and body["id"] != memory_id:
        raise invalid("the body's id disagrees with the path")
    return {**body, "id": memory_id}


async def _import_args(request: Request) -> dict[str, Any]:
    """import: a JSON ImportRequest (``ndjson`` inline), or the NDJSON document itself as the body with the
    scope keys, ``on_conflict`` and ``scope_remap`` as query parameters."""
    raw = await request.body()
    try:
        body = wire.loads(raw) if raw.strip() else None
    except ValueError:
        body = None
    if isinstance(body, dict) and "ndjson" in body:
        _query(request, ())
        return body
    query = _query(request, (*SCOPE_KEYS, "on_conflict", "scope_remap"))
    args: dict[str, Any] = {"ndjson": raw.decode("utf-8", errors="replace"), **_scope_only(query)}
    args.update({key: query[key] for key in ("on_conflict", "scope_remap") if key in query})
    return args


def create_rest_app(store: Store, faults: Faults = NO_FAULTS, settings: Settings | None = None) -> Starlette:
    """The REST app serving ``store`` (a fresh store of its own under ``channels-separate-stores``)."""
    if faults.on("channels-separate-stores"):
        store = Store(clock=store.clock)
    backend = Backend(store, faults, settings)

    def verb_endpoint(verb: str, *, point: bool = False, update: bool = False) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                if point:
                    args = await _point_args(request)
                elif update:
                    args = {**_parse_object(await request.body()), "id": request.path_params["id"]}
                elif verb == "amp.import":
                    args = await _import_args(request)
                else:
                    args = _parse_object(await request.body())
                legacy = request.headers.get("x-amp-compat", "").lower() == "v1.0"
                result = backend.call(verb, args, legacy=legacy)
                if point and result.get("status") == "not_found":
                    if faults.on("rest-not-found-400"):
                        raise invalid("unknown id")
                    if backend.settings.not_found == "channel":
                        raise AmpError("not_found", f"no memory {args['id']!r} in this scope")
            except AmpError as exc:
                if exc.code == "not_found" and faults.on("rest-not-found-400"):
                    exc = invalid("unknown id")
                return _error_response(backend, exc)
            return JSONResponse(result)

        return endpoint

    async def stats(request: Request) -> Response:
        try:
            result = backend.call("amp.stats", _scope_only(_query(request, SCOPE_KEYS)))
        except AmpError as exc:
            return _error_response(backend, exc)
        return JSONResponse(result)

    async def export(request: Request) -> Response:
        try:
            page = backend.export_page(_parse_object(await request.body()), default_rows=None)
        except AmpError as exc:
            return _error_response(backend, exc)

        def lines() -> Iterator[str]:
            for row in page.rows:
                yield json.dumps(row, ensure_ascii=False) + "\n"

        headers = {NEXT_CURSOR_HEADER: page.next_cursor} if page.next_cursor else {}
        return StreamingResponse(lines(), media_type="application/x-ndjson", headers=headers)

    async def http_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, FaultCrash):  # a fault's crash: the framework's bare 500
            return PlainTextResponse("Internal Server Error", status_code=500)
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        if status == 404:
            error = AmpError("not_found", f"no route {request.method} {request.url.path}")
        elif status == 405:
            error = invalid(f"{request.method} is not allowed on {request.url.path}")
        else:
            error = AmpError("backend_error", "the request could not be served")
        response = _error_response(backend, error)
        response.status_code = status
        return response

    routes = [
        Route("/v1/memories", verb_endpoint("amp.encode"), methods=["POST"]),
        Route("/v1/memories/recall", verb_endpoint("amp.recall"), methods=["POST"]),
        Route("/v1/memories/consolidate", verb_endpoint("amp.consolidate"), methods=["POST"]),
        Route("/v1/memories/stats", stats, methods=["GET"]),
        Route("/v1/memories/export", export, methods=["POST"]),
        Route("/v1/memories/import", verb_endpoint("amp.import"), methods=["POST"]),
        Route("/v1/memories/batch_encode", verb_endpoint("amp.batch_encode"), methods=["POST"]),
        Route(
            "/v1/memories/{id}/pin",
            verb_endpoint("amp.pin", point=True),
            methods=["PUT"],
        ),
        Route(
            "/v1/memories/{id}",
            verb_endpoint("amp.forget", point=True),
            methods=["DELETE"],
        ),
        Route("/v1/memories/{id}", verb_endpoint("amp.update", update=True), methods=["PATCH"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: http_error})
    app.state.backend = backend
    return app
