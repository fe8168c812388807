"""What changed between two runs, for a CI gate (``amp-conformance diff``, see ``diff_cli``).

:func:`diff_reports` returns a dict described by ``contract/diff.schema.json`` (the HTML diff page
renders the same dict). A *regression* is a check that passed (``pass`` or ``warn``) and now fails,
errors or is blocked; a *fix* the reverse. Exit codes: 1 when there is a regression, 0 otherwise, 2 when
a report cannot be read or the two cannot be compared (another ``report_version`` major, another
protocol).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from amp_conformance.reports.markdown import md_cell

DIFF_VERSION = "1.0"
KNOWN_MAJORS = frozenset({"1", "2"})
PASSED = frozenset({"pass", "warn"})
BAD = frozenset({"fail", "error", "blocked"})
#: The worst outcome of the checks citing a requirement is the requirement's outcome.
SEVERITY = {"uncovered": 0, "skip": 1, "pass": 2, "warn": 3, "blocked": 4, "error": 5, "fail": 6}
UNCOVERED = "uncovered"
LISTS = ("regressions", "fixes", "changed", "new", "removed", "requirements", "conventions", "spec")


class DiffInputError(Exception):
    """A report that cannot be read or compared: exit 2 with this one line."""


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _ids(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _checks(report: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    checks: dict[str, dict[str, Any]] = {}
    for entry in report.get("checks") or []:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            checks[entry["id"]] = entry
    return checks


def _entry(check_id: str, check: Mapping[str, Any], old: str | None, new: str | None) -> dict[str, Any]:
    return {
        "id": check_id,
        "title": _text(check.get("title")),
        "requirements": _ids(check.get("requirements")),
        "level": _text(check.get("level")) or None,
        "old": old,
        "new": new,
        "message": _text(check.get("message")) if new in BAD else None,
    }


def requirement_outcomes(checks: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each cited requirement's outcome: the worst of its checks. A failing or warning check counts
    against the requirements its finding is about (``finding_requirements``) when it names them, and
    as a pass for its other requirements."""
    outcomes: dict[str, str] = {}
    for check in checks:
        outcome = _text(check.get("outcome"))
        if outcome not in SEVERITY:
            continue
        cited = _ids(check.get("requirements"))
        about = set(_ids(check.get("finding_requirements"))) if outcome in ("fail", "warn") else set()
        for rid in cited + sorted(about - set(cited)):
            this = outcome if not about or rid in about else "pass"
            if SEVERITY[this] > SEVERITY.get(outcomes.get(rid, UNCOVERED), 0):
                outcomes[rid] = this
    return outcomes


