"""Build the Memory Suite archives of fixtures/memorycloud/invalid-archives.json (run at test time).

``python -m tests.validator.archives OUTDIR`` writes them all, for a look by hand. Each case starts
from the valid layout in fixtures/memorycloud/valid-suite/ and changes one thing; ``special`` cases
craft zip entries no well-behaved zip tool writes (traversal, absolute names, symlinks, duplicates,
a zip bomb).
"""

from __future__ import annotations

import json
import random
import sys
import warnings
import zipfile
from pathlib import Path
from typing import Any

from amp_conformance.engine.resources import fixtures_path

VALID = fixtures_path("memorycloud", "valid-suite")
CASES = fixtures_path("memorycloud", "invalid-archives.json")
BOMB_BYTES = 8 * 1024 * 1024
#: A work-memory log of one line repeated: deflate packs it ~340 times, like a bomb, yet it is text.
REPEATED_LINE = b"- 2026-08-03 10:00 synced the project notes; nothing new\n"


def load_cases() -> dict[str, list[dict[str, Any]]]:
    document: dict[str, list[dict[str, Any]]] = json.loads(CASES.read_text(encoding="utf-8"))
    return document


def valid_members() -> dict[str, bytes]:
    return {p.relative_to(VALID).as_posix(): p.read_bytes() for p in sorted(VALID.rglob("*")) if p.is_file()}


def _members(case: dict[str, Any]) -> dict[str, bytes]:
    members = valid_members()
    for name in case.get("remove", []):
        del members[name]
    for name, text in case.get("files", {}).items():
        members[name] = text.encode("utf-8")
    for name, value in case.get("json", {}).items():
        members[name] = json.dumps(value, ensure_ascii=False).encode("utf-8")
    if "manifest" in case:
        manifest = json.loads(members["manifest.json"])
        for key, value in case["manifest"].items():
            if value is None:
                manifest.pop(key, None)
            else:
                manifest[key] = value
        members["manifest.json"] = json.dumps(manifest, ensure_ascii=False).encode("utf-8")
    return members


def build(case: dict[str, Any], path: Path) -> Path:
    """Write the archive of one case to ``path``."""
    members = _members(case)
    special = case.get("special")
    prefix = "suite-1.2.0/" if special == "nested" else ""
    with warnings.catch_warnings(), zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name on purpose
        for name, data in members.items():
            archive.writestr(prefix + name, data)
        if special == "absolute":
            archive.writestr(zipfile.ZipInfo("/tmp/amp-conformance-absolute.md"), b"absolute\n")
        elif special == "traversal":
            archive.writestr("memory/../../amp-conformance-traversal.md", b"escaped\n")
        elif special == "symlink":
            link = zipfile.ZipInfo("memory/2026-08-03.md")
            link.external_attr = (0o120777 << 16) | 0x20
            link.create_system = 3
            archive.writestr(link, b"/etc/passwd")
        elif special == "duplicate":
            archive.writestr("MEMORY.md", b"# a second MEMORY.md\n")
        elif special == "bomb":
            archive.writestr("memory/2026-08-03.md", b"\0" * BOMB_BYTES)
        elif special == "repetitive":
            size = int(case.get("repetitive_bytes", 2 * 1024 * 1024))
            text = (REPEATED_LINE * (size // len(REPEATED_LINE) + 1))[:size]
            archive.writestr("memory/2026-08-03.md", text)
        elif special == "large":
            noise = random.Random(14).randbytes(2 * 1024 * 1024)
            archive.writestr("memory/2026-08-03.md", noise, compress_type=zipfile.ZIP_STORED)
    return path


def build_valid(path: Path) -> Path:
    return build({"name": "valid"}, path)


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path("archives")
    out.mkdir(parents=True, exist_ok=True)
    build_valid(out / "valid.zip")
    cases = load_cases()
    for case in [*cases["cases"], *cases["accepted"]]:
        build(case, out / f"{case['name']}.zip")
    print(f"wrote {1 + len(cases['cases']) + len(cases['accepted'])} archives to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
