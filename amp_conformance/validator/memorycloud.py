"""``validate --profile memorycloud``: MemoryCloud Memory Suite archives (rules ``MCS-NN``).

The archive is checked for safety first (``archive.py``); a refused archive gets no further checks.
A suite zipped with its folder (every file under one top folder) is one MCS-01 problem naming the
folder, then checked as if that folder were the root. Then the layout (manifest.json, MEMORY.md,
suite/manifest.json, memory/YYYY-MM-DD.md, the other documented files), ``manifest.json`` (schema,
title, summary, SemVer version via ``semver``, SPDX license via ``license-expression``, provenance,
tags, declared sha256 digests), the suite manifest and the OpenClaw install mapping. Where the
source gives no type or shape the value is accepted and noted (MCS-24), never judged by an
invented rule.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import date
from functools import cache
from os import PathLike
from typing import Any, Final

import semver

from amp_conformance.validator.archive import Archive, ArchiveUnreadable, Limits, open_archive
from amp_conformance.validator.profile_report import ProfileReport
from amp_conformance.validator.report import InputError
from amp_conformance.validator.secrets import mask_all

PROFILE: Final = "memorycloud"
MANIFEST: Final = "manifest.json"
SUITE_MANIFEST: Final = "suite/manifest.json"
OPENCLAW: Final = "install/openclaw.json"
ROLES: Final = {
    MANIFEST: "manifest",
    SUITE_MANIFEST: "suite manifest",
    "MEMORY.md": "long-term memory",
    "DREAMS.md": "reflections",
    "agent.instructions.md": "install instructions",
    OPENCLAW: "OpenClaw install mapping",
    "README.md": "readme",
}
_WORK_MEMORY = re.compile(r"memory/(\d{4}-\d{2}-\d{2})\.md")
_HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_PATH_KEYS: Final = ("path", "file", "name")
_MAX_DEPTH: Final = 32


def _role(name: str) -> str | None:
    if name in ROLES:
        return ROLES[name]
    if name.startswith("memory/"):
        return "work memory"
    return None


@cache
def _licensing() -> Any:
    from license_expression import get_spdx_licensing  # type: ignore[import-untyped]

    return get_spdx_licensing()


def license_problem(expression: str) -> str | None:
    """Why ``expression`` is not an SPDX license expression, or None (``LicenseRef-…`` ids accepted)."""
    if not expression.strip():
        return "is empty"
    info = _licensing().validate(expression, validate_keys=True, strict=True)
    unknown = [
        s for s in info.invalid_symbols if not re.fullmatch(r"(?:DocumentRef-[\w.-]+:)?LicenseRef-[\w.-]+", s)
    ]
    syntax = [e for e in info.errors if not e.startswith("Unknown license key")]
    if syntax:
        return f"is not an SPDX expression ({'; '.join(syntax)})"
    if unknown:
        return f"names license ids SPDX does not know: {', '.join(repr(s) for s in unknown)}"
    return None


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A merge glob as a regex: ``*`` and ``?`` stay inside one folder, ``**`` crosses folders."""
    parts = []
    for token in re.split(r"(\*\*/?|\*|\?)", pattern):
        if token.startswith("**"):
            parts.append("(?:.*/)?" if token.endswith("/") else ".*")
        elif token == "*":
            parts.append("[^/]*")
        elif token == "?":
            parts.append("[^/]")
        else:
            parts.append(re.escape(token))
    return re.compile("".join(parts))


