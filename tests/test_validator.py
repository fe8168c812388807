"""The offline validator: vectors, input formats and line numbers, exit codes, JSON output, contracts."""

from __future__ import annotations

import copy
import functools
import http.server
import io
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from amp_conformance.engine.resources import contract_path, fixtures_path, load_contract, load_fixture
from amp_conformance.validator import (
    compare_contract,
    validate_cell,
    validate_contract_main,
    validate_documents,
    validate_main,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
SPEC_DIR = REPO_ROOT.parent / "shared" / "spec"
UPSTREAM_OPENAPI = SPEC_DIR / "upstream" / "openapi.json"
VALID = sorted(fixtures_path("cells", "valid").glob("*.json"))
INVALID = sorted(fixtures_path("cells", "invalid").glob("*.json"))
LINE = re.compile(
    r"^(?P<source>.+):(?P<line>\d+): (?P<requirement>AMP-[A-Z]+-\d{2}): (?P<path>\$\S*): (?P<message>.+) "
    r"\[(?P<level>MUST|SHOULD|MAY), (?P<code>[a-z0-9-]+)\]$"
)


def example() -> dict[str, Any]:
    return copy.deepcopy(load_fixture("cells", "valid", "api-reference-example.json"))


def write_jsonl(path: Path, cells: list[Any]) -> Path:
    path.write_text("".join(json.dumps(c) + "\n" for c in cells), encoding="utf-8")
    return path


def report_validator() -> Draft202012Validator:
    schema = load_contract("validation-report.schema.json")
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


# --- vectors ---------------------------------------------------------------------------------


def test_api_reference_example_is_the_documented_201_body() -> None:
    reference = SPEC_DIR / "amp-api-reference.txt"
    if not reference.is_file():
        pytest.skip(f"{reference} not found (the shared spec sits beside the clone)")
    text = reference.read_text(encoding="utf-8")
    start = text.index("{", text.index("Response 201 Created"))
    documented, _ = json.JSONDecoder().raw_decode(text, start)
    assert example() == documented


def test_top_level_copy_of_the_example_is_identical() -> None:
    """fixtures/cells/api-reference-example.json (used by test_contract.py) is the same cell."""
    top = fixtures_path("cells", "api-reference-example.json")
    if top.is_file():
        assert json.loads(top.read_text(encoding="utf-8")) == example()


def test_api_reference_example_validates() -> None:
    assert validate_cell(example()) == []
    assert load_contract("memory-cell.schema.json", "amp01")["examples"][0] == example()


def test_there_are_enough_vectors() -> None:
    assert len(VALID) >= 5
    assert len(INVALID) >= 20


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.stem)
def test_valid_vector_passes(path: Path) -> None:
    assert validate_cell(json.loads(path.read_text(encoding="utf-8"))) == []


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_vector_fails_for_its_one_named_reason(path: Path) -> None:
    vector = json.loads(path.read_text(encoding="utf-8"))
    assert set(vector) == {"reason", "field", "code", "cell"}
    problems = validate_cell(vector["cell"])
    assert problems, f"{path.name} should be invalid: {vector['reason']}"
    assert [(p.path, p.code) for p in problems] == [(vector["field"], vector["code"])], problems
    field = re.sub(r"\[\d+\]$", "", vector["field"]).rsplit(".", 1)[-1]
    assert field in problems[0].message or field in problems[0].path


def test_invalid_reasons_are_distinct() -> None:
    reasons = [json.loads(p.read_text(encoding="utf-8"))["reason"] for p in INVALID]
    assert len(set(reasons)) == len(reasons)


# --- inputs, line numbers, exit codes ---------------------------------------------------------


def bad_cell() -> dict[str, Any]:
    cell = example()
    cell["scoring"]["importance"] = 1.5
    return cell


def test_jsonl_reports_the_line_of_each_cell(tmp_path: Path) -> None:
    path = tmp_path / "cells.jsonl"
    path.write_text(
        "\n".join([json.dumps(example()), "", json.dumps(bad_cell()), json.dumps(example())]) + "\n"
    )
    report = validate_documents([path])
    assert report.cells == 3 and report.invalid_cells == 1
    assert [(f.line, f.index, f.path, f.code) for f in report.findings] == [
        (3, 1, "$.scoring.importance", "score-range")
    ]
    assert report.exit_code == 1


