"""The verbs as published: description, tier, MCP annotations (spec §3.4) and input JSON Schemas.

Each input schema exists twice. The *published* one (``tools/list``) is the whole contract of
schema/amp.json, written out here in our own words. The *validation* one is the same top level with the
nested scope, filters, metadata and batch entries loosened to their JSON type: those are checked by code
(``scope``, ``filters``, ``metadata``) so that their messages are precise and faults can bend them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reference_server.amp11.scope import ISOLATING_KEYS, SCOPE_KEYS

Schema = dict[str, Any]


@dataclass(frozen=True)
class Verb:
    name: str
    tier: str  # "core", "full" or "draft"
    description: str
    annotations: dict[str, bool]


def _hints(read_only: bool, destructive: bool, idempotent: bool, open_world: bool) -> dict[str, bool]:
    return {
        "readOnlyHint": read_only,
        "destructiveHint": destructive,
        "idempotentHint": idempotent,
        "openWorldHint": open_world,
    }


VERBS: dict[str, Verb] = {
    verb.name: verb
    for verb in (
        Verb("amp.encode", "core", "Store a new memory under a scope.", _hints(False, False, False, False)),
        Verb(
            "amp.recall",
            "core",
            "Retrieve the memories of a scope relevant to a query.",
            _hints(True, False, True, False),
        ),
        Verb(
            "amp.forget", "core", "Permanently delete a memory of a scope.", _hints(False, True, True, False)
        ),
        Verb(
            "amp.stats", "core", "Counts and sizing of a scope's partition.", _hints(True, False, True, False)
        ),
        Verb(
            "amp.consolidate",
            "full",
            "Archive superseded memories of a scope (harness-only).",
            _hints(False, False, False, True),
        ),
        Verb(
            "amp.pin",
            "full",
            "Mark a memory permanent: consolidation never archives it.",
            _hints(False, False, True, False),
        ),
        Verb(
            "amp.export",
            "full",
            "Export a scope as an MXF (NDJSON) document, page by page.",
            _hints(True, False, True, False),
        ),
        Verb(
            "amp.import",
            "full",
            "Import an MXF (NDJSON) document under a scope.",
            _hints(False, False, False, False),
        ),
        Verb(
            "amp.update",
            "draft",
            "v1.2-draft: change a memory's content or metadata in place.",
            _hints(False, False, True, False),
        ),
        Verb(
            "amp.batch_encode",
            "draft",
            "v1.2-draft: store several memories under one scope.",
            _hints(False, False, False, False),
        ),
    )
}


def _string(**extra: Any) -> Schema:
    return {"type": "string", **extra}


def _scope(published: bool) -> Schema:
    if not published:
        return {"type": "object"}
    return {
        "type": "object",
        "description": "Partition keys; at least one isolating key is required.",
        "properties": {key: _string() for key in SCOPE_KEYS},
        "additionalProperties": False,
        "anyOf": [{"required": [key]} for key in ISOLATING_KEYS],
    }


def _filters(published: bool) -> Schema:
    if not published:
        return {"type": "object"}
    status = _string(enum=["active", "pinned", "archived"])
    predicate = {
        "type": "object",
        "required": ["key", "operator", "value"],
        "properties": {
            "key": _string(),
            "operator": _string(enum=["eq", "ne", "gt", "gte", "lt", "lte", "in", "contains"]),
            "value": {"type": ["string", "number", "boolean", "array"]},
        },
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "status": status,
            "visibility": _string(enum=["private", "shared"], deprecated=True),
            "source": _string(),
            "timestamp_after": _string(format="date-time"),
            "timestamp_before": _string(format="date-time"),
            "metadata_filters": {"type": "array", "maxItems": 32, "items": predicate},
        },
        "additionalProperties": False,
    }


def _object(properties: Schema, required: list[str], published: bool) -> Schema:
    base: Schema = {
        "scope": _scope(published),
        "agent_id": _string(description="Legacy v1.0 alias of scope.agent_id."),
    }
    schema: Schema = {
        "type": "object",
        "properties": {**base, **properties},
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    if published:
        schema["anyOf"] = [{"required": ["scope"]}, {"required": ["agent_id"]}]
    return schema


def input_schema(verb: str, *, published: bool = True) -> Schema:
    """The input schema of a verb (``published`` for tools/list, else the validation variant)."""
    metadata: Schema = {"type": "object"}
    scope_id = {"id": _string(minLength=1)}
    if verb == "amp.encode":
        return _object(
            {
                "content": _string(minLength=1),
                "source": _string(),
                "force": {"type": "boolean", "default": False},
                "private": {"type": "boolean", "default": False, "deprecated": True},
                "metadata": metadata,
            },
            ["content"],
            published,
        )
    if verb == "amp.recall":
        return _object(
            {
                "query": _string(minLength=1),
                "top_k": {"type": "integer", "minimum": 1, "default": 10},
                "filters": _filters(published),
            },
            ["query"],
            published,
        )
    if verb in ("amp.forget", "amp.pin"):
        return _object(scope_id, ["id"], published)
    if verb == "amp.consolidate":
        return _object({"depth": _string(enum=["full", "light"], default="full")}, [], published)
    if verb == "amp.stats":
        return _object({}, [], published)
    if verb == "amp.export":
        return _object(
            {
                "filters": _filters(published),
                "page_size": {"type": "integer", "minimum": 1},
                "cursor": _string(),
            },
            [],
            published,
        )
    if verb == "amp.import":
        return _object(
            {
                "ndjson": _string(),
                "on_conflict": _string(
                    enum=["skip", "overwrite", "fail_atomic", "fail_fast"], default="skip"
                ),
                "scope_remap": _string(enum=["strict", "inherit"], default="strict"),
            },
            ["ndjson"],
            published,
        )
    if verb == "amp.update":
        return _object(
            {
                **scope_id,
                "content": _string(minLength=1),
                "metadata": metadata,
                "metadata_mode": _string(enum=["merge", "replace"], default="merge"),
            },
            ["id"],
            published,
        )
    if verb == "amp.batch_encode":
        entry: Schema = {"type": "array"}
        if published:
            entry = {
                "type": "array",
                "maxItems": 1000,
                "items": {
                    "type": "object",
                    "required": ["content"],
                    "properties": {
                        "content": _string(minLength=1),
                        "source": _string(),
                        "force": {"type": "boolean"},
                        "metadata": metadata,
                    },
                    "additionalProperties": False,
                },
            }
        schema = _object({"entries": entry, "memories": entry}, [], published)
        if published:
            schema["allOf"] = [{"anyOf": [{"required": ["entries"]}, {"required": ["memories"]}]}]
        return schema
    raise KeyError(verb)