class _Suite:
    """Checks one archive (or folder) and files its problems in the shared report."""

    def __init__(self, report: ProfileReport, source: str, archive: Archive, root: str = "") -> None:
        self.report = report
        self.source = source
        self.archive = archive
        #: ``folder/`` when the whole suite sits in one top folder: names are then relative to it.
        self.root = root
        self.names = {
            name[len(root) :]: size for name, size in archive.sizes.items() if name.startswith(root)
        }

    def add(self, rule: str, message: str, member: str | None = None) -> None:
        """File a problem; a secret quoted from a manifest value is masked."""
        where = None if member is None else self.root + member
        self.report.add(self.source, rule, mask_all(message), member=where)

    def read(self, name: str) -> bytes:
        return self.archive.read(self.root + name)

    def run(self) -> None:
        self.layout()
        manifest = self.json_object(MANIFEST, "MCS-06")
        if manifest is not None:
            self.manifest(manifest)
        suite = self.json_object(SUITE_MANIFEST, "MCS-14")
        if suite is not None and suite.get("schema") != "amp.memory-suite.v1":
            self.add(
                "MCS-14",
                f'schema is {_show(suite.get("schema"))}, expected "amp.memory-suite.v1"',
                SUITE_MANIFEST,
            )
        mapping = self.json_object(OPENCLAW, "MCS-15")
        if mapping is not None:
            self.openclaw(mapping)

    def layout(self) -> None:
        names = self.names
        if self.root:
            found = "" if MANIFEST in names else f"; {self.root}{MANIFEST} is missing too"
            self.add(
                "MCS-01",
                f"{MANIFEST} is not at the archive root: every file is inside the top folder "
                f"{self.root} (zip the folder's contents, not the folder; checked as if {self.root} "
                f"were the root{found})",
            )
        elif MANIFEST not in names:
            nested = sorted(n for n in names if n.endswith("/" + MANIFEST) and n != SUITE_MANIFEST)
            hint = f" (found {nested[0]}: the layout belongs at the archive root)" if nested else ""
            self.add("MCS-01", f"{MANIFEST} is missing{hint}")
        if "MEMORY.md" not in names:
            self.add("MCS-02", "MEMORY.md (long-term memory) is missing")
        if SUITE_MANIFEST not in names:
            self.add("MCS-03", f"{SUITE_MANIFEST} is missing: a legacy archive (still accepted)")
        for name in sorted(names):
            if name.startswith("memory/"):
                match = _WORK_MEMORY.fullmatch(name)
                if match is None:
                    self.add("MCS-04", "work-memory files are named memory/YYYY-MM-DD.md", name)
                elif _day(match.group(1)) is None:
                    self.add("MCS-04", f"{match.group(1)} is not a calendar date", name)
            elif name not in ROLES:
                self.add("MCS-05", "not part of the documented layout (listed, not judged)", name)

    def json_object(self, name: str, rule: str) -> dict[str, Any] | None:
        """A member parsed as a JSON object, or None (absent, or reported under ``rule``)."""
        if name not in self.names:
            return None
        raw = self.read(name)
        try:
            value = json.loads(raw.decode("utf-8-sig"))
        except UnicodeDecodeError:
            self.add(rule, "not UTF-8 text", name)
            return None
        except (ValueError, RecursionError) as exc:
            self.add(rule, f"not JSON ({str(exc)[:120]})", name)
            return None
        if not isinstance(value, dict):
            self.add(rule, f"a JSON object is expected, found {_json_type(value)}", name)
            return None
        return value

    def manifest(self, manifest: dict[str, Any]) -> None:
        if manifest.get("schema") != "amp.memory.v1":
            self.add(
                "MCS-07", f'schema is {_show(manifest.get("schema"))}, expected "amp.memory.v1"', MANIFEST
            )
        for key in ("title", "summary"):
            self.text_member(manifest, key)
        version = manifest.get("version")
        if not isinstance(version, str):
            self.add(
                "MCS-09", f"version is {_show(version)}: a Semantic Versioning string is required", MANIFEST
            )
        elif not semver.Version.is_valid(version):
            self.add(
                "MCS-09",
                f"version {version!r} is not Semantic Versioning 2.0.0 (MAJOR.MINOR.PATCH)",
                MANIFEST,
            )
        license_value = manifest.get("license")
        if not isinstance(license_value, str):
            self.add("MCS-10", f"license is {_show(license_value)}: an SPDX expression is required", MANIFEST)
        elif (why := license_problem(license_value)) is not None:
            self.add("MCS-10", f"license {license_value!r} {why}", MANIFEST)
        if manifest.get("provenance") in (None, "", {}, []):
            self.add("MCS-11", f"provenance is {_show(manifest.get('provenance'))}: it is required", MANIFEST)
        tags = manifest.get("tags")
        if tags is not None and not (isinstance(tags, list) and all(isinstance(t, str) for t in tags)):
            self.add("MCS-12", f"tags is {_show(tags)}: a list of strings is expected", MANIFEST)
        self.digests(manifest)

    def text_member(self, manifest: dict[str, Any], key: str) -> None:
        value = manifest.get(key)
        if value is None or (isinstance(value, str) and not value.strip()) or value in ({}, []):
            self.add("MCS-08", f"{key} is {_show(value)}: it is required", MANIFEST)
        elif not isinstance(value, str):
            self.add("MCS-24", f"{key} is {_json_type(value)}, accepted (the source gives no type)", MANIFEST)

    def digests(self, manifest: dict[str, Any]) -> None:
        """MCS-13: each sha256 the manifest ties to a file matches the file's bytes."""
        for path, digest, where in _declared_digests(manifest):
            if path is None:
                self.add("MCS-24", f"{where} names no file of the archive: not checked", MANIFEST)
            elif not isinstance(digest, str) or not _HEX64.fullmatch(digest):
                self.add("MCS-13", f"{where} for {path} is {_show(digest)}: not 64 hex digits", MANIFEST)
            elif path not in self.names:
                self.add("MCS-13", f"{where} is declared for {path}, which the archive lacks", MANIFEST)
            else:
                actual = hashlib.sha256(self.read(path)).hexdigest()
                if actual != digest.lower():
                    self.add("MCS-13", f"{where} for {path} is {digest}, the file's is {actual}", MANIFEST)

    def openclaw(self, mapping: dict[str, Any]) -> None:
        target, merge = mapping.get("target"), mapping.get("merge")
        if not isinstance(target, str) or not target:
            self.add("MCS-15", f"target is {_show(target)}: a non-empty string is required", OPENCLAW)
        if not isinstance(merge, dict):
            self.add("MCS-15", f"merge is {_show(merge)}: an object of paths or globs is required", OPENCLAW)
            return
        files = list(self.names)
        for key, value in merge.items():
            patterns = value if isinstance(value, list) else [value]
            for pattern in patterns:
                if not isinstance(pattern, str) or not pattern:
                    self.add(
                        "MCS-15", f"merge.{key} is {_show(pattern)}: a path or glob is expected", OPENCLAW
                    )
                    continue
                regex = glob_regex(pattern)
                if not any(regex.fullmatch(name) for name in files):
                    self.add("MCS-16", f"merge.{key} {pattern!r} names no file of the archive", OPENCLAW)


