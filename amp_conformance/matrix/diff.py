"""What changed between two matrices, per implementation (``amp-conformance matrix diff``).

Implementations are matched by name; each pair's checks are compared by
:func:`amp_conformance.reports.diff.diff_checks` (the single-run diff: a regression is a check that
passed or warned and now fails, errors or is blocked). An implementation that ran before and now
cannot start is a regression too; one that now starts again is a fix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from amp_conformance.engine.report_model import Check
from amp_conformance.engine.vocabulary import Level, Outcome
from amp_conformance.reports.diff import diff_checks
from amp_conformance.reports.html_model import as_dict, as_list, as_text, texts
from amp_conformance.reports.markdown import md_cell

MATRIX_DIFF_VERSION = "1.0"


class MatrixDiffError(Exception):
    """A matrix report that cannot be read: exit 2 with this one line."""


def load_matrix(path: str) -> dict[str, Any]:
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise MatrixDiffError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    except ValueError as exc:
        raise MatrixDiffError(f"{path} is not JSON: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("implementations"), list):
        raise MatrixDiffError(f"{path} is not an amp-conformance matrix report (no 'implementations' list)")
    if as_text(document.get("matrix_version")).partition(".")[0] != "1":
        raise MatrixDiffError(
            f"{path} has matrix_version {document.get('matrix_version')!r}; this tool reads 1.x"
        )
    return document


def _checks(impl: Mapping[str, Any]) -> list[Check]:
    """A matrix entry's checks as the report model's (what the single-run diff compares: the
    matrix keeps each check's outcome and ids, the evidence stays in the run's own report)."""
    checks = []
    for item in as_list(impl.get("checks")):
        entry = as_dict(item)
        checks.append(
            Check(
                id=as_text(entry.get("id")),
                name=as_text(entry.get("name")),
                title=as_text(entry.get("title")),
                requirements=tuple(texts(entry.get("requirements"))),
                level=Level(entry.get("level", Level.MAY)),
                area=as_text(entry.get("area")),
                outcome=Outcome(entry.get("outcome", Outcome.ERROR)),
                message=as_text(entry.get("message")),
                expected=None,
                finding_requirements=tuple(texts(entry.get("finding_requirements"))),
                blocked_by=None,
                expectation=None,
                duration_seconds=0.0,
                requests=None,
                warnings=(),
                notes=(),
                curl=None,
                exchanges=(),
            )
        )
    return checks


def diff_matrices(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    before = {as_text(as_dict(i).get("name")): as_dict(i) for i in as_list(old.get("implementations"))}
    after = {as_text(as_dict(i).get("name")): as_dict(i) for i in as_list(new.get("implementations"))}
    entries: list[dict[str, Any]] = []
    for name in [*after, *(n for n in before if n not in after)]:
        was, now = before.get(name), after.get(name)
        entry: dict[str, Any] = {
            "name": name,
            "status": "changed",
            "old_verdict": was.get("verdict") if was else None,
            "new_verdict": now.get("verdict") if now else None,
            "regressed": False,
            "started": None,
            "regressions": [],
            "fixes": [],
            "changed": [],
            "requirements": [],
            "conventions": [],
        }
        if was is None or now is None:
            entry["status"] = "added" if was is None else "removed"
            entries.append(entry)
            continue
        if was.get("protocol") != now.get("protocol"):
            entry["status"] = "protocol-changed"
            entries.append(entry)
            continue
        if not (was.get("started") and now.get("started")):
            entry["started"] = {"old": bool(was.get("started")), "new": bool(now.get("started"))}
            entry["regressed"] = bool(was.get("started")) and not now.get("started")
            entry["status"] = "changed" if was.get("started") != now.get("started") else "unchanged"
            entries.append(entry)
            continue
        single = diff_checks(
            _checks(was), _checks(now), as_dict(was.get("conventions")), as_dict(now.get("conventions"))
        )
        for key in ("regressions", "fixes", "changed", "requirements", "conventions"):
            entry[key] = single[key]
        entry["new_checks"] = len(single["new"])
        entry["removed_checks"] = len(single["removed"])
        entry["regressed"] = bool(single["regressions"])
        changed = any(
            entry[key] for key in ("regressions", "fixes", "changed", "requirements", "conventions")
        )
        entry["status"] = "changed" if changed or was.get("verdict") != now.get("verdict") else "unchanged"
        entries.append(entry)
    regressions = sum(len(e["regressions"]) + (1 if e["started"] and e["regressed"] else 0) for e in entries)
    return {
        "matrix_diff_version": MATRIX_DIFF_VERSION,
        "regressed": any(e["regressed"] for e in entries),
        "counts": {
            "implementations": len(entries),
            "regressed_implementations": sum(1 for e in entries if e["regressed"]),
            "regressions": regressions,
            "fixes": sum(len(e["fixes"]) for e in entries),
        },
        "implementations": entries,
    }


def _headline(diff: Mapping[str, Any]) -> str:
    counts = diff["counts"]
    verdict = "REGRESSED" if diff["regressed"] else "NO REGRESSION"
    return (
        f"{verdict}: {counts['regressions']} regression(s) in {counts['regressed_implementations']} of "
        f"{counts['implementations']} implementation(s), {counts['fixes']} fix(es)"
    )


def _checks_line(item: Mapping[str, Any]) -> str:
    ids = ",".join(item.get("requirements") or [])
    return f"{item.get('old')} -> {item.get('new')}  {item.get('id')} [{ids}]"


def render_text(diff: Mapping[str, Any]) -> str:
    from amp_conformance.engine.text import printable

    lines = [_headline(diff)]
    for entry in diff["implementations"]:
        if entry["status"] == "unchanged":
            continue
        lines += [
            "",
            f"{entry['name']}: {entry['status']} ({entry['old_verdict']} -> {entry['new_verdict']})",
        ]
        if entry["started"]:
            state = {True: "started", False: "could not start"}
            lines.append(f"  {state[entry['started']['old']]} -> {state[entry['started']['new']]}")
        for key, title in (("regressions", "regression"), ("fixes", "fix"), ("changed", "changed")):
            for item in entry[key]:
                lines.append(printable(f"  {title}: {_checks_line(item)}"))
                if key == "regressions" and item.get("message"):
                    lines.append(printable(f"      {item['message']}".splitlines()[0]))
        for item in entry["requirements"]:
            lines.append(printable(f"  requirement {item['id']}: {item['old']} -> {item['new']}"))
    return "\n".join(lines) + "\n"


def render_markdown(diff: Mapping[str, Any]) -> str:
    lines = ["## AMP conformance matrix: what changed", "", f"**{_headline(diff)}**"]
    for entry in diff["implementations"]:
        if entry["status"] == "unchanged":
            continue
        lines += [
            "",
            f"### {md_cell(entry['name'])}: {md_cell(entry['old_verdict'])} → "
            f"{md_cell(entry['new_verdict'])}",
            "",
        ]
        if entry["started"]:
            lines.append(f"started: {entry['started']['old']} → {entry['started']['new']}")
        rows = [(k, i) for k in ("regressions", "fixes", "changed") for i in entry[k]]
        if rows:
            lines += ["| change | check | requirements | before | after |", "|---|---|---|---|---|"]
            for key, item in rows:
                ids = md_cell(", ".join(item.get("requirements") or []))
                lines.append(
                    f"| {key} | {md_cell(item['id'])} | {ids} | {md_cell(item['old'])} "
                    f"| {md_cell(item['new'])} |"
                )
    return "\n".join(lines) + "\n"


def render(diff: Mapping[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(diff, indent=1, ensure_ascii=False) + "\n"
    return render_markdown(diff) if fmt == "markdown" else render_text(diff)
