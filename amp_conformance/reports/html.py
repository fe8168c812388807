"""A self-contained HTML page of a JSON report: the page a maintainer opens after a run and sends on.

One file, inline CSS and JavaScript admitted by a hash-based Content-Security-Policy, no URL to
anything outside it. The content is all in the HTML (the script only filters, copies and opens
details), and everything from the report is escaped: the server under test is untrusted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from amp_conformance.engine.report_model import Report, as_report, defect_groups, left_count_line
from amp_conformance.engine.vocabulary import Outcome
from amp_conformance.reports.html_assets import CSS, JS, content_security_policy
from amp_conformance.reports.html_check import (
    LIST_ITEMS,
    NOTE_CHARS,
    expectation_block,
    message_block,
    uses_block,
    warnings_block,
)
from amp_conformance.reports.html_evidence import (
    Budget,
    Ids,
    Limits,
    copyable,
    cut,
    esc,
    exchanges_section,
    findings_block,
)
from amp_conformance.reports.html_model import (
    LEVEL_ORDER,
    OPEN_OUTCOMES,
    OUTCOME_ORDER,
    SEVERITY,
    UNCOVERED,
    Catalogue,
    Check,
    as_text,
    level_counts,
    read_checks,
    requirement_outcomes,
    texts,
)
from amp_conformance.reports.output import write_report_file

__all__ = ["MAX_PAGE_BYTES", "render_diff_html", "render_html", "write_html_report"]

#: The page stays below this size: evidence of passing checks is cut harder until it fits.
MAX_PAGE_BYTES = 1_900_000
#: Characters of exchanges shown for open checks (fail, warn, error, blocked) and for the others.
_OPEN_EVIDENCE, _CLOSED_EVIDENCE = 900_000, 450_000
#: Evidence is scaled down by these factors until the page fits (0: no exchange shown at all).
_SCALES = (1.0, 0.5, 0.2, 0.0)
_VERDICT_TEXT = {
    "pass": "PASS: every MUST check passed",
    "fail": "FAIL: at least one MUST check failed",
    "incomplete": "INCOMPLETE: some checks could not reach a verdict",
}
_OUTCOME_WORD = {UNCOVERED: "not covered"}


def _word(outcome: str) -> str:
    return _OUTCOME_WORD.get(outcome, outcome)


def _badge(outcome: str) -> str:
    return f'<span class="oc o-{esc(outcome)}">{esc(_word(outcome))}</span>'


def _short(rid: str) -> str:
    return rid.split("-", 1)[1] if "-" in rid else rid


def _page(title: str, body: str) -> str:
    csp = content_security_policy(CSS, JS)
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body>{body}<script>{JS}</script></body></html>\n"
    )
    # Lone surrogates (possible in JSON strings) cannot be written as UTF-8: make them visible instead.
    return page.encode("utf-8", "replace").decode("utf-8")


def _facts(report: Report) -> str:
    run = report.run
    rows = [
        ("Server", report.target or "(unknown)"),
        (
            "Protocol",
            f"{report.title} ({report.protocol})" if report.title != report.protocol else report.protocol,
        ),
        ("Run id", run.id),
        ("Started", run.started_at),
        ("Duration", f"{run.duration_seconds:.1f} s"),
        ("Tool", f"amp-conformance {report.tool_version}"),
        ("Report version", report.report_version),
    ]
    scope = _scope(run.options)
    if scope:
        rows.append(("Scope", scope))
    requests = run.requests.to_json()
    rows.append(("Requests", ", ".join(f"{k} {v}" for k, v in requests.items())))
    rows.append(("Workers", str(run.workers)))
    if report.network is not None:
        rows.append(("Network", report.network.summary))
    if (left := left_count_line(report.cleanup)) is not None:
        rows.append(("Cleanup", left))
    for member, label in (
        ("unavailable", "Server unavailable"),
        ("spec_error", "/spec problem"),
        ("replay_note", "Curl lines"),
    ):
        if text := report.server_text(member):
            rows.append((label, text))
    return '<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows) + "</dl>"


def _scope(options: Mapping[str, Any]) -> str:
    """What the run covered, from its public options: areas, levels, fuzzing, keys, global effects."""
    if not options:
        return ""
    areas = texts(options.get("areas"))
    parts = [f"areas {', '.join(areas)}" if areas else "all areas"]
    levels = texts(options.get("levels"))
    if levels:
        parts.append("levels " + ", ".join(levels))
    if options.get("fuzz") is not None:
        parts.append("fuzzing on" if options.get("fuzz") else "fuzzing off")
    if options.get("seed") is not None:
        parts.append(f"seed {as_text(options.get('seed'))}")
    agents = texts(options.get("api_key_agents"))
    parts.append(f"API keys for {len(agents)} agent(s)" if agents else "no API keys")
    if options.get("allow_global_effects"):
        parts.append("global effects allowed")
    return "; ".join(parts)


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(value, dict) and value:
        rows: list[tuple[str, str]] = []
        for key, item in value.items():
            rows += _flatten(item, f"{prefix}.{key}" if prefix else str(key))
        return rows
    if isinstance(value, list):
        return [(prefix, ", ".join(as_text(v) for v in value) or "[]")]
    return [
        (
            prefix,
            "null"
            if value is None
            else as_text(value).lower()
            if isinstance(value, bool)
            else as_text(value),
        )
    ]


def _claims(report: Report) -> str:
    spec = report.server_object("spec")
    if not spec:
        return '<h3>/spec claims</h3><p class="none">The server\'s /spec could not be read.</p>'
    rows = _flatten(spec)
    items = "".join(f"<li><code>{esc(k)}</code>: {esc(v[:200])}</li>" for k, v in rows[:80])
    more = f'<p class="cut">{len(rows) - 80} more claims not shown</p>' if len(rows) > 80 else ""
    return f'<h3>/spec claims</h3><ul class="claims">{items}</ul>{more}'


def _conventions(report: Report) -> str:
    conventions = report.conventions
    if not conventions:
        return '<h3>Conventions</h3><p class="none">No convention was detected in this run.</p>'
    items = []
    for name, entry in conventions.items():
        if name == "problems":
            continue
        if isinstance(entry, dict):
            source = f" ({esc(entry.get('source'))})" if entry.get("source") else ""
            items.append(f"<li><strong>{esc(name)}</strong>: {esc(entry.get('value') or '-')}{source}</li>")
        else:
            items.append(f"<li><strong>{esc(name)}</strong>: {esc(entry)}</li>")
    items += [f"<li>Note: {esc(problem)}</li>" for problem in texts(conventions.get("problems"))]
    return f"<h3>Conventions detected</h3><ul>{''.join(items)}</ul>"


def _counts(report: Report, checks: list[Check]) -> str:
    counts = report.summary.outcomes
    outcomes = OUTCOME_ORDER
    head = "".join(f"<th scope=col>{_badge(o)}</th>" for o in outcomes)
    total_cells = "".join(f'<td data-count="{esc(o)}">{counts[o]}</td>' for o in outcomes)
    rows = [f"<tr><th scope=row>all checks</th>{total_cells}<td>{sum(counts.values())}</td></tr>"]
    for level, row in level_counts(checks).items():
        cells = "".join(f"<td>{row.get(o, 0)}</td>" for o in outcomes)
        rows.append(f"<tr><th scope=row>{esc(level)}</th>{cells}<td>{sum(row.values())}</td></tr>")
    return (
        f'<table class="counts"><caption class="visually-hidden">Checks by outcome and level</caption>'
        f"<thead><tr><th scope=col>level</th>{head}<th scope=col>total</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _header(report: Report, checks: list[Check]) -> str:
    verdict = report.verdict
    text = _VERDICT_TEXT.get(verdict, verdict)
    summary = report.summary
    extras = []
    for number, label in (
        (summary.expected_failures, "expected failures"),
        (summary.unexpected_passes, "unexpected passes"),
    ):
        if number:
            extras.append(f"{number} {label}")
    extra = f" <span>({esc(', '.join(extras))})</span>" if extras else ""
    return (
        f"<header><h1>{esc(report.title)} conformance report</h1>"
        f'<p><span class="verdict v-{esc(verdict)}">Verdict: {esc(text)}</span>{extra}</p>'
        f'<div class="overview"><div>{_facts(report)}{_counts(report, checks)}</div>'
        f'<div class="side">{_conventions(report)}{_claims(report)}</div></div></header>'
    )


def _area_name(catalogue: Catalogue, area: str) -> str:
    name = catalogue.areas.get(area)
    return f"{name} ({area})" if name else area


def _grid(catalogue: Catalogue, checks: list[Check]) -> str:
    outcomes = requirement_outcomes(checks)  # the model's rule, which the Markdown summary reads too
    by_area: dict[str, list[str]] = {}
    known = catalogue.by_id()
    for requirement in catalogue.requirements:
        by_area.setdefault(requirement.area, []).append(requirement.id)
    order = [a for a in catalogue.areas if a in by_area] + [a for a in by_area if a not in catalogue.areas]
    legend = "".join(f"<li>{_badge(o)}</li>" for o in (*OUTCOME_ORDER, UNCOVERED))
    parts = [
        '<section aria-labelledby="h-grid"><h2 id="h-grid">Requirements</h2>',
        f"<p>Each of the catalogue's {len(catalogue.requirements)} requirements, coloured and labelled by "
        "the worst outcome of the checks citing it. Select one to see its checks.</p>",
        f'<ul class="legend" aria-label="Legend">{legend}</ul><p id="grid-hint" aria-live="polite"></p>',
    ]
    for area in order:
        cells = []
        for rid in by_area[area]:
            requirement = known[rid]
            outcome, citing = outcomes.get(rid, (UNCOVERED, []))
            label = (
                f"{rid} ({requirement.level}), {_word(outcome)}, {len(citing)} check(s): {requirement.title}"
            )
            inner = (
                f"<b>{esc(_short(rid))}</b><span>{esc(requirement.level)} · "
                f'<span class="w">{esc(_word(outcome))}</span></span>'
            )
            attrs = (
                f'class="req o-{esc(outcome)}" id="g-{esc(rid)}" '
                f'title="{esc(label)}" aria-label="{esc(label)}" '
                f'data-item="req" data-outcome="{esc(outcome)}" data-level="{esc(requirement.level)}" '
                f'data-area="{esc(area)}" data-text="{esc((rid + " " + requirement.title).lower())}"'
            )
            if citing:
                cells.append(f'<li><a {attrs} href="#r-{esc(rid)}" data-req="{esc(rid)}">{inner}</a></li>')
            else:
                cells.append(f'<li><span {attrs} tabindex="0">{inner}</span></li>')
        heading = f"<h3>{esc(_area_name(catalogue, area))}</h3>"
        parts.append(f'<div data-group>{heading}<ul class="grid">{"".join(cells)}</ul></div>')
    unknown = sorted({rid for check in checks for rid in check.cites} - set(known))
    if unknown:
        parts.append(f"<p>Cited but not in the catalogue: {esc(', '.join(unknown))}</p>")
    parts.append("</section>")
    return "".join(parts)


def _filters(catalogue: Catalogue, checks: list[Check]) -> str:
    outcomes = [o for o in OUTCOME_ORDER if any(c.outcome == o for c in checks)] + [UNCOVERED]
    levels = [lv for lv in LEVEL_ORDER if any(c.level == lv for c in checks)] or list(LEVEL_ORDER)
    areas = list(dict.fromkeys([*catalogue.areas, *(c.area for c in checks)]))
    outcome_boxes = "".join(
        f'<label><input type="checkbox" name="outcome" value="{esc(o)}" checked> {esc(_word(o))}</label>'
        for o in outcomes
    )
    level_boxes = "".join(
        f'<label><input type="checkbox" name="level" value="{esc(lv)}" checked> {esc(lv)}</label>'
        for lv in levels
    )
    options = "".join(f'<option value="{esc(a)}">{esc(_area_name(catalogue, a))}</option>' for a in areas)
    return (
        '<form id="filters" role="search" aria-label="Filter checks and requirements" hidden>'
        f"<fieldset><legend>Outcome</legend>{outcome_boxes}</fieldset>"
        f"<fieldset><legend>Level</legend>{level_boxes}</fieldset>"
        f'<label>Area <select name="area"><option value="">all areas</option>{options}</select></label>'
        '<label>Search <input type="search" name="q" placeholder="ids and titles"></label>'
        '<button type="button" id="reset">Show everything</button>'
        '<p id="req-filter" class="req-filter" hidden>Showing the checks citing '
        '<strong id="req-name"></strong> '
        '<button type="button" id="req-clear">Show all checks</button></p>'
        '<p id="shown" aria-live="polite"></p></form>'
    )


def _attention_item(check: Check) -> str:
    variant = check.name.partition("[")[2].rstrip("]")
    label = f"{check.title} [{variant}]" if variant else check.title
    blocked = check.entry.blocked_by
    why = f" (blocked by {esc(blocked.requirement or blocked.check)})" if blocked else ""
    return (
        f'<li>{_badge(check.outcome)} <a href="#{check.anchor}">{esc(label)}</a>{why} '
        f'<span class="ids">{esc(", ".join(check.requirements))} ({esc(check.level)})</span></li>'
    )


def _attention_items(checks: list[Check]) -> str:
    """The items of ``checks``, a defect several of them share as one item where its first one stands
    (``report_model.defect_groups``), its places linked to their checks."""
    groups = defect_groups(c.entry for c in checks)
    grouped = {id(entry): group for group in groups if len(group.checks) > 1 for entry in group.checks}
    by_entry = {id(c.entry): c for c in checks}
    items = []
    for check in checks:
        group = grouped.get(id(check.entry))
        if group is None:
            items.append(_attention_item(check))
        elif group.checks[0] is check.entry:
            links = "".join(
                f'<li><a href="#{by_entry[id(e)].anchor}">{esc(e.name)}</a></li>' for e in group.checks
            )
            items.append(
                f'<li class="defect">{_badge(group.outcome)} {esc(group.line())}'
                f"<details><summary>{len(group.checks)} checks</summary><ul>{links}</ul></details></li>"
            )
    return "".join(items)


def _known_gap(check: Check) -> bool:
    """A failure (or other outcome) the expectations file foresaw."""
    return check.entry.expected_gap


def _unmet(check: Check) -> bool:
    """An outcome the expectations file did not foresee (an unexpected pass, a different failure)."""
    return check.entry.unmet_expectation


def _attention(report: Report, checks: list[Check]) -> str:
    """Failures, errors and blocked checks first, root causes first among them (the model's order);
    warnings listed but folded."""
    rank = {id(entry): index for index, entry in enumerate(report.ordered_failures(c.entry for c in checks))}
    flagged = sorted(
        (c for c in checks if c.outcome in OPEN_OUTCOMES),
        key=lambda c: (-SEVERITY.get(c.outcome, 5), rank[id(c.entry)], c.index),
    )
    surprises = [c for c in checks if _unmet(c)]
    if not flagged and not surprises:
        return ""
    known = [c for c in flagged if _known_gap(c)]
    flagged = [c for c in flagged if not _known_gap(c)]
    serious = _attention_items([c for c in flagged if c.outcome != Outcome.WARN and not _unmet(c)])
    warned = [c for c in flagged if c.outcome == Outcome.WARN and not _unmet(c)]
    parts = ['<section aria-labelledby="h-attention"><h2 id="h-attention">Needs attention</h2>']
    if surprises:  # new failures and unexpected passes first: what an expectations file did not foresee
        items = "".join(_attention_item(c) for c in surprises)
        parts.append(
            f'<p>Not as the expectations file says ({len(surprises)}):</p><ul class="attention">{items}</ul>'
        )
    if serious:
        parts.append(f'<ul class="attention">{serious}</ul>')
    if warned:
        items = _attention_items(warned)
        parts.append(
            f"<details><summary>{len(warned)} warning(s) (SHOULD or MAY not met, or worth knowing)</summary>"
            f'<ul class="attention">{items}</ul></details>'
        )
    if known:
        items = "".join(_attention_item(c) for c in known)
        parts.append(
            f'<details class="expected"><summary>{len(known)} expected failure(s), listed in the '
            f'expectations file</summary><ul class="attention">{items}</ul></details>'
        )
    parts.append("</section>")
    return "".join(parts)


def _requirement_list(check: Check, known: Mapping[str, Any]) -> str:
    items = []
    for rid in check.cites:
        requirement = known.get(rid)
        about = "" if rid in check.requirements else " (cited by a warning or finding)"
        title = f"{requirement.level}: {requirement.title}" if requirement else "not in the catalogue"
        items.append(f'<li><a href="#g-{esc(rid)}"><code>{esc(rid)}</code></a> {esc(title)}{esc(about)}</li>')
    return f"<h4>Requirements</h4><ul>{''.join(items)}</ul>" if items else ""


def _blocked(check: Check, anchors: Mapping[str, str]) -> str:
    blocked = check.entry.blocked_by
    if blocked is None:
        return ""
    by = blocked.check or ""
    target = anchors.get(by)
    name = f'<a href="#{target}">{esc(by)}</a>' if target else esc(by or "an earlier step")
    requirement = f" (requirement {esc(blocked.requirement)})" if blocked.requirement else ""
    step = f" at step: {esc(blocked.step)}" if blocked.step else ""
    return f'<p class="blocked">Blocked by {name}{requirement}{step}.</p>'


@dataclass
class _Render:
    """What rendering the checks shares: lookups, unique ids, and the evidence budgets."""

    known: Mapping[str, Any]
    anchors: Mapping[str, str]
    ids: Ids = field(default_factory=Ids)
    first: set[str] = field(default_factory=set)
    #: (limits, budget) for checks shown open (fail, warn, error, blocked) and for the others.
    open: tuple[Limits, Budget] = (Limits(8000, 40), Budget(0))
    closed: tuple[Limits, Budget] = (Limits(1500, 12), Budget(0))


def _check(check: Check, render: _Render) -> str:
    entry = check.entry
    limits, budget = render.open if check.outcome in OPEN_OUTCOMES else render.closed
    targets = "".join(f'<span id="r-{esc(rid)}"></span>' for rid in check.cites if rid not in render.first)
    render.first.update(check.cites)
    searchable = " ".join([check.id, check.title, *check.cites]).lower()
    duration = float(entry.duration_seconds)
    opened = " open" if check.outcome in OPEN_OUTCOMES else ""
    parts = [
        f'<details class="check o-{esc(check.outcome)}" id="{check.anchor}"{opened} '
        f'data-item="check" data-outcome="{esc(check.outcome)}" data-level="{esc(check.level)}" '
        f'data-area="{esc(check.area)}" data-reqs="{esc(" ".join(check.cites))}" '
        f'data-text="{esc(searchable)}">',
        f'<summary>{targets}{_badge(check.outcome)}<span class="lv">{esc(check.level)}</span>'
        f'<span class="t">{esc(check.title)}</span> '
        f'<span class="ids">{esc(", ".join(check.requirements))}</span></summary>',
        '<div class="check-body">',
        f'<p class="cid">Check <code>{esc(check.id)}</code> · area {esc(check.area)} · {duration:g} s</p>',
        uses_block(check),
        message_block(check),
        _blocked(check, render.anchors),
        expectation_block(check),
        _requirement_list(check, render.known),
    ]
    if entry.curl:
        parts.append(f"<h4>Reproduce</h4>{copyable(entry.curl, 'curl', render.ids)}")
    parts.append(findings_block(check.message, limits, render.ids))
    parts.append(warnings_block(check, render.ids))
    notes = entry.notes
    if notes:
        items = "".join(f"<li>{esc(cut(n, NOTE_CHARS)[0])}</li>" for n in notes[:LIST_ITEMS])
        parts.append(f"<h4>Notes</h4><ul>{items}</ul>")
    parts.append(exchanges_section(entry, limits, render.ids, budget))
    parts.append("</div></details>")
    return "".join(parts)


def _checks(catalogue: Catalogue, checks: list[Check], scale: float) -> str:
    anchors: dict[str, str] = {}
    for check in checks:
        for key in (check.id, check.name):
            anchors.setdefault(key, check.anchor)
    render = _Render(catalogue.by_id(), anchors)
    render.open = (render.open[0], Budget(int(_OPEN_EVIDENCE * scale)))
    render.closed = (render.closed[0], Budget(int(_CLOSED_EVIDENCE * scale)))
    by_area: dict[str, list[Check]] = {}
    for check in checks:
        by_area.setdefault(check.area, []).append(check)
    order = [a for a in catalogue.areas if a in by_area] + [a for a in by_area if a not in catalogue.areas]
    parts = [f'<section aria-labelledby="h-checks"><h2 id="h-checks">Checks ({len(checks)})</h2>']
    for area in order:
        rendered = "".join(_check(c, render) for c in by_area[area])
        parts.append(f"<div data-group><h3>{esc(_area_name(catalogue, area))}</h3>{rendered}</div>")
    parts.append("</section>")
    return "".join(parts)


def _footer(report: Report) -> str:
    cleanup = report.cleanup
    problems = cleanup.problems
    trouble = f", {len(problems)} problem(s) (not counted against the server)" if problems else ""
    parts = [
        f"<p>Cleanup: {esc(cleanup.attempted)} attempted, {esc(cleanup.deleted)} deleted{trouble}.</p>",
        *(f'<pre class="msg">{esc(p)}</pre>' for p in problems[:20]),
    ]
    left = cleanup.left
    if left:  # ids and reasons come from the server's answers: escaped like every other text
        items = "".join(
            f"<li><code>{esc(e['id'])}</code>: {esc(e['reason'])}</li>" for e in left[:LIST_ITEMS]
        )
        more = (
            f'<p class="cut">{len(left) - LIST_ITEMS} more in the JSON report</p>'
            if len(left) > LIST_ITEMS
            else ""
        )
        parts.append(
            f'<p class="left">{esc(left_count_line(cleanup))}:</p><ul class="left">{items}</ul>{more}'
        )
    network = report.network
    if network is not None:  # what the network did: never a finding, never the verdict
        facts = "".join(f"<dt>{esc(label)}</dt><dd>{esc(value)}</dd>" for label, value in network.facts())
        parts.append(f'<p class="network">{esc(network.summary)}</p>')
        if facts:
            parts.append(f'<dl class="facts network">{facts}</dl>')
    if report.expectations:
        stale = texts(report.expectations.get("stale"))
        parts.append(
            f"<p>Expectations file: <code>{esc(report.expectations.get('file'))}</code>; "
            f"stale entries: {esc(', '.join(stale) or 'none')}.</p>"
        )
    return f'<section aria-labelledby="h-run"><h2 id="h-run">Run housekeeping</h2>{"".join(parts)}</section>'


def render_html(report: Report | Mapping[str, Any]) -> str:
    """The HTML page of one report."""
    report = as_report(report)
    catalogue = report.catalogue
    checks = read_checks(report)
    server = report.target or "unknown server"
    title = f"{report.title} conformance: {report.verdict.upper()} · {server}"
    head = _header(report, checks) + "<main>" + _attention(report, checks) + _filters(catalogue, checks)
    head += _grid(catalogue, checks)
    page = ""
    for scale in _SCALES:
        page = _page(title, f"{head}{_checks(catalogue, checks, scale)}{_footer(report)}</main>")
        if len(page.encode("utf-8")) <= MAX_PAGE_BYTES:
            break
    return page


def render_diff_html(
    old: Report | Mapping[str, Any], new: Report | Mapping[str, Any], diff: Mapping[str, Any] | None = None
) -> str:
    """The page of what changed between two runs, regressions first.

    ``diff`` is the diff dict to show; without it, the ``amp-conformance diff`` one of the two.
    """
    from amp_conformance.reports.html_diff import render_diff_page

    return render_diff_page(old, new, diff)


def write_html_report(report: Report | Mapping[str, Any], path: Path) -> str | None:
    """Write the page of ``report`` to ``path``; a one-line reason when it cannot be written."""
    return write_report_file(path, render_html(report), "the HTML report")
