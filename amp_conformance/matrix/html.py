"""The matrix page: one self-contained HTML file, requirement x implementation, for a whole ecosystem.

The same rules as the single-run page (``reports/html.py``), whose stylesheet, escaping and evidence
view it reuses: one file with no outside reference, an inline stylesheet and script admitted by their
hashes (``reports.html_assets.content_security_policy``), everything from a server escaped into text,
and readable without JavaScript (a cell links to the first check of that implementation citing the
requirement; the script only filters rows and narrows the checks to the selected cell).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from amp_conformance.engine.report_model import LEVEL_ORDER, Report
from amp_conformance.reports.html_assets import CSS, content_security_policy
from amp_conformance.reports.html_check import expectation_block, message_block, warnings_block
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
    OPEN_OUTCOMES,
    OUTCOME_ORDER,
    UNCOVERED,
    Check,
    as_dict,
    as_list,
    as_text,
    read_checks,
    texts,
)

__all__ = ["MAX_PAGE_BYTES", "render_matrix_html"]

_ASSETS = resources.files("amp_conformance.matrix") / "assets"
MATRIX_CSS = CSS + (_ASSETS / "matrix.css").read_text(encoding="utf-8")
MATRIX_JS = (_ASSETS / "matrix.js").read_text(encoding="utf-8")
#: The page stays below this size: evidence is cut harder until it fits.
MAX_PAGE_BYTES = 8_000_000
_SCALES = (1.0, 0.5, 0.2, 0.0)
#: Characters of evidence per implementation, for checks shown open and for the others.
_OPEN_EVIDENCE, _CLOSED_EVIDENCE = 300_000, 60_000
_VERDICT_WORD = {"pass": "PASS", "fail": "FAIL", "incomplete": "INCOMPLETE", "not-started": "DID NOT START"}
_WORD = {UNCOVERED: "not covered"}
_PATTERN_WORD = {
    "mixed": "some pass, some fail",
    "nobody": "nobody passes",
    "all": "all that ran pass",
    "none": "nothing ran",
}


def _word(outcome: str) -> str:
    return _WORD.get(outcome, outcome)


def _badge(outcome: str) -> str:
    return f'<span class="oc o-{esc(outcome)}">{esc(_word(outcome))}</span>'


def _page(title: str, body: str) -> str:
    csp = content_security_policy(MATRIX_CSS, MATRIX_JS)
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{MATRIX_CSS}</style></head>\n"
        f'<body class="matrix-page">{body}<script>{MATRIX_JS}</script></body></html>\n'
    )
    return page.encode("utf-8", "replace").decode("utf-8")


def _flat(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    if isinstance(value, dict) and value:
        rows: list[tuple[str, str]] = []
        for key, item in value.items():
            rows += _flat(item, f"{prefix}.{key}" if prefix else str(key))
        return rows
    if isinstance(value, list):
        return [(prefix, ", ".join(as_text(v) for v in value) or "[]")]
    text = "null" if value is None else as_text(value).lower() if isinstance(value, bool) else as_text(value)
    return [(prefix, text)]


def _column_head(number: int, impl: Mapping[str, Any], links: Mapping[str, str]) -> str:
    verdict = as_text(impl.get("verdict"), "not-started")
    name = esc(impl.get("name"))
    href = links.get(as_text(impl.get("slug")))
    title = f'<a href="{esc(href)}">{name}</a>' if href else name
    saved = as_dict(impl.get("target")).get("kind") == "report"  # a column read from a saved report
    word = "NO VERDICT" if saved and not impl.get("started") else _VERDICT_WORD.get(verdict, verdict)
    parts = [
        f'<th scope="col" class="col" id="col-{number}" data-col="{number}">',
        f'<div class="cname">{title}</div>',
        f'<div class="cverdict v-{esc(verdict)}">{esc(word)}</div>',
    ]
    if impl.get("started"):
        must = as_dict(impl.get("must"))
        parts.append(f'<div class="cmust">MUST {esc(must.get("passed"))}/{esc(must.get("total"))}</div>')
        conventions = as_dict(impl.get("conventions"))
        items = "".join(
            f"<li>{esc(k)}: {esc(v if v is not None else '-')}</li>" for k, v in conventions.items()
        )
        claims = _flat(impl.get("claims")) if isinstance(impl.get("claims"), dict) else []
        claim_items = "".join(f"<li><code>{esc(k)}</code>: {esc(v[:120])}</li>" for k, v in claims[:40])
        source = esc(impl.get("claims_source") or "/spec")
        parts.append(
            '<details class="cmore"><summary>conventions, claims</summary>'
            f"<p>Conventions</p><ul>{items or '<li>none detected</li>'}</ul>"
            f"<p>{source} claims</p><ul>{claim_items or '<li>not read</li>'}</ul></details>"
        )
    else:
        why = "unusable report" if saved else f"could not start (exit {esc(impl.get('exit_code'))})"
        parts.append(
            f'<div class="cproblem">{why}</div>'
            f'<details class="cmore"><summary>why</summary><pre class="msg">{esc(impl.get("problem"))}</pre>'
            f'<pre class="msg">{esc(cut(as_text(impl.get("log_tail")), 4000)[0])}</pre></details>'
        )
    desc = as_text(impl.get("description"))
    if desc:
        parts.append(f'<div class="cdesc">{esc(desc)}</div>')
    parts.append("</th>")
    return "".join(parts)


def _cell(number: int, impl: Mapping[str, Any], rid: str) -> str:
    name = as_text(impl.get("name"))
    if not impl.get("started"):
        return f'<td class="cell o-none" data-outcome="none" data-col="{number}">not run</td>'
    outcome = as_text(as_dict(impl.get("requirements")).get(rid), UNCOVERED)
    citing = sum(1 for c in as_list(impl.get("checks")) if rid in texts(as_dict(c).get("cites")))
    label = f"{name}: {rid} {_word(outcome)}, {citing} check(s)"
    attrs = f'class="cell o-{esc(outcome)}" data-outcome="{esc(outcome)}" data-col="{number}"'
    if not citing:
        return f'<td {attrs}><span title="{esc(label)}">{esc(_word(outcome))}</span></td>'
    return (
        f'<td {attrs}><a href="#i{number}-r-{esc(rid)}" data-cell="{number}" data-req="{esc(rid)}" '
        f'title="{esc(label)}" aria-label="{esc(label)}">{esc(_word(outcome))}</a></td>'
    )


def _grid(
    protocol: str,
    block: Mapping[str, Any],
    columns: list[tuple[int, dict[str, Any]]],
    rows: Mapping[str, str],
    links: Mapping[str, str],
) -> str:
    areas = {str(k): as_text(v) for k, v in as_dict(block.get("areas")).items()}
    requirements = [as_dict(r) for r in as_list(block.get("requirements"))]
    by_area: dict[str, list[dict[str, Any]]] = {}
    for requirement in requirements:
        by_area.setdefault(as_text(requirement.get("area"), "other"), []).append(requirement)
    order = [a for a in areas if a in by_area] + [a for a in by_area if a not in areas]
    name = as_text(block.get("title")) or protocol
    heads = "".join(_column_head(n, impl, links) for n, impl in columns)
    parts = [
        f'<section class="proto" data-protocol="{esc(protocol)}" aria-labelledby="h-{esc(protocol)}">',
        f'<h2 id="h-{esc(protocol)}">{esc(name)}: {len(requirements)} requirements × '
        f"{len(columns)} implementation(s)</h2>",
        f'<div class="mwrap"><table class="matrix" data-protocol="{esc(protocol)}">'
        f'<caption class="visually-hidden">{esc(name)}: requirement by implementation</caption>'
        f'<thead><tr><th scope="col" class="rhead">Requirement</th>{heads}</tr></thead>',
    ]
    for area in order:
        title = f"{areas[area]} ({area})" if areas.get(area) else area
        parts.append(
            f'<tbody data-group data-area="{esc(area)}"><tr class="area"><th scope="colgroup" '
            f'colspan="{len(columns) + 1}">{esc(title)}</th></tr>'
        )
        for requirement in by_area[area]:
            rid = as_text(requirement.get("id"))
            level = as_text(requirement.get("level"), "?")
            pattern = rows.get(rid, "none")
            cells = "".join(_cell(n, impl, rid) for n, impl in columns)
            parts.append(
                f'<tr data-item="row" data-area="{esc(area)}" data-level="{esc(level)}" '
                f'data-pattern="{esc(pattern)}" data-req="{esc(rid)}">'
                f'<th scope="row" class="rq"><code>{esc(rid)}</code> <span class="lv">{esc(level)}</span>'
                f'<span class="pat p-{esc(pattern)}">{esc(_PATTERN_WORD.get(pattern, pattern))}</span>'
                f'<span class="rt">{esc(requirement.get("title"))}</span></th>{cells}</tr>'
            )
        parts.append("</tbody>")
    parts.append("</table></div></section>")
    return "".join(parts)


@dataclass
class _Render:
    number: int
    ids: Ids
    anchors: dict[str, str] = field(default_factory=dict)
    first: set[str] = field(default_factory=set)
    open: tuple[Limits, Budget] = (Limits(4000, 12), Budget(0))
    closed: tuple[Limits, Budget] = (Limits(1000, 4), Budget(0))


def _blocked(check: Check, render: _Render) -> str:
    blocked = check.entry.blocked_by
    if blocked is None:
        return ""
    by = blocked.check or ""
    target = render.anchors.get(by)
    name = f'<a href="#{target}">{esc(by)}</a>' if target else esc(by or "an earlier step")
    rid = f" (requirement {esc(blocked.requirement)})" if blocked.requirement else ""
    step = f" at step: {esc(blocked.step)}" if blocked.step else ""
    return f'<p class="blocked">Blocked by {name}{rid}{step}.</p>'


def _check(check: Check, render: _Render, impl_name: str) -> str:
    """One check with its evidence: the single-run page's view, with ids unique per implementation."""
    entry = check.entry
    limits, budget = render.open if check.outcome in OPEN_OUTCOMES else render.closed
    prefix = f"i{render.number}"
    targets = "".join(
        f'<span id="{prefix}-r-{esc(rid)}"></span>' for rid in check.cites if rid not in render.first
    )
    render.first.update(check.cites)
    parts = [
        f'<details class="check o-{esc(check.outcome)}" id="{prefix}-c-{check.index}" '
        f'data-impl="{render.number}" data-check="{esc(check.id)}" data-outcome="{esc(check.outcome)}" '
        f'data-reqs="{esc(" ".join(check.cites))}"{" open" if check.outcome in OPEN_OUTCOMES else ""}>',
        f'<summary>{targets}{_badge(check.outcome)}<span class="lv">{esc(check.level)}</span>'
        f'<span class="t">{esc(check.title)}</span> '
        f'<span class="ids">{esc(", ".join(check.requirements))}</span></summary>',
        '<div class="check-body">',
        f'<p class="cid">{esc(impl_name)} · check <code>{esc(check.id)}</code> · area {esc(check.area)}</p>',
        message_block(check),
        _blocked(check, render),
        expectation_block(check),
    ]
    if check.cites:
        parts.append(f'<p class="ids">Cites {esc(", ".join(check.cites))}</p>')
    if entry.curl:
        parts.append(f"<h4>Reproduce</h4>{copyable(entry.curl, 'curl', render.ids)}")
    parts.append(findings_block(check.message, limits, render.ids))
    parts.append(warnings_block(check, render.ids))
    parts.append(exchanges_section(entry, limits, render.ids, budget))
    parts.append("</div></details>")
    return "".join(parts)


