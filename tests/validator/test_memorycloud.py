"""``validate --profile memorycloud``: the valid suite, each invalid archive, safety, JSON output."""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from amp_conformance.engine.resources import load_contract
from amp_conformance.validator import validate_main
from amp_conformance.validator.archive import MIB, Limits
from amp_conformance.validator.memorycloud import glob_regex, license_problem
from amp_conformance.validator.rules import rule_catalogue
from tests.validator.archives import VALID, build, build_valid, load_cases, valid_members

CASES = load_cases()


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = validate_main(["--profile", "memorycloud", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def case_argv(case: dict[str, Any], path: Path) -> list[str]:
    size = case.get("max_size_mib")
    return [str(path)] if size is None else ["--max-size", str(size), str(path)]


def snapshot(*folders: Path) -> set[tuple[str, int]]:
    """Every file under the folders, with its size: anything written shows up as a difference."""
    found: set[tuple[str, int]] = set()
    for folder in folders:
        for root, _, files in os.walk(folder):
            found.update(
                (os.path.join(root, name), os.path.getsize(os.path.join(root, name))) for name in files
            )
    return found


@pytest.fixture
def quarantine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Run with cwd and TMPDIR inside tmp_path, so a write anywhere the validator could reach is seen."""
    work = tmp_path / "work"
    temp = tmp_path / "temp"
    work.mkdir()
    temp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("TMPDIR", str(temp))
    yield tmp_path


def test_the_valid_suite_validates_as_a_folder_and_as_a_zip(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = build_valid(tmp_path / "suite.zip")
    for target in (VALID, archive):
        code, out, err = run([str(target)], capsys)
        assert (code, out) == (0, ""), out
        assert "0 error(s), 0 warning(s), 0 note(s)" in err


def test_the_valid_suite_has_the_documented_layout(spec_dir: Path) -> None:
    text = (spec_dir / "related" / "memorycloud-memory-protocol.txt").read_text(encoding="utf-8")
    layout = text[text.index("文件结构") : text.index("语义")].split()[1:]
    names = {p.relative_to(VALID).as_posix() for p in VALID.rglob("*") if p.is_file()}
    for entry in layout:
        if entry == "memory/YYYY-MM-DD.md":
            assert any(name.startswith("memory/2026-") for name in names)
        else:
            assert entry in names
    mapping = json.loads((VALID / "install" / "openclaw.json").read_text(encoding="utf-8"))
    start = text.index("{", text.index("OpenClaw 风格 active-memory 映射"))
    assert mapping == json.JSONDecoder().raw_decode(text, start)[0]


def test_there_are_enough_invalid_archives() -> None:
    assert len(CASES["cases"]) >= 12
    specials = {c.get("special") for c in CASES["cases"]}
    assert {"bomb", "traversal"} <= specials
    cited = {c["id"] for group in ("cases", "accepted") for c in CASES[group]}
    checkable = {r.id for r in rule_catalogue("memorycloud").rules.values() if r.checkable}
    assert cited == checkable, "every checkable rule has an archive, and only those"


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: c["name"])
def test_invalid_archive_exits_one_with_its_id(
    case: dict[str, Any], quarantine: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = build(case, quarantine / f"{case['name']}.zip")
    before = snapshot(quarantine)
    code, out, _ = run(case_argv(case, path), capsys)
    assert code == 1, out
    assert f": {case['id']}: " in out, out
    assert snapshot(quarantine) == before, "the validator wrote a file"


@pytest.mark.parametrize("case", CASES["accepted"], ids=lambda c: c["name"])
def test_accepted_archive_exits_zero_reporting_its_id(
    case: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = build(case, tmp_path / f"{case['name']}.zip")
    code, out, _ = run([str(path)], capsys)
    assert code == 0
    assert f": {case['id']}: " in out, out


@pytest.mark.parametrize("name", ["zip-bomb", "traversal-entry"])
def test_unsafe_archives_are_refused_without_reading_an_entry(
    name: str, quarantine: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    [case] = [c for c in CASES["cases"] if c["name"] == name]
    path = build(case, quarantine / "unsafe.zip")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("an entry of a refused archive was opened")

    monkeypatch.setattr(zipfile.ZipFile, "open", refuse)
    monkeypatch.setattr(zipfile.ZipFile, "extractall", refuse)
    before = snapshot(quarantine, quarantine.parent)
    code, out, _ = run(["--format", "json", str(path)], capsys)
    document = json.loads(out)
    assert code == 1 and document["sources"][0]["refused"] is True
    assert document["files"] == []
    assert snapshot(quarantine, quarantine.parent) == before
    assert not (quarantine.parent / "amp-conformance-traversal.md").exists()


def test_a_symlink_in_a_folder_is_refused_not_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite"
    for source in VALID.rglob("*"):
        target = suite / source.relative_to(VALID)
        if source.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    (suite / "memory" / "2026-08-03.md").symlink_to("/etc/passwd")
    code, out, _ = run([str(suite)], capsys)
    assert code == 1 and "memory/2026-08-03.md: MCS-19: " in out


def test_json_output_validates_against_the_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    validator = Draft202012Validator(load_contract("validation-report.schema.json"))
    paths = [str(build(c, tmp_path / f"{c['name']}.zip")) for c in CASES["cases"] + CASES["accepted"]]
    for argv, expected in (([str(VALID)], 0), (paths, 1), ([str(VALID), str(tmp_path / "none.zip")], 2)):
        code, out, _ = run(["--format", "json", "-q", *argv], capsys)
        document = json.loads(out)
        assert code == expected == document["exit_code"]
        assert list(validator.iter_errors(document)) == []
    _, out, _ = run(["--format", "json", "-q", str(VALID)], capsys)
    roles = {f["path"]: f["role"] for f in json.loads(out)["files"]}
    assert roles["MEMORY.md"] == "long-term memory" and roles["memory/2026-08-01.md"] == "work memory"


def test_unreadable_inputs_exit_two(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    not_zip = tmp_path / "suite.zip"
    not_zip.write_text("not a zip")
    cases = (
        (not_zip, "not a zip archive"),
        (tmp_path / "missing.zip", "cannot read"),
        ("-", "not from stdin"),
    )
    for target, words in cases:
        code, out, _ = run([str(target)], capsys)
        assert code == 2 and words in out


def test_a_secret_in_a_manifest_value_is_masked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab"
    path = build({"name": "leak", "manifest": {"license": key}}, tmp_path / "leak.zip")
    code, out, _ = run([str(path)], capsys)
    assert code == 1 and "MCS-10" in out and key not in out


def test_member_names_are_escaped_in_text_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = build({"name": "odd", "files": {"notes/\x1b[31mred.txt": "x"}}, tmp_path / "odd.zip")
    code, out, _ = run([str(path)], capsys)
    assert code == 0 and "\x1b" not in out and "\\x1b[31mred.txt" in out


@pytest.mark.parametrize(
    ("expression", "ok"),
    [
        ("MIT", True),
        ("Apache-2.0 OR MIT", True),
        ("GPL-2.0-or-later WITH Classpath-exception-2.0", True),
        ("LicenseRef-MemoryCloud-Commercial", True),
        ("Proprietary", False),
        ("MIT AND (", False),
        ("", False),
    ],
)
def test_license_expressions(expression: str, ok: bool) -> None:
    assert (license_problem(expression) is None) is ok


@pytest.mark.parametrize(
    ("pattern", "name", "matches"),
    [
        ("memory/*.md", "memory/2026-08-01.md", True),
        ("memory/*.md", "memory/deep/2026-08-01.md", False),
        ("memory/**/*.md", "memory/deep/x.md", True),
        ("MEMORY.md", "MEMORY.md", True),
        ("MEMORY.md", "MEMORYXmd", False),
        ("memory/????-??-??.md", "memory/2026-08-01.md", True),
    ],
)
def test_merge_globs(pattern: str, name: str, matches: bool) -> None:
    assert (glob_regex(pattern).fullmatch(name) is not None) is matches


def repetitive(tmp_path: Path, size: int = 2 * 1024 * 1024) -> Path:
    return build(
        {"name": "repetitive", "special": "repetitive", "repetitive_bytes": size},
        tmp_path / f"log-{size}.zip",
    )


def test_a_large_repetitive_text_is_no_zip_bomb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 22 §4: 2 MB of one repeated log line (~340x) is refused no more than the same at 1 MB."""
    for size in (1024 * 1024, 2 * 1024 * 1024):
        path = repetitive(tmp_path, size)
        with zipfile.ZipFile(path) as handle:
            info = handle.getinfo("memory/2026-08-03.md")
        assert info.file_size / info.compress_size > 300
        code, out, _ = run([str(path)], capsys)
        assert (code, out) == (0, ""), out


def test_a_bomb_is_a_high_ratio_and_a_large_expansion_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [bomb] = [c for c in CASES["cases"] if c["name"] == "zip-bomb"]
    bomb_path = build(bomb, tmp_path / "bomb.zip")
    log = repetitive(tmp_path)
    code, out, _ = run([str(bomb_path)], capsys)
    assert code == 1 and "memory/2026-08-03.md: MCS-22: " in out
    assert "--max-ratio" in out and "--ratio-floor" in out, (
        "the message names the limits and how to move them"
    )
    # The floor and the ratio are the two halves of one judgement, each adjustable:
    assert run(["--ratio-floor", "1", str(log)], capsys)[0] == 1
    assert run(["--ratio-floor", "1", "--max-ratio", "500", str(log)], capsys)[0] == 0
    assert run(["--max-ratio", "2000", str(bomb_path)], capsys)[0] == 0
    assert run(["--ratio-floor", "16", str(bomb_path)], capsys)[0] == 0
    assert run(["--ratio-floor", "0.5", str(log)], capsys)[0] == 1


def test_too_many_entries_is_adjustable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = build_valid(tmp_path / "suite.zip")
    code, out, _ = run(["--max-entries", "3", str(path)], capsys)
    assert code == 1 and "MCS-21" in out and "--max-entries" in out
    assert run(["--max-entries", "100", str(path)], capsys)[0] == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["--max-ratio", "0"],
        ["--max-ratio", "1"],
        ["--max-ratio", "abc"],
        ["--max-ratio", "nan"],
        ["--max-ratio", "inf"],
        ["--ratio-floor", "-1"],
        ["--ratio-floor", "x"],
        ["--max-size", "0"],
        ["--max-size", "big"],
        ["--max-entries", "0"],
        ["--max-entries", "2.5"],
    ],
)
def test_bad_limits_are_a_one_line_usage_error(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run([*argv, str(build_valid(tmp_path / "suite.zip"))], capsys)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("amp-conformance validate: ") and argv[0] in err, err


def test_limits_are_for_the_memorycloud_profile_only(capsys: pytest.CaptureFixture[str]) -> None:
    for option, value in (("--max-ratio", "50"), ("--ratio-floor", "8"), ("--max-entries", "10")):
        assert validate_main(["--profile", "amr-lite", option, value, "x.md"]) == 2
        _, err = capsys.readouterr()
        assert len(err.splitlines()) == 1 and option in err and "memorycloud" in err


def test_help_documents_the_archive_safety_limits(capsys: pytest.CaptureFixture[str]) -> None:
    assert validate_main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for words in ("--max-ratio", "default 100", "--ratio-floor", "default 4", "--max-entries", "10000"):
        assert words in out, words
    assert "zip bomb" in out


def test_one_top_folder_gets_the_hint_and_nothing_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 22 §4: a suite zipped with its folder is one MCS-01 problem naming the folder, no
    'missing MEMORY.md', no 'legacy archive' warning, no notes for the suite's own files."""
    [case] = [c for c in CASES["cases"] if c["name"] == "nested-layout"]
    path = build(case, tmp_path / "nested.zip")
    code, out, _ = run([str(path)], capsys)
    assert code == 1
    [line] = out.splitlines()
    assert line.startswith(f"{path}: MCS-01: ") and "suite-1.2.0/" in line, line
    code, out, _ = run(["--format", "json", str(path)], capsys)
    document = json.loads(out)
    assert {f["role"] for f in document["files"]} >= {"manifest", "long-term memory", "work memory"}
    assert all(f["path"].startswith("suite-1.2.0/") for f in document["files"])


def test_a_nested_suite_is_still_checked_inside_its_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = build(
        {"name": "nested-bad", "special": "nested", "manifest": {"version": "1.2"}},
        tmp_path / "nested-bad.zip",
    )
    code, out, _ = run([str(path)], capsys)
    ids = [line.split(": ")[1] for line in out.splitlines()]
    assert code == 1 and sorted(ids) == ["MCS-01", "MCS-09"], out
    assert f"{path}/suite-1.2.0/manifest.json: MCS-09: " in out


def test_two_top_folders_are_not_a_nested_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "two.zip"
    with zipfile.ZipFile(path, "w") as handle:
        handle.writestr("a/manifest.json", "{}")
        handle.writestr("b/notes.md", "x")
    code, out, _ = run([str(path)], capsys)
    assert code == 1 and "MCS-02" in out and "a/manifest.json" in out


def test_the_catalogue_states_the_default_limits() -> None:
    """The documented limits are the code's: the rule titles quote the defaults of archive.Limits."""
    limits = Limits()
    rules = rule_catalogue("memorycloud").rules
    assert f"{limits.max_entries:,} entries" in rules["MCS-21"].title
    assert f"{limits.max_total // MIB} MiB" in rules["MCS-21"].title
    assert f"more than {limits.max_ratio:g} times" in rules["MCS-22"].title
    assert f"more than {limits.ratio_floor // MIB} MiB" in rules["MCS-22"].title


def test_the_top_folder_is_escaped_in_the_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "odd.zip"
    with zipfile.ZipFile(path, "w") as handle:
        for name, data in sorted(valid_members().items()):
            handle.writestr(f"\x1b[31mred/{name}", data)
    code, out, _ = run([str(path)], capsys)
    assert code == 1 and "\x1b" not in out and "\\x1b[31mred/" in out
    assert len(out.splitlines()) == 1, out
