"""One recorded request and what came back: the evidence a check shows, and the curl line that replays it.

Kept apart from the client so that the outcome types can carry an exchange without importing the client.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

#: Header name (lower case) -> environment variable the curl line uses instead of the secret.
SECRET_HEADERS = {"x-amp-api-key": "AMP_API_KEY", "x-amp-admin-token": "AMP_ADMIN_TOKEN"}
MAX_RESPONSE_BYTES = 2 * 1024 * 1024
MAX_SHOWN_BYTES = 2000
MAX_CURL_BODY_BYTES = 8192
_NO_BODY = object()


def _shorten(data: bytes, limit: int = MAX_SHOWN_BYTES) -> str:
    text = data.decode("utf-8", errors="replace")
    if len(data) <= limit:
        return text
    return f"{text[:limit]}... [{len(data) - limit} more bytes]"


@dataclass
class Exchange:
    """One request and what came back (or why nothing did)."""

    method: str
    url: str
    request_headers: dict[str, str]
    request_body: bytes | None
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: bytes = b""
    truncated: bool = False
    elapsed: float = 0.0
    error: str | None = None

    def masked_request_headers(self) -> dict[str, str]:
        return {k: ("***" if k.lower() in SECRET_HEADERS else v) for k, v in self.request_headers.items()}

    def curl(self) -> str:
        """A curl command reproducing the request; secrets come from environment variables."""
        parts = ["curl", "-sS", "-i", "-X", self.method, shlex.quote(self.url)]
        for name, value in self.request_headers.items():
            variable = SECRET_HEADERS.get(name.lower())
            if variable:
                parts += ["-H", f'"{name}: ${variable}"']
            else:
                parts += ["-H", shlex.quote(f"{name}: {value}")]
        if self.request_body is not None:
            body = self.request_body
            if len(body) > MAX_CURL_BODY_BYTES:
                text = body[:MAX_CURL_BODY_BYTES].decode("utf-8", errors="replace")
                parts += ["--data-binary", shlex.quote(text), f"# body truncated, {len(body)} bytes in all"]
            else:
                parts += ["--data-binary", shlex.quote(body.decode("utf-8", errors="replace"))]
        return " ".join(parts)

    def describe(self) -> str:
        """Human-readable request and response, for failure messages."""
        lines = [f"> {self.method} {self.url}"]
        lines += [f"> {k}: {v}" for k, v in self.masked_request_headers().items()]
        if self.request_body is not None:
            lines.append(f"> {_shorten(self.request_body)}")
        if self.error is not None:
            lines.append(f"< (no response: {self.error})")
        else:
            lines.append(f"< {self.status}  ({self.elapsed * 1000:.0f} ms)")
            for name in ("content-type", "retry-after", "content-length"):
                if name in self.response_headers:
                    lines.append(f"< {name}: {self.response_headers[name]}")
            body = _shorten(self.response_body)
            if self.truncated:
                body += f" [response cut at {MAX_RESPONSE_BYTES} bytes]"
            lines.append(f"< {body}" if body else "< (empty body)")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """The exchange for the JSON report (secrets masked, bodies bounded)."""
        return {
            "method": self.method,
            "url": self.url,
            "request_headers": self.masked_request_headers(),
            "request_body": None if self.request_body is None else _shorten(self.request_body, 16384),
            "status": self.status,
            "response_headers": dict(self.response_headers),
            "response_body": _shorten(self.response_body, 16384),
            "elapsed_ms": round(self.elapsed * 1000, 1),
            "error": self.error,
            "curl": self.curl(),
        }
