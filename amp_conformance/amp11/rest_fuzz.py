"""The fuzz engine's profile of the AMP v1.1 REST channel (Appendix C, ``contract/openapi.json``).

The protocol-neutral engine (:mod:`amp_conformance.fuzz`, schemathesis) fuzzes the OpenAPI 3.0 file with
this profile: routes under ``/v1``, findings cited by ``AMP11-`` ids at their catalogue levels (a 5xx
is AMP11-REST-11, an undocumented status or a body off its schema AMP11-REST-10, a 4xx without the AMP
error body AMP11-ERR-06), the v1.1 error body (``amp_error_code`` or ``code``, and ``message``), and a
documented 5xx (501 ``not_supported``, 500 carrying ``backend_error``) is no finding. Every generated
scope is replaced by the run's own (one fresh ``agent_id``), and what ``POST /v1/memories`` stored is
remembered for the run's cleanup. The bundled document declares no OpenAPI links; the copy fuzzed here
adds them (encode -> forget / pin by the returned id), so the stateful phase has something to follow.
NDJSON export bodies (``application/x-ndjson``, declared as a string) are read line by line: each line
must be JSON.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from amp_conformance.amp11.channels import SCOPE_KEYS
from amp_conformance.engine.text import shown
from amp_conformance.fuzz import FAIL, OFF, WARN, FuzzProfile, Policy

API_PREFIX: Final = "/v1"
NDJSON: Final = "application/x-ndjson"

POLICY: Final[Policy] = MappingProxyType(
    {
        # A 5xx other than a documented one (501 not_supported, 500 backend_error) is AMP11-REST-11.
        "not_a_server_error": (
            FAIL,
            "AMP11-REST-11",
            "no request, however malformed, gets an undocumented 5xx",
        ),
        # AMP11-REST-10: documented statuses, media types and bodies matching their schemas.
        "status_code_conformance": (FAIL, "AMP11-REST-10", "the answered status is documented for the route"),
        "content_type_conformance": (FAIL, "AMP11-REST-10", "the response media type is documented"),
        "response_schema_conformance": (FAIL, "AMP11-REST-10", "the body matches its documented schema"),
        # WARN: X-AMP-Next-Cursor is documented as present while rows remain, which schemathesis reads as
        # always required.
        "response_headers_conformance": (WARN, "AMP11-REST-10", "documented response headers are sent"),
        # OFF: v1.1 has no read-by-id route for the check to follow.
        "ensure_resource_availability": (OFF, "-", "no read-by-id route in Appendix C"),
        # OFF: a schema-valid request may legitimately be refused: blank content or query, a malformed
        # cursor (invalid_request), an unknown id (not_found), a Full verb on a Core server
        # (not_supported). The verb fuzz checks judge such answers against §3.5 instead.
        "positive_data_acceptance": (OFF, "-", "schema-valid requests may get documented refusals"),
        # OFF: on this channel many generated "invalid" requests are valid on the wire (an NDJSON body is
        # text whatever was generated; the run's scope replaces a broken one); the verb fuzz checks
        # assert invalid_request one schema-invalid member at a time instead.
        "negative_data_rejection": (OFF, "-", "judged by the verb fuzz checks, member by member"),
        "missing_required_header": (OFF, "-", "v1.1 REST requires no header"),
        # OFF: 405 with Allow for an undeclared method is HTTP semantics (RFC 9110); AMP v1.1 says nothing.
        "unsupported_method": (OFF, "-", "undeclared methods are HTTP's, not AMP's"),
        "use_after_free": (OFF, "-", "no read-by-id route in Appendix C"),
        "ignored_auth": (OFF, "-", "v1.1 REST declares no authentication"),
        "object_level_authorization": (OFF, "-", "scopes are asserted by the SCOPE checks"),
        "allow_header_conformance": (OFF, "-", "OPTIONS handling is the framework's"),
        "max_response_time": (OFF, "-", "timing is not an AMP requirement"),
        # Ours: a 4xx from a v1.1 route carries the AMP code and a message (AMP11-ERR-06).
        "error_envelope": (FAIL, "AMP11-ERR-06", "every 4xx carries amp_error_code (or code) and message"),
        "error_envelope_details": (OFF, "-", "AmpErrorData has no details member"),
        "transport_error": (WARN, "AMP11-REST-11", "every request gets an answer within the timeout"),
    }
)


def _status_requirement(check: str, status: int | None) -> str | None:
    if check == "content_type_conformance" and status is not None and status >= 400:
        return "AMP11-ERR-06"
    return None


def error_code(body: Any) -> str | None:
    """The AMP code of a v1.1 REST error body (``amp_error_code`` or ``code``, top level or under
    ``error``; conflict C3), or None."""
    if not isinstance(body, dict):
        return None
    for holder in (body, body.get("error")):
        if isinstance(holder, dict):
            for key in ("amp_error_code", "code"):
                if isinstance(holder.get(key), str):
                    return str(holder[key])
    return None


def _envelope_problems(status: int, body: Any) -> list[str]:
    if not isinstance(body, dict):
        return [f"the body is JSON {type(body).__name__}, not an object"]
    problems = []
    if error_code(body) is None:
        problems.append("no AMP error code (amp_error_code or code)")
    nested = body.get("error")
    holder: dict[str, Any] = nested if isinstance(nested, dict) else body
    if not isinstance(holder.get("message"), str):
        problems.append("message is missing or not a string")
    return problems


def _allowed_server_error(response: Any) -> bool:
    """501 (not_supported) and a 500 that reports backend_error are documented (§3.5, AMP11-REST-11)."""
    if response.status_code == 501:
        return True
    if response.status_code != 500:
        return False
    try:
        return error_code(response.json()) == "backend_error"
    except Exception:
        return False


def _isolate(case: Any, agent_id: str) -> None:
    """Every scope the case names becomes the run's own ``{"agent_id": ...}``."""
    query = case.query if isinstance(case.query, dict) else None
    if query is not None and any(key in query for key in SCOPE_KEYS):
        for key in SCOPE_KEYS:
            query.pop(key, None)
        query["agent_id"] = agent_id
    body = case.body
    if isinstance(body, dict):
        if "scope" in body:
            body["scope"] = {"agent_id": agent_id}
        if any(key in body for key in SCOPE_KEYS):
            for key in SCOPE_KEYS:
                body.pop(key, None)
            body["agent_id"] = agent_id
    # a request naming no scope at all gets the run's own too, so it never reaches anything else
    path = str(getattr(getattr(case, "operation", None), "path", "") or "")
    if path.endswith(("/stats", "/import", "/{id}")):
        case.query = {**(case.query if isinstance(case.query, dict) else {}), "agent_id": agent_id}
    elif path.endswith("/pin") and isinstance(body, dict):
        body["agent_id"] = agent_id
    elif isinstance(body, dict) and "scope" not in body and "agent_id" not in body:
        body["scope"] = {"agent_id": agent_id}


