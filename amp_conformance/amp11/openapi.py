"""The REST channel as an OpenAPI 3.0 document, rendered from ``contract/verbs.schema.json``.

Routes and parameters follow ``schema/amp-openapi.yaml`` (smriti-memcore/amp @26bfc803, Appendix C);
bodies and results are the suite's verb schemas, translated to OpenAPI 3.0's schema dialect. The
rendering is committed as ``contract/openapi.json`` (for the fuzz area and for readers) and a project
test keeps the two in step.
"""

from __future__ import annotations

import copy
from typing import Any

from amp_conformance.amp11.channels import ROUTE_SCOPE_KEYS, SCOPE_KEYS
from amp_conformance.amp11.schemas import verbs_document

ERROR_CODES = ["invalid_request", "unauthorized", "forbidden", "not_found", "not_supported", "backend_error"]
JSON = "application/json"
NDJSON = "application/x-ndjson"


def to_openapi(schema: Any) -> Any:
    """A JSON Schema 2020-12 fragment in OpenAPI 3.0's dialect (refs, type lists, const, if/then)."""
    if isinstance(schema, list):
        return [to_openapi(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("if", "then", "$schema", "$id"):
            continue
        if key == "$ref" and isinstance(value, str):
            out["$ref"] = value.replace("#/$defs/", "#/components/schemas/")
        elif key == "const":
            out["enum"] = [value]
        elif key == "type" and isinstance(value, list):
            out["oneOf"] = [{"type": t, **({"items": {}} if t == "array" else {})} for t in value]
        elif key in ("properties", "$defs"):
            out[key] = {name: to_openapi(sub) for name, sub in value.items()}
        else:
            out[key] = to_openapi(value)
    if "enum" in out and "type" not in out and all(isinstance(v, str) for v in out["enum"]):
        out["type"] = "string"
    return out


def _json_body(schema: Any) -> dict[str, Any]:
    return {"required": True, "content": {JSON: {"schema": schema}}}


def _ok(schema: Any, description: str = "The verb's result") -> dict[str, Any]:
    return {"description": description, "content": {JSON: {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Any]:
    described = {400: "invalid_request", 404: "not_found", 500: "backend_error", 501: "not_supported"}
    return {
        str(status): {
            "description": described[status],
            "content": {JSON: {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
        }
        for status in statuses
    }


def _scope_parameters(keys: tuple[str, ...] = SCOPE_KEYS) -> list[dict[str, Any]]:
    return [{"name": key, "in": "query", "required": False, "schema": {"type": "string"}} for key in keys]


def _verb(name: str, part: str) -> Any:
    return to_openapi(copy.deepcopy(verbs_document()["verbs"][name][part]))


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.0 document of the AMP v1.1 REST channel as this suite checks it."""
    defs = verbs_document()["$defs"]
    schemas = {name: to_openapi(copy.deepcopy(schema)) for name, schema in defs.items()}
    schemas["ErrorResponse"] = {
        "description": "AmpErrorData; the code member is amp_error_code (spec §3.5) or code (OpenAPI "
        "ErrorResponse), conflict C3.",
        "type": "object",
        "required": ["message"],
        "anyOf": [{"required": ["amp_error_code"]}, {"required": ["code"]}],
        "properties": {
            "amp_error_code": {"type": "string", "enum": ERROR_CODES},
            "code": {"type": "string", "enum": ERROR_CODES},
            "message": {"type": "string"},
        },
    }
    path_id = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    pin_keys = ROUTE_SCOPE_KEYS["amp.pin"]
    flat_scope = {"type": "object", "properties": {key: {"type": "string"} for key in pin_keys}}
    paths: dict[str, Any] = {
        "/v1/memories": {
            "post": {
                "operationId": "encodeMemory",
                "summary": "amp.encode",
                "requestBody": _json_body(_verb("amp.encode", "input")),
                "responses": {"200": _ok(_verb("amp.encode", "output")), **_errors(400, 500)},
            }
        },
        "/v1/memories/recall": {
            "post": {
                "operationId": "recallMemories",
                "summary": "amp.recall",
                "requestBody": _json_body(_verb("amp.recall", "input")),
                "responses": {"200": _ok(_verb("amp.recall", "output")), **_errors(400, 500)},
            }
        },
        "/v1/memories/{id}": {
            "delete": {
                "operationId": "forgetMemory",
                "summary": "amp.forget",
                "parameters": [path_id, *_scope_parameters(ROUTE_SCOPE_KEYS["amp.forget"])],
                "responses": {"200": _ok(_verb("amp.forget", "output")), **_errors(400, 404, 500)},
            }
        },
        "/v1/memories/{id}/pin": {
            "put": {
                "operationId": "pinMemory",
                "summary": "amp.pin",
                "parameters": [path_id],
                "requestBody": _json_body(flat_scope),
                "responses": {"200": _ok(_verb("amp.pin", "output")), **_errors(400, 404, 500, 501)},
            }
        },
        "/v1/memories/consolidate": {
            "post": {
                "operationId": "consolidateMemory",
                "summary": "amp.consolidate",
                "requestBody": _json_body(_verb("amp.consolidate", "input")),
                "responses": {"200": _ok(_verb("amp.consolidate", "output")), **_errors(400, 500, 501)},
            }
        },
        "/v1/memories/stats": {
            "get": {
                "operationId": "statsMemory",
                "summary": "amp.stats",
                "parameters": _scope_parameters(ROUTE_SCOPE_KEYS["amp.stats"]),
                "responses": {"200": _ok(_verb("amp.stats", "output")), **_errors(400, 500)},
            }
        },
        "/v1/memories/export": {
            "post": {
                "operationId": "exportMemories",
                "summary": "amp.export (MXF, NDJSON)",
                "requestBody": _json_body(_verb("amp.export", "input")),
                "responses": {
                    "200": {
                        "description": "NDJSON, one MemoryResult per line",
                        "headers": {
                            "X-AMP-Next-Cursor": {
                                "description": "Present while rows remain",
                                "schema": {"type": "string"},
                            }
                        },
                        "content": {NDJSON: {"schema": {"type": "string"}}},
                    },
                    **_errors(400, 404, 500, 501),
                },
            }
        },
        "/v1/memories/import": {
            "post": {
                "operationId": "importMemories",
                "summary": "amp.import (MXF, NDJSON)",
                "parameters": [
                    {
                        "name": "on_conflict",
                        "in": "query",
                        "required": False,
                        "schema": {
                            "type": "string",
                            "enum": ["skip", "overwrite", "fail_atomic", "fail_fast"],
                        },
                    },
                    {
                        "name": "scope_remap",
                        "in": "query",
                        "required": False,
                        "schema": {"type": "string", "enum": ["strict", "inherit"]},
                    },
                    *_scope_parameters(),
                ],
                "requestBody": {"required": True, "content": {NDJSON: {"schema": {"type": "string"}}}},
                "responses": {"200": _ok(_verb("amp.import", "output")), **_errors(400, 500, 501)},
            }
        },
    }
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "AMP v1.1 REST channel (as amp-conformance checks it)",
            "version": "1.1.0",
            "description": "Rendered from amp_conformance/amp11/contract/verbs.schema.json; routes after "
            "smriti-memcore/amp schema/amp-openapi.yaml @26bfc80333de (Appendix C).",
        },
        "paths": paths,
        "components": {"schemas": schemas},
    }