def test_array_reports_the_line_where_each_element_starts(tmp_path: Path) -> None:
    path = tmp_path / "cells.json"
    path.write_text(json.dumps([example(), bad_cell(), example(), bad_cell()], indent=2))
    starts = [i + 1 for i, line in enumerate(path.read_text().splitlines()) if line == "  {"]
    report = validate_documents([path])
    assert report.cells == 4
    assert [(f.line, f.index) for f in report.findings] == [(starts[1], 1), (starts[3], 3)]


def test_array_on_one_line_and_single_objects(tmp_path: Path) -> None:
    one_line = tmp_path / "one-line.json"
    one_line.write_text(json.dumps([example(), bad_cell()]))
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(bad_cell(), indent=2))
    compact = tmp_path / "compact.json"
    compact.write_text(json.dumps(bad_cell()))
    report = validate_documents([one_line, pretty, compact])
    assert [(f.source, f.line) for f in report.findings] == [
        (str(one_line), 1),
        (str(pretty), 1),
        (str(compact), 1),
    ]
    assert [s.cells for s in report.sources] == [2, 1, 1]


def test_empty_array_is_zero_cells_and_valid(tmp_path: Path) -> None:
    path = tmp_path / "empty.json"
    path.write_text("[]\n")
    report = validate_documents([path])
    assert report.cells == 0 and report.exit_code == 0


def run_validate(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    code = validate_main(argv)
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_valid_vectors_exit_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, lines, err = run_validate([str(p) for p in VALID], capsys)
    assert (code, lines) == (0, [])
    assert f"{len(VALID)} valid" in err


def test_problem_lines_have_the_documented_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "x.jsonl", [example(), bad_cell()])
    code, lines, _ = run_validate([str(path)], capsys)
    assert code == 1
    [line] = lines
    match = LINE.match(line)
    assert match is not None, line
    assert match.group("source", "line", "requirement", "path", "level", "code") == (
        str(path),
        "2",
        "AMP-CELL-12",
        "$.scoring.importance",
        "MUST",
        "score-range",
    )


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(
        "sys.stdin", io.StringIO(json.dumps(example()) + "\n" + json.dumps(bad_cell()) + "\n")
    )
    code, lines, _ = run_validate(["-", "-q"], capsys)
    assert code == 1
    assert lines == [
        "<stdin>:2: AMP-CELL-12: $.scoring.importance: importance: 1.5 is greater than the maximum of 1 "
        "[MUST, score-range]"
    ]


def test_stdin_bytes_are_read_as_utf8(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cell = example()
    cell["content"]["text"] = "thé 🍵"
    raw = io.TextIOWrapper(
        io.BytesIO(json.dumps(cell, ensure_ascii=False).encode("utf-8")), encoding="latin-1"
    )
    monkeypatch.setattr("sys.stdin", raw)
    assert run_validate(["-"], capsys)[:2] == (0, [])


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "cannot read"),
        (b"", "empty input"),
        (b"{not json", "not JSON"),
        (b'{"a": 1}\n{"b": 2}\n}', "not JSON"),
        (b"\xff\xfe\x00garbage", "not UTF-8"),
        (b'[{"a": 1},\n {"b": 2}]\n[]', "extra data"),
    ],
    ids=["missing", "empty", "truncated", "bad-jsonl-line", "binary", "two-documents"],
)
def test_unreadable_input_exits_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, words: str
) -> None:
    path = tmp_path / "input.json"
    if content is not None:
        path.write_bytes(content)
    code, lines, _ = run_validate([str(path)], capsys)
    assert code == 2
    assert any(words in line for line in lines), lines


def test_a_bad_jsonl_line_does_not_hide_the_other_cells(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(example()) + "\n{oops\n" + json.dumps(bad_cell()) + "\nNaN\n")
    code, lines, _ = run_validate([str(path)], capsys)
    assert code == 2
    assert [line.split(": ", 1)[0] for line in lines] == [f"{path}:2", f"{path}:3", f"{path}:4"]
    assert "NaN is not a JSON value" in lines[2]


def test_nesting_too_deep_for_the_decoder_is_a_line_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(example()) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    report = validate_documents([path])
    assert [(e.line, e.message) for e in report.input_errors] == [
        (2, "not JSON: nested too deeply to decode")
    ]
    assert report.cells == 1 and report.exit_code == 2


def test_unreadable_outranks_invalid_across_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = write_jsonl(tmp_path / "bad.jsonl", [bad_cell()])
    code, lines, _ = run_validate([str(bad), str(tmp_path / "missing.json")], capsys)
    assert code == 2
    assert len(lines) == 2


