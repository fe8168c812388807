"""The page of what changed between two runs: regressions first, then fixes and the rest.

The page renders a diff dict. :func:`minimal_diff` computes one when no other is given; its keys
(``regressions``, ``fixes``, ``changed``, ``new``, ``removed``, ``requirements``, ``conventions``,
``spec``) follow the ``amp-conformance diff`` vocabulary, so a richer diff can be passed in instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amp_conformance.engine.report_model import Report, as_report
from amp_conformance.reports.html_assets import CSS, content_security_policy
from amp_conformance.reports.html_evidence import cut, esc
from amp_conformance.reports.html_model import (
    SEVERITY,
    UNCOVERED,
    as_dict,
    as_list,
    as_text,
    read_checks,
    requirement_outcomes,
)

_BAD = frozenset({"fail", "error", "blocked"})


def _flatten(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: as_text(value, "null")}


def _entry(
    check_id: str, title: str, requirements: tuple[str, ...], old: str | None, new: str | None
) -> dict[str, Any]:
    return {"id": check_id, "title": title, "requirements": list(requirements), "old": old, "new": new}


def minimal_diff(old: Report | Mapping[str, Any], new: Report | Mapping[str, Any]) -> dict[str, Any]:
    """Check and requirement transitions between two reports, and changed conventions and claims."""
    old, new = as_report(old), as_report(new)
    before = {c.id: c for c in read_checks(old)}
    after = {c.id: c for c in read_checks(new)}
    diff: dict[str, list[dict[str, Any]]] = {
        key: []
        for key in (
            "regressions",
            "fixes",
            "changed",
            "new",
            "removed",
            "requirements",
            "conventions",
            "spec",
        )
    }
    for check_id, check in after.items():
        previous = before.get(check_id)
        if previous is None:
            diff["new"].append(_entry(check_id, check.title, check.requirements, None, check.outcome))
            continue
        if previous.outcome == check.outcome:
            continue
        entry = _entry(check_id, check.title, check.requirements, previous.outcome, check.outcome)
        if check.outcome in _BAD and previous.outcome not in _BAD:
            diff["regressions"].append(entry)
        elif previous.outcome in _BAD and check.outcome not in _BAD:
            diff["fixes"].append(entry)
        else:
            diff["changed"].append(entry)
    for check_id, check in before.items():
        if check_id not in after:
            diff["removed"].append(_entry(check_id, check.title, check.requirements, check.outcome, None))
    old_reqs = requirement_outcomes(before.values())
    new_reqs = requirement_outcomes(after.values())
    for rid in sorted(set(old_reqs) | set(new_reqs)):
        was = old_reqs.get(rid, (UNCOVERED, []))[0]
        now = new_reqs.get(rid, (UNCOVERED, []))[0]
        if was != now:
            diff["requirements"].append({"id": rid, "old": was, "new": now})
    for key, target in (("conventions", "conventions"), ("spec", "spec")):
        source_old = old.conventions if key == "conventions" else old.server_object("spec")
        source_new = new.conventions if key == "conventions" else new.server_object("spec")
        flat_old, flat_new = _flatten(source_old), _flatten(source_new)
        for name in sorted(set(flat_old) | set(flat_new)):
            if flat_old.get(name) != flat_new.get(name):
                diff[target].append({"id": name, "old": flat_old.get(name), "new": flat_new.get(name)})
    return diff


def _diff_of(old: Report, new: Report) -> dict[str, Any]:
    """The ``amp-conformance diff`` dict of the two reports."""
    from amp_conformance.reports.diff import diff_reports

    return diff_reports(old, new)


def _outcome(value: object) -> str:
    if value is None:
        return '<span class="none">(absent)</span>'
    text = as_text(value)
    known = text if text in SEVERITY else "skip"
    return f'<span class="oc o-{esc(known)}">{esc("not covered" if text == UNCOVERED else text)}</span>'


def _table(title: str, rows: list[Any], *, outcomes: bool = True) -> str:
    if not rows:
        return f'<h2>{esc(title)} (0)</h2><p class="none">None.</p>'
    body = []
    for item in rows:
        row = as_dict(item)
        name = esc(row.get("id"))
        if row.get("title"):
            name += f"<br>{esc(row.get('title'))}"
        if row.get("message"):
            name += f'<pre class="msg">{esc(cut(as_text(row.get("message")), 2000)[0])}</pre>'
        rids = ", ".join(as_text(r) for r in as_list(row.get("requirements")))
        fmt = _outcome if outcomes else (lambda v: esc(v if v is not None else "(absent)"))
        body.append(
            f"<tr><td>{name}</td><td>{esc(rids)}</td><td>{fmt(row.get('old'))}</td><td>{fmt(row.get('new'))}</td></tr>"
        )
    table = (
        "<table><thead><tr><th scope=col>what</th><th scope=col>requirements</th>"
        "<th scope=col>before</th><th scope=col>after</th></tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )
    return f"<h2>{esc(title)} ({len(rows)})</h2>{table}"


def _run_line(label: str, report: Report) -> str:
    server = report.base_url or "?"
    return (
        f"<dt>{esc(label)}</dt><dd>run {esc(report.run.id)} of {esc(server)} at "
        f"{esc(report.run.started_at)}: verdict {esc(report.verdict)}</dd>"
    )


def render_diff_page(
    old: Report | Mapping[str, Any], new: Report | Mapping[str, Any], diff: Mapping[str, Any] | None = None
) -> str:
    """The diff page of ``diff`` (by default the ``amp-conformance diff`` one of the two reports)."""
    old, new = as_report(old), as_report(new)
    data = dict(diff) if diff is not None else _diff_of(old, new)
    regressions = as_list(data.get("regressions"))
    verdict = "regressed" if regressions else "no regression"
    body = [
        f"<header><h1>{esc(new.title)} conformance: what changed</h1>",
        f'<p><span class="verdict v-{"fail" if regressions else "pass"}">{esc(verdict.upper())}: '
        f"{len(regressions)} regression(s)</span></p>",
        f'<dl class="facts">{_run_line("Before", old)}{_run_line("After", new)}</dl></header><main>',
        _table("Regressions", regressions),
        _table("Fixes", as_list(data.get("fixes"))),
        _table("Other outcome changes", as_list(data.get("changed"))),
        _table("Requirements whose outcome changed", as_list(data.get("requirements"))),
        _table("New checks", as_list(data.get("new"))),
        _table("Removed checks", as_list(data.get("removed"))),
        _table("Changed conventions", as_list(data.get("conventions")), outcomes=False),
        _table("Changed /spec claims", as_list(data.get("spec")), outcomes=False),
        "</main>",
    ]
    csp = content_security_policy(CSS, None)
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(new.title)} conformance diff: {esc(verdict)}</title><style>{CSS}</style></head>\n"
        f"<body>{''.join(body)}</body></html>\n"
    )
    return page.encode("utf-8", "replace").decode("utf-8")
