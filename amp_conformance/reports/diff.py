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

from amp_conformance.engine.report_model import (
    BAD,
    PASSED,
    SEVERITY,
    UNCOVERED,
    Check,
    Report,
    ReportError,
    as_report,
)
from amp_conformance.engine.tiers import DEFAULT_TIER
from amp_conformance.engine.vocabulary import Outcome
from amp_conformance.reports.markdown import md_cell

DIFF_VERSION = "1.0"
KNOWN_MAJORS = frozenset({"1", "2"})
LISTS = ("regressions", "fixes", "changed", "new", "removed", "requirements", "conventions", "spec")


class DiffInputError(Exception):
    """A report that cannot be read or compared: exit 2 with this one line."""


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _entry(check_id: str, check: Check, old: str | None, new: str | None) -> dict[str, Any]:
    return {
        "id": check_id,
        "title": check.title,
        "requirements": list(check.requirements),
        "level": check.level or None,
        "old": old,
        "new": new,
        "message": check.message if new in BAD else None,
    }


def requirement_outcomes(checks: Iterable[Check]) -> dict[str, str]:
    """Each cited requirement's outcome: the worst of its checks. A failing or warning check counts
    against the requirements its finding is about (``finding_requirements``) when it names them, and
    as a pass for its other requirements."""
    outcomes: dict[str, str] = {}
    for check in checks:
        outcome = check.outcome
        cited = list(check.requirements)
        about = set(check.finding_requirements) if outcome in (Outcome.FAIL, Outcome.WARN) else set()
        for rid in cited + sorted(about - set(cited)):
            this: str = outcome if not about or rid in about else Outcome.PASS
            if SEVERITY[this] > SEVERITY[outcomes.get(rid, UNCOVERED)]:
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


def _run_info(report: Report) -> dict[str, Any]:
    return {
        "report_version": report.report_version,
        "protocol": report.protocol or None,
        "run_id": report.run.id or None,
        "started_at": report.run.started_at or None,
        "base_url": report.base_url or None,
        "verdict": report.verdict or None,
        "tier": report.run.options.get("tier"),
    }


def diff_checks(
    old_checks: Iterable[Check],
    new_checks: Iterable[Check],
    old_conventions: Mapping[str, Any],
    new_conventions: Mapping[str, Any],
) -> dict[str, list[dict[str, Any]]]:
    """The lists of :func:`diff_reports` that checks and conventions give (all but ``spec``)."""
    before, after = {c.id: c for c in old_checks}, {c.id: c for c in new_checks}
    lists: dict[str, list[dict[str, Any]]] = {key: [] for key in LISTS}
    for check_id, check in after.items():
        outcome = check.outcome
        previous = before.get(check_id)
        if previous is None:
            lists["new"].append(_entry(check_id, check, None, outcome))
            continue
        was = previous.outcome
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
            lists["removed"].append(_entry(check_id, check, check.outcome, None))
    was_req, now_req = requirement_outcomes(before.values()), requirement_outcomes(after.values())
    for rid in sorted(set(was_req) | set(now_req)):
        old_outcome, new_outcome = was_req.get(rid, UNCOVERED), now_req.get(rid, UNCOVERED)
        if old_outcome != new_outcome:
            lists["requirements"].append({"id": rid, "old": old_outcome, "new": new_outcome})
    lists["conventions"] = _changed_values(old_conventions, new_conventions)
    return lists


def diff_reports(
    old: Report | Mapping[str, Any], new: Report | Mapping[str, Any], *, allow_removed: bool = False
) -> dict[str, Any]:
    """What changed from the run ``old`` to the run ``new`` (see ``contract/diff.schema.json``). A
    check that is gone is a regression unless ``allow_removed``: a shrunken run (half a suite, a
    narrower selection) proves nothing about the checks it left out."""
    old, new = as_report(old), as_report(new)
    diff: dict[str, Any] = {
        "diff_version": DIFF_VERSION,
        "runs": {"old": _run_info(old), "new": _run_info(new)},
    }
    lists = diff_checks(old.checks, new.checks, old.convention_values, new.convention_values)
    lists["spec"] = _changed_values(old.server.get("spec"), new.server.get("spec"))
    diff.update(lists)
    diff["regressed"] = bool(lists["regressions"]) or (bool(lists["removed"]) and not allow_removed)
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


def read_reports(
    old: Mapping[str, Any], new: Mapping[str, Any], old_path: str, new_path: str
) -> tuple[Report, Report]:
    """The two documents as reports (:func:`comparable` first); DiffInputError names the bad one."""
    comparable(old, new, old_path, new_path)
    read: list[Report] = []
    for document, path in ((old, old_path), (new, new_path)):
        try:
            read.append(Report.from_json(document))
        except ReportError as exc:
            raise DiffInputError(f"{path} {exc}") from None
    complete_new_side(read[1], new_path)
    return read[0], read[1]


def complete_new_side(new: Report, new_path: str) -> None:
    """DiffInputError when the new run reached no verdict (interrupted, preflight failure, errors):
    what it did not check cannot have stayed unregressed."""
    if new.verdict == "incomplete":
        raise DiffInputError(
            f"{new_path} is an INCOMPLETE run (interrupted, stopped at preflight or left checks without "
            "a verdict): it cannot be the new side of a diff; rerun it to the end"
        )


def comparable(old: Mapping[str, Any], new: Mapping[str, Any], old_path: str, new_path: str) -> None:
    """DiffInputError unless the two reports share a report_version major and a protocol (asked of
    the documents before they are read as reports, so the reason is the mismatch)."""
    if _major(old) != _major(new):
        raise DiffInputError(
            f"{old_path} is report_version {old.get('report_version')} and {new_path} is "
            f"{new.get('report_version')}: only reports of one major version can be compared "
            "(rerun the older one with this version of the suite)"
        )
    old_protocol, new_protocol = old.get("protocol"), new.get("protocol")
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
    line = (
        f"{verdict}: {counts['regressions']} regression(s), {counts['fixes']} fix(es), "
        f"{counts['new']} new and {counts['removed']} removed check(s), "
        f"{counts['requirements']} requirement(s) changed"
    )
    if diff["regressed"] and not counts["regressions"]:
        line += " (a removed check is a regression; --allow-removed accepts it)"
    tiers = {side: (diff["runs"][side].get("tier") or DEFAULT_TIER) for side in ("old", "new")}
    if tiers["old"] != tiers["new"] and counts["removed"]:
        # a narrower tier leaves checks out: they were not run, which proves nothing about them
        line += (
            f"; NEW is a {tiers['new']}-tier run and OLD a {tiers['old']}-tier one: the "
            f"{counts['removed']} check(s) {tiers['new']} leaves out were not run, not passed"
        )
    return line


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
