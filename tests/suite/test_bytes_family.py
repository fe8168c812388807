"""The byte-level family (``--only bytes``) passes on the reference server, keyless and in keys mode, and
each ``bytes-*`` fault fails exactly the check of its shape, under the fault's requirement."""

from __future__ import annotations

from pathlib import Path

import pytest

from amp_conformance.engine.run import CheckResult
from reference_server import FAULTS
from tests.suite.inprocess import run_against_reference, write_keys_file

#: Fault -> the check (function name) of the shape it breaks.
SHAPES = {
    "bytes-non-utf8-500": "test_bytes_that_are_not_utf8",
    "bytes-bom-500": "test_byte_order_mark",
    "bytes-truncated-html": "test_truncated_json",
    "bytes-duplicate-keys-500": "test_duplicate_member_names",
    "bytes-huge-number-500": "test_numbers_beyond_any_float",
    "bytes-deep-nesting-500": "test_deep_nesting",
    "bytes-content-type-framework": "test_wrong_content_type",
    "bytes-missing-content-type-500": "test_missing_content_type",
    "bytes-empty-body-500": "test_empty_body",
    "bytes-lone-surrogate-500": "test_lone_surrogate_in_a_string",
    "bytes-get-body-500": "test_body_on_get",
}

#: A second shape a fault breaks: the raw bytes of a lone surrogate are bytes that are not UTF-8.
ALSO = {"bytes-non-utf8-500": "test_lone_surrogate_bytes_in_a_string"}


def _function(result: CheckResult) -> str:
    return result.name.split("[", 1)[0]


def test_every_byte_fault_has_a_shape() -> None:
    assert set(SHAPES) == {name for name in FAULTS if name.startswith("bytes-")}


@pytest.mark.parametrize("keys", [False, True], ids=["keyless", "keys"])
def test_the_reference_server_passes_every_byte_check(keys: bool, tmp_path: Path) -> None:
    env = {"AMP_API_KEYS_FILE": str(write_keys_file(tmp_path))} if keys else {}
    outcome = run_against_reference(env, areas="bytes", admin=False, keys=keys)
    assert outcome.run is not None
    results = list(outcome.run.results.values())
    assert {_function(r) for r in results} == set(SHAPES.values()) | set(ALSO.values())
    assert all(r.area == "bytes" for r in results)
    assert [r.name for r in results if r.outcome != "pass"] == []
    assert outcome.exit_code == 0


@pytest.mark.parametrize("fault", sorted(SHAPES))
def test_each_byte_fault_fails_the_check_of_its_shape(fault: str) -> None:
    outcome = run_against_reference({"AMP_REFERENCE_FAULTS": fault}, areas="bytes", admin=False)
    assert outcome.run is not None
    failing = [r for r in outcome.run.results.values() if r.outcome == "fail" and r.level == "MUST"]
    assert outcome.exit_code == 1
    assert failing, f"{fault}: no MUST check failed"
    shapes = {SHAPES[fault], *([ALSO[fault]] if fault in ALSO else [])}
    assert {_function(r) for r in failing} == shapes
    requirement = FAULTS[fault].requirement
    for result in failing:
        assert requirement in result.requirements
        found = getattr(result, "finding_requirements", ())
        assert not found or requirement in found, (result.name, found, result.message)
    others = [r for r in outcome.run.results.values() if _function(r) not in shapes]
    assert [r.name for r in others if r.outcome != "pass"] == []
