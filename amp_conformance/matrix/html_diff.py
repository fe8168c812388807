"""``matrix diff --format html``: the per-implementation changes as one small page (no script at all)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from amp_conformance.matrix.diff import _headline
from amp_conformance.reports.html_assets import CSS, content_security_policy
from amp_conformance.reports.html_evidence import esc


def _table(entry: Mapping[str, Any]) -> str:
    rows = []
    for key in ("regressions", "fixes", "changed"):
        for item in entry[key]:
            rows.append(
                f"<tr><td>{esc(key)}</td><td><code>{esc(item.get('id'))}</code></td>"
                f"<td>{esc(', '.join(item.get('requirements') or []))}</td>"
                f'<td><span class="oc o-{esc(item.get("old"))}">{esc(item.get("old"))}</span></td>'
                f'<td><span class="oc o-{esc(item.get("new"))}">{esc(item.get("new"))}</span></td></tr>'
            )
    if not rows:
        return ""
    return (
        "<table><thead><tr><th>change</th><th>check</th><th>requirements</th><th>before</th><th>after</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def render_matrix_diff_html(diff: Mapping[str, Any]) -> str:
    parts = [f"<h1>AMP conformance matrix: what changed</h1><p><strong>{esc(_headline(diff))}</strong></p>"]
    for entry in diff["implementations"]:
        if entry["status"] == "unchanged":
            continue
        started = entry.get("started")
        note = ""
        if started:
            note = f"<p>started: {esc(started['old'])} → {esc(started['new'])}</p>"
        parts.append(
            f"<section><h2>{esc(entry['name'])}: "
            f"{esc(entry['old_verdict'])} → {esc(entry['new_verdict'])}</h2>"
            f"{note}{_table(entry)}</section>"
        )
    csp = content_security_policy(CSS, None)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">'
        f"<title>AMP conformance matrix diff</title><style>{CSS}</style></head>\n"
        f"<body><main>{''.join(parts)}</main></body></html>\n"
    )
