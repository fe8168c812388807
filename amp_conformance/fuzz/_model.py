"""Public data types of the fuzz area and the table of which checks run at which severity."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final
from urllib.parse import urlsplit

import httpx

API_PREFIX: Final = "/amp/v1"

FAIL: Final = "fail"
WARN: Final = "warn"
OFF: Final = "off"

# ---------------------------------------------------------------------------------------------------------
# Which schemathesis checks run, at which severity, and why. The key is the schemathesis check name (also
# the `check` of a finding); the value is (severity, requirement id(s), reason).
# ---------------------------------------------------------------------------------------------------------
CHECK_POLICY: Final[Mapping[str, tuple[str, str, str]]] = MappingProxyType(
    {
        # Any 5xx is a robustness failure: this is what fuzzing is for (non-ASCII text, huge integers,
        # deeply nested metadata...). It is filed under AMP-ERR-03 (MUST: no route documents a 5xx),
        # the rule it breaks at its level; AMP-ERR-07 (SHOULD) asks the same in general terms.
        "not_a_server_error": (FAIL, "AMP-ERR-03", "no request may produce a 5xx"),
        # Every status an AMP route answers is declared in the contract. 404/405 that routing gave
        # outside the AMP routes are exempt (C-29: framework territory).
        "status_code_conformance": (FAIL, "AMP-OAS-02", "the answered status is declared for the route"),
        # Declared media types: application/json everywhere (errors: AMP-ERR-01).
        "content_type_conformance": (FAIL, "AMP-ERR-01/AMP-OAS-04", "the response media type is declared"),
        # The body matches the declared schema (cells, pages, error envelopes).
        "response_schema_conformance": (FAIL, "AMP-OAS-04", "the response body matches its declared schema"),
        # Declared response headers, e.g. Retry-After on 429 (AMP-ERR-06).
        "response_headers_conformance": (FAIL, "AMP-ERR-06/AMP-OAS-04", "declared response headers are sent"),
        # A cell just created is immediately readable by its creator (AMP-CRE-09); the contract's links
        # read it back as its creator, so a 404 there is a real defect in either convention (the upstream
        # convention answers 403, which this check does not look at).
        "ensure_resource_availability": (FAIL, "AMP-CRE-09", "a created cell is readable through its links"),
        # WARN: a schema-valid request may legitimately be refused in AMP: 404/403 for a random id (both
        # conventions), 409 INVALID_TRANSITION and 429 RATE_LIMITED on PATCH, 413 CELL_TOO_LARGE (the
        # size limit is not expressible in the schema) and 422 for semantic rules the schema cannot
        # express. 413 is added to the accepted statuses; anything else is reported as a contract that is
        # looser than the server, which is worth a look but is no AMP violation by itself.
        "positive_data_acceptance": (WARN, "AMP-OAS-02", "a schema-valid request is accepted"),
        # WARN: a server may accept some "negative" inputs legitimately: AMP ignores unknown members
        # (AMP-CRE-05) and a null optional section, and a keyless server ignores X-AMP-API-Key whatever
        # its value. AMP-ERR-04 itself is asserted by the hand-written checks.
        "negative_data_rejection": (WARN, "AMP-ERR-04", "a schema-invalid request is rejected"),
        # WARN: a request without the required X-AMP-Agent-ID must be 401 (AMP-AUTH-01), but POST
        # /memories falls back to the body's identity.created_by in keyless mode (that case is skipped);
        # the hand-written AUTH checks own the verdict.
        "missing_required_header": (WARN, "AMP-AUTH-01", "a missing required header is refused"),
        # WARN: 405 with Allow for a method the route lacks is HTTP semantics (RFC 9110), not AMP; C-29
        # leaves wrong methods to the framework.
        "unsupported_method": (WARN, "AMP-OAS-02", "an undeclared method is answered 405 with Allow"),
        # OFF: in the API-reference convention a deleted cell stays readable (200, status "deleted",
        # AMP-DEL-06), which this check reports as a use after free. The DEL checks assert the convention.
        "use_after_free": (OFF, "AMP-DEL-06", "deleted cells are readable in one documented convention"),
        # OFF: without API keys any agent id works and no credential is needed (AMP-AUTH-02), which this
        # check reports as ignored auth; the AUTH checks cover keys mode with known keys.
        "ignored_auth": (OFF, "AMP-AUTH-02", "keyless servers legitimately need no credential"),
        # OFF: needs several identities with their own objects; the ACL checks do this deliberately.
        "object_level_authorization": (OFF, "-", "covered by the hand-written access-control checks"),
        # OFF: OPTIONS and its Allow header are framework behaviour outside AMP (C-29).
        "allow_header_conformance": (OFF, "-", "OPTIONS handling is outside AMP (C-29)"),
        # OFF: timing is not an AMP requirement; request_timeout bounds each request instead.
        "max_response_time": (OFF, "-", "timing is not an AMP requirement"),
        # Ours: every 4xx body from an AMP route is the error envelope (AMP-ERR-01/02/05; 422 also
        # AMP-ERR-04), except 404/405 outside the AMP routes (C-29).
        "error_envelope": (FAIL, "AMP-ERR-01", "every 4xx from an AMP route uses the error envelope"),
        # Ours: `error.details` present (AMP-ERR-01 makes it a SHOULD).
        "error_envelope_details": (WARN, "AMP-ERR-01", "error.details is present"),
        # A request that timed out or whose connection dropped: a robustness problem, but a slow machine
        # can cause it too, so it is a warning.
        "transport_error": (WARN, "AMP-ERR-07", "every request gets an answer within the timeout"),
    }
)


def origin_of(base_url: str) -> str:
    """The server origin: ``base_url`` without a trailing slash or ``/amp/v1``."""
    url = base_url.strip().rstrip("/")
    if url.endswith(API_PREFIX):
        url = url[: -len(API_PREFIX)]
    return url


def server_prefix(document: Mapping[str, Any]) -> str:
    """Path of the document's first server URL (``/amp/v1`` for ``{"url": "https://h/amp/v1"}``)."""
    servers = document.get("servers")
    if isinstance(servers, list) and servers and isinstance(servers[0], Mapping):
        url = str(servers[0].get("url") or "")
        return urlsplit(url).path.rstrip("/")
    return ""


