"""Our contract files: amp_conformance/contract/openapi.json and memory-cell.schema.json.

Both are written by hand from the two primary documents (the AMP API Reference "S1" and the
Protocol Specification Explained "S0"); requirements.md section 2 settles where the upstream files
differ. These tests keep the two files valid, consistent with each other and with S1's examples.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_openapi
from openapi_spec_validator.versions.shortcuts import get_spec_version

from amp_conformance.engine.resources import load_fixture

REPO = Path(__file__).resolve().parents[1]


def _contract_file(name: str) -> Path:
    try:
        candidate = resources.files("amp_conformance") / "amp01" / "contract" / name
        if candidate.is_file():
            return Path(str(candidate))
    except (ModuleNotFoundError, TypeError):
        pass
    return REPO / "amp_conformance" / "amp01" / "contract" / name


def _fixture_file(*parts: str) -> Path:
    local = REPO.joinpath("fixtures", *parts)
    if local.is_file():
        return local
    installed = resources.files("amp_conformance") / "fixtures"
    return Path(str(installed)).joinpath(*parts)


OPENAPI_PATH = _contract_file("openapi.json")
CELL_SCHEMA_PATH = _contract_file("memory-cell.schema.json")
EXAMPLE_CELL_PATH = _fixture_file("cells", "api-reference-example.json")

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}

# Every route of S1's "Endpoints" table, as full paths (S1's base URL ends in /amp/v1).
S1_ROUTES = {
    ("GET", "/amp/v1/health"),
    ("GET", "/amp/v1/spec"),
    ("POST", "/amp/v1/memories"),
    ("GET", "/amp/v1/memories/{memory_id}"),
    ("PATCH", "/amp/v1/memories/{memory_id}"),
    ("DELETE", "/amp/v1/memories/{memory_id}"),
    ("GET", "/amp/v1/memories"),
    ("GET", "/amp/v1/memories/query"),
    ("POST", "/amp/v1/memories/search"),
    ("POST", "/amp/v1/lifecycle/run"),
}

# Status codes each operation declares (requirements.md AMP-ERR-03, with S1's 404 on by-id routes).
EXPECTED_STATUSES = {
    ("GET", "/amp/v1/health"): {"200"},
    ("GET", "/amp/v1/spec"): {"200"},
    ("POST", "/amp/v1/memories"): {"201", "401", "413", "422"},
    ("GET", "/amp/v1/memories"): {"200", "401", "422"},
    ("GET", "/amp/v1/memories/query"): {"200", "401", "422"},
    ("GET", "/amp/v1/memories/{memory_id}"): {"200", "401", "403", "404", "422"},
    ("PATCH", "/amp/v1/memories/{memory_id}"): {"200", "401", "403", "404", "409", "413", "422", "429"},
    ("DELETE", "/amp/v1/memories/{memory_id}"): {"204", "401", "403", "404", "409", "422"},
    ("POST", "/amp/v1/memories/search"): {"200", "401", "422"},
    ("POST", "/amp/v1/lifecycle/run"): {"200", "403", "422"},
}

# error.code values each error status must name (in its description and x-amp-error-codes).
EXPECTED_CODES = {
    "401": {"MISSING_AGENT_ID", "UNAUTHENTICATED"},
    "404": {"NOT_FOUND"},
    "409": {"INVALID_TRANSITION"},
    "413": {"CELL_TOO_LARGE"},
    "422": {"VALIDATION_ERROR"},
    "429": {"RATE_LIMITED"},
}
EXPECTED_403_CODES = {
    ("POST", "/amp/v1/lifecycle/run"): {"ADMIN_DISABLED", "ACCESS_DENIED"},
}
DEFAULT_403_CODES = {"FORBIDDEN", "ACCESS_DENIED"}

ENVELOPE_REFS = {
    "#/components/schemas/ErrorResponse",
    "#/components/schemas/ValidationErrorResponse",
    "#/components/schemas/RateLimitedErrorResponse",
}


# --------------------------------------------------------------------------------------------
# helpers


@pytest.fixture(scope="module")
def oas() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(OPENAPI_PATH.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def cell_schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CELL_SCHEMA_PATH.read_text(encoding="utf-8"))
    return data


@pytest.fixture(scope="module")
def example_cell() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(EXAMPLE_CELL_PATH.read_text(encoding="utf-8"))
    return data


def _operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, op)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if method in HTTP_METHODS
    ]


def _deref(doc: dict[str, Any], node: Any) -> Any:
    while isinstance(node, dict) and "$ref" in node and len(node) == 1:
        pointer = node["$ref"]
        assert pointer.startswith("#/"), pointer
        node = doc
        for part in pointer[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def _component_validator(doc: dict[str, Any], name: str) -> Draft202012Validator:
    """A validator for one component schema, resolving refs inside the OpenAPI document."""
    root = {"$ref": f"#/components/schemas/{name}", "components": doc["components"]}
    return Draft202012Validator(root, format_checker=Draft202012Validator.FORMAT_CHECKER)


def _cell_validator(schema: dict[str, Any]) -> Draft202012Validator:
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


ANNOTATIONS = {"description", "title", "$comment", "examples", "default", "$schema", "$id", "$defs"}


def _inline(root: dict[str, Any], node: Any, defs_key: str) -> Any:
    """Inline every local $ref and drop annotation keywords, for structural comparison."""
    if isinstance(node, dict):
        if "$ref" in node:
            pointer = node["$ref"]
            target = root
            for part in pointer[2:].split("/"):
                target = target[part]
            rest = {k: v for k, v in node.items() if k != "$ref"}
            merged = {**_inline(root, target, defs_key), **_inline(root, rest, defs_key)}
            return merged
        return {k: _inline(root, v, defs_key) for k, v in node.items() if k not in ANNOTATIONS}
    if isinstance(node, list):
        return [_inline(root, v, defs_key) for v in node]
    return node


def _walk(node: Any) -> Iterator[Any]:
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _schema_closure(doc: dict[str, Any], schema: Any) -> list[dict[str, Any]]:
    """Every (sub)schema reachable from ``schema``, following $refs (each component once)."""
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if ref is not None:
                if ref not in seen:
                    seen.add(ref)
                    stack.append(_deref(doc, {"$ref": ref}))
                continue
            out.append(node)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return out


# --------------------------------------------------------------------------------------------
# validity of the two documents


def test_openapi_document_is_valid_openapi_3_1(oas: dict[str, Any]) -> None:
    assert oas["openapi"] == "3.1.0"
    assert get_spec_version(oas).major == "3" and get_spec_version(oas).minor == "1"
    validate_openapi(oas)  # raises on any violation of the OpenAPI 3.1 schema


def test_openapi_info_and_servers(oas: dict[str, Any]) -> None:
    assert oas["info"]["version"] == "0.1.0"
    assert "amp-conformance" in oas["info"]["description"]
    assert [server["url"] for server in oas.get("servers", [{"url": "/"}])] == ["/"]
    assert all(path.startswith("/amp/v1/") for path in oas["paths"])


def test_openapi_uses_3_1_nullability_only(oas: dict[str, Any]) -> None:
    assert not any(isinstance(node, dict) and "nullable" in node for node in _walk(oas["components"]))
    assert not any(isinstance(node, dict) and "nullable" in node for node in _walk(oas["paths"]))


def test_cell_schema_is_valid_2020_12(cell_schema: dict[str, Any]) -> None:
    assert cell_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert cell_schema["$id"].endswith("/v0.1.0/memory-cell.schema.json")
    Draft202012Validator.check_schema(cell_schema)
    for name in (
        "Timestamp",
        "NullableTimestamp",
        "MemoryType",
        "OwnerType",
        "LifecycleStatus",
        "SourceType",
        "ExtractionMethod",
    ):
        assert name in cell_schema["$defs"]


def test_cell_schema_is_closed_except_metadata(cell_schema: dict[str, Any]) -> None:
    assert cell_schema["additionalProperties"] is False
    for member, sub in cell_schema["properties"].items():
        if sub.get("type") == "object":
            assert sub["additionalProperties"] is False, member
            assert set(sub["required"]) == set(sub["properties"]), member
    metadata = cell_schema["properties"]["content"]["properties"]["metadata"]
    assert metadata == {**metadata, "type": "object"} and "additionalProperties" not in metadata
    assert set(cell_schema["required"]) == set(cell_schema["properties"])


def test_api_reference_example_cell_validates(
    cell_schema: dict[str, Any], example_cell: dict[str, Any], oas: dict[str, Any]
) -> None:
    assert example_cell["id"] == "mem_01J5A3B7K9M2N4P6Q8R0S1T3V5"
    assert list(_cell_validator(cell_schema).iter_errors(example_cell)) == []
    assert list(_component_validator(oas, "MemoryCell").iter_errors(example_cell)) == []
    for embedded in cell_schema.get("examples", []):
        assert list(_cell_validator(cell_schema).iter_errors(embedded)) == []


# --------------------------------------------------------------------------------------------
# the MemoryCell component and the cell schema say the same thing


def _variants(example: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
    def mutate(fn: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
        cell = copy.deepcopy(example)
        fn(cell)
        return cell

    return [
        ("api-reference example", copy.deepcopy(example), True),
        ("bare ULID id", mutate(lambda c: c.update(id="01J5A3B7K9M2N4P6Q8R0S1T3V5")), True),
        ("mem_ ULID id", mutate(lambda c: c.update(id="mem_7ZZZZZZZZZZZZZZZZZZZZZZZZZ")), True),
        ("extra top-level member", mutate(lambda c: c.update(ttl=3600)), False),
        ("importance 1.5", mutate(lambda c: c["scoring"].update(importance=1.5)), False),
        (
            "importance 0 and confidence 1",
            mutate(lambda c: c["scoring"].update(importance=0, confidence=1)),
            True,
        ),
        ("negative decay_rate", mutate(lambda c: c["scoring"].update(decay_rate=-0.01)), False),
        ("huge decay_rate", mutate(lambda c: c["scoring"].update(decay_rate=20000)), True),
        ("access_count 1.5", mutate(lambda c: c["scoring"].update(access_count=1.5)), False),
        ("lower-case id", mutate(lambda c: c.update(id="mem_01j5a3b7k9m2n4p6q8r0s1t3v5")), False),
        ("id with I (not Crockford)", mutate(lambda c: c.update(id="mem_01I5A3B7K9M2N4P6Q8R0S1T3V5")), False),
        (
            "id starting with 8 (over 128 bits)",
            mutate(lambda c: c.update(id="81J5A3B7K9M2N4P6Q8R0S1T3V5")),
            False,
        ),
        ("id with 25 characters", mutate(lambda c: c.update(id="mem_01J5A3B7K9M2N4P6Q8R0S1T3V")), False),
        ("other prefix", mutate(lambda c: c.update(id="cell_01J5A3B7K9M2N4P6Q8R0S1T3V5")), False),
        ("amp_version 0.2.0", mutate(lambda c: c.update(amp_version="0.2.0")), False),
        ("type literal", mutate(lambda c: c.update(type="literal")), False),
        ("empty text", mutate(lambda c: c["content"].update(text="")), False),
        (
            "rich metadata",
            mutate(lambda c: c["content"].update(metadata={"a": [1, {"b": None}], "c": True})),
            True,
        ),
        ("extra member in content", mutate(lambda c: c["content"].update(colour="x")), False),
        ("owner_type team", mutate(lambda c: c["identity"].update(owner_type="team")), False),
        (
            "null created_by and session_id",
            mutate(lambda c: c["identity"].update(created_by=None, session_id=None)),
            True,
        ),
        ("status expired", mutate(lambda c: c["lifecycle"].update(status="expired")), False),
        ("status deleted", mutate(lambda c: c["lifecycle"].update(status="deleted")), True),
        ("bad created_at", mutate(lambda c: c["lifecycle"].update(created_at="yesterday")), False),
        ("null created_at", mutate(lambda c: c["lifecycle"].update(created_at=None)), False),
        (
            "fractional timestamps",
            mutate(
                lambda c: c["lifecycle"].update(
                    last_accessed_at="2026-06-12T10:05:00.123456Z", expires_at="2030-01-01T00:00:00+00:00"
                )
            ),
            True,
        ),
        ("missing scoring", mutate(lambda c: c.pop("scoring")), False),
        ("missing provenance.source_ref", mutate(lambda c: c["provenance"].pop("source_ref")), False),
        (
            "all provenance null",
            mutate(
                lambda c: c.update(
                    provenance={"source_type": None, "source_ref": None, "extraction_method": None}
                )
            ),
            True,
        ),
        ("source_type telepathy", mutate(lambda c: c["provenance"].update(source_type="telepathy")), False),
        ("readable_by with a number", mutate(lambda c: c["access_policy"].update(readable_by=[1])), False),
        ("public as string", mutate(lambda c: c["access_policy"].update(public="false")), False),
    ]


def test_memory_cell_component_and_cell_schema_agree(
    cell_schema: dict[str, Any], example_cell: dict[str, Any], oas: dict[str, Any]
) -> None:
    by_schema = _cell_validator(cell_schema)
    by_component = _component_validator(oas, "MemoryCell")
    for label, cell, expected in _variants(example_cell):
        assert by_schema.is_valid(cell) is expected, label
        assert by_component.is_valid(cell) is expected, label


def test_memory_cell_component_mirrors_cell_schema_structurally(
    cell_schema: dict[str, Any], oas: dict[str, Any]
) -> None:
    from_schema = _inline(cell_schema, cell_schema, "$defs")
    from_component = _inline(oas, {"$ref": "#/components/schemas/MemoryCell"}, "components")
    assert from_component == from_schema


# --------------------------------------------------------------------------------------------
# routes, operations, statuses


def test_every_api_reference_route_is_present(oas: dict[str, Any]) -> None:
    declared = {(method, path) for method, path, _ in _operations(oas)}
    assert declared == S1_ROUTES


def test_routes_match_the_api_reference_table_when_available() -> None:
    """Cross-check S1_ROUTES with the Endpoints table of the API reference, when the spec is at hand."""
    reference = REPO.parent / "shared" / "spec" / "amp-api-reference.txt"
    if not reference.is_file():
        pytest.skip("the API reference is not beside this checkout")
    rows = re.findall(
        r"^(GET|POST|PATCH|DELETE|PUT)\t`(/[^`]*)`", reference.read_text(encoding="utf-8"), re.M
    )
    assert {(method, "/amp/v1" + path) for method, path in rows} == S1_ROUTES


def test_every_operation_has_a_unique_operation_id(oas: dict[str, Any]) -> None:
    ids = [op.get("operationId") for _, _, op in _operations(oas)]
    assert all(ids) and len(ids) == len(set(ids))


def test_every_operation_declares_exactly_its_statuses(oas: dict[str, Any]) -> None:
    for method, path, op in _operations(oas):
        assert set(op["responses"]) == EXPECTED_STATUSES[(method, path)], (method, path)


def test_every_error_status_uses_the_envelope_and_names_its_codes(oas: dict[str, Any]) -> None:
    for method, path, op in _operations(oas):
        for status, response in op["responses"].items():
            if status.startswith("2"):
                continue
            response = _deref(oas, response)
            schema = response["content"]["application/json"]["schema"]
            assert schema.get("$ref") in ENVELOPE_REFS, (method, path, status)
            if status == "422":
                assert schema["$ref"] == "#/components/schemas/ValidationErrorResponse", (method, path)
            if status == "429":
                assert schema["$ref"] == "#/components/schemas/RateLimitedErrorResponse", (method, path)
            codes = EXPECTED_CODES.get(status) or EXPECTED_403_CODES.get((method, path), DEFAULT_403_CODES)
            assert set(response["x-amp-error-codes"]) == codes, (method, path, status)
            for code in codes:
                assert code in response["description"], (method, path, status, code)


def test_403_and_404_descriptions_cite_the_unknown_id_conflicts(oas: dict[str, Any]) -> None:
    for method, path, op in _operations(oas):
        if "{memory_id}" not in path:
            continue
        forbidden = _deref(oas, op["responses"]["403"])["description"]
        not_found = _deref(oas, op["responses"]["404"])["description"]
        assert "C-01" in forbidden and "C-02" in forbidden and "unknown" in forbidden, (method, path)
        assert "C-01" in not_found and "ACCESS_DENIED" in not_found, (method, path)


def test_success_responses_reference_the_right_schemas(oas: dict[str, Any]) -> None:
    expected = {
        ("GET", "/amp/v1/health"): ("200", "HealthResponse"),
        ("GET", "/amp/v1/spec"): ("200", "SpecResponse"),
        ("POST", "/amp/v1/memories"): ("201", "MemoryCell"),
        ("GET", "/amp/v1/memories"): ("200", "ListResponse"),
        ("GET", "/amp/v1/memories/query"): ("200", "ListResponse"),
        ("GET", "/amp/v1/memories/{memory_id}"): ("200", "MemoryCell"),
        ("PATCH", "/amp/v1/memories/{memory_id}"): ("200", "MemoryCell"),
        ("POST", "/amp/v1/memories/search"): ("200", "SearchResponse"),
        ("POST", "/amp/v1/lifecycle/run"): ("200", "LifecycleRunResponse"),
    }
    for method, path, op in _operations(oas):
        if (method, path) == ("DELETE", "/amp/v1/memories/{memory_id}"):
            assert "content" not in op["responses"]["204"]
            continue
        status, name = expected[(method, path)]
        schema = op["responses"][status]["content"]["application/json"]["schema"]
        assert schema == {"$ref": f"#/components/schemas/{name}"}, (method, path)


def test_error_envelope_shapes(oas: dict[str, Any]) -> None:
    envelope = _component_validator(oas, "ErrorResponse")
    s1_example = {
        "error": {
            "code": "NOT_FOUND",
            "message": "Memory cell mem_01J5A3B7K9M2N4P6Q8R0S1T3V5 not found",
            "details": {},
        }
    }
    assert envelope.is_valid(s1_example)
    assert not envelope.is_valid({"error": {"code": "not_found", "message": "x", "details": {}}})
    assert not envelope.is_valid({"error": {"code": "NOT_FOUND", "message": "x"}})
    assert not envelope.is_valid({"detail": [{"loc": ["body"], "msg": "x", "type": "missing"}]})
    validation = _component_validator(oas, "ValidationErrorResponse")
    good = {
        "error": {
            "code": "VALIDATION_ERROR",
            "message": "Request validation failed",
            "details": {
                "errors": [
                    {
                        "type": "missing",
                        "loc": ["body", "content"],
                        "msg": "Field required",
                        "input": {"type": "semantic"},
                    },
                    {
                        "type": "less_than_equal",
                        "loc": ["query", "limit"],
                        "msg": "too big",
                        "input": "101",
                        "ctx": {},
                    },
                    {
                        "type": "list_item",
                        "loc": ["body", "access_policy", "readable_by", 0],
                        "msg": "x",
                        "input": 1,
                    },
                ]
            },
        }
    }
    assert validation.is_valid(good)
    assert not validation.is_valid({"error": {"code": "VALIDATION_ERROR", "message": "x", "details": {}}})
    assert not validation.is_valid(
        {
            "error": {
                "code": "VALIDATION_ERROR",
                "message": "x",
                "details": {"errors": [{"type": "missing", "loc": "body", "msg": "x", "input": None}]},
            }
        }
    )
    rate = _component_validator(oas, "RateLimitedErrorResponse")
    assert rate.is_valid(
        {"error": {"code": "RATE_LIMITED", "message": "x", "details": {"retry_after_seconds": 42}}}
    )
    assert not rate.is_valid({"error": {"code": "RATE_LIMITED", "message": "x", "details": {}}})


def test_rate_limited_response_declares_retry_after(oas: dict[str, Any]) -> None:
    response = _deref(oas, oas["paths"]["/amp/v1/memories/{memory_id}"]["patch"]["responses"]["429"])
    header = response["headers"]["Retry-After"]
    assert header["required"] is True
    assert header["schema"]["type"] == "integer"


# --------------------------------------------------------------------------------------------
# parameters and headers


def _parameters(oas: dict[str, Any], path: str, method: str) -> dict[tuple[str, str], dict[str, Any]]:
    item = oas["paths"][path]
    params = [_deref(oas, p) for p in item.get("parameters", []) + item[method].get("parameters", [])]
    return {(p["in"], p["name"].lower()): p for p in params}


def test_identity_headers(oas: dict[str, Any]) -> None:
    for method, path, _ in _operations(oas):
        params = _parameters(oas, path, method.lower())
        agent = params.get(("header", "x-amp-agent-id"))
        key = params.get(("header", "x-amp-api-key"))
        admin = params.get(("header", "x-amp-admin-token"))
        if path in ("/amp/v1/health", "/amp/v1/spec"):
            assert agent is None and key is None and admin is None, path
        elif path == "/amp/v1/lifecycle/run":
            assert agent is None and key is None
            assert admin is not None and admin["required"] is False
        else:
            assert agent is not None and key is not None, (method, path)
            assert agent["name"] == "X-AMP-Agent-ID" and key["name"] == "X-AMP-API-Key"
            assert key["required"] is False
            # Optional only on create, where the keyless created_by fallback applies (C-10).
            assert agent["required"] is ((method, path) != ("POST", "/amp/v1/memories")), (method, path)


def test_list_parameters(oas: dict[str, Any]) -> None:
    for path in ("/amp/v1/memories", "/amp/v1/memories/query"):
        params = _parameters(oas, path, "get")
        query = {name: p for (where, name), p in params.items() if where == "query"}
        assert set(query) == {"owner_id", "type", "status", "limit", "offset"}
        assert all(p["required"] is False for p in query.values())
        assert query["type"]["schema"] == {"$ref": "#/components/schemas/MemoryType"}
        assert query["status"]["schema"] == {"$ref": "#/components/schemas/LifecycleStatus"}
        limit = query["limit"]["schema"]
        assert (limit["type"], limit["minimum"], limit["maximum"], limit["default"]) == (
            "integer",
            1,
            100,
            20,
        )
        offset = query["offset"]["schema"]
        assert (offset["type"], offset["minimum"], offset["default"]) == ("integer", 0, 0)


def test_memory_id_path_parameter(oas: dict[str, Any]) -> None:
    params = _parameters(oas, "/amp/v1/memories/{memory_id}", "get")
    memory_id = params[("path", "memory_id")]
    assert memory_id["required"] is True and memory_id["schema"]["type"] == "string"
    # Malformed ids are answered like unknown ids (AMP-READ-11), so no pattern is imposed.
    assert "pattern" not in memory_id["schema"]


def test_create_links_feed_the_by_id_operations(oas: dict[str, Any]) -> None:
    links = oas["paths"]["/amp/v1/memories"]["post"]["responses"]["201"]["links"]
    targets = {link["operationId"]: link for link in links.values()}
    assert set(targets) == {"getMemory", "updateMemory", "deleteMemory"}
    for link in targets.values():
        assert link["parameters"]["memory_id"] == "$response.body#/id"


# --------------------------------------------------------------------------------------------
# request and response bodies


def _request_schema(oas: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    schema: dict[str, Any] = oas["paths"][path][method]["requestBody"]["content"]["application/json"][
        "schema"
    ]
    return schema


def test_patch_body_has_no_created_at(oas: dict[str, Any]) -> None:
    schema = _request_schema(oas, "/amp/v1/memories/{memory_id}", "patch")
    assert schema == {"$ref": "#/components/schemas/MemoryCellUpdate"}
    lifecycle = oas["components"]["schemas"]["MemoryLifecycleUpdate"]
    assert set(lifecycle["properties"]) == {"status", "expires_at"}
    for node in _schema_closure(oas, schema):
        properties = node.get("properties", {})
        for forbidden in (
            "created_at",
            "last_accessed_at",
            "last_updated_at",
            "access_count",
            "id",
            "amp_version",
            "identity",
        ):
            assert forbidden not in properties, forbidden


def test_request_bodies_are_open_and_responses_closed(oas: dict[str, Any]) -> None:
    for path, method in (
        ("/amp/v1/memories", "post"),
        ("/amp/v1/memories/{memory_id}", "patch"),
        ("/amp/v1/memories/search", "post"),
    ):
        for node in _schema_closure(oas, _request_schema(oas, path, method)):
            assert node.get("additionalProperties", True) is not False, (path, method)
    closed = [
        "MemoryCell",
        "MemoryContent",
        "MemoryIdentity",
        "MemoryLifecycle",
        "MemoryScoring",
        "MemoryAccessPolicy",
        "MemoryProvenance",
        "ListResponse",
        "SearchResponse",
        "HealthResponse",
        "SpecResponse",
        "Capabilities",
        "LifecycleRunResponse",
        "LifecycleTransitions",
        "ErrorResponse",
        "ValidationErrorResponse",
        "RateLimitedErrorResponse",
    ]
    for name in closed:
        assert oas["components"]["schemas"][name]["additionalProperties"] is False, name


# S1 example bodies, copied from the API reference.
S1_CREATE_REQUEST = load_fixture("http", "api-reference-create-request.json")
S1_PATCH_REQUESTS = [
    {
        "content": {
            "text": "User strongly prefers Python for backend; also comfortable with Go",
            "metadata": {"domain": "programming", "language": "python", "secondary_language": "go"},
        },
        "scoring": {"importance": 0.9},
    },
    {"lifecycle": {"status": "archived"}},
]
S1_SEARCH_REQUEST = {
    "query": "what programming languages does the user know?",
    "owner_id": "user-123",
    "types": ["semantic", "episodic"],
    "status": ["active"],
    "limit": 5,
    "include_stale": False,
}
S1_SPEC: dict[str, Any] = {
    "amp_version": "0.1.0",
    "capabilities": {
        "mcp_compatible": False,
        "storage_backends": ["chroma"],
        "api_keys_required": False,
        "scoring_patch_limit": {"max_patches": 5, "window_seconds": 3600},
        "embedding": {"provider": "chroma-default", "dimensions": 384},
        "max_cell_size_bytes": 65536,
        "retention_days": 30,
        "lifecycle_scheduler": {
            "enabled": True,
            "interval_seconds": 3600,
            "manual_run_endpoint": "/amp/v1/lifecycle/run",
        },
    },
}


def test_api_reference_request_examples_validate(oas: dict[str, Any]) -> None:
    create = _component_validator(oas, "MemoryCellCreate")
    assert list(create.iter_errors(S1_CREATE_REQUEST)) == []
    minimal = {
        "type": "episodic",
        "content": {"text": "x"},
        "identity": {"owner_id": "o", "owner_type": "agent"},
    }
    assert create.is_valid(minimal)  # created_by is optional (C-10)
    assert create.is_valid({**minimal, "ttl": 3600, "scoring": None})  # unknown members ignored, null section
    for missing in ("type", "content", "identity"):
        assert not create.is_valid({k: v for k, v in minimal.items() if k != missing}), missing
    assert not create.is_valid({**minimal, "content": {"text": ""}})
    assert not create.is_valid({**minimal, "scoring": {"importance": 1.5}})
    assert not create.is_valid({**minimal, "scoring": {"decay_rate": -0.01}})
    assert not create.is_valid({**minimal, "provenance": {"source_type": "telepathy"}})
    assert not create.is_valid({**minimal, "identity": {"owner_id": "o", "owner_type": "team"}})

    update = _component_validator(oas, "MemoryCellUpdate")
    for body in S1_PATCH_REQUESTS:
        assert list(update.iter_errors(body)) == []
    assert update.is_valid({})
    assert update.is_valid({"scoring": None})
    assert update.is_valid({"lifecycle": {"expires_at": None}})
    assert update.is_valid({"lifecycle": {"expires_at": "2030-01-01T00:00:00Z"}})
    assert not update.is_valid({"lifecycle": {"expires_at": "tomorrow"}})
    assert not update.is_valid({"lifecycle": {"status": "expired"}})
    assert not update.is_valid({"scoring": {"importance": 2}})
    assert not update.is_valid({"access_policy": {"readable_by": [1]}})

    search = _component_validator(oas, "SearchRequest")
    assert list(search.iter_errors(S1_SEARCH_REQUEST)) == []
    assert not search.is_valid({"owner_id": "user-123"})
    assert not search.is_valid({"query": "q"})  # owner_id required, as in S1 (C-11)
    assert not search.is_valid({**S1_SEARCH_REQUEST, "limit": 101})
    assert not search.is_valid({**S1_SEARCH_REQUEST, "limit": 0})
    assert not search.is_valid({**S1_SEARCH_REQUEST, "offset": -1})
    assert not search.is_valid({**S1_SEARCH_REQUEST, "types": ["literal"]})


def test_api_reference_response_examples_validate(oas: dict[str, Any], example_cell: dict[str, Any]) -> None:
    assert _component_validator(oas, "HealthResponse").is_valid({"status": "ok", "amp_version": "0.1.0"})

    spec = _component_validator(oas, "SpecResponse")
    assert not spec.is_valid(S1_SPEC)  # S1's example omits max_page_size, which our contract requires (C-13)
    with_page_size = copy.deepcopy(S1_SPEC)
    with_page_size["capabilities"]["max_page_size"] = 100
    assert list(spec.iter_errors(with_page_size)) == []
    switched_off = copy.deepcopy(with_page_size)
    switched_off["capabilities"].update(scoring_patch_limit=None, embedding=None)
    assert spec.is_valid(switched_off)

    search = {
        "results": [example_cell],
        "returned": 1,
        "has_more": True,
        "offset": 0,
        "limit": 5,
        "query": "what programming languages does the user know?",
    }
    assert list(_component_validator(oas, "SearchResponse").iter_errors(search)) == []
    listing = {k: v for k, v in search.items() if k != "query"}
    assert list(_component_validator(oas, "ListResponse").iter_errors(listing)) == []
    assert not _component_validator(oas, "ListResponse").is_valid({**listing, "total": 1})

    run = _component_validator(oas, "LifecycleRunResponse")
    transitions = {"active_to_stale": 3, "stale_to_archived": 1, "stale_to_active": 0}
    assert run.is_valid({"transitions": transitions})
    assert run.is_valid({"transitions": transitions, "purged": 0})  # C-14
    assert not run.is_valid({"transitions": {}})
    assert not run.is_valid({"transitions": {**transitions, "stale_to_active": -1}})


# --------------------------------------------------------------------------------------------
# schemathesis can use the document


def test_schemathesis_loads_every_operation(oas: dict[str, Any]) -> None:
    import schemathesis

    schema = schemathesis.openapi.from_path(str(OPENAPI_PATH))
    loaded = set()
    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]  # raises on an operation that fails to load
        loaded.add((operation.method.upper(), operation.path))
    assert loaded == S1_ROUTES
    # The explicit links on the create response are picked up for stateful testing.
    workflow = schema.as_state_machine()
    rules = [name for name in dir(workflow) if name.startswith("POST_amp_v1_memories___201_")]
    assert len(rules) == 3, rules
