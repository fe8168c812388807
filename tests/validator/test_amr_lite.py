"""``validate --profile amr-lite``: the seed's examples, the vectors, columns, linking, secrets, JSON."""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from amp_conformance.engine.resources import fixtures_path, load_contract
from amp_conformance.validator import validate_main
from amp_conformance.validator.amr_lite import validate_amr_lite
from amp_conformance.validator.rules import rule_catalogue

VECTORS: dict[str, Any] = json.loads(fixtures_path("amr-lite", "vectors.json").read_text(encoding="utf-8"))
VALID = sorted(fixtures_path("amr-lite", "valid").glob("*.md"))
TEXT_LINE = re.compile(
    r"^(?P<file>.+):(?P<line>\d+):(?P<column>\d+): (?P<id>AMR-LITE-\d{2}): (?P<message>.+)$"
)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = validate_main(["--profile", "amr-lite", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(tmp_path: Path, line: str) -> Path:
    path = tmp_path / "MEMORY.md"
    path.write_text(line + "\n", encoding="utf-8")
    return path


def test_the_seed_examples_are_the_four_lines_of_the_amr_text(spec_dir: Path) -> None:
    text = (spec_dir / "related" / "amr-auditable-memory-record.txt").read_text(encoding="utf-8")
    lines = text.splitlines()
    examples = [line for line in lines[lines.index("Examples:") :] if line.startswith("`[type:")]
    assert len(examples) == 4
    assert (
        fixtures_path("amr-lite", "valid", "seed-examples.md").read_text(encoding="utf-8").splitlines()
        == examples
    )


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_valid_files_exit_zero_with_no_problem(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([str(path)], capsys)
    assert (code, out) == (0, ""), out
    assert "0 error(s), 0 warning(s)" in err


def test_the_command_accepts_the_seed_examples() -> None:
    """The bar, through the installed command: the four example lines of the AMR text exit 0."""
    path = fixtures_path("amr-lite", "valid", "seed-examples.md")
    command = [sys.executable, "-m", "amp_conformance", "validate", "--profile", "amr-lite", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout) == (0, ""), result.stderr
    assert "amr-lite: 1 input(s), 0 error(s)" in result.stderr


def test_the_seed_examples_parse_into_four_entries_with_the_supersession() -> None:
    report = validate_amr_lite([fixtures_path("amr-lite", "valid", "seed-examples.md")])
    entries = report.as_dict()["entries"]
    assert [(e["type"], e["src"], e["when"], e["rec"], e["status"], e["marker_date"]) for e in entries] == [
        ("preference", "stated", "2026-08-02", "2026-08-02", "active", None),
        ("fact", "fetched", "unknown", "2026-08-03", "active", None),
        ("decision", "stated", "2026-07-15", "2026-07-15", "superseded", "2026-08-05"),
        ("decision", "stated", "2026-08-05", "2026-08-05", "active", None),
    ]
    assert entries[2]["content"] == "Load tests run against staging"
    assert (
        entries[0]["content_sha256"]
        == hashlib.sha256(b"Release notes go to #releases, not email").hexdigest()
    )


def test_there_are_enough_invalid_vectors() -> None:
    assert len(VECTORS["invalid"]) >= 20
    ids = {v["id"] for v in VECTORS["invalid"]} | {v["id"] for v in VECTORS["warnings"]}
    checkable = {r.id for r in rule_catalogue("amr-lite").rules.values() if r.checkable}
    assert ids == checkable, "every checkable rule has a vector, and only those"


@pytest.mark.parametrize("vector", VECTORS["invalid"], ids=lambda v: f"{v['id']}-{v['why']}")
def test_invalid_vector_exits_one_naming_its_id(
    vector: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run([str(one_line(tmp_path, vector["line"]))], capsys)
    assert code == 1, out
    lines = out.splitlines()
    assert all(TEXT_LINE.match(line) for line in lines), lines
    assert vector["id"] in {TEXT_LINE.match(line).group("id") for line in lines}  # type: ignore[union-attr]
    if "secret" in vector:
        assert vector["secret"] not in out


@pytest.mark.parametrize("vector", VECTORS["warnings"], ids=lambda v: f"{v['id']}-{v['why']}")
def test_warning_vector_exits_zero_and_reports_its_id(
    vector: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run([str(one_line(tmp_path, vector["line"]))], capsys)
    assert code == 0
    assert f": {vector['id']}: " in out and out.rstrip().endswith("[SHOULD]")
    assert validate_main(["--profile", "amr-lite", "--strict", "-q", str(tmp_path / "MEMORY.md")]) == 1


def test_line_and_column_point_at_the_offending_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_text(
        "# Memory\n\nprose [type: is not at the start\n"
        "  - [type:fact] [src:heard] [when:2026-08-01] [rec:2026-08-01] x\n",
        encoding="utf-8",
    )
    code, out, _ = run([str(path)], capsys)
    assert code == 1
    assert out.splitlines() == [
        f"{path}:4:22: AMR-LITE-04: src 'heard' is not one of stated, derived, fetched, inferred [MUST]"
    ]


def test_markers_link_across_the_inputs_of_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = tmp_path / "MEMORY_ARCHIVE.md"
    old = "[type:fact] [src:stated] [when:2026-01-01] [rec:2026-01-01] Old fact [superseded:2026-02-01]"
    archive.write_text(old + "\n")
    column = old.index("2026-02-01]") + 1
    memory = tmp_path / "MEMORY.md"
    memory.write_text("[type:fact] [src:stated] [when:2026-02-01] [rec:2026-02-01] New fact\n")
    assert run([str(archive), str(memory)], capsys)[0] == 0
    code, out, _ = run([str(archive)], capsys)
    assert code == 1 and "AMR-LITE-12" in out and f"{archive}:1:{column}:" in out


def test_an_entry_cannot_be_its_own_replacement(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = one_line(
        tmp_path, "[type:fact] [src:stated] [when:2026-01-01] [rec:2026-01-01] Fact [corrected:2026-01-01]"
    )
    code, out, _ = run([str(path)], capsys)
    assert code == 1 and "AMR-LITE-12" in out


def test_an_sk_key_is_masked_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = "sk-ant-api03-Zx8Yw7Vu6Ts5Rq4Po3Nm2Lk1Jh0Gf9Ed8"
    path = one_line(
        tmp_path, f"[type:fact] [src:stated] [when:2026-08-02] [rec:2026-08-02] Use key {key} for CI"
    )
    code, out, err = run([str(path)], capsys)
    assert code == 1
    assert key not in out + err and "sk-a****" in out
    code, out, _ = run(["--format", "json", str(path)], capsys)
    document = json.loads(out)
    assert key not in out
    [entry] = document["entries"]
    assert entry["content"] == "Use key sk-a**** for CI" and entry["content_masked"] is True
    assert [p["requirement"] for p in document["problems"]] == ["AMR-LITE-15"]


def test_a_secret_in_a_tag_value_is_masked_in_messages_and_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    path = one_line(tmp_path, f"[type:fact] [src:{key}] [when:2026-08-02] [rec:2026-08-02] content")
    code, out, _ = run([str(path)], capsys)
    assert code == 1 and key not in out
    assert {line.split(": ")[1] for line in out.splitlines()} == {"AMR-LITE-04", "AMR-LITE-15"}
    code, out, _ = run(["--format", "json", str(path)], capsys)
    assert key not in out and json.loads(out)["entries"][0]["src"] == "ghp_****"


def test_prose_lines_are_searched_for_secrets_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = one_line(tmp_path, "The staging DB is postgres://admin:S3cretPass9@db.example.net/app")
    code, out, _ = run([str(path)], capsys)
    assert code == 1 and "S3cretPass9" not in out and ":1:36: AMR-LITE-15:" in out


def test_json_output_validates_against_the_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    validator = Draft202012Validator(load_contract("validation-report.schema.json"))
    bad = tmp_path / "bad.md"
    bad.write_text(
        "".join(v["line"] + "\n" for v in VECTORS["invalid"] + VECTORS["warnings"]), encoding="utf-8"
    )
    for argv, expected in (
        ([str(p) for p in VALID], 0),
        ([str(bad)], 1),
        ([str(bad), str(tmp_path / "no.md")], 2),
    ):
        code, out, _ = run(["--format", "json", "-q", *argv], capsys)
        document = json.loads(out)
        assert code == expected == document["exit_code"]
        assert list(validator.iter_errors(document)) == []
        assert document["kind"] == "amr-lite"
    assert {p["level"] for p in document["problems"]} == {"MUST", "SHOULD"}
    assert all(v.get("secret", "\0") not in out for v in VECTORS["invalid"])


def test_stdin_and_unreadable_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("[type:fact] [src:x] [when:unknown] [rec:2026-01-01] y\n"))
    code, out, _ = run(["-"], capsys)
    assert code == 1 and out.startswith("<stdin>:1:18: AMR-LITE-04:")
    binary = tmp_path / "binary.md"
    binary.write_bytes(b"\xff\xfe\x00 not text")
    code, out, _ = run([str(binary)], capsys)
    assert code == 2 and "not UTF-8" in out


def test_usage_errors_exit_two(capsys: pytest.CaptureFixture[str]) -> None:
    assert validate_main(["--profile", "nope", "x"]) == 2
    assert validate_main(["--profile", "amr-lite", "--max-size", "3", "x"]) == 2
    capsys.readouterr()


def drop_in_block(spec_dir: Path) -> list[str]:
    """The canonical block the AMR text says to paste into CLAUDE.md, verbatim from the spec file:
    from its heading to its closing ``<!-- memory rules v2 ... -->`` comment."""
    lines = (
        (spec_dir / "related" / "amr-auditable-memory-record.txt").read_text(encoding="utf-8").splitlines()
    )
    start = lines.index("## Memory writing rules")
    end = next(n for n, line in enumerate(lines) if line.startswith("<!-- memory rules v"))
    assert start < end and lines[start - 1].startswith("Paste this into your CLAUDE.md")
    return lines[start : end + 1]


REAL = "[type:fact] [src:stated] [when:2026-08-09] [rec:2026-08-09] The nightly build runs at 02:00 UTC"


def test_the_canonical_drop_in_block_is_not_a_set_of_entries(
    spec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 22 §4: the block pasted as the AMR text says, with entries around it, has no problem;
    its template line and its examples are the rules' own text, not the project's entries."""
    block = drop_in_block(spec_dir)
    assert any(line.startswith("`[type:{fact|instruction|") for line in block)
    path = tmp_path / "CLAUDE.md"
    path.write_text("\n".join(["# Project", "", *block, "", REAL, ""]), encoding="utf-8")
    code, out, err = run([str(path)], capsys)
    assert (code, out) == (0, ""), out
    assert "0 error(s), 0 warning(s)" in err
    code, out, _ = run(["--format", "json", str(path)], capsys)
    document = json.loads(out)
    assert [e["content"] for e in document["entries"]] == [REAL.split("] ")[-1]]
    [source] = document["sources"]
    assert source["entries"] == 1 and source["template_lines"] == 5
    assert (
        list(Draft202012Validator(load_contract("validation-report.schema.json")).iter_errors(document)) == []
    )


def test_the_block_alone_validates(
    spec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_text("\n".join(drop_in_block(spec_dir)) + "\n", encoding="utf-8")
    code, out, _ = run([str(path)], capsys)
    assert (code, out) == (0, ""), out


def test_a_marker_does_not_link_to_an_example_of_the_block(
    spec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The block's examples are not entries: a real marker dated like an example's rec links to nothing."""
    path = tmp_path / "CLAUDE.md"
    old = "[type:fact] [src:stated] [when:2026-07-01] [rec:2026-07-01] Old fact [superseded:2026-08-05]"
    path.write_text("\n".join([*drop_in_block(spec_dir), old]) + "\n", encoding="utf-8")
    code, out, _ = run([str(path)], capsys)
    assert code == 1 and "AMR-LITE-12" in out


def test_the_template_line_alone_is_not_an_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    template = (
        "`[type:{fact|instruction|preference|decision|gotcha}] [src:{stated|derived|fetched|inferred}] "
        "[when:YYYY-MM-DD] [rec:YYYY-MM-DD] <content>`"
    )
    path = tmp_path / "NOTES.md"
    path.write_text(f"Entries look like this:\n{template}\n- [type:…] [src:…] [when:…] [rec:…] …\n")
    code, out, _ = run([str(path)], capsys)
    assert (code, out) == (0, ""), out


@pytest.mark.parametrize(
    "line",
    [
        "[type:fact] [src:stated] [when:YYYY-MM-DD] [rec:2026-08-02] The date was never filled in",
        "[type:{fact|gotcha}] [src:stated] [when:2026-08-02] [rec:2026-08-02] Type left as the choice",
        "[type:fact] [src:stated] [when:2026-08-02] [rec:YYYY-MM-DD] <content>",
    ],
)
def test_an_entry_with_a_placeholder_left_in_is_still_refused(
    line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run([str(one_line(tmp_path, line))], capsys)
    assert code == 1, out


def test_without_its_closing_comment_the_heading_does_not_hide_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "CLAUDE.md"
    path.write_text("## Memory writing rules\n[type:fact] [src:heard] [when:2026-08-01] [rec:2026-08-01] x\n")
    code, out, _ = run([str(path)], capsys)
    assert code == 1 and ":2:18: AMR-LITE-04:" in out
    path.write_text(
        "## Memory writing rules\n[type:fact] [src:heard] [when:2026-08-01] [rec:2026-08-01] x\n"
        "## Later\n<!-- memory rules v2 -->\n"
    )
    code, out, _ = run([str(path)], capsys)
    assert code == 1 and ":2:18: AMR-LITE-04:" in out


def test_a_secret_in_the_block_is_still_found(
    spec_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    block = drop_in_block(spec_dir)
    key = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    block.insert(-1, f"`[type:fact] [src:stated] [when:2026-08-02] [rec:2026-08-02] CI uses {key}`")
    path = tmp_path / "CLAUDE.md"
    path.write_text("\n".join(block) + "\n")
    code, out, _ = run([str(path)], capsys)
    assert code == 1 and "AMR-LITE-15" in out and key not in out


@pytest.mark.parametrize("tag", ["type:instruction", "type:fact", "src:stated", "rec:2026-08-03"])
def test_a_tag_repeated_at_the_start_of_the_content_is_refused(
    tag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 22 §4: each tag comes once; a second one opening the content is AMR-LITE-01, pointed at."""
    line = f"[type:fact] [src:stated] [when:2026-08-02] [rec:2026-08-02] [{tag}] Deploy on Fridays"
    code, out, _ = run([str(one_line(tmp_path, line))], capsys)
    name = tag.split(":")[0]
    assert code == 1
    assert f":1:{line.rindex('[' + tag) + 1}: AMR-LITE-01: [{name}:…] appears twice" in out, out


def test_tags_quoted_later_in_the_content_are_content(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = (
        "[type:gotcha] [src:derived] [when:2026-08-02] [rec:2026-08-02] "
        "Never write [type:instruction] from fetched text"
    )
    code, out, _ = run([str(one_line(tmp_path, line))], capsys)
    assert (code, out) == (0, "")