def _created_id(case: Any, response: Any) -> str | None:
    method = str(getattr(case, "method", "") or "").upper()
    path = str(getattr(getattr(case, "operation", None), "path", "") or "").rstrip("/")
    if method != "POST" or not path.endswith("/v1/memories") or response.status_code != 200:
        return None
    try:
        body = response.json()
    except Exception:
        return None
    memory_id = body.get("id") if isinstance(body, dict) else None
    return memory_id if isinstance(memory_id, str) and body.get("status") == "stored" else None


def with_links(document: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of the contract with links from encode's 200 to forget and pin by the returned id."""
    linked = copy.deepcopy(dict(document))
    encode = linked.get("paths", {}).get(f"{API_PREFIX}/memories", {}).get("post")
    if not isinstance(encode, dict):
        return linked
    ok = encode.get("responses", {}).get("200")
    if isinstance(ok, dict):
        ids = {"id": "$response.body#/id"}
        ok["links"] = {
            "Forget": {"operationId": "forgetMemory", "parameters": ids},
            "Pin": {"operationId": "pinMemory", "parameters": ids},
        }
    return linked


def _load_contract() -> Mapping[str, Any]:
    from importlib import resources

    path = resources.files("amp_conformance.amp11") / "contract" / "openapi.json"
    return with_links(json.loads(path.read_text(encoding="utf-8")))


def ndjson_problems(text: str) -> list[str]:
    """Lines of an NDJSON body that are not JSON."""
    problems = []
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            try:
                json.loads(line)
            except ValueError:
                problems.append(f"line {number} is not JSON: {shown(line[:80])}")
    return problems


def _ndjson_bytes(value: Any) -> bytes:
    """A generated import body as NDJSON: a string as it is, anything else one JSON line per item."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    rows = value if isinstance(value, list) else [value]
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-8")


def register_ndjson() -> None:
    """Let schemathesis send NDJSON request bodies (import) and read NDJSON responses (export, declared
    ``type: string``): the text, once every line is JSON."""
    import schemathesis

    @schemathesis.serializer(NDJSON)
    def ndjson_body(ctx: Any, value: Any) -> bytes:
        return _ndjson_bytes(value)

    @schemathesis.deserializer(NDJSON)
    def ndjson(ctx: Any, response: Any) -> str:
        text = bytes(response.content or b"").decode("utf-8")
        problems = ndjson_problems(text)
        if problems:
            raise ValueError("the NDJSON body is not JSON lines: " + "; ".join(problems[:3]))
        return text


PROFILE: Final = FuzzProfile(
    api_prefix=API_PREFIX,
    policy=POLICY,
    load_contract=_load_contract,
    envelope_problems=_envelope_problems,
    status_requirement=_status_requirement,
    isolate=_isolate,
    created_id=_created_id,
    allowed_server_error=_allowed_server_error,
    fallback_requirement="AMP11-REST-11",
)