def test_usage_error_is_exit_two(capsys: pytest.CaptureFixture[str]) -> None:
    assert validate_main([]) == 2
    assert validate_main(["--format", "xml", "x"]) == 2
    assert validate_contract_main([]) == 2
    assert validate_main(["--help"]) == 0
    assert "amp-conformance validate" in capsys.readouterr().out


# --- JSON output --------------------------------------------------------------------------------


def test_json_output_validates_against_its_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    validator = report_validator()
    cells = write_jsonl(tmp_path / "x.jsonl", [example(), bad_cell(), "not a cell"])
    runs = [
        [str(p) for p in VALID],
        [str(cells)],
        [str(cells), str(tmp_path / "missing.json")],
    ]
    for expected, argv in zip((0, 1, 2), runs, strict=True):
        assert validate_main(["--format", "json", "-q", *argv]) == expected
        document = json.loads(capsys.readouterr().out)
        assert list(validator.iter_errors(document)) == []
        assert (document["kind"], document["exit_code"], document["valid"]) == (
            "cells",
            expected,
            expected == 0,
        )
    assert document["summary"]["invalid_cells"] == 2
    assert document["problems"][0]["path"] == "$.scoring.importance"


# --- validate-contract --------------------------------------------------------------------------


def test_our_contract_matches_itself(capsys: pytest.CaptureFixture[str]) -> None:
    assert compare_contract(load_contract("openapi.json", "amp01")) == []
    assert validate_contract_main([str(contract_path("openapi.json", "amp01")), "-q"]) == 0
    assert capsys.readouterr().out == ""


