"""The v1.1 fuzz area: it passes on the reference server, and catches each input-validation fault with a
shrunk example, on every channel where the fault applies (the fault matrix only asks for one check)."""

from __future__ import annotations

import json

import pytest

from amp_conformance.amp11.fuzz import input_schema, invalid_variants, strategy
from tests.amp11.harness import Collector, mcp_target, rest_target, run_checks

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")]

#: fault -> (channels, the fuzz check that catches it, text of the shrunk example in its message)
CAUGHT = {
    "minimum-not-enforced": (("mcp", "rest"), "invalid_arguments", '"top_k": 0'),
    "enum-backend-error": (("mcp", "rest"), "invalid_arguments", '"depth": "amp11-fuzz-not-listed"'),
    "type-coerced": (("mcp", "rest"), "invalid_arguments", '"top_k": "1"'),
    "recall-crash-non-ascii": (("mcp", "rest"), "valid_arguments", '"query": "\\u0080"'),
    "invalid-input-crashes-mcp": (("mcp",), "invalid_arguments", "-32603"),
}


def _fuzz(fault: str, channel: str) -> Collector:
    if channel == "mcp":
        return run_checks(mcp_target(fault), "fuzz")
    with rest_target(fault) as target:
        return run_checks(target, "fuzz")


@pytest.mark.parametrize(
    ("fault", "channel"),
    [(fault, channel) for fault, (channels, _, _) in CAUGHT.items() for channel in channels],
)
def test_fuzz_catches_the_fault_with_a_shrunk_example(fault: str, channel: str) -> None:
    _, which, shrunk = CAUGHT[fault]
    results = _fuzz(fault, channel).results.values()
    failed = {o.name: o.message for o in results if o.outcome == "failed"}
    name = f"test_fuzzed_{which}_over_{channel}"
    assert name in failed, {o.name: (o.outcome, o.message[:300]) for o in results}
    assert shrunk in failed[name], failed[name][:1500]
    assert not [o for o in results if o.outcome == "error"]


@pytest.mark.parametrize("channel", ["mcp", "rest"])
def test_fuzz_passes_on_the_reference_server(channel: str) -> None:
    results = _fuzz("", channel).results.values()
    shown = {o.name: (o.outcome, o.message[:300]) for o in results}
    assert {o.outcome for o in results} == {"passed", "skipped"}, shown
    # MCP: the two verb-fuzz checks; REST: those two and the two OpenAPI (schemathesis) checks
    assert sum(o.outcome == "passed" for o in results) == (2 if channel == "mcp" else 4), shown


def test_invalid_variants_break_the_schema_one_member_at_a_time() -> None:
    schema = input_schema("amp.recall", None)
    base = {"scope": {"agent_id": "a"}, "query": "x"}
    variants = {how: arguments for _, how, arguments in invalid_variants(schema, base)}
    assert variants["top_k below its minimum"]["top_k"] == 0
    assert variants["top_k of the wrong type"]["top_k"] == "1"
    assert "query" not in variants["required query missing"]
    assert variants["an unknown member"]["amp11_fuzz_unknown_member"] == 1


@pytest.mark.parametrize("verb", ["amp.encode", "amp.recall", "amp.export", "amp.consolidate"])
def test_generated_arguments_are_schema_valid(verb: str) -> None:
    from hypothesis import given, settings
    from jsonschema import Draft202012Validator

    from amp_conformance.amp11.fuzz import _unscoped

    schema = input_schema(verb, None)
    validator = Draft202012Validator(schema)
    seen: list[dict[str, object]] = []

    @settings(max_examples=30, database=None)
    @given(strategy(_unscoped(schema), schema["$defs"]))
    def collect(value: dict[str, object]) -> None:
        seen.append({"scope": {"agent_id": "a"}, **value})

    collect()
    valid = [value for value in seen if validator.is_valid(value)]
    # the generator mostly draws valid values (the fuzzer filters out the rest)
    assert len(valid) >= 0.8 * len(seen), (verb, [v for v in seen if not validator.is_valid(v)][:3])