def _declared_digests(
    node: object, where: str = "manifest", depth: int = 0
) -> Iterator[tuple[str | None, object, str]]:
    """(path or None, digest, where) for every sha256 declaration in the manifest, however nested.

    Recognised: an object with ``sha256`` and a ``path``/``file``/``name`` string; an object under a
    ``sha256`` or ``checksums`` key mapping paths to digests; any other ``sha256`` string names no file.
    """
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, Mapping):
        digest = node.get("sha256")
        path = next((node[k] for k in _PATH_KEYS if isinstance(node.get(k), str)), None)
        if isinstance(digest, Mapping):
            for name, value in digest.items():
                yield str(name), value, f"{where}.sha256[{name!r}]"
        elif digest is not None:
            yield path, digest, f"{where}.sha256"
        checksums = node.get("checksums")
        if isinstance(checksums, Mapping):
            for name, value in checksums.items():
                yield str(name), value, f"{where}.checksums[{name!r}]"
        for key, value in node.items():
            if key not in ("sha256", "checksums"):
                yield from _declared_digests(value, f"{where}.{key}", depth + 1)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _declared_digests(value, f"{where}[{index}]", depth + 1)


def _day(text: str) -> date | None:
    try:
        return date.fromisoformat(text)
    except ValueError:
        return None


def _json_type(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number"}
    return names.get(type(value), "a number" if isinstance(value, float) else "null")


def _show(value: object) -> str:
    """A value for a message: JSON spelling, shortened; ``absent`` for a missing member."""
    if value is None:
        return "absent or null"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def top_folder(names: Iterable[str]) -> str:
    """``folder/`` when every file is inside that one top folder (a suite zipped with its folder), else ''."""
    tops = {name.split("/", 1)[0] + "/" if "/" in name else "" for name in names}
    top = tops.pop() if len(tops) == 1 else ""
    return "" if top in ("memory/", "suite/", "install/") else top  # folders of the layout itself


def validate_memorycloud(
    paths: Iterable[str | PathLike[str]], *, max_total: int | None = None, limits: Limits | None = None
) -> ProfileReport:
    """Check Memory Suite archives (.zip files or folders); the report lists each archive's files.

    ``limits`` are the archive-safety limits (``archive.Limits``); ``max_total`` (bytes) overrides
    its total size.
    """
    report = ProfileReport(PROFILE)
    files: list[dict[str, Any]] = []
    for path in paths:
        source = str(path)
        summary: dict[str, Any] = {
            "source": source,
            "readable": True,
            "kind": None,
            "refused": False,
            "files": 0,
        }
        report.sources.append(summary)
        try:
            archive = open_archive(source, max_total=max_total, limits=limits)
            summary.update(
                kind=archive.kind, files=len(archive.sizes), uncompressed_bytes=archive.total_bytes
            )
            for finding in archive.findings:
                message = (
                    finding.message if "refused" in finding.message else f"{finding.message}; archive refused"
                )
                report.add(source, finding.rule, message, member=finding.name)
            if archive.refused:
                summary["refused"] = True
                continue
            root = "" if MANIFEST in archive.sizes else top_folder(archive.sizes)
            files.extend(
                {"source": source, "path": n, "size": s, "role": _role(n[len(root) :])}
                for n, s in sorted(archive.sizes.items())
            )
            _Suite(report, source, archive, root).run()
        except ArchiveUnreadable as exc:
            summary["readable"] = False
            report.input_errors.append(InputError(source, None, str(exc)))
    report.extras["files"] = files
    return report
