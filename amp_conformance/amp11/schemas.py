"""Validation of verb arguments and results against ``contract/verbs.schema.json`` (jsonschema)."""

from __future__ import annotations

import json
import re
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import SchemaError

VERBS_CORE = ("amp.encode", "amp.recall", "amp.forget", "amp.stats")
VERBS_FULL = ("amp.consolidate", "amp.pin", "amp.export", "amp.import")
VERBS = VERBS_CORE + VERBS_FULL


#: ``format`` as the checks judge it: ``date-time`` is an ISO 8601 date-time, with or without a UTC
#: offset (conflict C12: an offset-less timestamp is a SHOULD finding of AMP11-SCHEMA-11 alone).
FORMATS = FormatChecker()


@FORMATS.checks("date-time", raises=ValueError)
def _iso_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if "T" not in value and "t" not in value:
        raise ValueError(f"{value!r} has no time part")
    datetime.fromisoformat(value.replace("z", "Z"))
    return True


#: An RFC 3339 offset at the end of a date-time (``Z`` or ``±hh:mm``).
OFFSET = re.compile(r"(?:[Zz]|[+-]\d\d:\d\d)$")


def has_offset(timestamp: str) -> bool:
    return OFFSET.search(timestamp) is not None


@cache
def verbs_document() -> dict[str, Any]:
    path = resources.files("amp_conformance.amp11") / "contract" / "verbs.schema.json"
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


@cache
def _validator(verb: str, part: str) -> Draft202012Validator:
    document = verbs_document()
    schema = {"$defs": document["$defs"], **document["verbs"][verb][part]}
    return Draft202012Validator(schema, format_checker=FORMATS)


@cache
def _definition(name: str) -> Draft202012Validator:
    document = verbs_document()
    schema = {"$defs": document["$defs"], "$ref": f"#/$defs/{name}"}
    return Draft202012Validator(schema, format_checker=FORMATS)


def _problems(validator: Draft202012Validator, value: Any, limit: int) -> list[str]:
    found = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in error.absolute_path) or "(root)"
        found.append(f"{where}: {error.message[:200]}")
        if len(found) >= limit:
            break
    return found


def output_problems(verb: str, value: Any, limit: int = 5) -> list[str]:
    """Why ``value`` is not a valid result of ``verb`` (empty when it is)."""
    return _problems(_validator(verb, "output"), value, limit)


def definition_problems(name: str, value: Any, limit: int = 5) -> list[str]:
    """Why ``value`` does not match ``$defs/name`` (``MemoryResult``, ``AmpErrorData``, ``Scope``...)."""
    return _problems(_definition(name), value, limit)


def schema_problems(schema: Any) -> list[str]:
    """Why a published ``inputSchema`` is not a valid JSON Schema (draft 2020-12 meta-schema)."""
    if not isinstance(schema, dict):
        return [f"inputSchema is a JSON {type(schema).__name__}, not an object"]
    validator = Draft202012Validator(Draft202012Validator.META_SCHEMA)
    return _problems(validator, schema, 5)


def declared_schema_problems(schema: dict[str, Any], value: Any, limit: int = 5) -> list[str]:
    """Why ``value`` does not match a schema a server declared (a tool's ``outputSchema``); a schema
    that is itself invalid judges nothing here."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:  # an invalid declared schema judges nothing
        return []
    return _problems(Draft202012Validator(schema), value, limit)  # `format` an annotation, as in 2020-12
