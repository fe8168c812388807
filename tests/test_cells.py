"""The shared cell checker: Problem details, id and timestamp parsing, decay derivation."""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from amp_conformance.amp01 import cells
from amp_conformance.amp01.cells import (
    CellIdError,
    Problem,
    TimestampError,
    cell_decay_score,
    cell_validator,
    json_path,
    parse_cell_id,
    parse_utc_timestamp,
    validate_cell,
)
from amp_conformance.engine.resources import fixtures_path, load_fixture

EXAMPLE_ID = "01J5A3B7K9M2N4P6Q8R0S1T3V5"


@pytest.fixture
def cell() -> dict[str, Any]:
    return copy.deepcopy(load_fixture("cells", "valid", "api-reference-example.json"))


@pytest.fixture(params=["accelerated", "jsonschema-only"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with and without the jsonschema-rs fast path: the answers must not differ."""
    if request.param == "jsonschema-only":
        monkeypatch.setattr(cells, "_accelerator", lambda: None)
    return str(request.param)


def all_fixture_cells() -> list[Any]:
    root = fixtures_path("cells")
    found = [json.loads(p.read_text(encoding="utf-8")) for p in sorted((root / "valid").glob("*.json"))]
    found += [
        json.loads(p.read_text(encoding="utf-8"))["cell"] for p in sorted((root / "invalid").glob("*.json"))
    ]
    return found


def test_problem_is_a_frozen_value() -> None:
    problem = Problem("$.scoring.importance", "importance: too big", "score-range")
    assert str(problem) == "$.scoring.importance: importance: too big"
    with pytest.raises(dataclasses.FrozenInstanceError):
        problem.code = "other"  # type: ignore[misc]
    assert problem == Problem("$.scoring.importance", "importance: too big", "score-range")


def test_json_path() -> None:
    assert json_path([]) == "$"
    assert json_path(["scoring", "importance"]) == "$.scoring.importance"
    assert json_path(["access_policy", "readable_by", 0]) == "$.access_policy.readable_by[0]"
    assert json_path(["content", "metadata", "key with spaces"]) == "$.content.metadata['key with spaces']"


@pytest.mark.parametrize(("value", "form"), [(f"mem_{EXAMPLE_ID}", "prefixed"), (EXAMPLE_ID, "bare")])
def test_parse_cell_id_accepts_both_forms(value: str, form: str) -> None:
    parsed, seen = parse_cell_id(value)
    assert seen == form
    assert parsed == ULID.from_str(EXAMPLE_ID)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (f"mem_{EXAMPLE_ID.lower()}", ("prefixed", "lower-case")),
        (EXAMPLE_ID.lower(), ("bare", "lower-case")),
        ("mem_" + EXAMPLE_ID[:-1] + "U", ("prefixed", "not a ULID")),
        ("8" + EXAMPLE_ID[1:], ("bare", "0-7")),
        (EXAMPLE_ID[:-1], ("bare", "26 characters", "25")),
        (f"MEM_{EXAMPLE_ID}", ("unknown prefix", "MEM_")),
        (f"mem_{EXAMPLE_ID}\n", ("prefixed", "27")),
        ("", ("bare", "26 characters")),
    ],
)
def test_parse_cell_id_explains_refusals(value: str, words: tuple[str, ...]) -> None:
    with pytest.raises(CellIdError) as caught:
        parse_cell_id(value)
    for word in words:
        assert word in str(caught.value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-06-12T10:00:00Z", datetime(2026, 6, 12, 10, tzinfo=UTC)),
        ("2026-06-12T10:00:00+00:00", datetime(2026, 6, 12, 10, tzinfo=UTC)),
        ("2026-06-12t10:00:00.5z", datetime(2026, 6, 12, 10, 0, 0, 500000, tzinfo=UTC)),
        ("2026-06-12T10:00:00.123456789Z", datetime(2026, 6, 12, 10, 0, 0, 123456, tzinfo=UTC)),
    ],
)
def test_parse_utc_timestamp(value: str, expected: datetime) -> None:
    assert parse_utc_timestamp(value) == expected


@pytest.mark.parametrize(
    ("value", "code"),
    [
        ("2026-06-12T12:00:00+02:00", "timestamp-not-utc"),
        ("2026-06-12T10:00:00-00:00", "timestamp-not-utc"),
        ("2026-06-12T10:00:00", "timestamp-format"),
        ("2026-06-12", "timestamp-format"),
        ("2026-06-12 10:00:00Z", "timestamp-format"),
        ("2026-06-30T23:59:60Z", "timestamp-format"),
        ("soon", "timestamp-format"),
    ],
)
def test_parse_utc_timestamp_refusals(value: str, code: str) -> None:
    with pytest.raises(TimestampError) as caught:
        parse_utc_timestamp(value)
    assert caught.value.code == code
    assert value in str(caught.value)


def test_valid_cell_has_no_problems(cell: dict[str, Any], engine: str) -> None:
    assert validate_cell(cell) == []


@pytest.mark.parametrize("value", [None, [], "cell", 3])
def test_non_object_is_one_root_problem(value: object, engine: str) -> None:
    problems = validate_cell(value)
    assert [(p.path, p.code) for p in problems] == [("$", "wrong-type")]


def test_every_problem_is_reported(cell: dict[str, Any], engine: str) -> None:
    cell["id"] = "mem_oops"
    cell["scoring"]["importance"] = 2
    cell["lifecycle"]["expires_at"] = "2027-01-01T00:00:00+01:00"
    del cell["provenance"]
    problems = {(p.path, p.code) for p in validate_cell(cell)}
    assert problems == {
        ("$.id", "id-not-ulid"),
        ("$.scoring.importance", "score-range"),
        ("$.lifecycle.expires_at", "timestamp-not-utc"),
        ("$.provenance", "missing-member"),
    }


def test_several_unknown_members_each_get_a_problem(cell: dict[str, Any], engine: str) -> None:
    cell["x"] = 1
    cell["y"] = 2
    assert [(p.path, p.code) for p in validate_cell(cell)] == [
        ("$.x", "unknown-member"),
        ("$.y", "unknown-member"),
    ]


def test_nan_escapes_jsonschema_bounds_but_not_the_checker(cell: dict[str, Any], engine: str) -> None:
    cell["scoring"]["importance"] = float("nan")
    assert [(p.path, p.code) for p in validate_cell(cell)] == [("$.scoring.importance", "score-range")]


def test_leap_second_is_caught_whichever_engine(cell: dict[str, Any], engine: str) -> None:
    cell["lifecycle"]["created_at"] = "2026-06-30T23:59:60Z"
    assert [(p.path, p.code) for p in validate_cell(cell)] == [("$.lifecycle.created_at", "timestamp-format")]


def test_id_with_trailing_newline_is_caught_whichever_engine(cell: dict[str, Any], engine: str) -> None:
    cell["id"] += "\n"
    assert [(p.path, p.code) for p in validate_cell(cell)] == [("$.id", "id-not-ulid")]


def test_nullable_field_reports_the_informative_branch(cell: dict[str, Any], engine: str) -> None:
    cell["provenance"]["source_type"] = "telepathy"
    [problem] = validate_cell(cell)
    assert "telepathy" in problem.message and "source_type" in problem.message
    assert "not valid under any" not in problem.message


@pytest.mark.parametrize("position", range(len(all_fixture_cells())))
def test_engines_agree_on_every_vector(position: int) -> None:
    """The fast path may only skip jsonschema when jsonschema would find nothing either."""
    fast = cells._accelerator()
    if fast is None:
        pytest.skip("jsonschema-rs is not installed (the fast path is off)")
    value = all_fixture_cells()[position]
    assert fast(value) == (not list(cell_validator().iter_errors(value)))


def test_cell_decay_score_counts_from_creation_then_from_last_read(cell: dict[str, Any]) -> None:
    created = datetime(2026, 6, 12, 10, tzinfo=UTC)
    assert round(cell_decay_score(cell, created), 6) == 0.76  # example C
    assert round(cell_decay_score(cell, datetime(2026, 9, 13, 10, tzinfo=UTC)), 6) == 0.299861  # D, 93 d
    cell["lifecycle"]["last_accessed_at"] = "2026-09-12T10:00:00Z"
    assert round(cell_decay_score(cell, datetime(2026, 9, 13, 10, tzinfo=UTC)), 6) == round(
        0.76 * 0.99004983, 6
    )


def test_cell_decay_score_treats_a_lagging_clock_as_now(cell: dict[str, Any]) -> None:
    assert cell_decay_score(cell, datetime(2020, 1, 1, tzinfo=UTC)) == pytest.approx(0.76)


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda c: c.pop("scoring"), "scoring"),
        (lambda c: c["scoring"].pop("confidence"), "scoring.confidence"),
        (lambda c: c["lifecycle"].update(created_at="later"), "lifecycle.created_at"),
        (lambda c: c["scoring"].update(importance=7), "importance"),
    ],
)
def test_cell_decay_score_names_what_prevents_it(cell: dict[str, Any], mutate: Any, words: str) -> None:
    mutate(cell)
    with pytest.raises(ValueError, match=words):
        cell_decay_score(cell, datetime(2026, 7, 1, tzinfo=UTC))


def test_validate_cell_derives_the_decay_score_at_a_given_moment(cell: dict[str, Any]) -> None:
    assert validate_cell(cell, now=datetime(2030, 1, 1, tzinfo=UTC)) == []


def test_importing_cells_compiles_nothing() -> None:
    """The online suite imports this module eagerly; the schema must load on first use only."""
    code = (
        "import amp_conformance.amp01.cells as c, amp_conformance.engine.resources as r;"
        "assert r.load_contract.cache_info().currsize == 0;"
        "assert c.cell_validator.cache_info().currsize == 0; print('ok')"
    )
    root = Path(__file__).resolve().parents[1]
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=root, check=False
    )
    assert result.stdout.strip() == "ok", result.stderr
