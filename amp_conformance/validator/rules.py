"""The numbered rule catalogues of the validator's profiles (``AMR-LITE-NN``, ``MCS-NN``).

Each catalogue is a JSON file beside this module (``catalogues/<profile>.json``): id, level, title,
the source lines it comes from with a short quote, and whether the validator can check it (and
why not, when it cannot). Problems cite these ids; ``docs/COVERAGE.md`` is generated from them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Final

from amp_conformance.engine.catalogue import Requirement, catalogue_from_document

PROFILES: Final = ("amr-lite", "memorycloud")
#: How a problem under a rule of each level counts: only MUST problems make an input invalid.
SEVERITY: Final = {"MUST": "error", "SHOULD": "warning", "MAY": "note"}
_DIRECTORY: Final = Path(__file__).resolve().parent / "catalogues"


#: A profile's rule is the engine's one requirement model (``lines``, ``quote``, ``checkable`` and
#: ``why_not`` are its optional fields).
Rule = Requirement


@dataclass(frozen=True, slots=True)
class RuleCatalogue:
    profile: str
    title: str
    source: str
    source_title: str
    rules: dict[str, Rule]

    def level(self, rule_id: str) -> str:
        """The level of a rule; a KeyError for an id the catalogue lacks (a bug in the validator)."""
        return self.rules[rule_id].level


@cache
def rule_catalogue(profile: str) -> RuleCatalogue:
    """The catalogue of ``profile`` (one of ``PROFILES``), parsed once."""
    document = json.loads((_DIRECTORY / f"{profile}.json").read_text(encoding="utf-8"))
    rules = dict(catalogue_from_document(document).requirements)
    return RuleCatalogue(
        document["profile"], document["title"], document["source"], document["source_title"], rules
    )


#: Where each profile's test vectors are, and how to read the rule ids they cite.
_VECTORS: Final = {
    "amr-lite": ("amr-lite/vectors.json", ("invalid", "warnings")),
    "memorycloud": ("memorycloud/invalid-archives.json", ("cases", "accepted")),
}


def vector_counts(profile: str) -> dict[str, int]:
    """How many fixture vectors name each rule id of ``profile``."""
    from amp_conformance.engine.resources import load_fixture

    name, groups = _VECTORS[profile]
    document = load_fixture(*name.split("/"))
    counts: dict[str, int] = {}
    for group in groups:
        for vector in document[group]:
            counts[vector["id"]] = counts.get(vector["id"], 0) + 1
    return counts


def _lines(numbers: tuple[int, ...]) -> str:
    if not numbers:
        return "validator policy"
    if list(numbers) == list(range(numbers[0], numbers[-1] + 1)) and len(numbers) > 1:
        return f"lines {numbers[0]}–{numbers[-1]}"
    return ("line " if len(numbers) == 1 else "lines ") + ", ".join(str(n) for n in numbers)


def profile_coverage_markdown(profile: str) -> str:
    """The ``docs/COVERAGE.md`` section of one profile's catalogue: each rule, its level and vectors."""
    rules = rule_catalogue(profile)
    counts = vector_counts(profile)
    checked = sum(1 for rule in rules.rules.values() if rule.checkable)
    name, _ = _VECTORS[profile]
    lines = [
        "",
        f"## {rules.title}",
        "",
        f"Rules of `{rules.source}` ({rules.source_title}), from "
        f"`amp_conformance/validator/catalogues/{profile}.json`. {checked} of {len(rules.rules)} rules are "
        f"checked; the vectors are in `fixtures/{name}`.",
        "",
        "| id | level | vectors | rule (source) |",
        "|---|---|---|---|",
    ]
    for rule in rules.rules.values():
        if rule.checkable:
            count = counts.get(rule.id, 0)
            vectors = f"{count} vector{'s' if count != 1 else ''}" if count else "**no vector**"
        else:
            vectors = f"not checkable: {rule.why_not}"
        text = f"{rule.title} ({_lines(rule.lines)})".replace("|", "/")
        lines.append(f"| {rule.id} | {rule.level} | {vectors.replace('|', '/')} | {text} |")
    return "\n".join(lines) + "\n"
