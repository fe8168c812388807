"""The server's own OpenAPI document (AMP-OAS-*), compared with our contract.

Differences from our contract are reported, not failed: our contract is written from the primary
documents and another implementation may document the same behaviour differently (SHOULD).
"""

from __future__ import annotations

from typing import Any

import pytest

from amp_conformance import SHOULD, Amp01Context, check
from amp_conformance.amp01.checks._support import shared_replies, shown
from amp_conformance.engine.client import Reply


def _fetch(amp: Amp01Context) -> None:
    """GET ``/openapi.json`` at the origin root and, when that is not a 200, at the base URL."""
    client = amp.anonymous()
    if client.get("/openapi.json", root=True).status != 200:
        client.get("/openapi.json")


def served_document(amp: Amp01Context) -> tuple[dict[str, Any], Reply]:
    """``/openapi.json`` at the origin root, else at the base URL (C-28: warn), else the check fails.

    Fetched once per run (``amp.shared``); each check judges the answers itself."""
    _, replies = shared_replies(amp, "oas:document", _fetch)
    at_root = replies[0]
    if at_root.status == 200:
        return at_root.json_object(), at_root
    at_base = replies[1]
    if at_base.status == 200:
        amp.warn(
            "the OpenAPI document is served at the base URL, not at the origin root (C-28)",
            at_base,
            requirements=("AMP-OAS-01",),
        )
        return at_base.json_object(), at_base
    amp.fail(
        f"no OpenAPI document at /openapi.json (origin root: {at_root.status}, base URL: {at_base.status})",
        at_root,
        expected="200 with the OpenAPI document",
    )


@pytest.mark.smoke
@check("AMP-OAS-01")
def test_the_openapi_document_is_served(amp: Amp01Context) -> None:
    """A running server serves its OpenAPI document at /openapi.json."""
    document, reply = served_document(amp)
    amp.expect(isinstance(document.get("paths"), dict), "the served document has a 'paths' object", reply)


@check("AMP-OAS-03")
def test_the_served_document_is_valid_openapi_3_1(amp: Amp01Context) -> None:
    """The served document is valid OpenAPI 3.1."""
    from openapi_spec_validator import validate
    from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

    document, reply = served_document(amp)
    version = document.get("openapi")
    amp.expect(
        isinstance(version, str) and version.startswith("3.1."),
        f"'openapi' is 3.1.x (got {shown(version)})",
        reply,
    )
    try:
        validate(document)
    except OpenAPIValidationError as exc:
        amp.fail(f"the document is not valid OpenAPI 3.1: {str(exc).splitlines()[0]}", reply)


def _differences(
    amp: Amp01Context, codes: set[str], *, ignore_statuses: frozenset[str] = frozenset()
) -> tuple[list[str], Reply]:
    """Differences of the served document from our contract; an undeclared status in
    ``ignore_statuses`` is none (the server follows a documented convention that never answers it)."""
    from amp_conformance.validator import compare_contract
    from amp_conformance.validator.openapi import DocumentError

    document, reply = served_document(amp)
    try:
        found = compare_contract(document)
    except DocumentError as exc:
        amp.fail(f"the served document cannot be compared: {exc}", reply)
    kept = [
        d
        for d in found
        if d.code in codes and not (d.code == "undeclared-status" and d.status in ignore_statuses)
    ]
    if len(kept) < len([d for d in found if d.code in codes]):
        amp.note(
            "404 is not declared, and none is needed: the run detected the 403-for-unknown-ids "
            "convention (C-01: the upstream contract answers 403 for unknown ids)"
        )
    return [str(d) for d in kept], reply


def _not_this_servers_statuses(amp: Amp01Context) -> frozenset[str]:
    """Statuses our contract declares that the server's detected convention never answers: 404 when
    unknown ids get 403 (C-01), which is all our contract's 404s are for."""
    unknown = amp.conventions.unknown_id
    return frozenset({"404"}) if unknown is not None and unknown[0] == 403 else frozenset()


@check("AMP-OAS-02", level=SHOULD, stance="Level line: SHOULD for servers other than ours")
def test_the_served_document_has_our_routes_methods_and_statuses(amp: Amp01Context) -> None:
    """The served document has the routes, methods and response statuses of our contract."""
    codes = {"missing-route", "missing-method", "undeclared-status", "extra-route", "extra-method"}
    differences, reply = _differences(amp, codes, ignore_statuses=_not_this_servers_statuses(amp))
    amp.expect(
        not differences,
        f"{len(differences)} difference(s) from our contract:\n" + "\n".join(differences[:30]),
        reply,
    )


@check("AMP-OAS-04")
def test_declared_error_responses_use_the_envelope(amp: Amp01Context) -> None:
    """Every declared 4xx response of the served document uses the AMP error envelope."""
    differences, reply = _differences(amp, {"no-error-envelope", "unresolvable-ref"})
    amp.expect(
        not differences, "error responses without the envelope:\n" + "\n".join(differences[:30]), reply
    )


@check("AMP-OAS-05")
def test_the_patch_schema_has_no_created_at(amp: Amp01Context) -> None:
    """The PATCH request schema offers no lifecycle.created_at."""
    document, reply = served_document(amp)
    operation = document.get("paths", {}).get("/amp/v1/memories/{memory_id}", {}).get("patch")
    if not isinstance(operation, dict):
        amp.skip("the served document has no PATCH /amp/v1/memories/{memory_id} to inspect")
    schema = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    lifecycle = _resolve(document, _resolve(document, schema).get("properties", {}).get("lifecycle", {}))
    members = set(_resolve(document, lifecycle).get("properties", {}))
    amp.expect(
        "created_at" not in members,
        f"the PATCH lifecycle schema offers created_at (members: {sorted(members)})",
        reply,
    )


def _resolve(document: dict[str, Any], schema: Any) -> dict[str, Any]:
    """Follow local ``$ref``s and take the object branch of ``anyOf``/``oneOf`` (nullable sections)."""
    for _ in range(20):
        if not isinstance(schema, dict):
            return {}
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = document
            for part in ref[2:].split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
            schema = target
            continue
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list):
                objects = [b for b in branches if isinstance(b, dict) and b.get("type") != "null"]
                if objects:
                    schema = objects[0]
                    break
        else:
            return schema
    return {}
