"""Issue 10 §3: ``validate`` and ``validate-contract`` follow the catalogue's stance.

A cell valid under the upstream cell schema is accepted (warnings allowed); members only the
catalogue's SHOULD asks for (AMP-CELL-03) are warnings; the upstream contract's 403 for unknown ids
is a convention (C-01), reported, not a difference; every problem names its requirement and level,
and only MUST problems set the exit code (unless --strict).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft7Validator, Draft202012Validator

from amp_conformance.amp01.requirements import catalogue
from amp_conformance.engine.resources import load_contract
from amp_conformance.validator import validate_contract_main, validate_main
from amp_conformance.validator.citations import UPSTREAM_REQUIRED, cell_requirement


def upstream_schema(spec_dir: Path) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(
        (spec_dir / "upstream" / "memory-cell.schema.json").read_text("utf-8")
    )
    return schema


def minimal_upstream_cell(spec_dir: Path) -> dict[str, Any]:
    """The upstream example cut down to what the upstream schema requires."""
    cell: dict[str, Any] = copy.deepcopy(upstream_schema(spec_dir)["examples"][0])
    for member in ("scoring", "access_policy", "provenance"):
        del cell[member]
    del cell["content"]["metadata"]
    del cell["identity"]["created_by"], cell["identity"]["session_id"]
    cell["lifecycle"] = {"created_at": cell["lifecycle"]["created_at"]}
    return cell


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = validate_main(["--format", "json", "-q", *argv])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert (
        list(Draft202012Validator(load_contract("validation-report.schema.json")).iter_errors(document)) == []
    )
    return code, document


def test_the_upstream_example_cell_is_valid(
    spec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cell.json"
    path.write_text(json.dumps(upstream_schema(spec_dir)["examples"][0]))
    code, document = run_json([str(path)], capsys)
    assert code == 0 and document["problems"] == []


def test_a_minimal_upstream_valid_cell_is_valid_with_should_warnings(
    spec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = minimal_upstream_cell(spec_dir)
    assert list(Draft7Validator(upstream_schema(spec_dir)).iter_errors(cell)) == []
    path = tmp_path / "cell.json"
    path.write_text(json.dumps(cell))
    code, document = run_json([str(path)], capsys)
    assert code == 0 and document["valid"] is True
    assert document["summary"]["invalid_cells"] == 0 and document["summary"]["cells_with_warnings"] == 1
    problems = document["problems"]
    assert problems and {(p["requirement"], p["level"]) for p in problems} == {("AMP-CELL-03", "SHOULD")}
    assert {p["path"] for p in problems} >= {
        "$.scoring",
        "$.access_policy",
        "$.provenance",
        "$.content.metadata",
    }
    assert validate_main(["--strict", "-q", str(path)]) == 1
    capsys.readouterr()
    assert validate_main([str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"{path}:1: AMP-CELL-03: $.")
    assert all(line.endswith(", missing-member]") and "[SHOULD, " in line for line in out.splitlines())


@pytest.mark.parametrize("path", sorted(UPSTREAM_REQUIRED))
def test_a_member_the_upstream_schema_requires_is_a_must(
    path: str, spec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = upstream_schema(spec_dir)["examples"][0]
    parts = path[2:].split(".")
    holder = cell
    for part in parts[:-1]:
        holder = holder[part]
    del holder[parts[-1]]
    assert list(Draft7Validator(upstream_schema(spec_dir)).iter_errors(cell)), "upstream refuses it too"
    file = tmp_path / "cell.json"
    file.write_text(json.dumps(cell))
    code, document = run_json([str(file)], capsys)
    assert code == 1
    [missing] = [p for p in document["problems"] if p["path"] == path]
    assert missing["level"] == "MUST" and missing["requirement"] == UPSTREAM_REQUIRED[path]


def test_every_problem_carries_the_catalogue_level_of_its_requirement(
    spec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = upstream_schema(spec_dir)["examples"][0]
    cell["scoring"]["importance"] = 2
    cell["type"] = "dream"
    cell["lifecycle"]["last_accessed_at"] = "2026-01-01T00:00:00Z"  # before created_at: AMP-CELL-20
    cell["extra"] = 1
    path = tmp_path / "cell.json"
    path.write_text(json.dumps(cell))
    code, document = run_json([str(path)], capsys)
    assert code == 1
    cited = {(p["path"], p["requirement"], p["level"]) for p in document["problems"]}
    assert cited == {
        ("$.scoring.importance", "AMP-CELL-12", "MUST"),
        ("$.type", "AMP-CELL-08", "MUST"),
        ("$.lifecycle.last_accessed_at", "AMP-CELL-20", "SHOULD"),
        ("$.extra", "AMP-CELL-01", "MUST"),
    }
    known = catalogue().requirements
    assert all(known[p["requirement"]].level == p["level"] for p in document["problems"])


def test_a_should_problem_alone_does_not_fail_a_cell(
    spec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = upstream_schema(spec_dir)["examples"][0]
    cell["lifecycle"]["last_updated_at"] = "2026-06-01T00:00:00Z"
    path = tmp_path / "cell.json"
    path.write_text(json.dumps(cell))
    code, document = run_json([str(path)], capsys)
    assert code == 0 and [p["requirement"] for p in document["problems"]] == ["AMP-CELL-20"]


@pytest.mark.parametrize(
    ("path", "code", "requirement"),
    [
        ("$.scoring", "missing-member", "AMP-CELL-03"),
        ("$.content.text", "missing-member", "AMP-CELL-17"),
        ("$.id", "id-not-ulid", "AMP-CELL-05"),
        ("$.lifecycle.created_at", "timestamp-not-utc", "AMP-CELL-18"),
        ("$.scoring", "decay-score", "AMP-LC-01"),
        ("$.identity.owner_type", "owner-type-value", "AMP-CELL-09"),
    ],
)
def test_cell_requirements(path: str, code: str, requirement: str) -> None:
    assert cell_requirement(path, code) == requirement


def test_the_upstream_contract_passes_with_its_convention_reported(
    spec_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    upstream = str(spec_dir / "upstream" / "openapi.json")
    assert validate_contract_main([upstream]) == 0
    out, err = capsys.readouterr()
    [line] = out.splitlines()
    assert line.startswith(f"{upstream}: C-01: convention: unknown ids are answered 403")
    assert "GET /amp/v1/memories/{memory_id}" in line and "1 convention(s)" in err
    assert validate_contract_main([upstream, "--format", "json", "-q"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert (
        list(Draft202012Validator(load_contract("validation-report.schema.json")).iter_errors(document)) == []
    )
    assert document["differences"] == [] and document["valid"] is True
    [convention] = document["conventions"]
    assert convention["id"] == "C-01" and len(convention["operations"]) == 3
    assert set(convention["requirements"]) <= set(catalogue().requirements)


def test_contract_differences_are_should_and_count_only_with_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = copy.deepcopy(load_contract("openapi.json", "amp01"))
    route = next(iter(document["paths"]))
    del document["paths"][route]
    path = tmp_path / "openapi.json"
    path.write_text(json.dumps(document))
    assert validate_contract_main([str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(": AMP-OAS-02: " in line and "[SHOULD, missing-" in line for line in lines)
    assert validate_contract_main([str(path), "--strict", "-q"]) == 1