def _evidence(implementations: list[dict[str, Any]], reports: Mapping[str, Report], scale: float) -> str:
    ids = Ids()
    parts = [
        '<section id="evidence" aria-labelledby="h-evidence"><h2 id="h-evidence">Checks and evidence</h2>',
        '<p id="selection" aria-live="polite">Every implementation\'s checks, by implementation. '
        "A cell of the grid links to the first check of that implementation citing its requirement.</p>",
        '<p id="sel-tools" hidden><button type="button" id="show-all">Show every check</button></p>',
    ]
    for number, impl in enumerate(implementations):
        name = as_text(impl.get("name"))
        report = reports.get(as_text(impl.get("slug")))
        head = f'<h3 id="impl-{number}">{esc(name)} <span class="ids">{esc(impl.get("protocol"))}</span></h3>'
        if report is None:
            why = esc(impl.get("problem") or "its report is not available")
            parts.append(f'<div data-impl-group="{number}">{head}<p class="none">No checks: {why}</p></div>')
            continue
        render = _Render(number, ids)
        render.open = (render.open[0], Budget(int(_OPEN_EVIDENCE * scale)))
        render.closed = (render.closed[0], Budget(int(_CLOSED_EVIDENCE * scale)))
        checks = read_checks(report)
        for check in checks:
            for key in (check.id, check.name):
                render.anchors.setdefault(key, f"i{number}-c-{check.index}")
        rendered = "".join(_check(c, render, name) for c in checks)
        parts.append(f'<div data-impl-group="{number}">{head}{_defects(report, render)}{rendered}</div>')
    parts.append("</section>")
    return "".join(parts)