def requirement_for(check: str, status: int | None) -> str:
    """The requirement a failed check counts against (some depend on the status)."""
    if check == "content_type_conformance":
        return "AMP-ERR-01" if status is not None and status >= 400 else "AMP-OAS-04"
    if check == "response_headers_conformance":
        return "AMP-ERR-06" if status == 429 else "AMP-OAS-04"
    return CHECK_POLICY.get(check, (FAIL, "AMP-ERR-07", ""))[1]


@dataclass(frozen=True)
class FuzzConfig:
    """What to fuzz and how hard."""

    base_url: str
    """Origin of the server, e.g. ``http://127.0.0.1:8765`` (a trailing ``/amp/v1`` is tolerated)."""
    headers: Mapping[str, str]
    """Identity headers sent with every request (X-AMP-Agent-ID, X-AMP-API-Key)."""
    contract: Mapping[str, Any] | None = None
    """Parsed OpenAPI document; ``None`` is our bundled contract."""
    max_examples: int = 25
    """Hypothesis examples per operation and phase (stateful: scenarios)."""
    seconds: float = 60.0
    """Overall budget; the call returns within ``2 * seconds`` of wall time."""
    seed: int | None = None
    """Seed for reproducible runs; ``None`` draws one (reported in the result)."""
    request_timeout: float = 5.0
    """Per request, in seconds."""
    transport: httpx.BaseTransport | None = None
    """In-process transport. schemathesis sends through ``requests``, not httpx, so an httpx transport
    cannot be used as such: one that wraps an application (``.app``, e.g. starlette's TestClient
    transport or ``httpx.WSGITransport``) has its application fuzzed in-process; any other is an error."""
    app: Any = None
    """ASGI or WSGI application to fuzz in-process (wins over ``transport``). ``base_url`` is still used
    in the reported curl lines. The application's lifespan is not run: its owner runs it."""
    stateful_steps: int = 8
    """Maximum steps of one stateful scenario (create, then read / patch / delete through links)."""
    allow_global_effects: bool = False
    """Also fuzz store-wide operations (``POST /amp/v1/lifecycle/run``); off, they are left out."""
    owner_id: str | None = None
    """Every generated ``owner_id`` (in a create body's identity, a search body, a list query) is
    replaced by this one, so a run writes only under its own owner and never reads others' cells."""


@dataclass(frozen=True)
class FuzzFinding:
    """One problem the fuzzer found on the server (deduplicated per check x operation x status)."""

    check: str
    """The failed check, a key of :data:`CHECK_POLICY`."""
    requirement: str
    """The AMP requirement id the finding counts against."""
    severity: str
    """``"fail"`` or ``"warn"``."""
    operation: str
    """Method and path template, e.g. ``POST /amp/v1/memories``."""
    message: str
    curl: str
    """The smallest reproducing request seen, secrets as ``$AMP_API_KEY``-style shell variables."""
    status: int | None
    seed: int


@dataclass(frozen=True)
class FuzzResult:
    """Everything a fuzz run produced."""

    findings: list[FuzzFinding]
    operations: int
    examples: int
    """Requests sent (all phases)."""
    seconds: float
    """Wall time of the run."""
    seed: int
    errors: list[str] = field(default_factory=list)
    """Tool problems (unreachable server, unusable contract...), not verdicts on the server."""
    created: list[str] = field(default_factory=list)
    """Ids of the cells the run created (from 201 answers to POST /memories), for cleanup."""

    @property
    def failures(self) -> list[FuzzFinding]:
        return [finding for finding in self.findings if finding.severity == FAIL]

    @property
    def warnings(self) -> list[FuzzFinding]:
        return [finding for finding in self.findings if finding.severity == WARN]
