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

PROFILES: Final = ("amr-lite", "memorycloud")
#: How a problem under a rule of each level counts: only MUST problems make an input invalid.
SEVERITY: Final = {"MUST": "error", "SHOULD": "warning", "MAY": "note"}
_DIRECTORY: Final = Path(__file__).resolve().parent / "catalogues"


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    level: str
    title: str
    lines: tuple[int, ...]
    quote: str
    checkable: bool
    why_not: str | None


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
    rules = {
        entry["id"]: Rule(
            entry["id"],
            entry["level"],
            entry["title"],
            tuple(entry["lines"]),
            entry["quote"],
            entry["checkable"],
            entry.get("why_not"),
        )
        for entry in document["rules"]
    }
    return RuleCatalogue(
        document["profile"], document["title"], document["source"], document["source_title"], rules
    )
