"""The profile rule catalogues: well-formed, quoting their sources, and matched by the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from amp_conformance.validator import amr_lite, archive, memorycloud
from amp_conformance.validator.rules import PROFILES, SEVERITY, rule_catalogue

CODE = {"amr-lite": [amr_lite], "memorycloud": [memorycloud, archive]}
PREFIX = {"amr-lite": "AMR-LITE", "memorycloud": "MCS"}


@pytest.mark.parametrize("profile", PROFILES)
def test_ids_are_numbered_in_order_with_known_levels(profile: str) -> None:
    rules = list(rule_catalogue(profile).rules.values())
    assert [r.id for r in rules] == [f"{PREFIX[profile]}-{n:02d}" for n in range(1, len(rules) + 1)]
    assert all(r.level in SEVERITY for r in rules)
    assert all(r.checkable or r.why_not for r in rules), "a rule that cannot be checked says why"


@pytest.mark.parametrize("profile", PROFILES)
def test_quotes_are_found_on_the_cited_lines_of_the_source(profile: str, spec_dir: Path) -> None:
    catalogue = rule_catalogue(profile)
    lines = (spec_dir / catalogue.source).read_text(encoding="utf-8").splitlines()
    for rule in catalogue.rules.values():
        if not rule.lines:
            assert "policy" in rule.quote, f"{rule.id} cites no line: it must say it is validator policy"
            continue
        assert all(1 <= n <= len(lines) for n in rule.lines), rule.id
        cited = " ".join(" ".join(lines[n - 1].split()) for n in rule.lines)  # layout spaces collapsed
        for part in re.split(r"…", rule.quote):
            fragment = " ".join(part.split()).strip(" .:,")
            if len(fragment) > 3:
                assert fragment in cited, f"{rule.id}: {fragment!r} is not on lines {rule.lines}"


@pytest.mark.parametrize("profile", PROFILES)
def test_the_code_raises_every_checkable_rule_and_no_other_id(profile: str) -> None:
    source = "".join(Path(module.__file__ or "").read_text(encoding="utf-8") for module in CODE[profile])
    used = set(re.findall(rf"\b{PREFIX[profile]}-\d\d\b", source))
    rules = rule_catalogue(profile).rules
    assert used <= set(rules), f"ids the catalogue lacks: {used - set(rules)}"
    checkable = {r.id for r in rules.values() if r.checkable}
    assert checkable == used, f"checkable rules the code never raises: {checkable - used}"
