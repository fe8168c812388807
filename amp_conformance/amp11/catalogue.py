"""The AMP v1.1 requirement catalogue (``contract/requirements.json``) and its readable rendering.

The JSON is the source of truth; ``docs/amp11-requirements.md`` is rendered from it by
``scripts/build_amp11_catalogue.py`` and a project test keeps the two in step.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from amp_conformance.engine.catalogue import Requirement, catalogue_from_document

PROTOCOL = "amp-1.1"
TIERS = ("core", "full", "draft")
CHANNELS = ("mcp", "rest")


@cache
def document() -> dict[str, Any]:
    """The parsed catalogue file (cached; treat as read-only)."""
    path = resources.files("amp_conformance.amp11") / "contract" / "requirements.json"
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _entry(raw: dict[str, Any]) -> Requirement:
    return Requirement.from_json(raw)


@cache
def catalogue() -> dict[str, Requirement]:
    """Every requirement, by id, in catalogue order."""
    return dict(catalogue_from_document(document()).requirements)


def areas() -> dict[str, str]:
    """Area code -> display name."""
    found: dict[str, str] = document()["areas"]
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(doc: dict[str, Any] | None = None) -> str:
    """The readable catalogue: sources, conflicts with stances, then one table per area."""
    doc = doc if doc is not None else document()
    rows = [_entry(raw) for raw in doc["requirements"]]
    counts = {tier: sum(1 for r in rows if r.tier == tier) for tier in TIERS}
    lines = [
        f"# {doc['title']}",
        "",
        "Generated from `amp_conformance/amp11/contract/requirements.json` by "
        "`scripts/build_amp11_catalogue.py`; do not edit by hand.",
        "",
        doc["note"],
        "",
        f"{len(rows)} requirements: {counts['core']} core, {counts['full']} full, "
        f"{counts['draft']} draft (v1.2-draft, never part of a v1.1 verdict).",
        "",
        "## Sources (pinned)",
        "",
        "| role | file | commit | stored id | what it gives |",
        "|---|---|---|---|---|",
    ]
    for src in doc["sources"]:
        commit = f"`{src['commit'][:12]}`" if src.get("commit") else "—"
        stored = f"`{src['stored_id']}`" if src.get("stored_id") else "—"
        where = f"{src['repository']}: `{src['path']}`"
        lines.append(f"| {src['role']} | {where} | {commit} | {stored} | {_cell(src['note'])} |")
    lines += ["", "Section numbers: " + doc["section_numbering"], "", "## Conflicts between the sources", ""]
    for conflict in doc["conflicts"]:
        cited = ", ".join(conflict["requirements"])
        lines += [
            f"**{conflict['id']}: {conflict['topic']}** ({cited})",
            "",
            f"- Sources: {conflict['sources']}",
            f"- Stance: {conflict['stance']}",
            "",
        ]
    peer = doc.get("peer_suite")
    if peer:
        lines += [
            "## Coverage against the upstream suite",
            "",
            f"Peer: {peer['source']}. Checked here and not there: {peer['only_here']}",
            "",
            "| upstream test class | our requirements | note |",
            "|---|---|---|",
        ]
        for entry in peer["classes"]:
            ours = ", ".join(entry["ours"]) or "—"
            lines.append(f"| {_cell(entry['peer'])} | {ours} | {_cell(entry['note'])} |")
        lines.append("")
    names: dict[str, str] = doc["areas"]
    current = None
    for row in rows:
        if row.area != current:
            current = row.area
            lines += [
                "",
                f"## {names.get(row.area, row.area)}",
                "",
                "| id | level | tier | channels | requirement | source | verified by |",
                "|---|---|---|---|---|---|---|",
            ]
        lines.append(
            f"| {row.id} | {row.level} | {row.tier} | {', '.join(row.channels)} | {_cell(row.title)} "
            f"| {_cell(row.source or '')} | {_cell(row.verified or '')} |"
        )
    return "\n".join(lines) + "\n"
