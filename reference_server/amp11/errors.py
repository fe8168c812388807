"""The AMP v1.1 error model (spec §3.5): one canonical code, one JSON-RPC code, one HTTP status."""

from __future__ import annotations

from typing import Any, Literal

ErrorCode = Literal["invalid_request", "not_found", "not_supported", "backend_error"]

JSONRPC_CODES: dict[str, int] = {
    "invalid_request": -32602,
    "not_found": -32001,
    "not_supported": -32002,
    "backend_error": -32000,
}
HTTP_STATUSES: dict[str, int] = {
    "invalid_request": 400,
    "not_found": 404,
    "not_supported": 501,
    "backend_error": 500,
}

# JSON-RPC 2.0 transport-level codes (the frame itself is wrong, not the call's parameters).
PARSE_ERROR = -32700
INVALID_FRAME = -32600
METHOD_NOT_FOUND = -32601


class AmpError(Exception):
    """A service-level failure of a verb; both channels render it as the same ``AmpErrorData``."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code: ErrorCode = code
        self.message = message

    def data(self) -> dict[str, Any]:
        """The ``AmpErrorData`` payload (schema/amp.json)."""
        return {"amp_error_code": self.code, "message": self.message}

    def __repr__(self) -> str:
        return f"AmpError({self.code!r}, {self.message!r})"


def invalid(message: str) -> AmpError:
    return AmpError("invalid_request", message)
