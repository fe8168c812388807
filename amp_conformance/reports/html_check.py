"""The parts of one check's entry that the report page and the matrix page both show: the finding
(expected / got), the expectation it was held to, its warnings and the shared steps it used.
Everything is escaped (the message and warnings quote the server)."""

from __future__ import annotations

from amp_conformance.reports.html_evidence import Ids, bounded_pre, copyable, esc
from amp_conformance.reports.html_model import Check

#: Characters of a message, of a note or warning, and how many warnings or notes one check shows.
MESSAGE_CHARS, NOTE_CHARS, LIST_ITEMS = 20_000, 2_000, 20


def expectation_block(check: Check) -> str:
    """The outcome the expectations file held the check to, and whether it was met."""
    expectation = check.entry.expectation
    if expectation is None:
        return ""
    state = "met" if expectation.met else "not met"
    # Shown as text, not a hyperlink: the page points at nothing outside itself.
    link_html = f" (see {esc(expectation.link)})" if expectation.link else ""
    return (
        f"<p>Expected outcome: <strong>{esc(expectation.outcome)}</strong>"
        f" ({state}): {esc(expectation.reason)}{link_html}</p>"
    )


def uses_block(check: Check) -> str:
    """The shared steps the check read (its ``@check(uses=...)``): whose requests its evidence shows
    beside its own, and which other checks' results its outcome depends on."""
    steps = check.entry.uses
    if not steps:
        return ""
    listed = ", ".join(f"<code>{esc(step)}</code>" for step in steps)
    return f'<p class="uses">Shared steps used: {listed}</p>'


def warnings_block(check: Check, ids: Ids) -> str:
    """The SHOULD/MAY findings of a check, each with its ids and curl line (bounded in number)."""
    items = []
    warnings = check.entry.warnings
    for warning in warnings[:LIST_ITEMS]:
        rids = warning.requirements
        about = f' <span class="ids">({esc(", ".join(rids))})</span>' if rids else ""
        curl = warning.curl
        items.append(
            f"<li>{bounded_pre(warning.message, NOTE_CHARS, 'msg')}{about}"
            f"{copyable(curl, 'curl', ids) if curl else ''}</li>"
        )
    more = len(warnings) - LIST_ITEMS
    tail = (
        f'<p class="cut">{more} more warning(s) not shown: the JSON report has them</p>' if more > 0 else ""
    )
    return f"<h4>Warnings</h4><ul>{''.join(items)}</ul>{tail}" if items else ""


_MESSAGE_LABEL = {
    "fail": "Finding",
    "warn": "Finding",
    "skip": "Why skipped",
    "error": "Error",
    "blocked": "Blocked",
}


def message_block(check: Check) -> str:
    """The finding as "expected / got" when the check said what it expected, else the message."""
    if not check.message:
        return ""
    expected = check.entry.expected
    got = bounded_pre(check.message, MESSAGE_CHARS, "msg")
    if expected:
        want = bounded_pre(expected, MESSAGE_CHARS, "msg")
        return f'<dl class="eg"><dt>Expected</dt><dd>{want}</dd><dt>Got</dt><dd>{got}</dd></dl>'
    return f"<h4>{_MESSAGE_LABEL.get(check.outcome, 'Message')}</h4>{got}"
