"""Request bodies: read with a hard cap, parse as strict JSON, refuse what the store could not keep.

Parsing is done here rather than by ``request.json()`` so that every odd input ends as a 4xx in the
envelope, never a 5xx: a Content-Type other than JSON (none at all is read as JSON, as the upstream
server does), bytes that are not UTF-8, a byte-order mark, NaN/Infinity literals, numbers that
overflow to infinity, integers too long for Python to parse, a member named twice (RFC 8259 leaves
its meaning open, so it is refused rather than guessed), lone surrogates (which cannot be written
back as UTF-8) and nesting deeper than ``MAX_DEPTH`` are all refused with 422 before anything reaches
the store. The byte-level faults (``bytes-*``) answer some of these shapes the way real servers have.
"""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response

from reference_server.amp01.errors import (
    CELL_TOO_LARGE,
    INTERNAL_ERROR,
    AMPError,
    envelope,
    error_entry,
    validation_error,
)
from reference_server.amp01.faults import Faults

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


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        twice = next(name for name in names if names.count(name) > 1)
        raise _Refused("duplicate_key", f"member {twice[:40]!r} appears more than once in one object")
    return dict(pairs)


def is_json_media_type(content_type: str | None) -> bool:
    """``application/json`` or ``application/<x>+json`` (parameters ignored); no header counts too."""
    if content_type is None:
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


async def json_body(request: Request, limit: int, faults: Faults) -> dict[str, Any]:
    """The request's body as a JSON object, or the 4xx ``AMPError`` that refuses it."""
    raw = await read_body(request, limit)
    content_type = request.headers.get("content-type")
    faulty = _faulty_answer(raw, content_type, faults)
    if faulty is not None:
        raise FaultyAnswer(faulty)
    parameter = content_type is not None and ";" in content_type
    if not is_json_media_type(content_type) or (parameter and faults.on("media-type-parameter-refused")):
        raise validation_error(
            [
                error_entry(
                    "content_type",
                    ["header", "content-type"],
                    "Content-Type must be application/json",
                    content_type,
                )
            ]
        )
    if faults.on("scalar-body-500") and _scalar(raw):
        raise FaultyAnswer(_crash_envelope())  # building the error's input from a scalar fails
    return parse_json_object(raw)


def _scalar(raw: bytes) -> bool:
    """The body is a JSON number, boolean or null (the scalar-body-500 fault only)."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return value is None or isinstance(value, (bool, int, float))


def parse_json(raw: bytes) -> Any:
    """Parse strict JSON; raises a 422 ``AMPError`` whose single entry says what is wrong."""
    if not raw.strip():
        raise validation_error([error_entry("missing", ["body"], "A JSON request body is required")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise validation_error([error_entry("json_invalid", ["body"], "Body is not valid UTF-8")]) from None
    try:
        value = json.loads(
            text,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
            object_pairs_hook=_unique_members,
        )
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


# byte-level faults ------------------------------------------------------------------------------


class FaultyAnswer(Exception):
    """A byte-level fault's deliberately wrong answer, sent as it is (no envelope, no rendering)."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


def _crash_page() -> Response:
    """What an unhandled exception gives in most frameworks: a bare text 500."""
    return PlainTextResponse("Internal Server Error", status_code=500)


def _crash_envelope() -> Response:
    """A catch-all handler that wraps every exception in the envelope: still a 500."""
    return JSONResponse(envelope(INTERNAL_ERROR, "Internal server error"), status_code=500)


PROXY_PAGE = (
    "<html>\r\n<head><title>400 Bad Request</title></head>\r\n<body>\r\n"
    "<center><h1>400 Bad Request</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
)


def _loads_loose(text: str, *, hook: Any = None) -> Any:
    """How a naive server parses: the standard library with one hook, nothing else guarded."""
    return json.loads(text, object_pairs_hook=hook) if hook else json.loads(text)


def _duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise KeyError("duplicate member")  # a strict parser's error nobody handles
    return dict(pairs)


def _huge(text: str) -> bool:
    """Whether a number in ``text`` is beyond any double (a naive float() of it overflows)."""
    found = False

    def number(token: str) -> float:
        nonlocal found
        value = float(token)
        found = found or math.isinf(value)
        return value

    def integer(token: str) -> int:
        nonlocal found
        found = found or len(token.lstrip("-")) > 308
        return 0

    try:
        json.loads(text, parse_float=number, parse_int=integer)
    except (ValueError, RecursionError):
        return False
    return found


def _faulty_answer(raw: bytes, content_type: str | None, faults: Faults) -> Response | None:
    """The wrong answer a switched-on ``bytes-*`` fault gives to this body, or None."""
    if not any(name.startswith("bytes-") for name in faults.names):
        return None
    if not raw.strip():
        return _crash_envelope() if faults.on("bytes-empty-body-500") else None
    if content_type is None and faults.on("bytes-missing-content-type-500"):
        return _crash_page()  # content_type.split(";") on None
    if not is_json_media_type(content_type) and faults.on("bytes-content-type-framework"):
        media = (content_type or "").split(";", 1)[0].strip()
        return JSONResponse({"detail": f'Unsupported media type "{media}" in request.'}, status_code=415)
    if raw.startswith(b"\xef\xbb\xbf") and faults.on("bytes-bom-500"):
        return _crash_page()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return _crash_page() if faults.on("bytes-non-utf8-500") else None
    try:
        _loads_loose(text.lstrip("\ufeff"))
    except RecursionError:
        return _crash_page() if faults.on("bytes-deep-nesting-500") else None
    except json.JSONDecodeError as exc:
        # a body cut off inside a string (an upload that stopped early), not any malformed JSON
        truncated = exc.msg.startswith("Unterminated string") and faults.on("bytes-truncated-html")
        return HTMLResponse(PROXY_PAGE, status_code=400) if truncated else None
    if faults.on("bytes-duplicate-keys-500"):
        try:
            _loads_loose(text.lstrip("\ufeff"), hook=_duplicates)
        except KeyError:
            return _crash_envelope()
    if faults.on("bytes-huge-number-500") and _huge(text.lstrip("\ufeff")):
        return _crash_envelope()
    if faults.on("bytes-lone-surrogate-500"):
        problem = _inspect(_loads_loose(text.lstrip("\ufeff")))
        if problem is not None and problem[0] == "string_unicode":
            return _crash_page()  # str.encode("utf-8") on the stored text: UnicodeEncodeError, unhandled
    return None


async def get_body_fault(request: Request, faults: Faults) -> None:
    """``bytes-get-body-500``: a GET that carries a body crashes (the handler parses what it got)."""
    if request.method == "GET" and faults.on("bytes-get-body-500") and await request.body():
        raise FaultyAnswer(_crash_envelope())
