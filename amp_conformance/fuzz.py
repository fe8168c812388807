"""OpenAPI-driven fuzzing of an AMP server with schemathesis and hypothesis (the ``fuzz`` area).

``run_fuzz`` loads the contract (our bundled one by default), runs the schemathesis engine against the
server -- the examples, coverage and fuzzing phases in positive and negative generation modes, then the
stateful phase through the OpenAPI links (create, then read / patch / delete the id it returned) -- and
turns what the checks found into :class:`FuzzFinding` objects cited by AMP requirement ids.

Which schemathesis checks run, and why, is the table :data:`CHECK_POLICY` (with the reasons next to each
entry). The checks are registered only for the duration of a run and under names of our own
(``amp_<check>``), so importing this module changes nothing for other schemathesis users in the process.
Each wrapper applies the AMP exemptions before calling the schemathesis check: nothing is asserted about
404/405 answers that routing gave outside the AMP routes (requirements.md C-29). "warn" checks never
raise inside schemathesis (a raised failure would stop hypothesis exploring that operation and hide a
real 5xx behind a disputed finding); they are recorded on the side instead.

Bounds: ``max_examples`` per operation and phase; ``seconds`` is handed to the engine as its time budget
(it stops generating when it is reached); the engine is stopped after one pass of every phase even when
budget is left; a watchdog interrupts it shortly after the budget and abandons it at the latest at
``2 * seconds`` of wall time. Hypothesis deadlines are off (network calls), its example database is off,
and the seed makes a run reproducible.

Nothing raises out of :func:`run_fuzz`: server problems are findings, tool problems are ``errors``.
"""

from __future__ import annotations

import copy
import math
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote, urlsplit

import httpx

from amp_conformance.envelope import envelope_problems, validation_error_problems

if TYPE_CHECKING:
    from schemathesis import Case, CheckContext, Response
    from schemathesis.engine.core import EventStream
    from schemathesis.engine.events import EngineEvent

__all__ = [
    "CHECK_POLICY",
    "FuzzConfig",
    "FuzzFinding",
    "FuzzResult",
    "compare_served_contract",
    "fetch_served_contract",
    "run_fuzz",
]

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
        # Any 5xx is a robustness failure (AMP-ERR-07): this is what fuzzing is for (non-ASCII text,
        # huge integers, deeply nested metadata...).
        "not_a_server_error": (FAIL, "AMP-ERR-07", "no request may produce a 5xx"),
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
        # WARN: AMP says unknown members are ignored (AMP-CRE-05), list filters are lenient in places and
        # a header the contract constrains may be ignored by a keyless server, so a server may accept
        # some "negative" inputs legitimately. AMP-ERR-04 is asserted by the hand-written checks.
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
        "object_level_authorization": (OFF, "AMP-ACL", "covered by the hand-written access-control checks"),
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

_WRAPPER_PREFIX: Final = "amp_"
# Statuses a schema-valid request may legitimately get in AMP (see positive_data_acceptance above).
_POSITIVE_STATUSES: Final = ["2xx", "3xx", "401", "403", "404", "409", "413", "429", "5xx"]
_SECRET_HEADER = re.compile(r"(key|token|secret|authorization|password|cookie)", re.IGNORECASE)
_VARIABLE_NAMES: Final = {
    "x-amp-api-key": "AMP_API_KEY",
    "x-amp-admin-token": "AMP_ADMIN_TOKEN",
    "authorization": "AMP_AUTHORIZATION",
}
_IN_PROCESS_ORIGIN: Final = "http://testserver"
_MAX_MESSAGE: Final = 600


# ---------------------------------------------------------------------------------------------------------
# Public data types
# ---------------------------------------------------------------------------------------------------------
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

    @property
    def failures(self) -> list[FuzzFinding]:
        return [finding for finding in self.findings if finding.severity == FAIL]

    @property
    def warnings(self) -> list[FuzzFinding]:
        return [finding for finding in self.findings if finding.severity == WARN]


