"""The requirement catalogue and the checks' citations of it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from amp_conformance.amp01.requirements import catalogue, parse_requirements_markdown
from amp_conformance.cli import list_checks
from amp_conformance.coverage import coverage_markdown
from amp_conformance.engine.catalogue import levels_up_to
from amp_conformance.engine.resources import load_contract

REPO = Path(__file__).resolve().parents[2]


def test_the_packaged_catalogue_matches_requirements_md(spec_dir: Path) -> None:
    parsed = parse_requirements_markdown((spec_dir / "requirements.md").read_text(encoding="utf-8"))
    assert len(parsed) == 200
    assert {r.id: r for r in parsed} == catalogue().requirements, "run scripts/build_catalogue.py"


def test_every_check_cites_only_ids_that_requirements_md_has(spec_dir: Path) -> None:
    text = (spec_dir / "requirements.md").read_text(encoding="utf-8")
    known = {r.id for r in parse_requirements_markdown(text)}
    checks = list_checks()
    assert checks, "no check was collected"
    unknown = {(c["id"], rid) for c in checks for rid in c["requirements"] if rid not in known}
    assert not unknown, f"checks cite ids requirements.md lacks: {sorted(unknown)}"


def test_the_check_list_validates_against_its_schema() -> None:
    from amp_conformance._version import __version__

    document = {
        "list_version": "1.1",
        "tool_version": __version__,
        "protocol": "amp-0.1",
        "checks": list_checks(),
    }
    jsonschema.Draft202012Validator(load_contract("list.schema.json")).validate(document)
    titles = [c["title"] for c in document["checks"]]
    assert all(title and not title.startswith("test_") for title in titles), "every check needs a docstring"


def test_check_names_are_unique() -> None:
    names = [c["id"].rsplit("::", 1)[-1] for c in list_checks()]
    assert len(names) == len(set(names))


def test_the_committed_coverage_table_is_current() -> None:
    committed = (REPO / "docs" / "COVERAGE.md").read_text(encoding="utf-8")
    assert committed == coverage_markdown(list_checks(), list_checks("amp-1.1")), (
        "run: python -m amp_conformance.coverage > docs/COVERAGE.md"
    )


def test_area_names_and_levels() -> None:
    assert catalogue().expand_areas("crud,acl") == {"cre", "read", "patch", "del", "acl"}
    assert levels_up_to("should") == {"MUST", "SHOULD"}
    for name in ("report", "list"):
        jsonschema.Draft202012Validator.check_schema(
            json.loads(json.dumps(load_contract(f"{name}.schema.json")))
        )


def test_no_check_is_stricter_than_the_requirements_it_cites() -> None:
    """A check may be weaker than the catalogue (a Warn stance in §2), never stronger."""
    strength = {"MUST": 3, "SHOULD": 2, "MAY": 1}
    known = catalogue().requirements
    too_strict = [
        (c["id"], c["level"])
        for c in list_checks()
        if strength[c["level"]] > max(strength[known[rid].level] for rid in c["requirements"] if rid in known)
    ]
    assert not too_strict


def test_a_check_declares_its_requirements_level_or_names_the_stance_that_softens_it() -> None:
    """Levels come from the catalogue (issue 10 §2, issue 19): a check's level is the strongest level of
    the ids it cites unless it names the documented stance (a requirements.md §2 conflict or Level line),
    and ``level=`` without a stance is refused when the check is declared."""
    from amp_conformance.engine import registry
    from amp_conformance.engine.check_registry import checks_of
    from amp_conformance.engine.marking import check
    from amp_conformance.engine.vocabulary import LEVELS

    for protocol in ("amp-0.1", "amp-1.1"):
        known = registry.get(protocol).catalogue.requirements
        specs = checks_of(protocol)
        assert specs
        wrong = []
        for spec in specs:
            strongest = min((known[rid].level for rid in spec.requirements), key=LEVELS.index)
            if spec.level != strongest and not spec.stance:
                wrong.append((spec.nodeid, spec.level, strongest))
        assert not wrong, f"declared level differs from the catalogue's and names no stance: {wrong}"
    with pytest.raises(ValueError, match="stance"):
        check("AMP-READ-02", level="SHOULD")
    with pytest.raises(ValueError, match="no registered catalogue"):
        check("AMP-NOPE-99")
    assert check("AMP-CELL-17", level="SHOULD", stance="C-23").kwargs["level"] == "SHOULD"
    assert check("AMP-READ-02").kwargs["level"] == "MUST"