def _flatten(value: object, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    if not prefix:
        return {}
    return {prefix: json.dumps(value, ensure_ascii=False, sort_keys=True)}


def _changed_values(old: object, new: object) -> list[dict[str, Any]]:
    before, after = _flatten(old), _flatten(new)
    return [
        {"id": name, "old": before.get(name), "new": after.get(name)}
        for name in sorted(set(before) | set(after))
        if before.get(name) != after.get(name)
    ]


def _conventions(report: Mapping[str, Any]) -> dict[str, Any]:
    """Convention name -> value (the detected behaviour; the source text is not compared)."""
    conventions = _dict(report.get("conventions"))
    return {
        name: entry.get("value") if isinstance(entry, dict) else entry
        for name, entry in conventions.items()
        if name != "problems"
    }


def _run_info(report: Mapping[str, Any]) -> dict[str, Any]:
    run, server, summary = _dict(report.get("run")), _dict(report.get("server")), _dict(report.get("summary"))
    return {
        "report_version": _text(report.get("report_version")),
        "protocol": _text(report.get("protocol")) or None,
        "run_id": _text(run.get("id")) or None,
        "started_at": _text(run.get("started_at")) or None,
        "base_url": _text(server.get("base_url")) or None,
        "verdict": _text(summary.get("verdict")) or None,
    }


def diff_reports(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """What changed from the run ``old`` to the run ``new`` (see ``contract/diff.schema.json``)."""
    before, after = _checks(old), _checks(new)
    diff: dict[str, Any] = {
        "diff_version": DIFF_VERSION,
        "runs": {"old": _run_info(old), "new": _run_info(new)},
    }
    lists: dict[str, list[dict[str, Any]]] = {key: [] for key in LISTS}
    for check_id, check in after.items():
        outcome = _text(check.get("outcome"))
        previous = before.get(check_id)
        if previous is None:
            lists["new"].append(_entry(check_id, check, None, outcome))
            continue
        was = _text(previous.get("outcome"))
        if was == outcome:
            continue
        entry = _entry(check_id, check, was, outcome)
        if was in PASSED and outcome in BAD:
            lists["regressions"].append(entry)
        elif was in BAD and outcome in PASSED:
            lists["fixes"].append(entry)
        else:
            lists["changed"].append(entry)
    for check_id, check in before.items():
        if check_id not in after:
            lists["removed"].append(_entry(check_id, check, _text(check.get("outcome")), None))
    was_req, now_req = requirement_outcomes(before.values()), requirement_outcomes(after.values())
    for rid in sorted(set(was_req) | set(now_req)):
        was, now = was_req.get(rid, UNCOVERED), now_req.get(rid, UNCOVERED)
        if was != now:
            lists["requirements"].append({"id": rid, "old": was, "new": now})
    lists["conventions"] = _changed_values(_conventions(old), _conventions(new))
    lists["spec"] = _changed_values(
        _dict(old.get("server")).get("spec"), _dict(new.get("server")).get("spec")
    )
    diff.update(lists)
    diff["regressed"] = bool(lists["regressions"])
    diff["counts"] = {key: len(items) for key, items in lists.items()}
    return diff


# reading --------------------------------------------------------------------------------------


def _major(report: Mapping[str, Any]) -> str:
    return _text(report.get("report_version")).partition(".")[0]


def load_report(path: str) -> dict[str, Any]:
    """A JSON report from ``path`` ('-' is stdin); DiffInputError says why it cannot be used."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DiffInputError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise DiffInputError(f"{path} is not JSON: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("checks"), list):
        raise DiffInputError(f"{path} is not an amp-conformance JSON report (no 'checks' list)")
    if _major(document) not in KNOWN_MAJORS:
        version = document.get("report_version")
        raise DiffInputError(
            f"{path} has report_version {version!r}; this tool reads report_version "
            f"{' and '.join(sorted(m + '.x' for m in KNOWN_MAJORS))}"
        )
    return document


def comparable(old: Mapping[str, Any], new: Mapping[str, Any], old_path: str, new_path: str) -> None:
    """DiffInputError unless the two reports share a report_version major and a protocol."""
    if _major(old) != _major(new):
        raise DiffInputError(
            f"{old_path} is report_version {old.get('report_version')} and {new_path} is "
            f"{new.get('report_version')}: only reports of one major version can be compared "
            "(rerun the older one with this version of the suite)"
        )
    old_protocol, new_protocol = old.get("protocol") or "amp-0.1", new.get("protocol") or "amp-0.1"
    if old_protocol != new_protocol:
        raise DiffInputError(
            f"{old_path} is a run of {old_protocol} and {new_path} of {new_protocol}: nothing to compare"
        )


# rendering ------------------------------------------------------------------------------------

_TITLES = (
    ("regressions", "Regressions"),
    ("fixes", "Fixes"),
    ("changed", "Other outcome changes"),
    ("new", "New checks"),
    ("removed", "Removed checks"),
    ("requirements", "Requirements whose outcome changed"),
    ("conventions", "Changed conventions"),
    ("spec", "Changed /spec claims"),
)


def _headline(diff: Mapping[str, Any]) -> str:
    counts = diff["counts"]
    verdict = "REGRESSED" if diff["regressed"] else "NO REGRESSION"
    return (
        f"{verdict}: {counts['regressions']} regression(s), {counts['fixes']} fix(es), "
        f"{counts['new']} new and {counts['removed']} removed check(s), "
        f"{counts['requirements']} requirement(s) changed"
    )


def _arrow(old: object, new: object) -> str:
    return f"{old if old is not None else '(absent)'} -> {new if new is not None else '(absent)'}"


def render_text(diff: Mapping[str, Any]) -> str:
    from amp_conformance.engine.text import printable

    lines = [_headline(diff)]
    for key, title in _TITLES:
        items = diff[key]
        if not items:
            continue
        lines += ["", f"{title} ({len(items)}):"]
        for item in items:
            ids = ",".join(item.get("requirements") or [])
            label = f"{item['id']} [{ids}]" if ids else item["id"]
            lines.append(printable(f"  {_arrow(item['old'], item['new']):<24} {label}"))
            if item.get("message"):
                lines.append(printable(f"      {item['message']}".splitlines()[0]))
    return "\n".join(lines) + "\n"


def render_markdown(diff: Mapping[str, Any]) -> str:
    lines = ["## AMP conformance: what changed", "", f"**{_headline(diff)}**"]
    for key, title in _TITLES:
        items = diff[key]
        if not items:
            continue
        lines += ["", f"### {title} ({len(items)})", ""]
        if key in ("requirements", "conventions", "spec"):
            lines += ["| what | before | after |", "|---|---|---|"]
            lines += [f"| {md_cell(i['id'])} | {md_cell(i['old'])} | {md_cell(i['new'])} |" for i in items]
            continue
        lines += ["| check | requirements | before | after |", "|---|---|---|---|"]
        for item in items:
            name = md_cell(item["id"].rsplit("::", 1)[-1])
            if item.get("title"):
                name += f"<br>{md_cell(item['title'])}"
            ids = md_cell(", ".join(item.get("requirements") or []))
            lines.append(f"| {name} | {ids} | {md_cell(item['old'])} | {md_cell(item['new'])} |")
    lines.append("")
    return "\n".join(lines) + "\n"


def render(diff: Mapping[str, Any], fmt: str) -> str:
    if fmt == "json":
        return json.dumps(diff, indent=1, ensure_ascii=False) + "\n"
    return render_markdown(diff) if fmt == "markdown" else render_text(diff)