def _defects(report: Report, render: _Render) -> str:
    """The defects several of an implementation's checks share, one line each, linked to the checks."""
    groups = [g for g in report.shared_defects if not any(c.expected_gap for c in g.checks)]
    if not groups:
        return ""
    items = []
    for group in groups:
        links = ", ".join(
            f'<a href="#{esc(render.anchors.get(c.id, ""))}">{esc(c.name)}</a>' for c in group.checks
        )
        items.append(
            f"<li>{esc(group.line())}<details><summary>{len(group.checks)} checks</summary>"
            f"<p>{links}</p></details></li>"
        )
    return f'<ul class="defects" aria-label="Shared defects">{"".join(items)}</ul>'


def _header(matrix: Mapping[str, Any]) -> str:
    summary = as_dict(matrix.get("summary"))
    verdicts = as_dict(summary.get("verdicts"))
    options = as_dict(matrix.get("options"))
    scope = [f"areas {options['only']}" if options.get("only") else "all areas"]
    scope.append(f"level {options['level']} and stricter" if options.get("level") else "all levels")
    scope.append("fuzzing on" if options.get("fuzz") else "fuzzing off")
    facts = [
        ("Implementations", as_text(summary.get("implementations"))),
        ("Verdicts", ", ".join(f"{v} {k}" for k, v in verdicts.items() if v) or "-"),
        ("Scope", "; ".join(scope)),
        ("Started", as_text(matrix.get("started_at"), "-")),
        (
            "Duration",
            f"{as_text(matrix.get('duration_seconds'))} s, {as_text(matrix.get('jobs'))} run(s) at a time",
        ),
        ("Tool", f"amp-conformance {as_text(as_dict(matrix.get('tool')).get('version'), '?')}"),
    ]
    legend = "".join(f"<li>{_badge(o)}</li>" for o in (*OUTCOME_ORDER, UNCOVERED))
    return (
        f'<header><h1>Conformance matrix</h1><p class="lede">{esc(matrix.get("title"))}</p>'
        '<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts) + "</dl>"
        "<p>Each row is a requirement of the catalogue, each column an implementation (headed by its "
        "verdict, MUST score, conventions and claims); a cell shows the worst outcome of that "
        "implementation's checks citing the requirement. Select a cell to see those checks and their "
        "evidence.</p>"
        f'<ul class="legend" aria-label="Legend">{legend}</ul></header>'
    )


