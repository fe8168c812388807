"""The AMP v1.1 catalogue is well formed and its rendering in docs/ is current."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from amp_conformance.amp11.catalogue import CHANNELS, TIERS, areas, catalogue, document, render_markdown

ROOT = Path(__file__).resolve().parents[2]
ID = re.compile(r"^AMP11-[A-Z]+-\d{2}$")


def test_rendered_document_is_current() -> None:
    committed = (ROOT / "docs" / "amp11-requirements.md").read_text(encoding="utf-8")
    assert committed == render_markdown(), "run python scripts/build_amp11_catalogue.py"


def test_build_script_check_mode_reports_current() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_amp11_catalogue.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_rows_are_well_formed() -> None:
    rows = list(catalogue().values())
    assert 100 <= len(rows) <= 200
    assert len({r.id for r in rows}) == len(document()["requirements"])
    for row in rows:
        assert ID.match(row.id), row.id
        assert row.level in {"MUST", "SHOULD", "MAY"}, row.id
        assert row.tier in TIERS, row.id
        assert row.channels and set(row.channels) <= set(CHANNELS), row.id
        assert row.area in areas(), row.id
        assert row.title and row.source and row.verified, row.id
    assert {r.tier for r in rows} == set(TIERS)


def test_every_verb_has_requirements() -> None:
    text = " ".join(r.title for r in catalogue().values())
    for verb in ("encode", "recall", "forget", "stats", "consolidate", "pin", "export", "import"):
        assert f"`amp.{verb}`" in text, verb


def test_conflicts_cite_existing_requirements() -> None:
    known = catalogue()
    conflicts = document()["conflicts"]
    assert conflicts
    for conflict in conflicts:
        assert conflict["stance"] and conflict["sources"]
        for rid in conflict["requirements"]:
            assert rid in known, (conflict["id"], rid)


def test_sources_are_pinned() -> None:
    for source in document()["sources"]:
        if source["role"] in {"spec", "schema", "openapi", "peer-suite"}:
            assert re.fullmatch(r"[0-9a-f]{40}", source["commit"]), source
            assert source["stored_id"], source


def test_packaged_openapi_is_current_and_valid() -> None:
    import json

    from openapi_spec_validator import validate

    from amp_conformance.amp11.openapi import openapi_document

    packaged = json.loads((ROOT / "amp_conformance" / "amp11" / "contract" / "openapi.json").read_text())
    assert packaged == openapi_document(), "run python scripts/build_amp11_catalogue.py"
    validate(packaged)
    routes = {(path, method) for path, item in packaged["paths"].items() for method in item}
    assert ("/v1/memories/{id}", "delete") in routes and ("/v1/memories/import", "post") in routes
    assert len(routes) == 8


def test_check_levels_match_the_catalogue() -> None:
    """Every check runs at its requirements' catalogue level; draft-tier checks run at MAY so a draft
    shortfall can never fail a v1.1 verdict."""
    from amp_conformance.engine.check_registry import checks_of

    found = {spec.name: (spec.level, spec.requirements) for spec in checks_of("amp-1.1")}
    rows = catalogue()
    assert len(found) > 140
    cited = {rid for _, ids in found.values() for rid in ids}
    assert set(rows) - cited <= {"AMP11-REST-10"}, sorted(set(rows) - cited)  # REST-10: the fuzz area
    for name, (level, ids) in found.items():
        tiers = {rows[rid].tier for rid in ids}
        if tiers == {"draft"}:
            assert level == "MAY", name
        else:
            assert level == rows[ids[0]].level, (name, level, rows[ids[0]].level)


def test_peer_suite_mapping_names_known_requirements() -> None:
    peer = document()["peer_suite"]
    known = catalogue()
    mapped = {rid for entry in peer["classes"] for rid in entry["ours"]}
    assert mapped <= set(known), sorted(mapped - set(known))
    assert len(peer["classes"]) >= 20
    assert all(entry["ours"] or entry["note"] for entry in peer["classes"])
