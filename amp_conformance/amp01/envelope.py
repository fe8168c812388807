"""The AMP error envelope, ``{"error": {"code", "message", "details"}}`` (requirements AMP-ERR-01/02/04).

Shared by the hand-written checks and the fuzz area, so both judge an error body the same way.
"""

from __future__ import annotations

import re
from typing import Any

CODE_PATTERN = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")


def envelope_problems(body: Any, *, require_details: bool = True) -> list[str]:
    """What keeps ``body`` from being an AMP error envelope (empty when it is one)."""
    if not isinstance(body, dict):
        return [f"the body is JSON {type(body).__name__}, not an object with an 'error' member"]
    problems: list[str] = []
    if "detail" in body and "error" not in body:
        problems.append("the body is a framework default ({'detail': ...}), not the AMP envelope")
    error = body.get("error")
    if not isinstance(error, dict):
        return [*problems, "missing object member 'error'"]
    code = error.get("code")
    if not isinstance(code, str):
        problems.append("error.code is missing or not a string")
    elif not CODE_PATTERN.match(code):
        problems.append(f"error.code {code!r} is not SCREAMING_SNAKE_CASE")
    if not isinstance(error.get("message"), str):
        problems.append("error.message is missing or not a string")
    if "details" in error:
        if not isinstance(error["details"], dict):
            problems.append("error.details is not an object")
    elif require_details:
        problems.append("error.details is missing")
    return problems


def validation_error_problems(body: Any) -> list[str]:
    """Problems of a 422 body: the envelope plus ``details.errors`` entries of {type, loc, msg, input}."""
    problems = envelope_problems(body)
    if problems:
        return problems
    error = body["error"]
    if error.get("code") != "VALIDATION_ERROR":
        problems.append(f"error.code is {error.get('code')!r}, expected 'VALIDATION_ERROR'")
    entries = error.get("details", {}).get("errors")
    if not isinstance(entries, list) or not entries:
        return [*problems, "error.details.errors is missing or empty"]
    for index, entry in enumerate(entries):
        where = f"error.details.errors[{index}]"
        if not isinstance(entry, dict):
            problems.append(f"{where} is not an object")
            continue
        if not isinstance(entry.get("type"), str):
            problems.append(f"{where}.type is missing or not a string")
        loc = entry.get("loc")
        if not isinstance(loc, list) or not all(isinstance(p, str | int) for p in loc):
            problems.append(f"{where}.loc is not an array of strings and integers")
        if not isinstance(entry.get("msg"), str):
            problems.append(f"{where}.msg is missing or not a string")
        if "input" not in entry:
            problems.append(f"{where}.input is missing")
    return problems
