"""Request bodies: read with a hard cap, parse as strict JSON, refuse what the store could not keep.

Parsing is done here rather than by ``request.json()`` so that every odd input ends as a 4xx in the
envelope, never a 5xx: NaN/Infinity literals, numbers that overflow to infinity, integers too long for
Python to parse, lone surrogates (which cannot be written back as UTF-8) and nesting deeper than
``MAX_DEPTH`` are all refused with 422 before anything reaches the store.
"""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.requests import Request

from reference_server.amp01.errors import CELL_TOO_LARGE, AMPError, error_entry, validation_error

MAX_DEPTH = 32
"""Deepest nesting of objects/arrays accepted in a request body (the body itself is depth 1)."""


class _Refused(ValueError):
    def __init__(self, kind: str, msg: str) -> None:
        super().__init__(msg)
        self.kind = kind
        self.msg = msg


def _constant(name: str) -> Any:
    raise _Refused("finite_number", f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused("finite_number", f"number {text[:40]!r} is out of range")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # more digits than Python will convert
        raise _Refused("int_parsing_size", "integer has too many digits") from None


def too_large(limit: int) -> AMPError:
    return AMPError(
        413,
        CELL_TOO_LARGE,
        f"Request body exceeds {limit} bytes",
        {"max_body_bytes": limit},
    )


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, refused with 413 ``CELL_TOO_LARGE`` once it passes ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared.strip()) > limit:
        raise too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def parse_json(raw: bytes) -> Any:
    """Parse strict JSON; raises a 422 ``AMPError`` whose single entry says what is wrong."""
    if not raw.strip():
        raise validation_error([error_entry("missing", ["body"], "A JSON request body is required")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise validation_error([error_entry("json_invalid", ["body"], "Body is not valid UTF-8")]) from None
    try:
        value = json.loads(text, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except _Refused as exc:
        raise validation_error([error_entry(exc.kind, ["body"], exc.msg)]) from None
    except RecursionError:
        raise validation_error(
            [error_entry("too_deep", ["body"], f"JSON nesting deeper than {MAX_DEPTH} levels")]
        ) from None
    except ValueError as exc:
        raise validation_error([error_entry("json_invalid", ["body"], f"Invalid JSON: {exc}")]) from None
    problem = _inspect(value)
    if problem is not None:
        kind, loc, msg = problem
        raise validation_error([error_entry(kind, ["body", *loc], msg)])
    return value


def parse_json_object(raw: bytes) -> dict[str, Any]:
    """Like ``parse_json`` but the body must be a JSON object."""
    value = parse_json(raw)
    if not isinstance(value, dict):
        raise validation_error(
            [error_entry("model_attributes_type", ["body"], "Input should be a JSON object", _summary(value))]
        )
    return value


def _summary(value: Any) -> Any:
    if isinstance(value, list):
        return f"<array of {len(value)} items>"
    return value


def _inspect(value: Any) -> tuple[str, list[str | int], str] | None:
    """Depth and string checks without recursion (a deep body must not blow the stack here)."""
    stack: list[tuple[Any, int, list[str | int]]] = [(value, 1, [])]
    while stack:
        item, depth, loc = stack.pop()
        if isinstance(item, dict):
            if depth > MAX_DEPTH:
                return "too_deep", loc, f"JSON nesting deeper than {MAX_DEPTH} levels"
            for key, child in item.items():
                if not _encodable(key):
                    return (
                        "string_unicode",
                        [*loc, key.encode("utf-8", "replace").decode()],
                        "Key holds a lone surrogate",
                    )
                if isinstance(child, (dict, list, str)):
                    stack.append((child, depth + 1, [*loc, key]))
        elif isinstance(item, list):
            if depth > MAX_DEPTH:
                return "too_deep", loc, f"JSON nesting deeper than {MAX_DEPTH} levels"
            for index, child in enumerate(item):
                if isinstance(child, (dict, list, str)):
                    stack.append((child, depth + 1, [*loc, index]))
        elif isinstance(item, str) and not _encodable(item):
            return "string_unicode", loc, "String holds a lone surrogate (not valid UTF-8)"
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