def default_rows(matrix: Mapping[str, Any]) -> str:
    """The rows the page opens on: "some pass and some fail" when there are any, else every row."""
    patterns = (p for block in as_dict(matrix.get("rows")).values() for p in as_dict(block).values())
    return "mixed" if "mixed" in patterns else "all"


def _filters(matrix: Mapping[str, Any]) -> str:
    default = default_rows(matrix)
    areas: dict[str, str] = {}
    for block in as_dict(matrix.get("protocols")).values():
        for key, name in as_dict(as_dict(block).get("areas")).items():
            areas.setdefault(str(key), as_text(name))
    options = "".join(f'<option value="{esc(a)}">{esc(n)} ({esc(a)})</option>' for a, n in areas.items())
    radios = "".join(
        f'<label><input type="radio" name="rows" value="{v}"{" checked" if v == default else ""}> '
        f"{esc(t)}</label>"
        for v, t in (
            ("all", "every row"),
            ("mixed", "some pass and some fail"),
            ("nobody", "nobody passes (spec problem candidate)"),
        )
    )
    levels = "".join(
        f'<label><input type="checkbox" name="level" value="{lv}" checked> {lv}</label>' for lv in LEVEL_ORDER
    )
    return (
        '<form id="mfilters" role="search" aria-label="Filter requirements" hidden>'
        f"<fieldset><legend>Rows</legend>{radios}</fieldset>"
        f"<fieldset><legend>Level</legend>{levels}</fieldset>"
        f'<label>Area <select name="area"><option value="">all areas</option>{options}</select></label>'
        '<button type="button" id="mreset">Show every row</button>'
        '<p id="mshown" aria-live="polite"></p></form>'
    )


def render_matrix_html(
    matrix: Mapping[str, Any],
    reports: Mapping[str, Report],
    *,
    links: Mapping[str, str] | None = None,
) -> str:
    """The matrix page. ``reports``: slug -> that run's report (the evidence); ``links``: slug ->
    the href of that implementation's own page (a site), shown on its column's name."""
    implementations = [as_dict(i) for i in as_list(matrix.get("implementations"))]
    numbered = list(enumerate(implementations))
    rows = as_dict(matrix.get("rows"))
    grids = "".join(
        _grid(
            protocol,
            as_dict(block),
            [(n, i) for n, i in numbered if i.get("protocol") == protocol],
            as_dict(rows.get(protocol)),
            links or {},
        )
        for protocol, block in as_dict(matrix.get("protocols")).items()
    )
    title = f"Conformance matrix: {as_text(matrix.get('title'))}"
    head = _header(matrix) + "<main>" + _filters(matrix) + grids
    page = ""
    for scale in _SCALES:
        page = _page(title, f"{head}{_evidence(implementations, reports, scale)}</main>")
        if len(page.encode("utf-8")) <= MAX_PAGE_BYTES:
            break
    return page
