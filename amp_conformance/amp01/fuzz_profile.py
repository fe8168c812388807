"""The fuzz engine's profile of AMP v0.1.0: the /amp/v1 routes, which schemathesis checks run at which
severity citing which AMP- requirement, the error envelope, owner pinning and the created cells.

The engine (:mod:`amp_conformance.fuzz`) is protocol-neutral; everything AMP v0.1 about fuzzing is here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from amp_conformance.amp01.envelope import envelope_problems, validation_error_problems
from amp_conformance.fuzz import FAIL, OFF, WARN, FuzzProfile, Policy

if TYPE_CHECKING:
    from amp_conformance.amp01.conventions import Conventions

API_PREFIX: Final = "/amp/v1"

# ---------------------------------------------------------------------------------------------------------
# Which schemathesis checks run, at which severity, and why. The key is the schemathesis check name (also
# the `check` of a finding); the value is (severity, requirement id(s), reason).
# ---------------------------------------------------------------------------------------------------------
CHECK_POLICY: Final[Policy] = MappingProxyType(
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


def _status_requirement(check: str, status: int | None) -> str | None:
    """The requirement a failed check counts against (some depend on the status)."""
    if check == "content_type_conformance":
        return "AMP-ERR-01" if status is not None and status >= 400 else "AMP-OAS-04"
    if check == "response_headers_conformance":
        return "AMP-ERR-06" if status == 429 else "AMP-OAS-04"
    return None


def _envelope_problems(status: int, body: Any) -> list[str]:
    if status == 422:
        return validation_error_problems(body)
    return envelope_problems(body, require_details=False)


def envelope_requirement(status: int, problems: list[str]) -> str:
    """The AMP- requirement an error body's ``problems`` break."""
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


def _details_missing(body: Any) -> bool:
    error = body.get("error") if isinstance(body, dict) else None
    return isinstance(error, dict) and "details" not in error


def _isolate(case: Any, owner_id: str) -> None:
    """Pin every generated owner id to the run's own.

    The suite promises to write only under per-run owner ids; generated data would otherwise create
    cells under arbitrary owners (and searches would read other owners' cells). Searches and lists are
    pinned to the fuzz owner even when the generated request names no owner: what they return feeds the
    stateful phase's links (PATCH, DELETE by id), which must never reach the cells other checks made."""
    body = case.body
    if isinstance(body, dict):
        identity = body.get("identity")
        if isinstance(identity, dict) and "owner_id" in identity:
            identity["owner_id"] = owner_id
        if "owner_id" in body:
            body["owner_id"] = owner_id
    if isinstance(case.query, dict) and "owner_id" in case.query:
        case.query["owner_id"] = owner_id
    path = str(getattr(getattr(case, "operation", None), "path", "") or "").rstrip("/")
    method = str(getattr(case, "method", "") or "").upper()
    if method == "POST" and path.endswith("/memories/search") and isinstance(body, dict):
        body["owner_id"] = owner_id
    if method == "GET" and path.endswith(("/memories", "/memories/query")):
        query = case.query if isinstance(case.query, dict) else {}
        case.query = {**query, "owner_id": owner_id}


def _created_id(case: Any, response: Any) -> str | None:
    """The id of a cell a 201 answer created."""
    if response.status_code != 201:
        return None
    try:
        cell_id = response.json().get("id")
    except Exception:
        return None
    return cell_id if isinstance(cell_id, str) else None


def _global_operation(path: str, method: str) -> bool:
    """POST /amp/v1/lifecycle/run runs decay for the whole store (--allow-global-effects)."""
    return method.lower() == "post" and path.rstrip("/").endswith("/lifecycle/run")


def _header_exempt(case: Any) -> bool:
    """Keyless POST /memories falls back to identity.created_by (AMP-AUTH-01)."""
    body = case.body if isinstance(case.body, dict) else None
    identity = body.get("identity") if body is not None else None
    return (
        str(case.operation.method).upper() == "POST"
        and case.operation.path == f"{API_PREFIX}/memories"
        and isinstance(identity, dict)
        and bool(identity.get("created_by"))
    )


def _load_contract() -> Mapping[str, Any]:
    from amp_conformance.engine.resources import load_contract

    contract: Mapping[str, Any] = load_contract("openapi.json", "amp01")
    return contract


PROFILE: Final = FuzzProfile(
    api_prefix=API_PREFIX,
    policy=CHECK_POLICY,
    load_contract=_load_contract,
    envelope_problems=_envelope_problems,
    envelope_requirement=envelope_requirement,
    details_missing=_details_missing,
    status_requirement=_status_requirement,
    isolate=_isolate,
    created_id=_created_id,
    global_operation=_global_operation,
    header_exempt=_header_exempt,
    fallback_requirement="AMP-ERR-07",
)


#: The routes of one cell by id (``/memories/{memory_id}``, any parameter name), and the methods that
#: answer an unknown id there (requirements.md C-01: AMP-READ-10, -PATCH-19, -DEL-08).
_CELL_ROUTE: Final = re.compile(r"/memories/\{[^}/]+\}/?$")
_BY_ID_METHODS: Final = frozenset({"GET", "PATCH", "DELETE"})


def profile_for(conventions: Conventions) -> FuzzProfile:
    """:data:`PROFILE` holding the server to the conventions it was seen to follow: a generated id is
    an unknown id, so the unknown-id answer C-01 documents (404 ``NOT_FOUND`` or 403; both while the
    detection could not tell) is no undeclared status on a cell route, whichever contract is fuzzed
    (``--openapi`` of the upstream contract declares no 404), as ``validate-contract`` reports it."""
    statuses = frozenset(status for status, _code in conventions.unknown_id_answers())

    def documented_status(method: str, path: str, status: int) -> bool:
        return status in statuses and method.upper() in _BY_ID_METHODS and bool(_CELL_ROUTE.search(path))

    return dataclasses.replace(PROFILE, documented_status=documented_status)