# ---------------------------------------------------------------------------------------------------------
# Collecting findings
# ---------------------------------------------------------------------------------------------------------
class _Collector:
    """Thread-safe store of findings for one run (schemathesis checks run in worker threads)."""

    def __init__(self, *, seed: int, origin: str, secrets: Mapping[str, str]) -> None:
        self.seed = seed
        self.origin = origin
        self.secrets = dict(secrets)
        self._lock = threading.Lock()
        self._findings: dict[tuple[str, str, int | None], FuzzFinding] = {}
        self._errors: dict[str, None] = {}
        self._cases: dict[tuple[str, str, int | None], Any] = {}
        self._bases: dict[str, tuple[tuple[bool, int], Any]] = {}
        self.examples = 0

    def add(
        self,
        *,
        check: str,
        operation: str,
        status: int | None,
        message: str,
        curl: str,
        requirement: str | None = None,
        severity: str | None = None,
        case: Any = None,
    ) -> None:
        policy_severity, policy_requirement, _ = CHECK_POLICY.get(check, (FAIL, "AMP-ERR-07", ""))
        finding = FuzzFinding(
            check=check,
            requirement=requirement or policy_requirement,
            severity=severity or policy_severity,
            operation=operation,
            message=_shorten(message),
            curl=self.render_curl(curl),
            status=status,
            seed=self.seed,
        )
        key = (check, operation, status)
        with self._lock:
            known = self._findings.get(key)
            if known is None or _better(finding, known):
                self._findings[key] = finding
                if case is not None:
                    self._cases[key] = case

    def replace_curl(self, key: tuple[str, str, int | None], curl: str) -> None:
        with self._lock:
            known = self._findings.get(key)
            if known is not None:
                self._findings[key] = replace(known, curl=self.render_curl(curl))

    def offer_base(self, case: Any, status: int) -> None:
        """Keep, per operation, the richest request the server answered without a 5xx (probe material)."""
        if status >= 500 or str(case.method).upper() != str(case.operation.method).upper():
            return
        score = (200 <= status < 300, _leaf_count(case.body) + len(case.query) + len(case.path_parameters))
        label = str(case.operation.label)
        with self._lock:
            known = self._bases.get(label)
            if known is None or score > known[0]:
                self._bases[label] = (score, case)

    def bases(self) -> list[Any]:
        """Base requests, richest first (the probes may not get through all of them in time)."""
        with self._lock:
            ranked = sorted(self._bases.values(), key=lambda item: item[0][1], reverse=True)
        return [case for _, case in ranked]

    def cases(self) -> dict[tuple[str, str, int | None], Any]:
        """Schemathesis cases of the 5xx findings, for minimisation."""
        with self._lock:
            return dict(self._cases)

    def error(self, message: str) -> None:
        with self._lock:
            self._errors.setdefault(_shorten(message), None)

    def count(self, requests: int) -> None:
        with self._lock:
            self.examples += requests

    def findings(self) -> list[FuzzFinding]:
        with self._lock:
            values = list(self._findings.values())
        return sorted(values, key=lambda f: (f.severity != FAIL, f.operation, f.check, f.status or 0))

    def errors(self) -> list[str]:
        with self._lock:
            return list(self._errors)

    def render_curl(self, curl: str) -> str:
        """Keep the command only, point it at the real origin, and hide the configured secrets."""
        command = curl.split("\n\n⚠", 1)[0].strip()
        command = command.replace(_IN_PROCESS_ORIGIN, self.origin)
        return _mask_secrets(command, self.secrets)


def _better(new: FuzzFinding, old: FuzzFinding) -> bool:
    """Between two findings with one key: fail beats warn, then the shorter (more shrunk) request."""
    if new.severity != old.severity:
        return new.severity == FAIL
    return bool(new.curl) and (not old.curl or len(new.curl) < len(old.curl))