def test_upstream_contract_differs_only_by_the_c01_convention(capsys: pytest.CaptureFixture[str]) -> None:
    """The raw comparison finds the undeclared 404s; the command reports them as convention C-01."""
    if not UPSTREAM_OPENAPI.is_file():
        pytest.skip(f"{UPSTREAM_OPENAPI} not found (the shared spec sits beside the clone)")
    raw = compare_contract(json.loads(UPSTREAM_OPENAPI.read_text(encoding="utf-8")))
    assert {(d.code, d.status) for d in raw} == {("undeclared-status", "404")} and len(raw) == 3
    assert validate_contract_main([str(UPSTREAM_OPENAPI)]) == 0
    out, err = capsys.readouterr()
    assert [line.split(": ", 2)[1] for line in out.splitlines()] == ["C-01"]
    assert "0 difference(s)" in err and "1 convention(s)" in err
    assert validate_contract_main([str(UPSTREAM_OPENAPI), "--format", "json", "-q"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert list(report_validator().iter_errors(document)) == []
    assert document["differences"] == [] and len(document["conventions"][0]["operations"]) == len(raw)


def relative_copy(doc: dict[str, Any]) -> dict[str, Any]:
    """The contract rewritten with paths relative to a server URL ending in /amp/v1."""
    copied = copy.deepcopy(doc)
    copied["servers"] = [{"url": "https://example.com/amp/v1"}]
    copied["paths"] = {p.removeprefix("/amp/v1"): item for p, item in copied["paths"].items()}
    return copied


def test_paths_relative_to_the_api_base_and_renamed_parameters_match() -> None:
    doc = relative_copy(load_contract("openapi.json", "amp01"))
    doc["paths"] = {p.replace("{memory_id}", "{id}"): item for p, item in doc["paths"].items()}
    assert compare_contract(doc) == []


def error_response(schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": "error", "content": {"application/json": {"schema": schema}}}


OURS: dict[str, Any] = {
    "openapi": "3.1.0",
    "paths": {
        "/amp/v1/a": {
            "get": {"responses": {"200": {"description": "ok"}, "404": {"$ref": "#/components/responses/E"}}}
        },
        "/amp/v1/b/{x}": {"get": {"responses": {"200": {"description": "ok"}}}, "delete": {"responses": {}}},
    },
    "components": {
        "responses": {"E": error_response({"$ref": "#/components/schemas/Envelope"})},
        "schemas": {
            "Envelope": {
                "type": "object",
                "required": ["error"],
                "properties": {"error": {"$ref": "#/components/schemas/D"}},
            },
            "D": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {"code": {}, "message": {}, "details": {}},
            },
        },
    },
}


def test_compare_contract_reports_each_kind_of_difference() -> None:
    theirs = copy.deepcopy(OURS)
    theirs["paths"]["/amp/v1/a"]["get"]["responses"] = {
        "200": {"description": "ok"},
        "403": error_response({"type": "object", "properties": {"detail": {"type": "string"}}}),
        "409": {"description": "no body"},
        "422": error_response({"$ref": "#/components/schemas/Missing"}),
        "429": error_response({"allOf": [{"$ref": "#/components/schemas/Envelope"}]}),
    }
    del theirs["paths"]["/amp/v1/b/{x}"]["delete"]
    theirs["paths"]["/amp/v1/b/{x}"]["post"] = {"responses": {}}
    theirs["paths"]["/amp/v1/c"] = {"get": {"responses": {"4XX": error_response({"type": "object"})}}}
    found = {(d.method, d.route, d.code, d.status) for d in compare_contract(theirs, OURS)}
    assert found == {
        ("GET", "/amp/v1/a", "undeclared-status", "404"),
        ("DELETE", "/amp/v1/b/{x}", "missing-method", None),
        ("POST", "/amp/v1/b/{x}", "extra-method", None),
        ("GET", "/amp/v1/c", "extra-route", None),
        ("GET", "/amp/v1/a", "no-error-envelope", "403"),
        ("GET", "/amp/v1/a", "no-error-envelope", "409"),
        ("GET", "/amp/v1/a", "unresolvable-ref", "422"),
        ("GET", "/amp/v1/c", "no-error-envelope", "4XX"),
    }


def test_missing_route_and_status_ranges() -> None:
    theirs = copy.deepcopy(OURS)
    del theirs["paths"]["/amp/v1/b/{x}"]
    theirs["paths"]["/amp/v1/a"]["get"]["responses"] = {
        "200": {},
        "4XX": {"$ref": "#/components/responses/E"},
    }
    found = [(d.method, d.route, d.code) for d in compare_contract(theirs, OURS)]
    assert found == [("GET", "/amp/v1/b/{x}", "missing-route"), ("DELETE", "/amp/v1/b/{x}", "missing-route")]


def test_envelope_without_details_is_reported() -> None:
    theirs = copy.deepcopy(OURS)
    del theirs["components"]["schemas"]["D"]["properties"]["details"]
    [difference] = compare_contract(theirs, OURS)
    assert difference.code == "no-error-envelope" and "details" in difference.message


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (None, "cannot read"),
        ("{nope", "not JSON"),
        ('{"openapi": "3.1.0"}', "not an OpenAPI document"),
        ('{"paths": {"/amp/v1/x": {"$ref": "#/nowhere"}}}', "does not resolve"),
    ],
    ids=["missing", "not-json", "no-paths", "dangling-path-item"],
)
def test_unreadable_contract_exits_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, words: str
) -> None:
    path = tmp_path / "openapi.json"
    if content is not None:
        path.write_text(content)
    assert validate_contract_main([str(path), "--format", "json"]) == 2
    document = json.loads(capsys.readouterr().out)
    assert list(report_validator().iter_errors(document)) == []
    assert words in document["input_errors"][0]["message"]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    """A local HTTP server over ``tmp_path`` (no network needed)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_contract_from_a_url(tmp_path: Path, served: str, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "openapi.json").write_text(json.dumps(load_contract("openapi.json", "amp01")))
    assert validate_contract_main([f"{served}/openapi.json", "--timeout", "5"]) == 0
    assert validate_contract_main([f"{served}/missing.json", "--timeout", "5"]) == 2
    assert "HTTP 404" in capsys.readouterr().out


@pytest.mark.parametrize("member", ["results", "memories"])
def test_a_servers_list_response_is_read_as_its_cells(tmp_path: Path, member: str) -> None:
    """Issue 38 item 21: a saved list/search response (S1) is a page of cells, not one bad cell."""
    page = {member: [example(), bad_cell()], "returned": 2, "has_more": False, "offset": 0, "limit": 20}
    pretty = tmp_path / "page.json"
    pretty.write_text(json.dumps(page, indent=2))
    compact = tmp_path / "page.jsonl"
    compact.write_text(json.dumps(page) + "\n" + json.dumps(example()) + "\n")
    report = validate_documents([pretty, compact])
    assert [s.cells for s in report.sources] == [2, 3]
    starts = [i + 1 for i, line in enumerate(pretty.read_text().splitlines()) if line == "    {"]
    assert [(f.source, f.line, f.index, f.code) for f in report.findings] == [
        (str(pretty), starts[1], 1, "score-range"),
        (str(compact), 1, 1, "score-range"),
    ]


def test_a_cell_is_never_taken_for_a_wrapper(tmp_path: Path) -> None:
    cell = example()
    cell["results"] = [example()]  # an unknown member of a cell stays the cell's problem
    path = tmp_path / "cell.json"
    path.write_text(json.dumps(cell))
    report = validate_documents([path])
    assert report.cells == 1 and report.invalid_cells == 1
