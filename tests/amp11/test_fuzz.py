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
    assert sum(o.outcome == "passed" for o in results) == 2, shown


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