def _shorten(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _variable_for(header: str) -> str:
    known = _VARIABLE_NAMES.get(header.lower())
    if known is not None:
        return known
    name = re.sub(r"[^A-Za-z0-9]+", "_", header).strip("_").upper()
    name = name.removeprefix("X_")
    return name if name.startswith("AMP_") else f"AMP_{name}"


def _secret_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Configured header values to hide in curl lines, mapped to the shell variable replacing them."""
    return {
        value: _variable_for(name)
        for name, value in headers.items()
        if value and _SECRET_HEADER.search(name) and len(value) >= 4
    }


def _quoted_variable(variable: str) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        return f'"{match.group(1)}${variable}"'

    return replace


def _mask_secrets(command: str, secrets: Mapping[str, str]) -> str:
    for value, variable in secrets.items():
        # `'X-AMP-API-Key: s3cret'` (shlex-quoted header) -> `"X-AMP-API-Key: $AMP_API_KEY"`.
        quoted = re.compile(r"'([A-Za-z0-9!#%&*+.^_`|~-]+: )" + re.escape(value) + "'")
        command = quoted.sub(_quoted_variable(variable), command)
        command = command.replace(value, f"${{{variable}}}")
    return command


# ---------------------------------------------------------------------------------------------------------
# The checks (registered for the duration of one run)
# ---------------------------------------------------------------------------------------------------------
_ACTIVE: _Collector | None = None
_RUN_LOCK = threading.Lock()


def _route_pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{[^}]*\})", template)
    regex = "".join("[^/]+" if part.startswith("{") else re.escape(part) for part in parts)
    return re.compile(f"^{regex}/?$")


def _request_method(response: Response, case: Case[Any]) -> str:
    method = getattr(response.request, "method", None)
    return str(method or case.method).upper()


def _operation_label(response: Response | None, case: Case[Any]) -> str:
    method = _request_method(response, case) if response is not None else str(case.method).upper()
    return f"{method} {case.operation.path}"


def _outside_api(response: Response, case: Case[Any]) -> bool:
    """C-29: a 404/405 that routing produced outside the AMP routes (unknown path or wrong method)."""
    status = response.status_code
    if status == 405:
        return True
    if status != 404:
        return False
    if _request_method(response, case) != str(case.operation.method).upper():
        return True
    url = str(getattr(response.request, "url", "") or "")
    path = unquote(urlsplit(url).path)
    if not path.startswith(API_PREFIX):
        return True
    # A path parameter holding "/" (or nothing) moves the request to another route, or to none.
    return _route_pattern(case.operation.path).match(path) is None


def _curl_for(response: Response, case: Case[Any]) -> str:
    try:
        headers = dict(response.request.headers)
        return str(case.as_curl_command(headers=headers, verify=response.verify))
    except Exception:  # pragma: no cover - a curl line is a convenience, never a reason to crash
        return ""


def _record(check: str, response: Response, case: Case[Any], message: str, **extra: Any) -> None:
    collector = _ACTIVE
    if collector is None:
        return
    collector.add(
        check=check,
        operation=_operation_label(response, case),
        status=response.status_code,
        message=message,
        curl=_curl_for(response, case),
        **extra,
    )


def _failure_text(exc: BaseException) -> str:
    inner = getattr(exc, "exception", None)
    if isinstance(inner, EnvelopeFailure):
        return inner.message
    title = getattr(exc, "title", None)
    message = getattr(exc, "message", None)
    if title is not None and message is not None:
        return f"{title}: {message}" if message else str(title)
    return str(exc)


def _is_create_with_creator(case: Case[Any]) -> bool:
    body = case.body if isinstance(case.body, dict) else None
    identity = body.get("identity") if body is not None else None
    return (
        str(case.operation.method).upper() == "POST"
        and case.operation.path == f"{API_PREFIX}/memories"
        and isinstance(identity, dict)
        and bool(identity.get("created_by"))
    )


class EnvelopeFailure(AssertionError):
    """A 4xx body that is not the AMP error envelope."""

    def __init__(self, message: str, requirement: str) -> None:
        super().__init__(message)
        self.title = "AMP error envelope"
        self.message = message
        self.requirement = requirement


def _envelope_requirement(status: int, problems: list[str]) -> str:
    text = " ".join(problems)
    if "framework default" in text:
        return "AMP-ERR-05"
    structural = (
        "not JSON",
        "not an object",
        "missing object member",
        "code is missing",
        "message is missing",
    )
    if any(marker in text for marker in structural) or "Content-Type" in text:
        return "AMP-ERR-01"
    if "SCREAMING_SNAKE_CASE" in text:
        return "AMP-ERR-02"
    if status == 422:
        return "AMP-ERR-04"
    return "AMP-ERR-01"


def _check_error_envelope(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
    status = response.status_code
    if not 400 <= status < 500 or _outside_api(response, case):
        return None
    problems: list[str] = []
    content_type = (response.headers.get("content-type") or [""])[0]
    if "json" not in content_type.lower():
        problems.append(f"Content-Type is {content_type or 'missing'!r}, not application/json")
    try:
        body = response.json()
    except Exception:
        body = None
        problems.append(f"the body is not JSON: {response.text[:120]!r}")
    else:
        problems += (
            validation_error_problems(body)
            if status == 422
            else envelope_problems(body, require_details=False)
        )
    if problems:
        raise EnvelopeFailure(
            f"{status} body is not the AMP error envelope: " + "; ".join(problems),
            _envelope_requirement(status, problems),
        )
    if isinstance(body, dict) and isinstance(body.get("error"), dict) and "details" not in body["error"]:
        _record("error_envelope_details", response, case, f"{status} error envelope without error.details")
    return None


def _builtin_checks() -> dict[str, Callable[..., bool | None]]:
    from schemathesis.checks import CHECKS, load_all_checks

    load_all_checks()
    found: dict[str, Callable[..., bool | None]] = {}
    for name in CHECK_POLICY:
        try:
            item = CHECKS.get_one(name)
        except KeyError:
            continue
        if callable(item) and not isinstance(item, type):
            found[name] = item
    return found


def _make_fail_wrapper(name: str, check: Callable[..., bool | None]) -> Callable[..., bool | None]:
    def wrapper(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
        if name != "not_a_server_error":
            if response.status_code >= 500:
                return None  # reported once, by not_a_server_error
            if _outside_api(response, case):
                return None  # C-29: nothing is asserted on 404/405 outside the AMP routes
        return check(ctx, response, case)

    wrapper.__name__ = _WRAPPER_PREFIX + name
    wrapper.__qualname__ = wrapper.__name__
    return wrapper


def _make_warn_wrapper(name: str, check: Callable[..., bool | None]) -> Callable[..., bool | None]:
    from schemathesis.core.failures import Failure, FailureGroup

    def wrapper(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
        if response.status_code >= 500 or _outside_api(response, case):
            return None  # 5xx: reported by not_a_server_error; 404/405 outside the AMP routes: C-29
        if name == "missing_required_header" and _is_create_with_creator(case):
            return None  # keyless create falls back to identity.created_by (AMP-AUTH-01)
        try:
            check(ctx, response, case)
        except FailureGroup as group:
            for failure in group.exceptions:
                _record(name, response, case, _failure_text(failure))
        except (Failure, AssertionError) as failure:
            _record(name, response, case, _failure_text(failure))
        return None

    wrapper.__name__ = _WRAPPER_PREFIX + name
    wrapper.__qualname__ = wrapper.__name__
    return wrapper


def _wrappers() -> list[Callable[..., bool | None]]:
    builtins = _builtin_checks()
    wrappers: list[Callable[..., bool | None]] = []
    for name, (severity, _requirement, _reason) in CHECK_POLICY.items():
        check = builtins.get(name)
        if check is None or severity == OFF:
            continue
        if severity == FAIL:
            wrappers.append(_make_fail_wrapper(name, check))
        else:
            wrappers.append(_make_warn_wrapper(name, check))
    envelope = _check_error_envelope
    wrappers.append(_renamed(envelope, _WRAPPER_PREFIX + "error_envelope"))
    return wrappers


def _renamed(func: Callable[..., bool | None], name: str) -> Callable[..., bool | None]:
    def wrapper(ctx: CheckContext, response: Response, case: Case[Any]) -> bool | None:
        return func(ctx, response, case)

    wrapper.__name__ = name
    wrapper.__qualname__ = name
    return wrapper


@contextmanager
def _registered_checks(collector: _Collector) -> Iterator[list[str]]:
    global _ACTIVE
    from schemathesis.checks import CHECKS

    wrappers = _wrappers()
    names = [wrapper.__name__ for wrapper in wrappers]
    for wrapper in wrappers:
        CHECKS.register(wrapper)
    _ACTIVE = collector
    try:
        yield names
    finally:
        _ACTIVE = None
        for name in names:
            with suppress(KeyError):
                CHECKS.unregister(name)


# ---------------------------------------------------------------------------------------------------------
# Running the engine
# ---------------------------------------------------------------------------------------------------------
def _origin(base_url: str) -> str:
    url = base_url.strip().rstrip("/")
    if url.endswith(API_PREFIX):
        url = url[: -len(API_PREFIX)]
    return url


def _count_operations(contract: Mapping[str, Any]) -> int:
    methods = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
    paths = contract.get("paths")
    if not isinstance(paths, Mapping):
        return 0
    return sum(1 for item in paths.values() if isinstance(item, Mapping) for key in item if key in methods)


def _schemathesis_config(
    config: FuzzConfig, *, origin: str, seed: int, max_time: int, check_names: list[str]
) -> Any:
    from schemathesis.config import SchemathesisConfig

    builtins = [name for name in _builtin_checks() if name != "max_response_time"]
    checks: dict[str, Any] = {name: {"enabled": False} for name in builtins}
    # Our wrappers stand in for the schemathesis checks (see CHECK_POLICY); the built-ins are off.
    checks.update({name: {"enabled": True} for name in check_names})
    checks["positive_data_acceptance"] = {"enabled": False, "expected-statuses": _POSITIVE_STATUSES}
    generation = {
        "mode": "all",
        "max-examples": max(1, config.max_examples),
        "database": "none",
        "deterministic": False,
        "unique-inputs": True,
    }
    data: dict[str, Any] = {
        "seed": seed,
        "max-time": max_time,
        "suppress-health-check": ["all"],
        "cache": {"enabled": False},
        "base-url": origin,
        "headers": dict(config.headers),
        "workers": 1,
        "request-timeout": config.request_timeout,
        # Keep exploring an operation after a failure: one finding per check x operation x status is the
        # goal, and the engine does not shrink anyway (it stops the hypothesis test at the first failure).
        "continue-on-failure": True,
        "tls-verify": True,
        "output": {"sanitization": {"enabled": False}},
        "generation": generation,
        "checks": checks,
        "phases": {
            "examples": {"enabled": True},
            "coverage": {"enabled": True},
            "fuzzing": {"enabled": True},
            "stateful": {"enabled": True, "max-steps": max(2, config.stateful_steps)},
        },
    }
    return SchemathesisConfig.from_dict(data)


def _contain_exceptions(app: Any) -> Any:
    """ASGI wrapper: an exception escaping the application becomes a 500, as a real server would send.

    schemathesis's in-process ASGI client re-raises application exceptions, which would make them tool
    errors instead of 5xx findings. Lifespan events are answered here and not forwarded: the
    application's owner runs its lifespan.
    """

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "lifespan":
            while True:
                message = await receive()
                if message.get("type") == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message.get("type") == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        started = False

        async def tracking_send(message: dict[str, Any]) -> None:
            nonlocal started
            if message.get("type") == "http.response.start":
                started = True
            await send(message)

        try:
            await app(scope, receive, tracking_send)
        except Exception:
            if started:
                return
            await send(
                {
                    "type": "http.response.start",
                    "status": 500,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8")],
                }
            )
            await send({"type": "http.response.body", "body": b"Internal Server Error"})

    return wrapped


def _in_process_app(config: FuzzConfig) -> tuple[Any, str | None]:
    """The application to fuzz in-process, or None for the network; plus an error message."""
    from schemathesis.transport import is_asgi_app

    app = config.app
    if app is None and config.transport is not None:
        app = getattr(config.transport, "app", None)
        if app is None:
            return None, (
                f"transport {type(config.transport).__name__} cannot be used: schemathesis sends requests "
                "through `requests`, not httpx; pass an ASGI/WSGI application (FuzzConfig.app) "
                "or no transport"
            )
    if app is None:
        return None, None
    return (_contain_exceptions(app) if is_asgi_app(app) else app), None


def _release_lifespan(app: Any) -> None:
    """Drop schemathesis's record of the in-process application (best effort, private API)."""
    try:
        from schemathesis.python import asgi

        with asgi._LOCK:
            lifespan = asgi._LIFESPANS.pop(id(app), None)
            asgi._STARTUP_LOCKS.pop(id(app), None)
        if lifespan is not None:
            lifespan.stop()
    except Exception:
        pass


class _Run:
    """Consumes the engine's events on a worker thread so the caller can enforce the wall-time bound."""

    def __init__(self, stream: EventStream, collector: _Collector) -> None:
        self.stream = stream
        self.collector = collector
        self.done = threading.Event()
        self.elastic_started: set[str] = set()
        self.thread = threading.Thread(target=self._consume, name="amp-fuzz", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stream.stop()

    def _consume(self) -> None:
        try:
            for event in self.stream:
                self._handle(event)
        except BaseException as exc:  # the engine itself failed: a tool problem
            self.collector.error(f"fuzz engine error: {type(exc).__name__}: {exc}")
        finally:
            self.done.set()

    def _handle(self, event: EngineEvent) -> None:
        from schemathesis.engine import events
        from schemathesis.engine.run import ELASTIC_PHASES

        if isinstance(event, events.PhaseStarted) and event.phase.name in ELASTIC_PHASES:
            # With a time budget the engine repeats fuzzing and stateful testing until it is spent;
            # one pass is what `max_examples` asks for, so stop when the second pass begins.
            if event.phase.name in self.elastic_started:
                self.stream.stop()
            self.elastic_started.add(event.phase.name)
        elif isinstance(event, events.ScenarioFinished):
            self._scenario(event)
        elif isinstance(event, events.NonFatalError):
            self._non_fatal(event)
        elif isinstance(event, events.FatalError):
            self.collector.error(f"fuzz engine error: {event.exception!r}")

    def _scenario(self, event: Any) -> None:
        recorder = event.recorder
        self.collector.count(len(recorder.interactions))
        for case_id, interaction in recorder.interactions.items():
            case_node = recorder.cases.get(case_id)
            if interaction.response is not None and case_node is not None:
                self.collector.offer_base(case_node.value, interaction.response.status_code)
        for case_id, nodes in recorder.checks.items():
            for node in nodes:
                info = node.failure_info
                if info is None:
                    continue
                check = str(node.name).removeprefix(_WRAPPER_PREFIX)
                case_node = recorder.cases.get(case_id)
                interaction = recorder.interactions.get(case_id)
                response = interaction.response if interaction is not None else None
                status = response.status_code if response is not None else None
                if case_node is not None:
                    operation = _operation_label(response, case_node.value)
                else:
                    operation = str(getattr(info.failure, "operation", None) or event.label or "?")
                failure = info.failure
                inner = getattr(failure, "exception", None)
                requirement = getattr(inner, "requirement", None) or _requirement_for(check, status)
                self.collector.add(
                    check=check,
                    operation=operation,
                    status=status,
                    message=_failure_text(failure),
                    curl=str(info.code_sample or ""),
                    requirement=requirement,
                    case=case_node.value if case_node is not None and check == "not_a_server_error" else None,
                )

    def _non_fatal(self, event: Any) -> None:
        import requests
        from schemathesis.engine.errors import UnresponsiveOperationError, is_connection_refused

        error = event.value
        info = event.info
        if isinstance(error, requests.ConnectionError) and is_connection_refused(error):
            self.collector.error(f"cannot reach the server: {info.message}")
            return
        transport_errors = (requests.Timeout, requests.ConnectionError, UnresponsiveOperationError)
        transport = isinstance(error, transport_errors)
        if transport and event.related_to_operation and info.code_sample:
            self.collector.add(
                check="transport_error",
                operation=str(event.label),
                status=None,
                message=f"{info.title}: {info.message}",
                curl=str(info.code_sample),
            )
            return
        self.collector.error(f"{event.label}: {info.title}: {info.message}")


def _requirement_for(check: str, status: int | None) -> str:
    if check == "content_type_conformance":
        return "AMP-ERR-01" if status is not None and status >= 400 else "AMP-OAS-04"
    if check == "response_headers_conformance":
        return "AMP-ERR-06" if status == 429 else "AMP-OAS-04"
    return CHECK_POLICY.get(check, (FAIL, "AMP-ERR-07", ""))[1]


# ---------------------------------------------------------------------------------------------------------
# Unusual-input probes
# ---------------------------------------------------------------------------------------------------------
# Hypothesis finds unusual values by luck, and with a small budget mostly generates simple ones. The
# probes make the classic fuzzing dictionary deterministic: starting from the richest request each
# operation answered without a 5xx, they replace one value at a time with non-ASCII / invalid Unicode
# text or a huge number, and add a member holding a huge number, non-ASCII text or deep nesting to every
# object (free-form ones such as content.metadata included; AMP ignores unknown members elsewhere).
# Every answer is judged like the engine's: no 5xx, 4xx in the error envelope, status declared.
_UNUSUAL_STRINGS: Final = ("é", "日本語のテキスト", "\U0001f600", "\u202eevil", "a\u0301", "\ud800", "\x00")
_UNUSUAL_NUMBERS: Final = (2**53 + 1, -(2**63) - 1, 10**30)
_PROBE_MEMBER: Final = "amp_fuzz"
_MAX_PROBES_PER_OPERATION: Final = 200


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = {"n": value}
    return value


_UNUSUAL_MEMBERS: Final = (("deep nesting (6 levels)", _nested(6)), ("deep nesting (40 levels)", _nested(40)))


def _leaf_count(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaf_count(item) for item in value.values()) + 1
    if isinstance(value, list):
        return sum(_leaf_count(item) for item in value) + 1
    return 1


def _walk(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _walk(item, (*path, index))


def _set(value: Any, path: tuple[str | int, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: _set(value[head], rest, new)}
    copied = list(value)
    copied[int(head)] = _set(copied[int(head)], rest, new)
    return copied


def _pointer(path: tuple[str | int, ...]) -> str:
    return "body" + "".join(f".{part}" if isinstance(part, str) else f"[{part}]" for part in path)


def _value_variants(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, bool):
        return
    if value is None:  # often a nullable string left empty: give it text
        for text in _UNUSUAL_STRINGS[:3]:
            yield f"string {text!r}", text
    elif isinstance(value, str):
        for text in _UNUSUAL_STRINGS:
            yield f"string {text!r}", text
    elif isinstance(value, int | float):
        for number in _UNUSUAL_NUMBERS:
            yield f"number {number}", number


def _body_mutations(body: Any) -> Iterator[tuple[str, Any]]:
    for path, value in _walk(body):
        for label, variant in _value_variants(value):
            yield f"{_pointer(path)} = {label}", _set(body, path, variant)
        if isinstance(value, dict):
            members: list[tuple[str, Any]] = [(f"number {n}", n) for n in _UNUSUAL_NUMBERS[:2]]
            members += [(f"string {t!r}", t) for t in _UNUSUAL_STRINGS[:2]]
            members += list(_UNUSUAL_MEMBERS)
            for label, member in members:
                where = f"{_pointer(path)}.{_PROBE_MEMBER}"
                yield f"{where} = {label}", _set(body, path, {**value, _PROBE_MEMBER: member})


def _probes(case: Any) -> Iterator[tuple[str, Any]]:
    """(description, derived case) for one operation's base request."""
    for name, value in case.query.items():
        for label, variant in _value_variants(value if value is not None else ""):
            yield f"query {name} = {label}", _with(case, query={**case.query, name: variant})
    for name in case.path_parameters:
        for text in _UNUSUAL_STRINGS[:4]:
            derived = _with(case)
            derived.path_parameters[name] = text
            yield f"path {name} = string {text!r}", derived
    if isinstance(case.body, dict | list):
        for label, body in _body_mutations(case.body):
            yield label, _with(case, body=body)


def _declared(status: int, codes: Iterable[str]) -> bool:
    declared = {str(code).upper() for code in codes}
    return "DEFAULT" in declared or str(status) in declared or f"{status // 100}XX" in declared


def _judge_probe(
    collector: _Collector, case: Any, response: Any, description: str, headers: Mapping[str, str]
) -> None:
    status = int(response.status_code)
    curl = str(case.as_curl_command(headers=dict(headers)))
    operation = _operation_label(response, case)
    if status >= 500:
        collector.add(
            check="not_a_server_error",
            operation=operation,
            status=status,
            message=f"{status} on unusual input ({description})",
            curl=curl,
            case=case,
        )
        return
    if _outside_api(response, case):
        return
    if not _declared(status, case.operation.responses.status_codes):
        collector.add(
            check="status_code_conformance",
            operation=operation,
            status=status,
            message=f"undeclared status {status} on unusual input ({description})",
            curl=curl,
        )
    if 400 <= status < 500:
        try:
            _check_error_envelope(None, response, case)  # type: ignore[arg-type]
        except EnvelopeFailure as failure:
            collector.add(
                check="error_envelope",
                operation=operation,
                status=status,
                message=f"{failure.message} (unusual input: {description})",
                curl=curl,
                requirement=failure.requirement,
            )


def _probe_unusual_inputs(
    collector: _Collector, headers: Mapping[str, str], *, deadline: float, timeout: float
) -> None:
    import requests

    for base in collector.bases():
        for sent, (description, case) in enumerate(_probes(base)):
            if sent >= _MAX_PROBES_PER_OPERATION or time.monotonic() + min(timeout, 1.0) >= deadline:
                break
            try:
                response = case.call(headers=dict(headers))
            except (requests.Timeout, requests.ConnectionError) as exc:
                collector.add(
                    check="transport_error",
                    operation=_operation_label(None, case),
                    status=None,
                    message=f"{type(exc).__name__} on unusual input ({description})",
                    curl=str(case.as_curl_command(headers=dict(headers))),
                )
                continue
            except Exception:
                continue  # a request the client cannot even build: not the server's fault
            collector.count(1)
            _judge_probe(collector, case, response, description, headers)


# ---------------------------------------------------------------------------------------------------------
# Minimising 5xx reproductions (the engine stops a hypothesis test at its first failure without shrinking)
# ---------------------------------------------------------------------------------------------------------
_MAX_MINIMISE_REQUESTS: Final = 120


def _simpler(value: Any) -> Iterator[Any]:
    """Candidate simplifications of a JSON value, most aggressive first."""
    if isinstance(value, dict):
        for key in list(value):
            yield {k: v for k, v in value.items() if k != key}
        for key, item in value.items():
            for simpler in _simpler(item):
                yield {**value, key: simpler}
    elif isinstance(value, list):
        for index in range(len(value)):
            yield value[:index] + value[index + 1 :]
        for index, item in enumerate(value):
            for simpler in _simpler(item):
                yield [*value[:index], simpler, *value[index + 1 :]]
    elif isinstance(value, str) and len(value) > 1:
        half = len(value) // 2
        yield value[:half]
        yield value[half:]


def _with(case: Any, *, body: Any = None, query: dict[str, Any] | None = None) -> Any:
    derived = case.derive(query=query)
    object.__setattr__(derived, "_meta", None)  # a hand-made request, not a generated one
    if body is not None:
        object.__setattr__(derived, "body", body)
    return derived


def _minimise(case: Any, status: int, headers: Mapping[str, str], deadline: float) -> Any | None:
    """The smallest variant of ``case`` (fewer members, shorter strings) still answered with ``status``."""
    sent = 0

    def reproduces(candidate: Any) -> bool:
        nonlocal sent
        sent += 1
        try:
            response = candidate.call(headers=dict(headers))
        except Exception:
            return False
        return bool(response.status_code == status)

    if not reproduces(_with(case)):
        return None
    current = case
    improved = True
    while improved and sent < _MAX_MINIMISE_REQUESTS and time.monotonic() < deadline:
        improved = False
        for name in list(current.query):
            candidate = _with(current, query={k: v for k, v in current.query.items() if k != name})
            if reproduces(candidate):
                current, improved = candidate, True
                break
        if improved:
            continue
        if isinstance(current.body, (dict, list, str)):
            for body in _simpler(current.body):
                if sent >= _MAX_MINIMISE_REQUESTS or time.monotonic() >= deadline:
                    break
                candidate = _with(current, body=body)
                if reproduces(candidate):
                    current, improved = candidate, True
                    break
    return current


def _minimise_findings(collector: _Collector, headers: Mapping[str, str], deadline: float) -> None:
    for key, case in collector.cases().items():
        status = key[2]
        if status is None or time.monotonic() >= deadline:
            continue
        try:
            smallest = _minimise(case, status, headers, deadline)
            if smallest is not None and smallest is not case:
                collector.replace_curl(key, str(smallest.as_curl_command(headers=dict(headers))))
        except Exception:
            continue  # the engine's own reproduction stays


def run_fuzz(config: FuzzConfig) -> FuzzResult:
    """Fuzz the server described by ``config``; never raises."""
    started = time.monotonic()
    seed = config.seed if config.seed is not None else random.SystemRandom().randrange(2**31)
    collector = _Collector(
        seed=seed, origin=_origin(config.base_url), secrets=_secret_headers(config.headers)
    )
    operations = 0
    hard_deadline = started + max(2 * config.seconds - 1.0, config.seconds, 1.0)
    # One run at a time: the checks are registered process-wide for the duration of a run.
    acquired = _RUN_LOCK.acquire(timeout=max(hard_deadline - time.monotonic() - config.seconds, 0.1))
    if not acquired:
        collector.error("another fuzz run is still in progress in this process")
    else:
        try:
            operations = _run(config, collector, started=started, hard_deadline=hard_deadline)
        except Exception as exc:
            collector.error(f"fuzz run failed: {type(exc).__name__}: {exc}")
        finally:
            _RUN_LOCK.release()
    return FuzzResult(
        findings=collector.findings(),
        operations=operations,
        examples=collector.examples,
        seconds=round(time.monotonic() - started, 3),
        seed=seed,
        errors=collector.errors(),
    )


def _run(config: FuzzConfig, collector: _Collector, *, started: float, hard_deadline: float) -> int:
    import schemathesis
    from schemathesis.engine import from_schema

    raw = config.contract
    if raw is None:
        from amp_conformance.resources import load_contract

        raw = load_contract("openapi.json")
    contract: dict[str, Any] = copy.deepcopy(dict(raw))
    operations = _count_operations(contract)
    app, problem = _in_process_app(config)
    if problem is not None:
        collector.error(problem)
        return operations

    # Budget split: the engine gets ~70% of what is left of `seconds` (whole seconds, its unit) and
    # stops generating then; the unusual-input probes and the minimisation of 5xx reproductions use the
    # rest. Nothing starts a request that could end after the hard deadline.
    remaining = config.seconds - (time.monotonic() - started)
    max_time = max(1, math.floor(remaining * 0.7))
    grace = min(max(config.request_timeout, 1.0), max(config.seconds * 0.25, 0.5))
    budget_end = started + config.seconds
    send_deadline = min(budget_end + grace, hard_deadline - config.request_timeout)
    with _registered_checks(collector) as check_names:
        try:
            st_config = _schemathesis_config(
                config,
                origin=collector.origin,
                seed=collector.seed,
                max_time=max_time,
                check_names=check_names,
            )
            schema = schemathesis.openapi.from_dict(contract, config=st_config)
        except Exception as exc:
            collector.error(f"cannot load the contract: {type(exc).__name__}: {exc}")
            return operations
        if app is not None:
            schema.app = app
        try:
            run = _Run(from_schema(schema).execute(), collector)
            run.start()
            # Interrupt the engine if it is still busy when the budget is spent (an in-flight request may
            # need up to request_timeout more); abandon it at the hard deadline whatever it is doing.
            if not run.done.wait(timeout=max(budget_end - time.monotonic(), 0.0)):
                run.stop()
                if not run.done.wait(timeout=max(hard_deadline - time.monotonic(), 0.0)):
                    collector.error(
                        f"the fuzz engine did not stop within {2 * config.seconds:.0f} s; abandoned it "
                        "(a request may hang without honouring the timeout)"
                    )
                    return operations
            _probe_unusual_inputs(
                collector, config.headers, deadline=send_deadline, timeout=config.request_timeout
            )
            # Shrink the 5xx reproductions (the engine does not) with what is left.
            _minimise_findings(collector, config.headers, send_deadline)
        finally:
            if app is not None:
                _release_lifespan(app)
    return operations


# ---------------------------------------------------------------------------------------------------------
# The served contract
# ---------------------------------------------------------------------------------------------------------
def fetch_served_contract(
    base_url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 5.0,
    transport: httpx.BaseTransport | None = None,
) -> tuple[dict[str, Any] | None, list[str]]:
    """The server's OpenAPI document (AMP-OAS-01): ``{origin}/openapi.json``, else ``{base}/openapi.json``.

    Returns the document (or None) and notes (why it was not found, or that the fallback was used).
    """
    origin = _origin(base_url)
    notes: list[str] = []
    candidates = [f"{origin}/openapi.json", f"{origin}{API_PREFIX}/openapi.json"]
    try:
        with httpx.Client(transport=transport, timeout=timeout, headers=dict(headers or {})) as client:
            for index, url in enumerate(candidates):
                try:
                    reply = client.get(url)
                except httpx.HTTPError as exc:
                    notes.append(f"GET {url}: {type(exc).__name__}: {exc}")
                    continue
                if reply.status_code != 200:
                    notes.append(f"GET {url}: {reply.status_code}")
                    continue
                try:
                    document = reply.json()
                except ValueError:
                    notes.append(f"GET {url}: 200 but the body is not JSON")
                    continue
                if not isinstance(document, dict):
                    notes.append(f"GET {url}: 200 but the body is not a JSON object")
                    continue
                if index:
                    notes.append(f"the OpenAPI document is served at {url}, not at the origin root")
                return document, notes
    except Exception as exc:  # pragma: no cover - never raise
        notes.append(f"cannot fetch the OpenAPI document: {type(exc).__name__}: {exc}")
    return None, notes


_HTTP_METHODS: Final = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def _server_prefix(document: Mapping[str, Any]) -> str:
    servers = document.get("servers")
    if isinstance(servers, list) and servers and isinstance(servers[0], Mapping):
        url = str(servers[0].get("url") or "")
        return urlsplit(url).path.rstrip("/")
    return ""


def _routes(document: Mapping[str, Any]) -> dict[str, dict[str, set[str]]]:
    """{normalised path: {METHOD: {declared statuses}}}; parameter names are ignored, paths carry /amp/v1."""
    prefix = _server_prefix(document)
    routes: dict[str, dict[str, set[str]]] = {}
    paths = document.get("paths")
    if not isinstance(paths, Mapping):
        return routes
    for raw_path, item in paths.items():
        if not isinstance(item, Mapping):
            continue
        path = str(raw_path)
        if not path.startswith(API_PREFIX) and prefix and not path.startswith(prefix + "/"):
            path = prefix + path
        path = re.sub(r"\{[^}]*\}", "{}", path).rstrip("/") or "/"
        methods = routes.setdefault(path, {})
        for method in _HTTP_METHODS:
            operation = item.get(method)
            if not isinstance(operation, Mapping):
                continue
            responses = operation.get("responses")
            statuses = {str(code) for code in responses} if isinstance(responses, Mapping) else set()
            methods.setdefault(method.upper(), set()).update(statuses)
    return routes


def compare_served_contract(served: Mapping[str, Any], ours: Mapping[str, Any]) -> list[str]:
    """Differences between the server's OpenAPI document and ours: routes, methods, declared statuses.

    Each difference is one human-readable warning (AMP-OAS-02); an empty list means they agree on all three.
    Path parameter names are not compared (``{id}`` and ``{memory_id}`` are the same route).
    """
    warnings: list[str] = []
    served_routes, our_routes = _routes(served), _routes(ours)
    for path in sorted(set(our_routes) - set(served_routes)):
        methods = ", ".join(sorted(our_routes[path]))
        warnings.append(f"route {path} ({methods}) is missing from the served document")
    for path in sorted(set(served_routes) - set(our_routes)):
        methods = ", ".join(sorted(served_routes[path]))
        warnings.append(f"route {path} ({methods}) is served but not in our contract")
    for path in sorted(set(served_routes) & set(our_routes)):
        served_methods, our_methods = served_routes[path], our_routes[path]
        for method in sorted(set(our_methods) - set(served_methods)):
            warnings.append(f"{method} {path} is missing from the served document")
        for method in sorted(set(served_methods) - set(our_methods)):
            warnings.append(f"{method} {path} is served but not in our contract")
        for method in sorted(set(served_methods) & set(our_methods)):
            missing = sorted(our_methods[method] - served_methods[method])
            extra = sorted(served_methods[method] - our_methods[method])
            if missing:
                listed = ", ".join(missing)
                warnings.append(f"{method} {path}: statuses {listed} are not declared by the server")
            if extra:
                listed = ", ".join(extra)
                warnings.append(f"{method} {path}: statuses {listed} are declared only by the server")
    return warnings
