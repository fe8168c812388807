"""The requirement catalogue: every check cites ids from it, and reports show their level and title.

The source of truth is ``requirements.md`` (the spec folder); the package ships an extract,
``contract/requirements.json``, so an installed suite knows the catalogue without the spec folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from amp_conformance.engine.resources import load_contract

MUST = "MUST"
SHOULD = "SHOULD"
MAY = "MAY"
LEVELS = (MUST, SHOULD, MAY)

#: Area codes of the catalogue and the friendly names ``--only`` also accepts.
AREAS: dict[str, str] = {
    "cell": "Cell model & schema",
    "cre": "Create",
    "read": "Read by id",
    "patch": "Patch",
    "del": "Delete",
    "list": "List / query alias",
    "srch": "Search",
    "acl": "Access control",
    "err": "Errors",
    "auth": "Identity & auth",
    "admin": "Admin /lifecycle/run",
    "lc": "Lifecycle engine",
    "cap": "Capabilities (/spec)",
    "ret": "Retention & purge",
    "size": "Size limit",
    "rate": "Scoring-PATCH rate limit",
    "health": "Health",
    "oas": "OpenAPI document",
    "fuzz": "OpenAPI fuzzing",
    "bytes": "Bodies that are not well-formed JSON requests",
}
AREA_ALIASES: dict[str, tuple[str, ...]] = {
    "create": ("cre",),
    "delete": ("del",),
    "search": ("srch",),
    "lifecycle": ("lc",),
    "capabilities": ("cap",),
    "errors": ("err",),
    "crud": ("cre", "read", "patch", "del"),
    "retention": ("ret",),
    "openapi": ("oas",),
}

_HEADING = re.compile(r"^\*\*(AMP-[A-Z]+-\d{2})\*\*\s*(?:\([^)]*\)\s*)?(.*)$")
_LEVEL = re.compile(r"^- Level:\s*(.*)$")


@dataclass(frozen=True)
class Requirement:
    id: str
    level: str
    title: str

    @property
    def area(self) -> str:
        return area_of(self.id)

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "level": self.level, "title": self.title}


def area_of(requirement_id: str) -> str:
    """``AMP-READ-02`` -> ``read``."""
    return requirement_id.split("-")[1].lower()


def _normalise_level(text: str) -> str:
    """The strongest RFC 2119 word at the start of a Level line ("MUST NOT" counts as MUST)."""
    for word in ("MUST", "SHOULD", "MAY"):
        if text.startswith(word) or text.startswith(f"MAY / {word}"):
            return word
    upper = text.upper()
    for word in ("MUST", "SHOULD", "MAY"):
        if word in upper:
            return word
    raise ValueError(f"no level in {text!r}")


def parse_requirements_markdown(text: str) -> list[Requirement]:
    """Read ``**AMP-AREA-NN** title`` headings and the ``- Level:`` line that follows each."""
    found: list[Requirement] = []
    pending: tuple[str, str] | None = None
    for line in text.splitlines():
        heading = _HEADING.match(line.strip())
        if heading:
            pending = (heading.group(1), heading.group(2).strip())
            continue
        level = _LEVEL.match(line.strip())
        if level and pending:
            found.append(Requirement(pending[0], _normalise_level(level.group(1)), pending[1]))
            pending = None
    return found


@cache
def catalogue(protocol: str = "amp01") -> dict[str, Requirement]:
    """A protocol package's packaged catalogue (``amp01``: AMP v0.1.0; ``amp11``: AMP v1.1), by id."""
    document = load_contract("requirements.json", protocol)
    return {
        entry["id"]: Requirement(entry["id"], entry["level"], entry["title"])
        for entry in document["requirements"]
    }


def area_names(protocol: str = "amp01") -> dict[str, str]:
    """Area code -> display name: a catalogue's own ``areas`` member, else the AMP v0.1.0 table."""
    try:
        document = load_contract("requirements.json", protocol)
    except FileNotFoundError:
        return {}
    found = document.get("areas") if isinstance(document, dict) else None
    return dict(found) if isinstance(found, dict) else dict(AREAS)


def protocol_of(requirement_id: str) -> str:
    """The protocol package whose catalogue holds ``requirement_id`` (``AMP11-...`` or ``AMP-...``)."""
    return "amp11" if requirement_id.startswith("AMP11-") else "amp01"


def requirement(requirement_id: str) -> Requirement | None:
    """The catalogue entry of any protocol's id, or None for an id no catalogue has."""
    try:
        return catalogue(protocol_of(requirement_id)).get(requirement_id)
    except FileNotFoundError:
        return None


def level_of(requirement_ids: tuple[str, ...] | list[str], default: str = MAY) -> str:
    """The strongest catalogue level among ``requirement_ids`` (``default`` when none is known)."""
    found = [r.level for rid in requirement_ids if (r := requirement(rid)) is not None]
    return min(found, key=LEVELS.index) if found else default


def expand_areas(names: str | list[str]) -> set[str]:
    """Turn ``--only`` text (``"acl,crud"``) into area codes; unknown names raise ValueError."""
    items = names.split(",") if isinstance(names, str) else names
    result: set[str] = set()
    for raw in items:
        name = raw.strip().lower()
        if not name:
            continue
        if name in AREAS:
            result.add(name)
        elif name in AREA_ALIASES:
            result.update(AREA_ALIASES[name])
        else:
            known = ", ".join([*AREAS, *AREA_ALIASES])
            raise ValueError(f"unknown area {raw!r}; known areas: {known}")
    return result


def levels_up_to(level: str) -> set[str]:
    """``--level SHOULD`` runs MUST and SHOULD checks."""
    level = level.upper()
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; use MUST, SHOULD or MAY")
    return set(LEVELS[: LEVELS.index(level) + 1])