def test_a_finding_without_an_exchange_has_no_transcript() -> None:
    from amp_conformance.amp11.fuzz import Finding

    finding = Finding("invalid", "mcp", "amp.recall", "AMP11-REC-09", "accepted", {"top_k": 0})
    assert finding.transcript() == []
    assert json.loads(json.dumps(finding.arguments)) == {"top_k": 0}


# -- the REST channel from the OpenAPI file (schemathesis) -------------------------------------------------


def test_openapi_fuzzing_catches_a_crash_on_valid_input_with_a_minimised_request() -> None:
    with rest_target("recall-crash-non-ascii") as target:
        results = run_checks(target, "openapi").results
    outcome = results["test_rest_openapi_fuzzing_provokes_no_server_error"]
    assert outcome.outcome == "failed", outcome.message
    assert "AMP11-REST-11 POST /v1/memories/recall" in outcome.message
    assert "curl -X POST" in outcome.message


def test_openapi_fuzzing_passes_on_the_reference_server() -> None:
    with rest_target() as target:
        results = run_checks(target, "openapi").results
    shown = {name: (o.outcome, o.message[:300]) for name, o in results.items()}
    assert {o.outcome for o in results.values()} == {"passed"}, shown


def test_the_v11_profile_reads_the_v11_error_body_and_documented_5xx() -> None:
    from types import SimpleNamespace

    from amp_conformance.amp11.rest_fuzz import PROFILE, error_code, ndjson_problems

    assert PROFILE.api_prefix == "/v1"
    assert error_code({"amp_error_code": "not_found", "message": "x"}) == "not_found"
    assert error_code({"error": {"code": "invalid_request", "message": "x"}}) == "invalid_request"
    assert PROFILE.envelope_problems is not None
    assert PROFILE.envelope_problems(400, {"detail": "Not Found"}) != []
    assert PROFILE.envelope_problems(400, {"code": "invalid_request", "message": "m"}) == []
    backend = SimpleNamespace(
        status_code=500, json=lambda: {"amp_error_code": "backend_error", "message": "m"}
    )
    bare = SimpleNamespace(status_code=500, json=lambda: (_ for _ in ()).throw(ValueError("not JSON")))
    assert PROFILE.allowed_server_error(backend)
    assert not PROFILE.allowed_server_error(bare)
    assert PROFILE.requirement_for("not_a_server_error", 500) == "AMP11-REST-11"
    assert PROFILE.requirement_for("response_schema_conformance", 200) == "AMP11-REST-10"
    assert PROFILE.requirement_for("content_type_conformance", 400) == "AMP11-ERR-06"
    assert ndjson_problems('{"id": 1}\n\n{"id": 2}\n') == []
    assert ndjson_problems('{"id": 1}\nnot json\n') == ['line 2 is not JSON: "not json"']


def test_the_v11_profile_pins_every_scope_to_the_runs_own() -> None:
    from types import SimpleNamespace

    from amp_conformance.amp11.rest_fuzz import PROFILE

    assert PROFILE.isolate is not None

    def case(path: str, body: object = None, query: object = None) -> SimpleNamespace:
        return SimpleNamespace(operation=SimpleNamespace(path=path), method="POST", body=body, query=query)

    recall = case("/v1/memories/recall", body={"scope": {"user_id": "someone"}, "query": "q"})
    bare = case("/v1/memories", body={"content": "c"})
    stats = case("/v1/memories/stats", query={"group_id": "g"})
    forget = case("/v1/memories/{id}", query=None)
    pin = case("/v1/memories/{id}/pin", body={})
    for item in (recall, bare, stats, forget, pin):
        PROFILE.isolate(item, "own")
    assert recall.body == {"scope": {"agent_id": "own"}, "query": "q"}
    assert bare.body == {"content": "c", "scope": {"agent_id": "own"}}
    assert stats.query == {"agent_id": "own"}
    assert forget.query == {"agent_id": "own"}
    assert pin.body == {"agent_id": "own"}
