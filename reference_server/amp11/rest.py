"""The REST channel (spec Appendix C.1, schema/amp-openapi.yaml), a Starlette app over the same Backend.

Every non-2xx body is the ``AmpErrorData`` object with the §3.5 HTTP status. forget, pin and update
answer an unknown id in-band (200 ``{"status": "not_found"}``) as the OpenAPI contract says, unless the
server is set to the error convention (404). ``X-AMP-Compat: v1.0`` marks a v1.0 client: recall rows
then carry the deprecated ``visibility`` (spec §5.4).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from reference_server.amp11.backend import Backend
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
    body: dict[str, Any] = exc.data()
    if faults.on("rest-error-body-framework"):
        body = {"detail": exc.message}
    return JSONResponse(body, status_code=status)


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        raise invalid("a JSON object body is required")
    try:
        body = json.loads(raw)
    except ValueError:
        raise invalid("the body is not valid JSON") from None
    if not isinstance(body, dict):
        raise invalid("the body must be a JSON object")
    return body


def _with_path_id(body: dict[str, Any], memory_id: str) -> dict[str, Any]:
    if "id" in body and body["id"] != memory_id:
        raise invalid("the body's id disagrees with the path")
    return {**body, "id": memory_id}


def create_rest_app(store: Store, faults: Faults = NO_FAULTS, settings: Settings | None = None) -> Starlette:
    """The REST app serving ``store`` (a fresh store of its own under ``channels-separate-stores``)."""
    if faults.on("channels-separate-stores"):
        store = Store(clock=store.clock)
    backend = Backend(store, faults, settings)

    def verb_endpoint(verb: str, *, path_id: bool = False, in_band_not_found: bool = False) -> Any:
        async def endpoint(request: Request) -> Response:
            try:
                body = await _body(request)
                if path_id:
                    body = _with_path_id(body, request.path_params["id"])
                legacy = request.headers.get("x-amp-compat", "").lower() == "v1.0"
                result = backend.call(verb, body, legacy=legacy)
                if (
                    in_band_not_found
                    and result.get("status") == "not_found"
                    and faults.on("rest-not-found-400")
                ):
                    raise invalid("unknown id")
            except AmpError as exc:
                if exc.code == "not_found" and faults.on("rest-not-found-400"):
                    exc = invalid("unknown id")
                return _error_response(backend, exc)
            return JSONResponse(result)

        return endpoint

    async def stats(request: Request) -> Response:
        unknown = sorted(set(request.query_params) - set(SCOPE_KEYS))
        try:
            if unknown:
                raise invalid(f"unknown query parameter(s): {', '.join(unknown)}")
            scope = {key: value for key, value in request.query_params.items() if key in SCOPE_KEYS}
            result = backend.call("amp.stats", {"scope": scope})
        except AmpError as exc:
            return _error_response(backend, exc)
        return JSONResponse(result)

    async def export(request: Request) -> Response:
        try:
            page = backend.export_page(await _body(request), default_rows=None)
        except AmpError as exc:
            return _error_response(backend, exc)

        def lines() -> Iterator[str]:
            for row in page.rows:
                yield json.dumps(row, ensure_ascii=False) + "\n"

        headers = {NEXT_CURSOR_HEADER: page.next_cursor} if page.next_cursor else {}
        return StreamingResponse(lines(), media_type="application/x-ndjson", headers=headers)

    async def http_error(request: Request, exc: Exception) -> Response:
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
            verb_endpoint("amp.pin", path_id=True, in_band_not_found=True),
            methods=["PUT"],
        ),
        Route(
            "/v1/memories/{id}",
            verb_endpoint("amp.forget", path_id=True, in_band_not_found=True),
            methods=["DELETE"],
        ),
        Route("/v1/memories/{id}", verb_endpoint("amp.update", path_id=True), methods=["PATCH"]),
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: http_error})
    app.state.backend = backend
    return app
