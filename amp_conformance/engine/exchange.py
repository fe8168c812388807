"""One recorded request and what came back: the evidence a check shows, and the curl line that replays it.

Kept apart from the client so that the outcome types can carry an exchange without importing the client.
Masking and replay rules (secrets by value, each as its own variable; bodies byte-exact) live in
:mod:`amp_conformance.engine.replay`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from amp_conformance.engine.replay import (
    MASK,
    ReplayContext,
    SecretRegistry,
    body_arguments,
    display_body,
    header_word,
    shell_word,
)

#: Header name (lower case) -> variable, used only for an exchange recorded without a run's secrets
#: (which knows no values, so it hides these headers by name rather than risk printing a secret).
SECRET_HEADERS = {"x-amp-api-key": "AMP_API_KEY", "x-amp-admin-token": "AMP_ADMIN_TOKEN"}
MAX_RESPONSE_BYTES = 2 * 1024 * 1024
MAX_SHOWN_BYTES = 2000
REPORT_BODY_CHARS = 16384


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
    replay: ReplayContext | None = field(default=None, repr=False, compare=False)
    """The run's secrets and body folder; None for an exchange made outside a run."""
    retry_of: Exchange | None = field(default=None, repr=False, compare=False)
    """The broken attempt this exchange repeated (itself maybe a repeat: :attr:`attempts` is the chain);
    the client repeats only what is safe to repeat (``engine.client``)."""
    broken: str | None = None
    """How this attempt broke, when it did: ``reset``, ``cut``, ``timeout`` or ``refused``
    (``engine.network.BROKEN_KINDS``)."""

    @property
    def attempts(self) -> list[Exchange]:
        """Every attempt of this request, first to last (this one last)."""
        chain: list[Exchange] = []
        one: Exchange | None = self
        while one is not None:
            chain.append(one)
            one = one.retry_of
        return chain[::-1]

    @property
    def _secrets(self) -> SecretRegistry | None:
        return self.replay.secrets if self.replay is not None else None

    def _mask(self, text: str, *, whole: bool = False) -> str:
        secrets = self._secrets
        return secrets.mask(text, whole=whole) if secrets else text

    def masked_request_headers(self) -> dict[str, str]:
        """Request headers with every real secret shown as ``***`` (a wrong token stays as sent)."""
        if self.replay is None:
            return {k: (MASK if k.lower() in SECRET_HEADERS else v) for k, v in self.request_headers.items()}
        return {k: self._mask(v, whole=True) for k, v in self.request_headers.items()}

    def curl(self) -> str:
        """A shell line sending exactly this request; each secret comes from its own variable."""
        secrets = self._secrets
        # curl -X HEAD would wait for a body that never comes; --head asks for the headers only
        verb = ["--head"] if self.method == "HEAD" else ["-X", shell_word(self.method, None)]
        parts = ["curl", "-sS", "-i", *verb, shell_word(self.url, secrets)]
        for name, value in self.request_headers.items():
            variable = SECRET_HEADERS.get(name.lower()) if self.replay is None else None
            if variable:
                parts += ["-H", f'"{name}: ${{{variable}}}"']
            else:
                parts += ["-H", header_word(name, value, secrets)]
        prefix = ""
        if self.request_body is not None:
            if not any(name.lower() == "content-type" for name in self.request_headers):
                parts += ["-H", "'Content-Type:'"]  # curl would otherwise add a form content type
            body_dir = self.replay.body_dir if self.replay is not None else None
            prefix, arguments = body_arguments(self.request_body, secrets, body_dir)
            parts += arguments
        return prefix + " ".join(parts)

    def _request_body_text(self, limit: int) -> str | None:
        if self.request_body is None:
            return None
        return self._mask(display_body(self.request_body, limit))

    def describe(self) -> str:
        """Human-readable request and response, for failure messages."""
        lines = []
        for number, earlier in enumerate(self.attempts[:-1], 1):
            lines.append(f"! attempt {number} broke ({earlier.broken or 'no response'}): {earlier.error}")
        lines.append(f"> {self.method} {self._mask(self.url)}")
        lines += [f"> {k}: {v}" for k, v in self.masked_request_headers().items()]
        body = self._request_body_text(MAX_SHOWN_BYTES)
        if body is not None:
            lines.append(f"> {body}" if body else "> (empty body)")
        if self.error is not None:
            came = "no response" if self.status is None else f"{self.status}, then no complete response"
            lines.append(f"< ({came}: {self.error})")
        else:
            lines.append(f"< {self.status}  ({self.elapsed * 1000:.0f} ms)")
            for name in ("content-type", "retry-after", "content-length"):
                if name in self.response_headers:
                    lines.append(f"< {name}: {self._mask(self.response_headers[name])}")
            shown = self._mask(_shorten(self.response_body))
            if self.truncated:
                shown += f" [response cut at {MAX_RESPONSE_BYTES} bytes]"
            lines.append(f"< {shown}" if shown else "< (empty body)")
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        """The exchange for the JSON report (secrets masked, bodies bounded, cuts stated)."""
        return {
            "method": self.method,
            "url": self._mask(self.url),
            "request_headers": self.masked_request_headers(),
            "request_body": self._request_body_text(REPORT_BODY_CHARS),
            "status": self.status,
            "response_headers": {k: self._mask(v) for k, v in self.response_headers.items()},
            "response_body": self._mask(_shorten(self.response_body, REPORT_BODY_CHARS)),
            "elapsed_ms": round(self.elapsed * 1000, 1),
            "error": self.error,
            "curl": self.curl(),
        }


#: What of an exchange crosses between processes: its recorded fields (not the replay context, nor
#: the earlier attempt a retried request links to, which is in the same check's exchanges already).
_WIRE_FIELDS = tuple(f.name for f in dataclasses.fields(Exchange) if f.name not in ("replay", "retry_of"))


def exchange_to_wire(exchange: Exchange) -> dict[str, Any]:
    """The exchange as plain data (a parallel run's worker sends it to the controller or another worker)."""
    return {name: getattr(exchange, name) for name in _WIRE_FIELDS}


def exchange_from_wire(data: dict[str, Any], replay: ReplayContext | None) -> Exchange:
    """The exchange :func:`exchange_to_wire` gave, bound to this process's replay context."""
    exchange = Exchange(**{name: data[name] for name in _WIRE_FIELDS if name in data})
    exchange.replay = replay
    return exchange
