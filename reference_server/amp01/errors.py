"""The one error shape: ``{"error": {"code", "message", "details"}}`` with details always an object."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from starlette.responses import JSONResponse


class AMPError(Exception):
    """An error answer. Raised anywhere below the routes; rendered once, in the envelope."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.headers: dict[str, str] = dict(headers or {})

    def body(self) -> dict[str, Any]:
        return envelope(self.code, self.message, self.details)

    def __repr__(self) -> str:
        return f"AMPError({self.status}, {self.code!r}, {self.message!r})"


def envelope(code: str, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": dict(details or {})}}


def error_response(error: AMPError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers or None)


def validation_error(errors: Sequence[Mapping[str, Any]], message: str | None = None) -> AMPError:
    """422 ``VALIDATION_ERROR`` with ``details.errors`` entries of ``{type, loc, msg, input}``."""
    entries = [dict(entry) for entry in errors]
    if message is None:
        first = entries[0] if entries else {}
        where = ".".join(str(part) for part in first.get("loc", ()))
        message = f"Request validation failed: {first.get('msg', 'invalid input')}" + (
            f" at {where}" if where else ""
        )
    return AMPError(422, "VALIDATION_ERROR", message, {"errors": entries})


def error_entry(kind: str, loc: Sequence[str | int], msg: str, value: Any = None) -> dict[str, Any]:
    return {"type": kind, "loc": list(loc), "msg": msg, "input": value}


# Error codes in one place, so the contract and the code cannot drift apart silently.
MISSING_AGENT_ID = "MISSING_AGENT_ID"
UNAUTHENTICATED = "UNAUTHENTICATED"
NOT_FOUND = "NOT_FOUND"
FORBIDDEN = "FORBIDDEN"
ACCESS_DENIED = "ACCESS_DENIED"
ADMIN_DISABLED = "ADMIN_DISABLED"
INVALID_TRANSITION = "INVALID_TRANSITION"
CELL_TOO_LARGE = "CELL_TOO_LARGE"
RATE_LIMITED = "RATE_LIMITED"
VALIDATION_ERROR = "VALIDATION_ERROR"
METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
INTERNAL_ERROR = "INTERNAL_ERROR"
