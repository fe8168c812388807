"""Public data types of the fuzz engine: its configuration, the protocol profile, findings and results."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

import httpx

FAIL: Final = "fail"
WARN: Final = "warn"
OFF: Final = "off"

Policy = Mapping[str, tuple[str, str, str]]
"""schemathesis check name (also a finding's ``check``) -> (severity, requirement id(s), reason)."""

CHECK_NAMES: Final = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
    "ensure_resource_availability",
    "positive_data_acceptance",
    "negative_data_rejection",
    "missing_required_header",
    "unsupported_method",
    "use_after_free",
    "ignored_auth",
    "object_level_authorization",
    "allow_header_conformance",
    "max_response_time",
    "error_envelope",
    "error_envelope_details",
    "transport_error",
)
"""Every check a policy may name: schemathesis's, plus ours (``error_envelope``, ``error_envelope_details``,
``transport_error``)."""


def _never(*_: Any) -> bool:
    return False


@dataclass(frozen=True)
class FuzzProfile:
    """What a protocol tells the engine (which imports no protocol): where its routes live, which checks
    run at which severity citing which of its requirements, how its error bodies look, and how a run
    keeps to its own data. Each protocol package with a REST contract builds one."""

    api_prefix: str
    """Path prefix of the protocol's routes (``/v1``, say); 404s outside it are routing's."""
    policy: Policy
    """Which checks run at which severity, and the requirement each finding counts against."""
    load_contract: Callable[[], Mapping[str, Any]]
    """The bundled OpenAPI document (used when FuzzConfig.contract is None)."""
    envelope_problems: Callable[[int, Any], list[str]] | None = None
    """Why a 4xx body (parsed JSON) is not the protocol's error envelope; None: no envelope check."""
    envelope_requirement: Callable[[int, list[str]], str] | None = None
    """Which requirement envelope ``problems`` break (default: the policy's ``error_envelope`` entry)."""
    details_missing: Callable[[Any], bool] | None = None
    """A 4xx body lacking its optional details (the ``error_envelope_details`` warning)."""
    status_requirement: Callable[[str, int | None], str | None] | None = None
    """A finding's requirement when it depends on the status (else the policy's)."""
    isolate: Callable[[Any, str], None] | None = None
    """Before each call: rewrite the schemathesis case so it reads and writes only the run's own data."""
    created_id: Callable[[Any, Any], str | None] | None = None
    """After each call: the id of what (case, response) created, for the run's cleanup."""
    global_operation: Callable[[str, str], bool] = _never
    """(path, method) of an operation with store-wide effects, left out unless allow_global_effects."""
    header_exempt: Callable[[Any], bool] = _never
    """Cases where a missing required header is legitimately accepted."""
    allowed_server_error: Callable[[Any], bool] = _never
    """A 5xx response the protocol documents (e.g. a reported backend error), not a finding."""
    documented_status: Callable[[str, str, int], bool] = _never
    """(method, path template, status): a status a documented convention the server was seen to follow
    gives the operation where the contract does not declare it (a profile made for the run, with the
    detected conventions); no ``status_code_conformance`` finding."""
    fallback_requirement: str = "-"
    """Requirement of a finding whose check the policy does not name."""

    def requirement_for(self, check: str, status: int | None) -> str:
        """The requirement a failed check counts against (some depend on the status)."""
        if self.status_requirement is not None:
            found = self.status_requirement(check, status)
            if found:
                return found
        return self.policy.get(check, (FAIL, self.fallback_requirement, ""))[1]

    def severity(self, check: str) -> str:
        return self.policy.get(check, (FAIL, "", ""))[0]


def origin_of(base_url: str, api_prefix: str = "") -> str:
    """The server origin: ``base_url`` without a trailing slash or the API prefix."""
    url = base_url.strip().rstrip("/")
    if api_prefix and url.endswith(api_prefix):
        url = url[: -len(api_prefix)]
    return url


def server_prefix(document: Mapping[str, Any]) -> str:
    """Path of the document's first server URL (``/api`` for ``{"url": "https://h/api"}``)."""
    servers = document.get("servers")
    if isinstance(servers, list) and servers and isinstance(servers[0], Mapping):
        url = str(servers[0].get("url") or "")
        return urlsplit(url).path.rstrip("/")
    return ""


@dataclass(frozen=True)
class FuzzConfig:
    """What to fuzz and how hard."""

    base_url: str
    """Origin of the server, e.g. ``http://127.0.0.1:8765`` (a trailing API prefix is tolerated)."""
    headers: Mapping[str, str]
    """Identity headers sent with every request."""
    profile: FuzzProfile
    """The protocol's routes, check policy, error envelope and isolation rules."""
    contract: Mapping[str, Any] | None = None
    """Parsed OpenAPI document; ``None`` is the profile's bundled contract."""
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
    """Also fuzz the profile's store-wide operations; off, they are left out."""
    owner_id: str | None = None
    """The run's own owner (or scope) id, handed to the profile's ``isolate`` before every call, so a run
    writes only under its own id and never reads others' data."""
    on_requests: Callable[[int], None] | None = None
    """Called with the requests each step sent, as the run goes (``Run.note_fuzz_requests``: the
    progress line shows them while the fuzz area runs)."""
    limiter: Any = None
    """The run's :class:`~amp_conformance.engine.limiter.AdaptiveLimiter`: every fuzz request waits for
    one of its slots, as the checks' do (one budget per target); None: no limit."""


@dataclass(frozen=True)
class FuzzFinding:
    """One problem the fuzzer found on the server (deduplicated per check x operation x status)."""

    check: str
    """The failed check, a key of the profile's policy."""
    requirement: str
    """The requirement id the finding counts against."""
    severity: str
    """``"fail"`` or ``"warn"``."""
    operation: str
    """Method and path template, e.g. ``POST /v1/memories``."""
    message: str
    curl: str
    """The smallest reproducing request seen, secrets as shell variables."""
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
    """Ids of what the run created (the profile's ``created_id``), for cleanup."""

    @property
    def failures(self) -> list[FuzzFinding]:
        return [finding for finding in self.findings if finding.severity == FAIL]

    @property
    def warnings(self) -> list[FuzzFinding]:
        return [finding for finding in self.findings if finding.severity == WARN]
